package lifecycle

import (
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// updateStrategies are the update strategies a machine image may declare
// (docs/semantics.md §2), in the order error messages list them.
var updateStrategies = []v1alpha1.MachineImageUpdateStrategy{
	v1alpha1.UpdateStrategyPatch,
	v1alpha1.UpdateStrategyMinor,
	v1alpha1.UpdateStrategyMajor,
}

// UpdateStrategyOrDefault returns the declared update strategy of a machine
// image, or major when none is declared (docs/semantics.md §2).
//
// major is the default the API server writes into a stored CloudProfile. It is
// applied again wherever a spec may not have been through the API server: a
// profile read from files, an image a NamespacedCloudProfile adds, and the
// update paths of a spec as written; so a spec reads the same whether or not
// the default was written out.
func UpdateStrategyOrDefault(declared *v1alpha1.MachineImageUpdateStrategy) v1alpha1.MachineImageUpdateStrategy {
	if declared == nil {
		return v1alpha1.UpdateStrategyMajor
	}
	return *declared
}

// ValidateUpdateStrategy refuses a declared update strategy other than patch,
// minor and major (docs/semantics.md §2); an undeclared one is valid, it means
// UpdateStrategyOrDefault's major. fldPath is the path of the updateStrategy
// field itself.
func ValidateUpdateStrategy(declared *v1alpha1.MachineImageUpdateStrategy, fldPath *field.Path) field.ErrorList {
	if declared == nil || slices.Contains(updateStrategies, *declared) {
		return nil
	}
	return field.ErrorList{field.NotSupported(fldPath, *declared, updateStrategies)}
}
