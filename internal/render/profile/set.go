package profile

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/lifecycle"
	"github.com/profilesync/profilesync/internal/render/merge"
)

// ParentLookup finds a parent CloudProfile that is not among the objects of
// a set, for example by reading the cluster. found is false when there is no
// CloudProfile of that name; err is for lookups that failed (the caller
// retries), never for a missing parent.
type ParentLookup func(name string) (spec *v1alpha1.CloudProfileSpec, found bool, err error)

// Set is a set of profiles applied together (one revision of a repository,
// or the inputs of the CLI), validated at one time: Load or Validate make
// one, and only they, so Evaluate always works on the objects that were
// validated and at the time they were validated at. The set is valid
// exactly when Problems is empty; Warnings never make it invalid.
type Set struct {
	// Objects are the profiles in input order, as decoded.
	Objects  []Object
	Problems Problems
	Warnings Problems
	// at is the time the set was validated at, and is evaluated at.
	at time.Time
	// merged is status.cloudProfileSpec of every NamespacedCloudProfile of
	// the set that merged with its parent, by the object (not by name: a set
	// may hold the same name twice), so that Evaluate does not merge a
	// second time.
	merged map[*v1alpha1.NamespacedCloudProfile]*v1alpha1.CloudProfileSpec
	// parents are the specs of every parent the validation resolved, in
	// the set or through the lookup, for NextChange.
	parents []*v1alpha1.CloudProfileSpec
}

// MergedSpec returns status.cloudProfileSpec of ncp, an object of the set, as
// it was merged with its parent; nil when it could not be merged (Problems
// says why). The spec is shared with the set, and with later validations
// through the validation memo: copy it before changing it.
func (s *Set) MergedSpec(ncp *v1alpha1.NamespacedCloudProfile) *v1alpha1.CloudProfileSpec {
	return s.merged[ncp]
}

// Load is the one way from built documents to a set, for the CLI, the
// benchmarks and run-local: it decodes docs (DecodeDocuments) and validates
// what decoded as one set at now (Validate). Problems holds the decoding's
// problems, then the validation's. The error is only for a failed
// lookupParent.
//
// The sync alone calls the two halves itself, on purpose: what decodes
// depends on the commit only, so it keeps the decoded objects per revision
// (and gives them the ProfileSync's namespace, ApplyDefaultNamespace), while
// the set is validated again whenever the time crosses an instant its
// validation names (NextChange) or the parents on the cluster change.
func Load(docs []Document, lookupParent ParentLookup, now time.Time) (*Set, error) {
	return LoadChecked(docs, nil, lookupParent, now)
}

// LoadChecked is Load for documents whose files CheckYAMLTyping found
// typing problems in: those, the decoding's (schema, unknown fields) and the
// validation's of every object that decoded are one round of problems, so
// a mistake of one kind does not hide the others. A problem the typing check
// and the decoder both find (a keyed entry written twice) is reported once,
// as the typing check words it. A CloudProfile with a problem of either kind
// is refused, so its NamespacedCloudProfiles say their parent is invalid
// rather than missing.
func LoadChecked(docs []Document, typing Problems, lookupParent ParentLookup, now time.Time) (*Set, error) {
	objects, problems := DecodeDocuments(docs)
	problems = append(append(Problems{}, typing...), withoutRestated(problems, typing)...)
	return ValidateDecoded(objects, problems, lookupParent, now)
}

// ValidateDecoded is Validate for objects whose input also had problems
// (decodeProblems: of the typing check or the decoding): the set's problems
// are those first and then the validation's, in one round, and a
// CloudProfile they name is an invalid parent, so its NamespacedCloudProfiles
// say their parent is invalid rather than missing. The sync calls it with
// the decoding's problems of a revision.
func ValidateDecoded(objects []Object, decodeProblems Problems, lookupParent ParentLookup, now time.Time) (*Set, error) {
	set, err := validate(objects, refusedCloudProfiles(decodeProblems), lookupParent, now)
	if err != nil {
		return nil, err
	}
	set.Problems = append(append(Problems{}, decodeProblems...), set.Problems...)
	return set, nil
}

// withoutRestated returns the decoding's problems without those that
// restate a typing problem of earlier: of the same file and object, at the
// typing problem's field (a keyed entry written twice, version: 1.30 that is
// no string) or at a field that holds it (the decoder reads YAML 1.1, so to
// it labels: {usable: yes} is a map holding a boolean).
func withoutRestated(problems, earlier Problems) Problems {
	if len(earlier) == 0 {
		return problems
	}
	type at struct{ file, kind, namespace, name, field string }
	typed := make(map[at]bool, len(earlier))
	for _, e := range earlier {
		// The field and every field holding it: a.b[0] (x).c gives a.b[0] (x),
		// a.b and a.
		for path := e.Field; path != ""; path = holderOf(path) {
			typed[at{e.File, e.Kind, e.Namespace, e.Name, path}] = true
		}
	}
	var kept Problems
	for _, p := range problems {
		if p.Field == "" || !typed[at{p.File, p.Kind, p.Namespace, p.Name, p.Field}] {
			kept = append(kept, p)
		}
	}
	return kept
}

// holderOf is the field that holds the field at path: path without the last step
// (a field name or a list index with its entry's name); "" for a top-level
// field.
func holderOf(path string) string {
	cut := strings.LastIndexAny(path, ".[")
	if cut < 0 {
		return ""
	}
	// A name in parentheses after an index may hold dots: 1.30.0.
	if open := strings.LastIndex(path, " ("); open >= 0 && strings.HasSuffix(path, ")") && cut > open {
		cut = strings.LastIndex(path[:open], "[")
	}
	return path[:cut]
}

// refusedCloudProfiles are the names of the CloudProfiles problems name.
func refusedCloudProfiles(problems Problems) map[string]bool {
	refused := map[string]bool{}
	for _, p := range problems {
		if p.Kind == v1alpha1.CloudProfileKind && p.Name != "" {
			refused[p.Name] = true
		}
	}
	return refused
}

// ApplyDefaultNamespace sets namespace on every NamespacedCloudProfile that
// has none, as kubectl does with its current namespace. The sync calls it
// with the ProfileSync's namespace before Validate; the CLI does not, so
// there a namespaced profile without a namespace is a problem: which
// namespace it would land in depends on who applies it.
func ApplyDefaultNamespace(objects []Object, namespace string) {
	for _, o := range objects {
		if o.NamespacedCloudProfile != nil && o.NamespacedCloudProfile.Namespace == "" {
			o.NamespacedCloudProfile.Namespace = namespace
		}
	}
}

// Validate checks objects as one set at now and returns every problem at
// once:
//
//   - the same kind, namespace and name twice;
//   - a CloudProfile with a namespace (it is cluster-scoped), a
//     NamespacedCloudProfile without one;
//   - every rule of lifecycle.ValidateCloudProfileSpecAt for each
//     CloudProfile, with its warnings; validated at now, so that versions
//     whose supported windows overlapped only before now do not block a
//     profile, as in Gardener;
//   - for each NamespacedCloudProfile, its parent must be a CloudProfile of
//     the set or, when lookupParent is not nil, one it finds; a parent in the
//     set wins over lookupParent, because the set is what will be applied.
//     merge.NamespacedAt must accept the override; warnings of the merged spec
//     that the parent does not already have are reported under
//     status.cloudProfileSpec. The merged spec is kept in the set
//     (MergedSpec) for Evaluate;
//   - every object must fit what the API server can store once its status is
//     written, a NamespacedCloudProfile's merged spec included
//     (storedSizeProblem).
//
// The error is only for a failed lookupParent.
func Validate(objects []Object, lookupParent ParentLookup, now time.Time) (*Set, error) {
	return validate(objects, nil, lookupParent, now)
}

// validate is Validate with the CloudProfiles refused before validation
// (named in refused): they are invalid parents, whether or not they decoded.
func validate(objects []Object, refused map[string]bool, lookupParent ParentLookup, now time.Time) (*Set, error) {
	report := &Set{Objects: objects, at: now, merged: make(map[*v1alpha1.NamespacedCloudProfile]*v1alpha1.CloudProfileSpec)}
	parents := newParentIndex(objects, lookupParent, now)
	parents.refused = refused
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
			errs, warnings := validations.specAt(&o.CloudProfile.Spec, parents.ownDigest(o.CloudProfile), field.NewPath("spec"), now)
			report.Problems = append(report.Problems, o.fieldErrorProblems(errs)...)
			report.Warnings = append(report.Warnings, o.warningProblems(warnings, nil)...)
			if problem, tooLarge := storedSizeProblem(o, nil, ""); tooLarge {
				report.Problems = append(report.Problems, problem)
			}
			continue
		}

		ncp := o.NamespacedCloudProfile
		if ncp.Namespace == "" {
			report.Problems = append(report.Problems, o.problem("metadata.namespace",
				"Required value: a NamespacedCloudProfile needs a namespace"))
		}
		parent, err := parents.find(ncp.Spec.Parent.Name)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: looking up parent CloudProfile %q: %w", o.File, o.Ref(), ncp.Spec.Parent.Name, err)
		}
		if parent.invalid {
			report.Problems = append(report.Problems, o.problem("spec.parent.name",
				fmt.Sprintf("Invalid value: %q: the parent CloudProfile is invalid (see its problems), so this profile cannot be merged", ncp.Spec.Parent.Name)))
			continue
		}
		merged, errs, warnings := validations.namespacedAt(parent.spec, parent.digest, &ncp.Spec, now)
		for _, e := range merge.ExplainMissingParent(errs, parents.where()) {
			report.Problems = append(report.Problems, o.mergedProblem(parent, e.Field, e.ErrorBody()))
		}
		if len(errs) == 0 {
			report.merged[ncp] = merged
			report.Warnings = append(report.Warnings, o.mergedWarnings(parent, warnings, now)...)
		}
		if problem, tooLarge := storedSizeProblem(o, merged, parent.digest); tooLarge {
			report.Problems = append(report.Problems, problem)
		}
	}
	for _, p := range parents.found {
		if p.spec != nil {
			report.parents = append(report.parents, p.spec)
		}
	}
	return report, nil
}

// mergedWarnings returns those of the merged spec's validation warnings that
// the parent's spec does not have already: those are the parent's to fix and
// are reported there.
func (o Object) mergedWarnings(parent parent, warnings []string, now time.Time) Problems {
	if len(warnings) == 0 {
		return nil
	}
	_, parentWarnings := validations.specAt(parent.spec, parent.digest, merge.MergedSpecPath, now)
	known := make(map[string]bool, len(parentWarnings))
	for _, w := range parentWarnings {
		known[w] = true
	}
	var problems Problems
	for _, w := range warnings {
		if known[w] {
			continue
		}
		fieldPath, message := warningAt(w)
		problems = append(problems, o.mergedProblem(parent, fieldPath, message))
	}
	return problems
}

// mergedProblem returns the problem of this NamespacedCloudProfile at
// fieldPath, a field of its merged spec (status.cloudProfileSpec...) or of
// its own spec, located where the value is written: the patch that set the
// field in this profile (ProblemAt), else, when the merged spec has the
// field from the parent and a patch of an overlay set it there, that patch
// (file and entry), with the parent's file as the origin; else this
// profile's file.
func (o Object) mergedProblem(parent parent, fieldPath, message string) Problem {
	p := o.ProblemAt(fieldPath, message)
	if p.Origin != "" || parent.object == nil || len(parent.object.SetBy) == 0 ||
		merge.OverrideEntryOf(fieldPath, parent.spec, &o.NamespacedCloudProfile.Spec) != "" {
		return p
	}
	source, ok := mergedSourceOf(parent.object.SetBy, fieldPath)
	if !ok {
		return p
	}
	p.Origin, p.File, p.SetBy = parent.object.File, source.File, source.Patch
	return p
}

// warningAt splits one of lifecycle's "PATH: message" warnings; a warning
// without a path is the object's.
func warningAt(w string) (fieldPath, message string) {
	fieldPath, message, found := strings.Cut(w, ": ")
	if !found {
		return "", w
	}
	return fieldPath, message
}

// warningProblems turns lifecycle's "PATH: message" warnings into problems,
// leaving out those in skip.
func (o Object) warningProblems(warnings []string, skip map[string]bool) Problems {
	var problems Problems
	for _, w := range warnings {
		if skip[w] {
			continue
		}
		fieldPath, message := warningAt(w)
		problems = append(problems, o.problem(fieldPath, message))
	}
	return problems
}

// parent is a resolved parent CloudProfile: its spec with the API server's
// defaults, or invalid when it is in the set but fails validation.
type parent struct {
	spec    *v1alpha1.CloudProfileSpec
	invalid bool
	// object is the parent's object when it is in the set: where its
	// fields are written, patches of an overlay included (Object.SetBy).
	object *Object
	// digest is specDigest(spec): the stored sizes of its namespaced
	// profiles are remembered by it.
	digest string
}

// parentIndex resolves parent names, first among the set, then through the
// lookup, remembering every answer.
type parentIndex struct {
	inSet  map[string]*Object
	lookup ParentLookup
	found  map[string]parent
	// refused are CloudProfiles of the input refused before validation (a
	// typing or decoding problem): invalid parents even when not in the set.
	refused map[string]bool
	now     time.Time // the time parents in the set are validated at
	// ownDigests are specDigest of the set's CloudProfiles' own specs (as
	// written, without the server's defaults), by which their validation
	// is remembered; computed once per validation.
	ownDigests map[*v1alpha1.CloudProfile]string
}

// ownDigest is specDigest(&cp.Spec), computed once per validation.
func (p *parentIndex) ownDigest(cp *v1alpha1.CloudProfile) string {
	if digest, ok := p.ownDigests[cp]; ok {
		return digest
	}
	digest := specDigest(&cp.Spec)
	p.ownDigests[cp] = digest
	return digest
}

func newParentIndex(objects []Object, lookup ParentLookup, now time.Time) *parentIndex {
	index := &parentIndex{inSet: make(map[string]*Object), lookup: lookup, found: make(map[string]parent), now: now,
		ownDigests: make(map[*v1alpha1.CloudProfile]string)}
	for i := range objects {
		if cp := objects[i].CloudProfile; cp != nil {
			if _, seen := index.inSet[cp.Name]; !seen {
				index.inSet[cp.Name] = &objects[i]
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
	if p.refused[name] {
		result = parent{invalid: true}
	} else if object, ok := p.inSet[name]; ok {
		// The same rules as the CloudProfile's own validation, whose
		// outcome the memo shares: only whether there are errors counts.
		cp := object.CloudProfile
		errs, _ := validations.specAt(&cp.Spec, p.ownDigest(cp), field.NewPath("spec"), p.now)
		result = parent{spec: WithServerDefaults(&cp.Spec), invalid: len(errs) > 0, object: object}
	} else if p.lookup != nil && name != "" {
		spec, found, err := p.lookup(name)
		if err != nil {
			return parent{}, err
		}
		if found {
			result = parent{spec: WithServerDefaults(spec)}
		}
	}
	if result.spec != nil {
		result.digest = specDigest(result.spec)
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
		if image := &defaulted.MachineImages[i]; image.UpdateStrategy == nil {
			strategy := lifecycle.UpdateStrategyOrDefault(image.UpdateStrategy)
			image.UpdateStrategy = &strategy
		}
	}
	return defaulted
}

// NamespacedStatus computes the status a NamespacedCloudProfile has at now
// with the parent's spec as stored in the cluster: status.cloudProfileSpec
// (merge.Namespaced) and the classification of every version of the merged
// spec (lifecycle.Status). Conditions and observedGeneration are the
// controller's. On errors the status is empty, so the controller keeps the
// previous one. The profile is stored, so the rules judged only when it is
// written do not count (merge.NamespacedStoredAt).
func NamespacedStatus(parent *v1alpha1.CloudProfileSpec, ncp *v1alpha1.NamespacedCloudProfileSpec, now time.Time) (v1alpha1.NamespacedCloudProfileStatus, field.ErrorList) {
	merged, errs := merge.NamespacedStoredAt(parent, ncp, now)
	if len(errs) > 0 {
		return v1alpha1.NamespacedCloudProfileStatus{}, errs
	}
	return namespacedStatusOf(merged, now), nil
}

// namespacedStatusOf is the status of a NamespacedCloudProfile whose merged
// spec is merged.
func namespacedStatusOf(merged *v1alpha1.CloudProfileSpec, now time.Time) v1alpha1.NamespacedCloudProfileStatus {
	return v1alpha1.NamespacedCloudProfileStatus{
		CloudProfileSpec:      merged,
		ProfileVersionsStatus: lifecycle.Status(merged, now),
	}
}

// Evaluate returns copies of the set's objects, in the same order, with the
// status the controllers write at the time the set was validated at: for a
// CloudProfile lifecycle.Status of its spec, for a NamespacedCloudProfile the
// spec Validate merged (with its parent from the set, else from
// lookupParent, with the API server's defaults) and lifecycle.Status of that.
// Conditions and observedGeneration are left empty: they describe a cluster.
// A namespaced profile that could not be merged is left out; Problems says
// why, so evaluate only a valid set.
func (s *Set) Evaluate() []Object {
	evaluated := make([]Object, 0, len(s.Objects))
	for _, o := range s.Objects {
		if o.CloudProfile != nil {
			cp := o.CloudProfile.DeepCopy()
			cp.Status = v1alpha1.CloudProfileStatus{ProfileVersionsStatus: lifecycle.Status(&cp.Spec, s.at)}
			evaluated = append(evaluated, Object{File: o.File, SetBy: o.SetBy, CloudProfile: cp})
			continue
		}
		merged := s.MergedSpec(o.NamespacedCloudProfile)
		if merged == nil {
			continue
		}
		ncp := o.NamespacedCloudProfile.DeepCopy()
		ncp.Status = namespacedStatusOf(merged.DeepCopy(), s.at)
		evaluated = append(evaluated, Object{File: o.File, SetBy: o.SetBy, NamespacedCloudProfile: ncp})
	}
	return evaluated
}

// EffectiveSpec returns the spec the lifecycle rules apply to: a CloudProfile's own
// spec, or for a NamespacedCloudProfile its merged status.cloudProfileSpec
// (nil before Evaluate).
func (o Object) EffectiveSpec() *v1alpha1.CloudProfileSpec {
	if o.NamespacedCloudProfile != nil {
		return o.NamespacedCloudProfile.Status.CloudProfileSpec
	}
	return &o.CloudProfile.Spec
}
