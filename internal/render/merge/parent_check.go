package merge

import (
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/lifecycle"
)

// CheckCloudProfileChange checks a change of the CloudProfile name from
// current (as the cluster has it) to updated against the rules that need the
// live object, and returns every error, at paths of the CloudProfile:
//
//   - no Kubernetes or machine image version that is not unavailable at now
//     may become unavailable again, and limits.maxNodesTotal may not be
//     lowered (lifecycle.ValidateUpdate, docs/semantics.md §2);
//   - nothing a NamespacedCloudProfile among children overrides may be taken
//     away: a Kubernetes version, machine image, image version or lifecycle
//     stage (docs/semantics.md §3, last rule; see checkParentKeepsOverrides).
//
// updated == nil means the CloudProfile is deleted, which every namespaced
// profile extending it forbids. The sync calls it before it applies or prunes
// a CloudProfile, the admission webhook for an update or a deletion, so both
// refuse the same changes with the same messages.
func CheckCloudProfileChange(name string, current, updated *v1alpha1.CloudProfileSpec, children []v1alpha1.NamespacedCloudProfile, now time.Time) field.ErrorList {
	errs := lifecycle.ValidateUpdate(current, updated, now, field.NewPath("spec"))
	return append(errs, checkParentKeepsOverrides(name, current, updated, children)...)
}

// checkParentKeepsOverrides refuses a change of the CloudProfile parentName
// from current to updated that would take away something a namespaced
// profile overrides (docs/semantics.md §3, last rule; GEP-25 "Preventing deletion of
// certain fields in parent CloudProfile"): a Kubernetes version, a machine
// image, a machine-image version, or a lifecycle stage whose start time the
// namespaced profile moves. updated == nil means the parent is being deleted,
// which every namespaced profile extending it forbids.
//
// CheckCloudProfileChange is its one caller, so that the sync and the
// admission webhook refuse the same changes. children may be every
// NamespacedCloudProfile in the cluster: those whose spec.parent names another
// CloudProfile are skipped (an empty parent kind counts as CloudProfile, so a profile that
// skipped defaulting is still protected).
//
// What a namespaced profile overrides is decided against current, the parent
// as it is now, not against updated: an override entry that current does not
// have either is something the namespaced profile adds on its own (a whole
// image or version) or an error already shown in its status, and neither may
// block a change of the parent. So current == nil (the parent is being
// created) never yields an error.
//
// Errors are reported at paths of the parent CloudProfile, because that is
// the object being refused, and name the namespaced profile as
// namespace/name together with the path of its override.
func checkParentKeepsOverrides(parentName string, current, updated *v1alpha1.CloudProfileSpec, children []v1alpha1.NamespacedCloudProfile) field.ErrorList {
	var errs field.ErrorList
	for i := range children {
		child := &children[i]
		if !extends(child, parentName) {
			continue
		}
		check := parentCheck{
			child:   fmt.Sprintf("NamespacedCloudProfile %s/%s", child.Namespace, child.Name),
			current: current,
			updated: updated,
		}
		if updated == nil {
			errs = append(errs, field.Forbidden(field.NewPath("spec"),
				fmt.Sprintf("CloudProfile %q may not be deleted: %s extends it", parentName, check.child)))
			continue
		}
		if current == nil {
			continue
		}
		if child.Spec.Kubernetes != nil {
			check.kubernetesVersions(child.Spec.Kubernetes.Versions)
		}
		check.machineImages(child.Spec.MachineImages)
		errs = append(errs, check.errs...)
	}
	return errs
}

func extends(child *v1alpha1.NamespacedCloudProfile, parentName string) bool {
	kind := child.Spec.Parent.Kind
	return (kind == v1alpha1.CloudProfileKind || kind == "") && child.Spec.Parent.Name == parentName
}

// parentCheck compares current and updated for the overrides of one child.
type parentCheck struct {
	child            string
	current, updated *v1alpha1.CloudProfileSpec
	errs             field.ErrorList
}

func (c *parentCheck) forbid(fldPath *field.Path, format string, args ...any) {
	c.errs = append(c.errs, field.Forbidden(fldPath, fmt.Sprintf(format, args...)))
}

func (c *parentCheck) kubernetesVersions(overrides []v1alpha1.ExpirableVersion) {
	// The same path names the override in the child and the list in the parent.
	kubernetesPath := field.NewPath("spec", "kubernetes")
	versionsPath := kubernetesPath.Child("versions")
	for i, o := range overrides {
		overridePath := lifecycle.EntryPath(kubernetesPath, "versions", i, o.Version)
		currentIndex := versionIndex(c.current.Kubernetes.Versions, o.Version)
		if currentIndex < 0 {
			continue
		}
		updatedIndex := versionIndex(c.updated.Kubernetes.Versions, o.Version)
		if updatedIndex < 0 {
			c.forbid(versionsPath, "Kubernetes version %q may not be removed: %s overrides it at %s",
				o.Version, c.child, overridePath)
			continue
		}
		c.stages(o, c.current.Kubernetes.Versions[currentIndex], c.updated.Kubernetes.Versions[updatedIndex],
			overridePath, lifecycle.EntryPath(kubernetesPath, "versions", updatedIndex, o.Version), fmt.Sprintf("Kubernetes version %q", o.Version))
	}
}

func (c *parentCheck) machineImages(overrides []v1alpha1.NamespacedMachineImage) {
	specPath := field.NewPath("spec")
	imagesPath := specPath.Child("machineImages")
	for i, o := range overrides {
		overrideImagePath := lifecycle.EntryPath(specPath, "machineImages", i, o.Name)
		currentIndex := imageIndex(c.current.MachineImages, o.Name)
		if currentIndex < 0 {
			continue
		}
		currentImage := c.current.MachineImages[currentIndex]
		updatedIndex := imageIndex(c.updated.MachineImages, o.Name)
		if updatedIndex < 0 {
			c.forbid(imagesPath, "machine image %q may not be removed: %s overrides it at %s",
				o.Name, c.child, overrideImagePath)
			continue
		}
		updatedImage := c.updated.MachineImages[updatedIndex]
		updatedImagePath := lifecycle.EntryPath(specPath, "machineImages", updatedIndex, o.Name)
		versionsPath := updatedImagePath.Child("versions")
		for j, ov := range o.Versions {
			overridePath := lifecycle.EntryPath(overrideImagePath, "versions", j, ov.Version)
			currentVersionIndex := imageVersionIndex(currentImage.Versions, ov.Version)
			if currentVersionIndex < 0 {
				continue
			}
			updatedVersionIndex := imageVersionIndex(updatedImage.Versions, ov.Version)
			if updatedVersionIndex < 0 {
				c.forbid(versionsPath, "version %q of machine image %q may not be removed: %s overrides it at %s",
					ov.Version, o.Name, c.child, overridePath)
				continue
			}
			c.stages(ov.ExpirableVersion, currentImage.Versions[currentVersionIndex].ExpirableVersion, updatedImage.Versions[updatedVersionIndex].ExpirableVersion,
				overridePath, lifecycle.EntryPath(updatedImagePath, "versions", updatedVersionIndex, ov.Version), fmt.Sprintf("version %q of machine image %q", ov.Version, o.Name))
		}
	}
}

// stages refuses an updated version that lacks a lifecycle stage the override
// moves and the current version has. Both versions are read in lifecycle form,
// so a parent switching between the deprecated fields and lifecycle is judged
// by meaning, not by spelling. An expirationDate override needs no stage: the
// merge adds the expired stage when the parent has none.
func (c *parentCheck) stages(override, current, updated v1alpha1.ExpirableVersion, overridePath, updatedPath *field.Path, what string) {
	currentStages, updatedStages := lifecycle.Stages(current), lifecycle.Stages(updated)
	for k, s := range override.Lifecycle {
		if hasStage(currentStages, s.Classification) && !hasStage(updatedStages, s.Classification) {
			c.forbid(updatedPath, "the %s stage of %s may not be removed: %s moves its start at %s",
				s.Classification, what, c.child, overridePath.Child("lifecycle").Index(k))
		}
	}
}

func versionIndex(versions []v1alpha1.ExpirableVersion, version string) int {
	return slices.IndexFunc(versions, func(v v1alpha1.ExpirableVersion) bool { return v.Version == version })
}

func imageIndex(images []v1alpha1.MachineImage, name string) int {
	return slices.IndexFunc(images, func(image v1alpha1.MachineImage) bool { return image.Name == name })
}

func imageVersionIndex(versions []v1alpha1.MachineImageVersion, version string) int {
	return slices.IndexFunc(versions, func(v v1alpha1.MachineImageVersion) bool { return v.Version == version })
}
