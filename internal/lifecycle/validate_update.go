package lifecycle

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// ValidateUpdate checks the update rules of docs/semantics.md §2 before a sync replaces
// the live spec old with updated: a Kubernetes or machine image version that
// is not unavailable at now under old may not be unavailable at now under
// updated. Clusters may already use such a version; pushing its first stage
// into the future would make them run a version that does not exist yet.
// And, as in Gardener, limits.maxNodesTotal may not decrease
// (validateMaxNodesTotalNotDecreased).
//
// Versions are matched by their string as written (machine images by name
// first); a version that updated removes, or adds, is not this rule's concern.
// Errors point into updated, below fldPath.
func ValidateUpdate(old, updated *v1alpha1.CloudProfileSpec, now time.Time, fldPath *field.Path) field.ErrorList {
	if old == nil || updated == nil {
		return nil
	}
	errs := validateMaxNodesTotalNotDecreased(old.Limits, updated.Limits, fldPath.Child("limits"))
	errs = append(errs, validateNotMadeUnavailable(
		old.Kubernetes.Versions, updated.Kubernetes.Versions,
		func(v *v1alpha1.ExpirableVersion) *v1alpha1.ExpirableVersion { return v },
		now, listPath{fldPath.Child("kubernetes"), versionsField})...)

	oldImages := make(map[string]*v1alpha1.MachineImage, len(old.MachineImages))
	for i := range old.MachineImages {
		if _, seen := oldImages[old.MachineImages[i].Name]; !seen {
			oldImages[old.MachineImages[i].Name] = &old.MachineImages[i]
		}
	}
	for i := range updated.MachineImages {
		image := &updated.MachineImages[i]
		oldImage, ok := oldImages[image.Name]
		if !ok {
			continue
		}
		errs = append(errs, validateNotMadeUnavailable(
			oldImage.Versions, image.Versions,
			func(v *v1alpha1.MachineImageVersion) *v1alpha1.ExpirableVersion { return &v.ExpirableVersion },
			now, listPath{EntryPath(fldPath, "machineImages", i, image.Name), versionsField})...)
	}
	return errs
}

func validateNotMadeUnavailable[V any](old, updated []V, expirable func(*V) *v1alpha1.ExpirableVersion, now time.Time, list listPath) field.ErrorList {
	wasAvailable := make(map[string]v1alpha1.VersionClassification, len(old))
	for i := range old {
		v := expirable(&old[i])
		if c := ClassificationAt(*v, now); c != v1alpha1.ClassificationUnavailable {
			wasAvailable[v.Version] = c
		}
	}
	var errs field.ErrorList
	for i := range updated {
		v := expirable(&updated[i])
		was, ok := wasAvailable[v.Version]
		if !ok || ClassificationAt(*v, now) != v1alpha1.ClassificationUnavailable {
			continue
		}
		path := list.entry(i, v.Version)
		if len(v.Lifecycle) > 0 {
			path = path.Child("lifecycle")
		}
		errs = append(errs, field.Forbidden(path,
			fmt.Sprintf("version %s is %s now and may not be made unavailable again: a version that has been offered may already be in use", v.Version, was)))
	}
	return errs
}

// validateMaxNodesTotalNotDecreased refuses a lower limits.maxNodesTotal, as
// Gardener does on a CloudProfile's update: clusters may already have as many
// nodes as the old limit allows. Setting the limit where there was none,
// raising it and removing it are allowed.
func validateMaxNodesTotalNotDecreased(old, updated *v1alpha1.Limits, fldPath *field.Path) field.ErrorList {
	if old == nil || updated == nil || old.MaxNodesTotal == nil || updated.MaxNodesTotal == nil || *updated.MaxNodesTotal >= *old.MaxNodesTotal {
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath.Child("maxNodesTotal"), *updated.MaxNodesTotal,
		fmt.Sprintf("may not be lowered (from %d): clusters may already have as many nodes as the old limit allows", *old.MaxNodesTotal))}
}
