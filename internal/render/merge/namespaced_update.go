package merge

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/lifecycle"
)

// CheckNamespacedChange checks a change of a NamespacedCloudProfile from
// live (as the cluster has it, its status included) to updated, the spec
// about to be written, against the rule of Gardener's admission that needs
// the live object (plugin NamespacedCloudProfileValidator, on update): an
// override of a parent's version that the profile already has, whose
// expirationDate is now in the past, is refused unless that is the expiry
// the live merged status already gives the version. A date moved into the
// past would expire the version at once, for clusters already on it.
//
// An override the live spec does not have yet is not this rule's: Gardener
// accepts it (its API server drops an expired one from what it stores), and
// so does ProfileSync, which keeps it and shows it expired
// (docs/lifecycle.md, "Where we differ from Gardener"). A machine image
// version the parent does not have is the profile's own, not an override,
// and is not checked either, as in Gardener. The errors are Gardener's
// words, at the override's expirationDate. live == nil (a create), or an
// updated spec equal to the live one, yields none.
func CheckNamespacedChange(live *v1alpha1.NamespacedCloudProfile, parent *v1alpha1.CloudProfileSpec, updated *v1alpha1.NamespacedCloudProfileSpec, now time.Time) field.ErrorList {
	// As Gardener's admission, a write that leaves the spec as it is passes:
	// the sync applying an unchanged revision again changes nothing.
	if live == nil || updated == nil || equality.Semantic.DeepEqual(live.Spec, *updated) {
		return nil
	}
	merged := live.Status.CloudProfileSpec
	specPath := field.NewPath("spec")
	var errs field.ErrorList
	if updated.Kubernetes != nil && live.Spec.Kubernetes != nil {
		var mergedVersions []v1alpha1.ExpirableVersion
		if merged != nil {
			mergedVersions = merged.Kubernetes.Versions
		}
		for i, v := range updated.Kubernetes.Versions {
			if !hasVersion(live.Spec.Kubernetes.Versions, v.Version) {
				continue
			}
			path := lifecycle.EntryPath(specPath.Child("kubernetes"), "versions", i, v.Version).Child("expirationDate")
			errs = append(errs, checkExpiryNotMovedIntoThePast(v, mergedVersions, path, now)...)
		}
	}
	for i := range updated.MachineImages {
		image := &updated.MachineImages[i]
		liveImage := namespacedImage(live.Spec.MachineImages, image.Name)
		parentImage := lifecycle.MachineImageOf(parent, image.Name)
		if liveImage == nil || parentImage == nil {
			continue
		}
		var mergedVersions []v1alpha1.ExpirableVersion
		if mergedImage := lifecycle.MachineImageOf(merged, image.Name); mergedImage != nil {
			mergedVersions = expirableVersions(mergedImage.Versions)
		}
		imagePath := lifecycle.EntryPath(specPath, "machineImages", i, image.Name)
		for j := range image.Versions {
			v := image.Versions[j].ExpirableVersion
			if !hasVersion(expirableVersions(liveImage.Versions), v.Version) || !hasVersion(expirableVersions(parentImage.Versions), v.Version) {
				continue
			}
			path := lifecycle.EntryPath(imagePath, "versions", j, v.Version).Child("expirationDate")
			errs = append(errs, checkExpiryNotMovedIntoThePast(v, mergedVersions, path, now)...)
		}
	}
	return errs
}

// checkExpiryNotMovedIntoThePast refuses override's expirationDate when it
// is before now and is not the expiry merged (the live merged versions)
// already gives the version.
func checkExpiryNotMovedIntoThePast(override v1alpha1.ExpirableVersion, merged []v1alpha1.ExpirableVersion, path *field.Path, now time.Time) field.ErrorList {
	if override.ExpirationDate == nil || !override.ExpirationDate.Time.Before(now) {
		return nil
	}
	for _, m := range merged {
		if m.Version != override.Version {
			continue
		}
		if expiry, ok := expiryOf(m); ok && expiry.Equal(override.ExpirationDate.Time) {
			return nil
		}
		break
	}
	return field.ErrorList{field.Invalid(path, override.ExpirationDate.UTC().Format(time.RFC3339),
		fmt.Sprintf("expiration date for version %q is in the past", override.Version))}
}

// expiryOf is the start of v's expired stage, in either API.
func expiryOf(v v1alpha1.ExpirableVersion) (time.Time, bool) {
	for _, stage := range lifecycle.Stages(v) {
		if stage.Classification == v1alpha1.ClassificationExpired && stage.StartTime != nil {
			return stage.StartTime.Time, true
		}
	}
	return time.Time{}, false
}

func hasVersion(versions []v1alpha1.ExpirableVersion, version string) bool {
	for _, v := range versions {
		if v.Version == version {
			return true
		}
	}
	return false
}

func expirableVersions(versions []v1alpha1.MachineImageVersion) []v1alpha1.ExpirableVersion {
	out := make([]v1alpha1.ExpirableVersion, len(versions))
	for i := range versions {
		out[i] = versions[i].ExpirableVersion
	}
	return out
}

func namespacedImage(images []v1alpha1.NamespacedMachineImage, name string) *v1alpha1.NamespacedMachineImage {
	for i := range images {
		if images[i].Name == name {
			return &images[i]
		}
	}
	return nil
}
