package render

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/lifecycle"
)

// ParentLookup finds a parent CloudProfile that is not among the objects of
// a set, for example by reading the cluster. found is false when there is no
// CloudProfile of that name; err is for lookups that failed (the caller
// retries), never for a missing parent.
type ParentLookup func(name string) (spec *v1alpha1.CloudProfileSpec, found bool, err error)

// Report is the outcome of ValidateSet: the set is valid exactly when
// Problems is empty. Warnings never make it invalid.
type Report struct {
	Problems Problems
	Warnings Problems
}

// ApplyDefaultNamespace sets namespace on every NamespacedCloudProfile that
// has none, as kubectl does with its current namespace. The sync calls it
// with the ProfileSync's namespace before ValidateSet; the CLI does not, so
// there a namespaced profile without a namespace is a problem: which
// namespace it would land in depends on who applies it.
func ApplyDefaultNamespace(objects []Object, namespace string) {
	for _, o := range objects {
		if o.NamespacedCloudProfile != nil && o.NamespacedCloudProfile.Namespace == "" {
			o.NamespacedCloudProfile.Namespace = namespace
		}
	}
}

// ValidateSet checks a set of profiles that is applied together (one
// revision of a repository, or the inputs of the CLI) and returns every
// problem at once:
//
//   - the same kind, namespace and name twice;
//   - a CloudProfile with a namespace (it is cluster-scoped), a
//     NamespacedCloudProfile without one;
//   - every rule of lifecycle.ValidateCloudProfileSpec for each CloudProfile,
//     with its warnings;
//   - for each NamespacedCloudProfile, its parent must be a CloudProfile of
//     the set or, when lookupParent is not nil, one it finds; a parent in the
//     set wins over lookupParent, because the set is what will be applied.
//     MergeNamespaced must accept the override; warnings of the merged spec
//     that the parent does not already have are reported under
//     status.cloudProfileSpec.
//
// The error is only for a failed lookupParent.
func ValidateSet(objects []Object, lookupParent ParentLookup) (Report, error) {
	var report Report
	parents := newParentIndex(objects, lookupParent)
	firstIndexOf := make(map[string]int, len(objects))
	for i, o := range objects {
		key := o.Ref()
		if first, seen := firstIndexOf[key]; seen {
			report.Problems = append(report.Problems, o.problem("metadata.name",
				fmt.Sprintf("Duplicate value: %q: %s is defined twice, first in %s", o.Name(), key, objects[first].File)))
			continue
		}
		firstIndexOf[key] = i

		if o.CloudProfile != nil {
			if o.CloudProfile.Namespace != "" {
				report.Problems = append(report.Problems, o.problem("metadata.namespace",
					fmt.Sprintf("Forbidden: a CloudProfile is cluster-scoped and has no namespace (remove %q)", o.CloudProfile.Namespace)))
			}
			errs, warnings := lifecycle.ValidateCloudProfileSpec(&o.CloudProfile.Spec, field.NewPath("spec"))
			report.Problems = append(report.Problems, o.fieldErrorProblems(errs)...)
			report.Warnings = append(report.Warnings, o.warningProblems(warnings, nil)...)
			continue
		}

		ncp := o.NamespacedCloudProfile
		if ncp.Namespace == "" {
			report.Problems = append(report.Problems, o.problem("metadata.namespace",
				"Required value: a NamespacedCloudProfile needs a namespace"))
		}
		parent, err := parents.find(ncp.Spec.Parent.Name)
		if err != nil {
			return Report{}, fmt.Errorf("%s: %s: looking up parent CloudProfile %q: %w", o.File, o.Ref(), ncp.Spec.Parent.Name, err)
		}
		if parent.invalid {
			report.Problems = append(report.Problems, o.problem("spec.parent.name",
				fmt.Sprintf("Invalid value: %q: the parent CloudProfile is invalid (see its problems), so this profile cannot be merged", ncp.Spec.Parent.Name)))
			continue
		}
		_, errs := MergeNamespaced(parent.spec, &ncp.Spec)
		report.Problems = append(report.Problems, o.fieldErrorProblems(explainMissingParent(errs, parents.where()))...)
		if len(errs) == 0 {
			report.Warnings = append(report.Warnings, o.mergedWarnings(parent.spec, &ncp.Spec)...)
		}
	}
	return report, nil
}

// mergedWarnings returns the validation warnings of the merged spec that the
// parent's spec does not have already: those are the parent's to fix and are
// reported there.
func (o Object) mergedWarnings(parent *v1alpha1.CloudProfileSpec, ncp *v1alpha1.NamespacedCloudProfileSpec) Problems {
	merged, errs := MergeNamespaced(parent, ncp)
	if len(errs) > 0 {
		return nil
	}
	mergedPath := field.NewPath("status", "cloudProfileSpec")
	_, parentWarnings := lifecycle.ValidateCloudProfileSpec(parent, mergedPath)
	_, warnings := lifecycle.ValidateCloudProfileSpec(merged, mergedPath)
	known := make(map[string]bool, len(parentWarnings))
	for _, w := range parentWarnings {
		known[w] = true
	}
	return o.warningProblems(warnings, known)
}

// warningProblems turns lifecycle's "PATH: message" warnings into problems,
// leaving out those in skip.
func (o Object) warningProblems(warnings []string, skip map[string]bool) Problems {
	var problems Problems
	for _, w := range warnings {
		if skip[w] {
			continue
		}
		fieldPath, message, found := strings.Cut(w, ": ")
		if !found {
			fieldPath, message = "", w
		}
		problems = append(problems, o.problem(fieldPath, message))
	}
	return problems
}

// explainMissingParent adds to MergeNamespaced's bare "Not found" of the
// parent's name where the parent was looked for.
func explainMissingParent(errs field.ErrorList, where string) field.ErrorList {
	for _, e := range errs {
		if e.Type == field.ErrorTypeNotFound && e.Field == "spec.parent.name" && e.Detail == "" {
			e.Detail = "no CloudProfile of that name " + where
		}
	}
	return errs
}

// parent is a resolved parent CloudProfile: its spec with the API server's
// defaults, or invalid when it is in the set but fails validation.
type parent struct {
	spec    *v1alpha1.CloudProfileSpec
	invalid bool
}

// parentIndex resolves parent names, first among the set, then through the
// lookup, remembering every answer.
type parentIndex struct {
	inSet  map[string]*v1alpha1.CloudProfile
	lookup ParentLookup
	found  map[string]parent
}

func newParentIndex(objects []Object, lookup ParentLookup) *parentIndex {
	index := &parentIndex{inSet: make(map[string]*v1alpha1.CloudProfile), lookup: lookup, found: make(map[string]parent)}
	for _, o := range objects {
		if o.CloudProfile != nil {
			if _, seen := index.inSet[o.CloudProfile.Name]; !seen {
				index.inSet[o.CloudProfile.Name] = o.CloudProfile
			}
		}
	}
	return index
}

// where says where parents are looked for, for messages.
func (p *parentIndex) where() string {
	if p.lookup == nil {
		return "among the input profiles"
	}
	return "among the input profiles or in the cluster"
}

// find returns the parent called name; a missing parent has a nil spec.
func (p *parentIndex) find(name string) (parent, error) {
	if found, ok := p.found[name]; ok {
		return found, nil
	}
	var result parent
	if cp, ok := p.inSet[name]; ok {
		errs, _ := lifecycle.ValidateCloudProfileSpec(&cp.Spec, nil)
		result = parent{spec: WithServerDefaults(&cp.Spec), invalid: len(errs) > 0}
	} else if p.lookup != nil && name != "" {
		spec, found, err := p.lookup(name)
		if err != nil {
			return parent{}, err
		}
		if found {
			result = parent{spec: WithServerDefaults(spec)}
		}
	}
	p.found[name] = result
	return result, nil
}

// WithServerDefaults returns a copy of spec with the defaults the API server
// writes into a stored CloudProfile (a machine image's updateStrategy is
// major when unset). The controllers merge namespaced profiles with the
// parent as stored, so the CLI and the sync merge with the same defaults to
// compute the same status.cloudProfileSpec; the sync also compares Git with
// the cluster through it, so an unset default is not taken for drift.
func WithServerDefaults(spec *v1alpha1.CloudProfileSpec) *v1alpha1.CloudProfileSpec {
	if spec == nil {
		return nil
	}
	defaulted := spec.DeepCopy()
	for i := range defaulted.MachineImages {
		if defaulted.MachineImages[i].UpdateStrategy == nil {
			major := v1alpha1.UpdateStrategyMajor
			defaulted.MachineImages[i].UpdateStrategy = &major
		}
	}
	return defaulted
}

// NamespacedStatus computes the status a NamespacedCloudProfile has at now
// with the parent's spec as stored in the cluster: status.cloudProfileSpec
// (MergeNamespaced) and the classification of every version of the merged
// spec (lifecycle.Status). Conditions and observedGeneration are the
// controller's. On errors the status is empty, so the controller keeps the
// previous one.
func NamespacedStatus(parent *v1alpha1.CloudProfileSpec, ncp *v1alpha1.NamespacedCloudProfileSpec, now time.Time) (v1alpha1.NamespacedCloudProfileStatus, field.ErrorList) {
	merged, errs := MergeNamespaced(parent, ncp)
	if len(errs) > 0 {
		return v1alpha1.NamespacedCloudProfileStatus{}, errs
	}
	return v1alpha1.NamespacedCloudProfileStatus{
		CloudProfileSpec:      merged,
		ProfileVersionsStatus: lifecycle.Status(merged, now),
	}, nil
}

// EvaluateSet returns copies of objects, in the same order, with the status
// the controllers write at now: for a CloudProfile lifecycle.Status of its
// spec, for a NamespacedCloudProfile NamespacedStatus with its parent (from
// the set, else lookupParent, with the API server's defaults). Conditions and
// observedGeneration are left empty: they describe a cluster.
//
// Run ValidateSet first; a namespaced profile that cannot be merged here is
// reported as a problem and left out of the result.
func EvaluateSet(objects []Object, lookupParent ParentLookup, now time.Time) ([]Object, Problems, error) {
	parents := newParentIndex(objects, lookupParent)
	evaluated := make([]Object, 0, len(objects))
	var problems Problems
	for _, o := range objects {
		if o.CloudProfile != nil {
			cp := o.CloudProfile.DeepCopy()
			cp.Status = v1alpha1.CloudProfileStatus{ProfileVersionsStatus: lifecycle.Status(&cp.Spec, now)}
			evaluated = append(evaluated, Object{File: o.File, CloudProfile: cp})
			continue
		}
		ncp := o.NamespacedCloudProfile.DeepCopy()
		parent, err := parents.find(ncp.Spec.Parent.Name)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %s: looking up parent CloudProfile %q: %w", o.File, o.Ref(), ncp.Spec.Parent.Name, err)
		}
		status, errs := NamespacedStatus(parent.spec, &ncp.Spec, now)
		if len(errs) > 0 {
			problems = append(problems, o.fieldErrorProblems(explainMissingParent(errs, parents.where()))...)
			continue
		}
		ncp.Status = status
		evaluated = append(evaluated, Object{File: o.File, NamespacedCloudProfile: ncp})
	}
	return evaluated, problems, nil
}

// EffectiveSpec returns the spec the lifecycle rules apply to: a CloudProfile's own
// spec, or for a NamespacedCloudProfile its merged status.cloudProfileSpec
// (nil before EvaluateSet).
func (o Object) EffectiveSpec() *v1alpha1.CloudProfileSpec {
	if o.NamespacedCloudProfile != nil {
		return o.NamespacedCloudProfile.Status.CloudProfileSpec
	}
	return &o.CloudProfile.Spec
}
