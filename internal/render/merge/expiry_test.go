package merge

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/lifecycle"
)

// TestMergeExpiryKeepsEveryLifecycleValid enumerates every valid parent
// lifecycle over four instants and every well-formed override of it, and
// checks what the neighbour rule promises: the merged lifecycle is valid
// (docs/semantics.md §2) and every override stage starts exactly where the override
// says, so moving one stage never undoes another override.
func TestMergeExpiryKeepsEveryLifecycleValid(t *testing.T) {
	instants := []*metav1.Time{
		date("2024-01-01T00:00:00Z"), date("2025-01-01T00:00:00Z"),
		date("2026-01-01T00:00:00Z"), date("2027-01-01T00:00:00Z"),
	}
	merges := 0
	for _, parentStages := range validLifecycles(instants[1:3]) {
		parent := v1alpha1.ExpirableVersion{Version: "1.30.0", Lifecycle: parentStages}
		for _, overrideStages := range overridesOf(parentStages, instants) {
			override := v1alpha1.ExpirableVersion{Version: "1.30.0", Lifecycle: overrideStages}
			merged, errs := mergeExpiry(parent, override, field.NewPath("spec"), "local")
			merges++
			if len(errs) > 0 {
				t.Fatalf("override %s of %s: unexpected errors %v", describe(overrideStages), describe(parentStages), errs)
			}
			if invalid := lifecycle.ValidateExpirableVersion(merged, field.NewPath("merged")); len(invalid) > 0 {
				t.Fatalf("override %s of %s merged into invalid %s: %v",
					describe(overrideStages), describe(parentStages), describe(merged.Lifecycle), invalid)
			}
			for _, o := range overrideStages {
				for _, m := range merged.Lifecycle {
					if m.Classification == o.Classification && !m.StartTime.Equal(o.StartTime) {
						t.Fatalf("override %s of %s: %s starts at %s in the result %s",
							describe(overrideStages), describe(parentStages), o.Classification, m.StartTime, describe(merged.Lifecycle))
					}
				}
			}
		}
		for _, expires := range instants {
			override := v1alpha1.ExpirableVersion{Version: "1.30.0", ExpirationDate: expires}
			merged, errs := mergeExpiry(parent, override, field.NewPath("spec"), "local")
			merges++
			if len(errs) > 0 {
				t.Fatalf("expirationDate %s on %s: unexpected errors %v", expires, describe(parentStages), errs)
			}
			if invalid := lifecycle.ValidateExpirableVersion(merged, field.NewPath("merged")); len(invalid) > 0 {
				t.Fatalf("expirationDate %s on %s merged into invalid %s: %v", expires, describe(parentStages), describe(merged.Lifecycle), invalid)
			}
		}
	}
	if merges < 1000 {
		t.Fatalf("only %d merges enumerated; the generator is broken", merges)
	}
}

// validLifecycles returns every lifecycle with stages in rank order whose
// first stage may lack a start and whose starts, taken from instants, do not
// decrease.
func validLifecycles(instants []*metav1.Time) [][]v1alpha1.LifecycleStage {
	var all [][]v1alpha1.LifecycleStage
	for _, classes := range stageSubsets() {
		var build func(i int, previous int, acc []v1alpha1.LifecycleStage)
		build = func(i int, previous int, acc []v1alpha1.LifecycleStage) {
			if i == len(classes) {
				all = append(all, copyStages(acc))
				return
			}
			if i == 0 {
				build(i+1, 0, append(acc, v1alpha1.LifecycleStage{Classification: classes[i]}))
			}
			for k := previous; k < len(instants); k++ {
				build(i+1, k, append(acc, v1alpha1.LifecycleStage{Classification: classes[i], StartTime: instants[k]}))
			}
		}
		build(0, 0, nil)
	}
	return all
}

// overridesOf returns every non-empty selection of the parent's stages with
// non-decreasing starts taken from instants.
func overridesOf(parent []v1alpha1.LifecycleStage, instants []*metav1.Time) [][]v1alpha1.LifecycleStage {
	var all [][]v1alpha1.LifecycleStage
	for mask := 1; mask < 1<<len(parent); mask++ {
		var classes []v1alpha1.VersionClassification
		for i, s := range parent {
			if mask&(1<<i) != 0 {
				classes = append(classes, s.Classification)
			}
		}
		var build func(i, previous int, acc []v1alpha1.LifecycleStage)
		build = func(i, previous int, acc []v1alpha1.LifecycleStage) {
			if i == len(classes) {
				all = append(all, copyStages(acc))
				return
			}
			for k := previous; k < len(instants); k++ {
				build(i+1, k, append(acc, v1alpha1.LifecycleStage{Classification: classes[i], StartTime: instants[k]}))
			}
		}
		build(0, 0, nil)
	}
	return all
}

// stageSubsets returns every non-empty subset of the declarable stages, in rank order.
func stageSubsets() [][]v1alpha1.VersionClassification {
	var declarable []v1alpha1.VersionClassification
	for _, c := range []v1alpha1.VersionClassification{unavailable, preview, supported, deprecated, expired} {
		if lifecycle.IsDeclarableStage(c) {
			declarable = append(declarable, c)
		}
	}
	var subsets [][]v1alpha1.VersionClassification
	for mask := 1; mask < 1<<len(declarable); mask++ {
		var subset []v1alpha1.VersionClassification
		for i, c := range declarable {
			if mask&(1<<i) != 0 {
				subset = append(subset, c)
			}
		}
		subsets = append(subsets, subset)
	}
	return subsets
}

func describe(stages []v1alpha1.LifecycleStage) string {
	s := "["
	for i, st := range stages {
		if i > 0 {
			s += ", "
		}
		s += string(st.Classification)
		if st.StartTime != nil {
			s += "@" + st.StartTime.UTC().Format("2006")
		}
	}
	return s + "]"
}
