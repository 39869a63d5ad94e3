package merge

import (
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/lifecycle"
)

// onlyExpiryDetail is the message for an override that tries to change more
// than a version's expiry.
const onlyExpiryDetail = "must equal the parent's version or be left out: a namespaced profile may change only expirationDate or lifecycle start times of a version its parent has"

// mergeExpiry applies an expiry override to a version of the parent
// (docs/semantics.md §3). fldPath is the override version's path in the
// NamespacedCloudProfile; errors name it.
//
// The override may set expirationDate (deprecated API) or lifecycle start
// times, not both, and never classification: a namespaced profile moves a
// version through its stages at other times, it does not change which stages
// there are.
//
// The merge works in lifecycle form (lifecycle.Stages): each override stage
// replaces the start time S of the parent's stage with the same
// classification. An override stage the parent lacks is an error (ours;
// Gardener ignores it), except that an expirationDate sets the expired stage
// and adds it when the parent has none. Then the parent's other stages move
// so the order stays valid: a stage of lower rank starting after S starts at
// S, a stage of higher rank starting before S (or without a start) starts at
// S. Override stages are applied in rank order, so a later stage's move never
// undoes an earlier override.
//
// Where the spec is silent:
//   - An override stage without a startTime is accepted, as Gardener accepts
//     it, when the parent's stage of that classification has none either: it
//     says what the parent says and changes nothing. When the parent's stage
//     has a start, it is refused: "no start" would mean "always", which would
//     silently pull the stage back to the beginning of time, and leaving the
//     stage out is how an override keeps the parent's start.
//   - Override stages must themselves be a well-formed lifecycle fragment:
//     no stage twice, rank order, start times not decreasing. Otherwise the
//     result would depend on the order they are listed in.
//   - Form of the result: an expirationDate override of a parent version that
//     does not use lifecycle stays in the deprecated form (the parent's
//     classification, the new expirationDate), which is what GEP-25's
//     rendering example shows. Every other override writes the merged stages
//     as lifecycle and drops classification and expirationDate, since the
//     two forms may not be combined. A version no override touches keeps the
//     parent's form.
func mergeExpiry(parent, override v1alpha1.ExpirableVersion, fldPath *field.Path, parentName string) (v1alpha1.ExpirableVersion, field.ErrorList) {
	var errs field.ErrorList
	if override.Classification != nil {
		errs = append(errs, field.Forbidden(fldPath.Child("classification"),
			"a namespaced profile may not change a version's classification; override expirationDate or lifecycle start times instead"))
	}
	if len(override.Lifecycle) > 0 && override.ExpirationDate != nil {
		errs = append(errs, field.Forbidden(fldPath.Child("expirationDate"),
			"may not be combined with lifecycle; use an expired lifecycle stage"))
	}
	if len(errs) > 0 {
		return parent, errs
	}

	switch {
	case override.ExpirationDate != nil && len(parent.Lifecycle) == 0:
		merged := *parent.DeepCopy()
		merged.ExpirationDate = override.ExpirationDate.DeepCopy()
		return merged, nil
	case override.ExpirationDate != nil:
		stages := moveStage(copyStages(parent.Lifecycle), v1alpha1.ClassificationExpired, *override.ExpirationDate)
		return lifecycleVersion(parent.Version, stages), nil
	case len(override.Lifecycle) > 0:
		stages := copyStages(lifecycle.Stages(parent))
		errs := validateOverrideStages(override.Lifecycle, stages, fldPath.Child("lifecycle"), parent.Version, parentName)
		if len(errs) > 0 {
			return parent, errs
		}
		moved := false
		for _, s := range override.Lifecycle {
			if s.StartTime != nil { // a stage without one repeats the parent's, which has none either
				stages = moveStage(stages, s.Classification, *s.StartTime)
				moved = true
			}
		}
		if !moved {
			return parent, nil
		}
		return lifecycleVersion(parent.Version, stages), nil
	}
	return parent, nil
}

// validateOverrideStages checks the override's lifecycle against itself and
// against the parent's stages, collecting every problem.
func validateOverrideStages(overrides, parentStages []v1alpha1.LifecycleStage, fldPath *field.Path, version, parentName string) field.ErrorList {
	var errs field.ErrorList
	seen := make(map[v1alpha1.VersionClassification]bool, len(overrides))
	previousRank := -1
	var previousStart *metav1.Time
	for i, s := range overrides {
		path := fldPath.Index(i)
		rank := lifecycle.Rank(s.Classification)
		switch {
		case !lifecycle.IsDeclarableStage(s.Classification):
			errs = append(errs, lifecycle.StageNotDeclarable(path.Child("classification"), s.Classification))
			continue
		case seen[s.Classification]:
			errs = append(errs, field.Duplicate(path.Child("classification"), s.Classification))
			continue
		case !hasStage(parentStages, s.Classification):
			errs = append(errs, &field.Error{
				Type:     field.ErrorTypeNotFound,
				Field:    path.Child("classification").String(),
				BadValue: string(s.Classification),
				Detail: fmt.Sprintf("version %q of parent CloudProfile %q has no %s stage; a namespaced profile may move stages, not add them",
					version, parentName, s.Classification),
			})
		case rank < previousRank:
			errs = append(errs, field.Invalid(path.Child("classification"), s.Classification,
				"lifecycle stages must be in the order preview, supported, deprecated, expired"))
		}
		seen[s.Classification] = true
		if rank > previousRank {
			previousRank = rank
		}
		if s.StartTime == nil {
			if start, _ := StageStart(parentStages, s.Classification); start != nil {
				errs = append(errs, field.Required(path.Child("startTime"),
					fmt.Sprintf("the parent's %s stage starts at %s, and an override stage without startTime would mean it always applied; "+
						"set the start time, or leave the stage out to keep the parent's", s.Classification, start.UTC().Format(time.RFC3339))))
			}
			continue
		}
		if previousStart != nil && s.StartTime.Before(previousStart) {
			errs = append(errs, field.Invalid(path.Child("startTime"), s.StartTime,
				fmt.Sprintf("may not be before the start of the previous stage (%s)", previousStart.UTC().Format(time.RFC3339))))
		}
		previousStart = s.StartTime
	}
	return errs
}

func hasStage(stages []v1alpha1.LifecycleStage, c v1alpha1.VersionClassification) bool {
	return slices.ContainsFunc(stages, func(s v1alpha1.LifecycleStage) bool { return s.Classification == c })
}

// moveStage sets the start of stage c to start, inserting the stage at its
// rank position when the lifecycle lacks it, and then moves the other stages
// so that start times do not decrease in rank order: lower-rank stages that
// start after start move back to it, higher-rank stages that start before it
// or have no start move forward to it.
func moveStage(stages []v1alpha1.LifecycleStage, c v1alpha1.VersionClassification, start metav1.Time) []v1alpha1.LifecycleStage {
	rank := lifecycle.Rank(c)
	at := slices.IndexFunc(stages, func(s v1alpha1.LifecycleStage) bool { return s.Classification == c })
	if at < 0 {
		at = slices.IndexFunc(stages, func(s v1alpha1.LifecycleStage) bool { return lifecycle.Rank(s.Classification) > rank })
		if at < 0 {
			at = len(stages)
		}
		stages = slices.Insert(stages, at, v1alpha1.LifecycleStage{Classification: c})
	}
	for i := range stages {
		other := lifecycle.Rank(stages[i].Classification)
		switch {
		case i == at:
			stages[i].StartTime = start.DeepCopy()
		case other < rank && stages[i].StartTime != nil && stages[i].StartTime.After(start.Time):
			stages[i].StartTime = start.DeepCopy()
		case other > rank && (stages[i].StartTime == nil || stages[i].StartTime.Before(&start)):
			stages[i].StartTime = start.DeepCopy()
		}
	}
	return stages
}

func copyStages(stages []v1alpha1.LifecycleStage) []v1alpha1.LifecycleStage {
	copied := make([]v1alpha1.LifecycleStage, len(stages))
	for i := range stages {
		stages[i].DeepCopyInto(&copied[i])
	}
	return copied
}

func lifecycleVersion(version string, stages []v1alpha1.LifecycleStage) v1alpha1.ExpirableVersion {
	return v1alpha1.ExpirableVersion{Version: version, Lifecycle: stages}
}

// extendedVersionFields checks that an override of an existing
// machine-image version sets none of the fields Gardener forbids on it: cri,
// architectures, capabilityFlavors and kubeletVersionConstraint, even when
// they equal the parent's ("must not provide … to an extended machine
// image"). As in Gardener, each counts as set only when it is not empty, so
// kubeletVersionConstraint: "" passes and changes nothing. inPlaceUpdates,
// which Gardener does not list, may repeat the parent's value but not change
// it.
func extendedVersionFields(parent, override v1alpha1.MachineImageVersion, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	forbid := func(set bool, name string) {
		if set {
			errs = append(errs, field.Forbidden(fldPath.Child(name), extendedVersionDetail))
		}
	}
	forbid(len(override.CRI) > 0, "cri")
	forbid(len(override.Architectures) > 0, "architectures")
	forbid(len(override.CapabilityFlavors) > 0, "capabilityFlavors")
	forbid(override.KubeletVersionConstraint != nil && *override.KubeletVersionConstraint != "", "kubeletVersionConstraint")
	if override.InPlaceUpdates != nil && !equality.Semantic.DeepEqual(override.InPlaceUpdates, parent.InPlaceUpdates) {
		errs = append(errs, field.Forbidden(fldPath.Child("inPlaceUpdates"), onlyExpiryDetail))
	}
	return errs
}

// extendedVersionDetail is the message for a field an override of a parent's
// image version may not set at all.
const extendedVersionDetail = "may not be set on an override of a version its parent has, not even to the parent's value: " +
	"a namespaced profile may change only expirationDate or lifecycle start times of such a version, and keeps the rest from the parent"

// expiryRequired refuses an override of a parent's version that changes
// nothing: without expirationDate or lifecycle it is a silent no-op whose
// author believes something is in effect. Gardener refuses it too. A
// classification is refused on its own by mergeExpiry.
func expiryRequired(override v1alpha1.ExpirableVersion, fldPath *field.Path) field.ErrorList {
	if override.ExpirationDate != nil || len(override.Lifecycle) > 0 || override.Classification != nil {
		return nil
	}
	return field.ErrorList{field.Required(fldPath.Child("expirationDate"),
		fmt.Sprintf("an override of the parent's version %s must set expirationDate or lifecycle; without either it changes nothing (leave the version out to keep the parent's)", override.Version))}
}

// StageStart is the start of the first stage c in stages (nil when it has
// none); found is false when there is no such stage.
func StageStart(stages []v1alpha1.LifecycleStage, c v1alpha1.VersionClassification) (start *time.Time, found bool) {
	for _, s := range stages {
		if s.Classification != c {
			continue
		}
		if s.StartTime == nil {
			return nil, true
		}
		t := s.StartTime.Time
		return &t, true
	}
	return nil, false
}
