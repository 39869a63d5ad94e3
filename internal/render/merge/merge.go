package merge

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/lifecycle"
)

// Namespaced renders status.cloudProfileSpec of a NamespacedCloudProfile:
// the parent's spec with the namespaced profile's overrides applied, exactly as
// docs/semantics.md §3 describes.
//
// The result starts as a deep copy of parent; neither input is modified and
// the result shares no memory with them. Entries keep the parent's order and
// entries only the override has are appended in the override's order (GEP-25's
// rendering example lists some added entries first; docs/semantics.md §3 decides).
// type, regions and providerConfig always come from the parent.
//
//   - Kubernetes versions: every override must name a parent version; it must
//     set expirationDate or lifecycle start times (an override setting
//     neither changes nothing and is refused, as in Gardener), never
//     classification. The
//     lifecycles are merged in lifecycle form: each override stage replaces
//     the start S of the parent's stage of the same classification (a stage
//     the parent lacks is an error), an expirationDate sets the expired stage
//     (adding it when absent), and the parent's other stages move so order
//     holds: lower-rank stages starting after S move back to S, higher-rank
//     stages starting before S or without a start move forward to S.
//   - Machine images: images the parent lacks are appended whole; for a parent
//     image the override may change updateStrategy, override the expiry of
//     existing versions exactly like Kubernetes versions, and append versions.
//     As in Gardener, an override of an existing version may not set cri,
//     architectures, capabilityFlavors or kubeletVersionConstraint at all,
//     not even to the parent's value; each is an error naming the field (an
//     empty value counts as not set).
//   - Machine and volume types replace the parent's entry of the same name in
//     place or are appended.
//   - caBundle is the parent's bundle followed by the override's, which must
//     start with a PEM certificate as a CloudProfile's does.
//
// Decisions where docs/semantics.md §3 and the GEPs are silent:
//   - Form of a merged version. A version no override touches keeps the
//     parent's form. An expirationDate override of a parent version that does
//     not use lifecycle stays in the deprecated form (the parent's
//     classification, the new expirationDate), as GEP-25's rendering example
//     shows. Every other override writes the merged stages as lifecycle and
//     drops classification and expirationDate, which may not be combined with
//     it.
//   - An override stage must carry a startTime (leaving a stage out keeps the
//     parent's start; "no start" would mean "always", which only a first
//     stage can mean). Override stages must themselves be well formed: no
//     stage twice, in rank order, start times not decreasing, no unavailable
//     stage; otherwise the result would depend on the order they are listed.
//   - Overrides of existing machine-image versions may not set classification
//     either, as for Kubernetes versions. inPlaceUpdates, which Gardener does
//     not forbid, may repeat the parent's value but not change it.
//   - An added image without updateStrategy gets major, the default the API
//     server gives every CloudProfile image, and added versions need no cri
//     or architectures, as in a CloudProfile. Gardener refuses all three,
//     since it defaults them only on a CloudProfile (ours: docs/lifecycle.md,
//     "Where we differ from Gardener"). An added image needs at least one
//     version, checked here under spec.machineImages[i].versions; everything
//     else about added images and versions is checked by the validation of
//     the merged spec.
//   - The same name or version twice in one override list is an error
//     (Duplicate), not "last one wins".
//   - caBundle: a newline is put between the bundles when the parent's does
//     not already end in one, so two PEM blocks never run into each other; an
//     unset or empty bundle on either side leaves the other unchanged.
//   - spec.parent must have kind CloudProfile and a name; a nil parent means
//     the caller could not find it and is reported as spec.parent.name not
//     found.
//
// Problems in the override are reported under spec.… paths of the
// NamespacedCloudProfile (for example "spec.kubernetes.versions[0].version:
// Not found: \"1.99.0\": Kubernetes version not in parent CloudProfile
// \"aws\""), all of them, not only the first. Only when there are none is the
// merged spec validated with lifecycle.ValidateCloudProfileSpec (all of
// docs/semantics.md §2); its errors are reported under status.cloudProfileSpec.…, so a
// user can tell a mistake in their override from a conflict in the merged
// result, such as an expirationDate on the parent's highest Kubernetes
// version. Validation warnings are not returned: callers that want them pass
// the merged spec to lifecycle.ValidateCloudProfileSpec themselves.
//
// When there is any error the merged spec is nil, so callers keep the previous
// status.cloudProfileSpec rather than publish a half-merged profile.
//
// The merged spec is validated at no particular time
// (lifecycle.ValidateCloudProfileSpec); NamespacedAt validates it at a
// given time.
func Namespaced(parent *v1alpha1.CloudProfileSpec, ncp *v1alpha1.NamespacedCloudProfileSpec) (*v1alpha1.CloudProfileSpec, field.ErrorList) {
	return NamespacedAt(parent, ncp, time.Time{})
}

// NamespacedAt is Namespaced with the merged spec validated at now
// (lifecycle.ValidateCloudProfileSpecAt), so that versions whose supported
// windows overlapped only before now do not block it, as in Gardener.
func NamespacedAt(parent *v1alpha1.CloudProfileSpec, ncp *v1alpha1.NamespacedCloudProfileSpec, now time.Time) (*v1alpha1.CloudProfileSpec, field.ErrorList) {
	merged, errs, _ := NamespacedWithWarnings(parent, ncp, now)
	return merged, errs
}

// ExplainMissingParent completes Namespaced's bare "Not found" of
// spec.parent.name, which knows only that it was given no parent, with where
// the caller looked for it (for example "in the cluster"), so that a missing
// parent is worded the same by every caller. It changes errs in place and
// returns it.
func ExplainMissingParent(errs field.ErrorList, where string) field.ErrorList {
	for _, e := range errs {
		if e.Type == field.ErrorTypeNotFound && e.Field == "spec.parent.name" && e.Detail == "" {
			e.Detail = "no CloudProfile of that name " + where
		}
	}
	return errs
}

// NamespacedWithWarnings is NamespacedAt that also returns the validation
// warnings of the merged spec (at status.cloudProfileSpec paths), so that
// profile.Validate can report them without validating the merged spec again.
func NamespacedWithWarnings(parent *v1alpha1.CloudProfileSpec, ncp *v1alpha1.NamespacedCloudProfileSpec, now time.Time) (*v1alpha1.CloudProfileSpec, field.ErrorList, []string) {
	return namespacedWithWarnings(parent, ncp, now, false)
}

// NamespacedStoredAt is NamespacedAt for a namespaced profile the API server
// already holds, as the status controller merges it: the rules judged only
// at the moment of a write (lifecycle.WithoutWriteTimeRules) do not hold it
// back when time has moved on since.
func NamespacedStoredAt(parent *v1alpha1.CloudProfileSpec, ncp *v1alpha1.NamespacedCloudProfileSpec, now time.Time) (*v1alpha1.CloudProfileSpec, field.ErrorList) {
	merged, errs, _ := namespacedWithWarnings(parent, ncp, now, true)
	return merged, errs
}

func namespacedWithWarnings(parent *v1alpha1.CloudProfileSpec, ncp *v1alpha1.NamespacedCloudProfileSpec, now time.Time, stored bool) (*v1alpha1.CloudProfileSpec, field.ErrorList, []string) {
	merged, errs, addedErrs := mergeAndCheckAdded(parent, ncp, now)
	if len(errs) > 0 {
		return nil, append(errs, addedErrs...), nil
	}
	validationErrs, warnings := lifecycle.ValidateCloudProfileSpecAt(asGardenerCreatesIt(merged, parent, ncp, now), MergedSpecPath, now)
	if stored {
		validationErrs = lifecycle.WithoutWriteTimeRules(validationErrs)
	}
	for _, e := range validationErrs {
		if from := OverrideEntryOf(e.Field, parent, ncp); from != "" {
			e.Detail += " (from " + from + ")"
		}
	}
	// What an added image or version lacks is reported with the merged
	// spec's problems, in the same round.
	if validationErrs = append(addedErrs, validationErrs...); len(validationErrs) > 0 {
		return nil, validationErrs, nil
	}
	for i, w := range warnings {
		if at, message, ok := strings.Cut(w, ": "); ok {
			if from := OverrideEntryOf(at, parent, ncp); from != "" {
				warnings[i] = at + ": " + message + " (from " + from + ")"
			}
		}
	}
	return merged, nil, warnings
}

// asGardenerCreatesIt returns the merged spec Gardener validates when the
// namespaced profile is created at now: its API server drops every version
// of a NamespacedCloudProfile that is expired at that moment before it
// validates (dropInactiveVersions in PrepareForCreate, gardener/gardener#10910),
// so an override of a parent's Kubernetes version whose expirationDate (or
// expired stage) has passed leaves the parent's version as it is, and is
// accepted even on the parent's highest version. (An image version's
// override changes no verdict of ours when it is expired, so only
// Kubernetes versions are judged without it.) The merged spec itself,
// which the status shows, keeps the override as Git writes it (the version
// shown expired, docs/lifecycle.md item 7); only the verdict is Gardener's.
// An update of a live object that already has the override is the business
// of CheckNamespacedChange, as in Gardener. At no particular time (a zero
// now) nothing is dropped. The entries replaced keep their places, so every
// problem's path names the merged spec's entry as it is.
func asGardenerCreatesIt(merged, parent *v1alpha1.CloudProfileSpec, ncp *v1alpha1.NamespacedCloudProfileSpec, now time.Time) *v1alpha1.CloudProfileSpec {
	if now.IsZero() {
		return merged
	}
	expiredAt := func(v v1alpha1.ExpirableVersion) bool {
		return lifecycle.ClassificationAt(v, now) == v1alpha1.ClassificationExpired
	}
	judged := *merged
	kubernetesCloned := false
	if ncp.Kubernetes != nil {
		for _, o := range ncp.Kubernetes.Versions {
			at := slices.IndexFunc(judged.Kubernetes.Versions, func(v v1alpha1.ExpirableVersion) bool { return v.Version == o.Version })
			from := slices.IndexFunc(parent.Kubernetes.Versions, func(v v1alpha1.ExpirableVersion) bool { return v.Version == o.Version })
			if at < 0 || from < 0 || !expiredAt(o) {
				continue
			}
			if !kubernetesCloned {
				judged.Kubernetes.Versions = slices.Clone(merged.Kubernetes.Versions)
				kubernetesCloned = true
			}
			judged.Kubernetes.Versions[at] = parent.Kubernetes.Versions[from]
		}
	}
	return &judged
}

// mergedEntry matches a path into the merged spec that names an entry of one
// of the lists an override can change: its list and key, and for an image's
// versions the version (lifecycle.EntryPath writes the keys).
var mergedEntry = regexp.MustCompile(`^status\.cloudProfileSpec\.(kubernetes\.versions|machineImages|machineTypes|volumeTypes|limits)(?:\[[0-9]+\] \(([^)]*)\))?(?:\.versions\[[0-9]+\] \(([^)]*)\))?`)

// OverrideEntryOf returns the path of the entry of the namespaced profile's
// spec that put the merged spec's field at mergedPath there, when there is
// one: the override of the same Kubernetes version, machine image (version),
// machine or volume type, or spec.limits. Entries the merged spec has only
// from the parent give "": a problem of such a field is the parent's to fix
// (profile.Validate names the patch that set it in the parent).
func OverrideEntryOf(mergedPath string, parent *v1alpha1.CloudProfileSpec, ncp *v1alpha1.NamespacedCloudProfileSpec) string {
	match := mergedEntry.FindStringSubmatch(mergedPath)
	if match == nil {
		return ""
	}
	list, key, version := match[1], match[2], match[3]
	spec := field.NewPath("spec")
	switch list {
	case "kubernetes.versions":
		if ncp.Kubernetes == nil {
			return ""
		}
		for i, v := range ncp.Kubernetes.Versions {
			if v.Version == key {
				return lifecycle.EntryPath(spec.Child("kubernetes"), "versions", i, key).String()
			}
		}
	case "machineImages":
		for i, image := range ncp.MachineImages {
			if image.Name != key {
				continue
			}
			imagePath := lifecycle.EntryPath(spec, "machineImages", i, key)
			for j, v := range image.Versions {
				if version != "" && v.Version == version {
					return lifecycle.EntryPath(imagePath, "versions", j, version).String()
				}
			}
			// Image-level fields come from the override; so does everything
			// of an image the parent does not have.
			inParent := slices.ContainsFunc(parent.MachineImages, func(p v1alpha1.MachineImage) bool { return p.Name == key })
			if version == "" || !inParent {
				return imagePath.String()
			}
		}
	case "machineTypes":
		for i, t := range ncp.MachineTypes {
			if t.Name == key {
				return lifecycle.EntryPath(spec, "machineTypes", i, key).String()
			}
		}
	case "volumeTypes":
		for i, t := range ncp.VolumeTypes {
			if t.Name == key {
				return lifecycle.EntryPath(spec, "volumeTypes", i, key).String()
			}
		}
	case "limits":
		if ncp.Limits != nil {
			return spec.Child("limits").String()
		}
	}
	return ""
}

// VersionKey is the field that names a version, the key of every list of
// versions.
const VersionKey = "version"

// MergedSpecPath is where a NamespacedCloudProfile shows its merged spec;
// problems of the merged spec are reported there.
var MergedSpecPath = field.NewPath("status", "cloudProfileSpec")

// mergeOverrides is Namespaced without the final validation of the merged
// spec. It returns the merged spec even when there are errors so that tests can
// look at it; Namespaced never hands such a spec out.
// What an added image or version lacks (addedVersionFields) is not among
// its errors: Gardener checks that on the merged spec, and so does
// NamespacedWithWarnings.
func mergeOverrides(parent *v1alpha1.CloudProfileSpec, ncp *v1alpha1.NamespacedCloudProfileSpec) (*v1alpha1.CloudProfileSpec, field.ErrorList) {
	merged, errs, _ := mergeAndCheckAdded(parent, ncp, time.Time{})
	return merged, errs
}

// mergeAndCheckAdded is mergeOverrides with the errors of what an added image
// or version lacks (addedVersionFields) apart, so that they do not keep the
// merged spec from being validated. now is the moment of validation
// (droppedOnCreate); zero for none.
func mergeAndCheckAdded(parent *v1alpha1.CloudProfileSpec, ncp *v1alpha1.NamespacedCloudProfileSpec, now time.Time) (*v1alpha1.CloudProfileSpec, field.ErrorList, field.ErrorList) {
	specPath := field.NewPath("spec")
	if ncp == nil {
		return nil, field.ErrorList{field.Required(specPath, "the NamespacedCloudProfile has no spec")}, nil
	}
	errs := validateParentReference(ncp.Parent, specPath.Child("parent"))
	if parent == nil {
		return nil, append(errs, field.NotFound(specPath.Child("parent", "name"), ncp.Parent.Name)), nil
	}
	if len(errs) > 0 {
		return nil, errs, nil
	}

	m := &merge{
		parentName: ncp.Parent.Name,
		spec:       parent.DeepCopy(),
		now:        now,
	}
	override := ncp.DeepCopy()

	if override.Kubernetes != nil {
		m.mergeKubernetes(override.Kubernetes.Versions, specPath.Child("kubernetes"))
	}
	m.mergeMachineImages(override.MachineImages, specPath)
	m.spec.MachineTypes = mergeNamed(m, m.spec.MachineTypes, override.MachineTypes,
		func(t v1alpha1.MachineType) string { return t.Name }, specPath, "machineTypes")
	m.spec.VolumeTypes = mergeNamed(m, m.spec.VolumeTypes, override.VolumeTypes,
		func(t v1alpha1.VolumeType) string { return t.Name }, specPath, "volumeTypes")
	// Only the first certificate of the merged bundle is the parent's, so the
	// override's own bundle is checked where it is written.
	m.errs = append(m.errs, lifecycle.ValidateCABundle(override.CABundle, specPath.Child("caBundle"))...)
	m.spec.CABundle = concatCABundles(m.spec.CABundle, override.CABundle)
	m.mergeLimits(override.Limits, specPath.Child("limits"))

	return m.spec, m.errs, m.addedErrs
}

// merge carries the spec being built and the errors found so far, so that
// every problem of an override is reported at once, not only the first.
type merge struct {
	parentName string
	spec       *v1alpha1.CloudProfileSpec
	errs       field.ErrorList
	// addedErrs are what added images and versions lack that Gardener
	// requires (addedVersionFields); the merged spec is still validated.
	addedErrs field.ErrorList
	// now is the moment of validation, zero for none (droppedOnCreate).
	now time.Time
}

// droppedOnCreate reports whether Gardener's API server drops the added
// version v before it validates a NamespacedCloudProfile created at m.now:
// it drops every version that is expired then (dropInactiveVersions,
// gardener/gardener#10910), so what such a version lacks is not refused.
// The merged spec keeps the version as Git writes it (docs/lifecycle.md
// item 7). At no particular time nothing is dropped.
func (m *merge) droppedOnCreate(v v1alpha1.ExpirableVersion) bool {
	return !m.now.IsZero() && lifecycle.ClassificationAt(v, m.now) == v1alpha1.ClassificationExpired
}

// notInParent reports an override entry that must name something the parent
// has. The value is repeated in the message because NotFound alone would not
// say what was searched.
func (m *merge) notInParent(fldPath *field.Path, value, what string) {
	m.errs = append(m.errs, &field.Error{
		Type:     field.ErrorTypeNotFound,
		Field:    fldPath.String(),
		BadValue: value,
		Detail:   fmt.Sprintf("%s not in parent CloudProfile %q", what, m.parentName),
	})
}

func validateParentReference(ref v1alpha1.CloudProfileReference, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ref.Kind != v1alpha1.CloudProfileKind {
		errs = append(errs, field.NotSupported(fldPath.Child("kind"), ref.Kind, []string{v1alpha1.CloudProfileKind}))
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(fldPath.Child("name"), "the parent CloudProfile must be named"))
	}
	return errs
}

// mergeKubernetes applies expiry overrides to the parent's Kubernetes
// versions. Every override must name a parent version: a namespaced profile
// may keep a version around longer, never introduce one (GEP-25 non-goal).
// kubernetesPath is spec.kubernetes.
func (m *merge) mergeKubernetes(overrides []v1alpha1.ExpirableVersion, kubernetesPath *field.Path) {
	versionOf := func(v v1alpha1.ExpirableVersion) string { return v.Version }
	mergeByKey(m, m.spec.Kubernetes.Versions, versionOf, overrides, versionOf, VersionKey, kubernetesPath, "versions",
		func(o v1alpha1.ExpirableVersion, path *field.Path, parentIndex int) {
			if parentIndex < 0 {
				m.notInParent(path.Child("version"), o.Version, "Kubernetes version")
				return
			}
			errs := expiryRequired(o, path)
			merged, expiryErrs := mergeExpiry(m.spec.Kubernetes.Versions[parentIndex], o, path, m.parentName)
			errs = append(errs, expiryErrs...)
			m.errs = append(m.errs, errs...)
			if len(errs) == 0 {
				m.spec.Kubernetes.Versions[parentIndex] = merged
			}
		})
}

// mergeMachineImages applies image overrides: new images are appended whole;
// for a parent image the override may set updateStrategy, override the
// expiry of existing versions and append new versions. specPath is spec.
func (m *merge) mergeMachineImages(overrides []v1alpha1.NamespacedMachineImage, specPath *field.Path) {
	mergeByKey(m, m.spec.MachineImages, func(image v1alpha1.MachineImage) string { return image.Name },
		overrides, func(o v1alpha1.NamespacedMachineImage) string { return o.Name }, "name", specPath, "machineImages",
		func(o v1alpha1.NamespacedMachineImage, path *field.Path, parentIndex int) {
			if errs := lifecycle.ValidateUpdateStrategy(o.UpdateStrategy, path.Child("updateStrategy")); len(errs) > 0 {
				m.errs = append(m.errs, errs...)
				return
			}
			if parentIndex < 0 {
				m.appendMachineImage(o, path)
				return
			}
			image := &m.spec.MachineImages[parentIndex]
			if o.UpdateStrategy != nil {
				image.UpdateStrategy = o.UpdateStrategy
			}
			m.mergeMachineImageVersions(image, o.Versions, path)
		})
}

// appendMachineImage adds an image the parent does not have. It must stand on
// its own like any image of a CloudProfile; apart from the version count,
// which is checked here to point at the override, the validation of the
// merged spec reports what is wrong with it.
//
// Its updateStrategy must be written, as Gardener requires: the API server
// defaults it for a CloudProfile's image, not for a NamespacedCloudProfile's.
func (m *merge) appendMachineImage(o v1alpha1.NamespacedMachineImage, fldPath *field.Path) {
	if len(o.Versions) == 0 {
		m.errs = append(m.errs, field.Required(fldPath.Child("versions"),
			fmt.Sprintf("machine image %q is not in parent CloudProfile %q, so it is added and needs at least one version", o.Name, m.parentName)))
		return
	}
	// Gardener drops an added image whose versions are all dropped and
	// which sets no updateStrategy, so nothing of it is refused.
	allDropped := !slices.ContainsFunc(o.Versions, func(v v1alpha1.MachineImageVersion) bool { return !m.droppedOnCreate(v.ExpirableVersion) })
	if o.UpdateStrategy == nil && !allDropped {
		m.addedErrs = append(m.addedErrs, field.Required(fldPath.Child("updateStrategy"), "must provide an update strategy"))
	}
	for i, v := range o.Versions {
		m.addedErrs = append(m.addedErrs, m.addedVersionFields(v, lifecycle.EntryPath(fldPath, "versions", i, v.Version))...)
	}
	m.spec.MachineImages = append(m.spec.MachineImages, v1alpha1.MachineImage(o))
}

// addedVersionFields refuses a machine image version a namespaced profile
// adds (to a parent's image or with an image of its own) without what
// Gardener requires of it: Gardener's API server defaults cri (containerd)
// and architectures (amd64) for a CloudProfile's versions only, never for a
// NamespacedCloudProfile's, and then refuses a merged version without a
// container runtime interface, or without an architecture when the parent
// defines no machineCapabilities (validateContainerRuntimesInterfaces and
// validateCloudProfileMachineImages in Gardener's
// pkg/apis/core/validation/cloudprofile.go, on the simulated merge of the
// namespacedcloudprofile validator plugin). path is the version's entry in the
// namespaced profile's spec, so the error names what to edit. A version
// Gardener drops when the profile is created (droppedOnCreate) is not
// refused.
func (m *merge) addedVersionFields(v v1alpha1.MachineImageVersion, path *field.Path) field.ErrorList {
	if m.droppedOnCreate(v.ExpirableVersion) {
		return nil
	}
	var errs field.ErrorList
	if len(v.CRI) == 0 {
		errs = append(errs, field.Required(path.Child("cri"), "must provide at least one supported container runtime"))
	}
	if len(v.Architectures) == 0 && len(m.spec.MachineCapabilities) == 0 {
		errs = append(errs, field.Required(path.Child("architectures"), "must provide at least one architecture"))
	}
	return errs
}

// mergeMachineImageVersions merges the override's versions of one parent
// image: a version the image has may change only its expiry; other versions
// are appended in override order. imagePath is the override image's path.
func (m *merge) mergeMachineImageVersions(image *v1alpha1.MachineImage, overrides []v1alpha1.MachineImageVersion, imagePath *field.Path) {
	versionOf := func(v v1alpha1.MachineImageVersion) string { return v.Version }
	mergeByKey(m, image.Versions, versionOf, overrides, versionOf, VersionKey, imagePath, "versions",
		func(o v1alpha1.MachineImageVersion, path *field.Path, parentIndex int) {
			if parentIndex < 0 {
				m.addedErrs = append(m.addedErrs, m.addedVersionFields(o, path)...)
				image.Versions = append(image.Versions, o)
				return
			}
			parentVersion := image.Versions[parentIndex]
			errs := extendedVersionFields(parentVersion, o, path)
			errs = append(errs, expiryRequired(o.ExpirableVersion, path)...)
			merged, expiryErrs := mergeExpiry(parentVersion.ExpirableVersion, o.ExpirableVersion, path, m.parentName)
			errs = append(errs, expiryErrs...)
			m.errs = append(m.errs, errs...)
			if len(errs) == 0 {
				image.Versions[parentIndex].ExpirableVersion = merged
			}
		})
}

// mergeNamed replaces the parent's entries by the override's entry of the same
// name, in place, and appends entries with new names in override order. The
// override's entries are the list field list below parent.
func mergeNamed[T any](m *merge, parentEntries, overrides []T, nameOf func(T) string, parent *field.Path, list string) []T {
	merged := parentEntries
	mergeByKey(m, parentEntries, nameOf, overrides, nameOf, "name", parent, list, func(o T, _ *field.Path, parentIndex int) {
		if parentIndex < 0 {
			merged = append(merged, o)
			return
		}
		merged[parentIndex] = o
	})
	return merged
}

// mergeByKey matches each override entry, in override order, with the
// parent's entry of the same key (a name or a version) and hands it to apply
// with its path (the list field list below parent, the entry named by its
// key: lifecycle.EntryPath) and the parent entry's index, or -1 when the
// parent has none. The index is into parentEntries as passed, so apply may
// append to that list; what it appends is never matched. When the parent
// lists a key twice, the later entry is the one matched.
//
// Two override entries with the same key are an error, a Duplicate at
// list[i].<keyField>, and the later one is not applied: which one should
// win is not something to guess.
func mergeByKey[P, O any](m *merge,
	parentEntries []P, parentKey func(P) string,
	overrides []O, overrideKey func(O) string, keyField string, parent *field.Path, list string,
	apply func(o O, path *field.Path, parentIndex int),
) {
	indexOf := make(map[string]int, len(parentEntries))
	for i, e := range parentEntries {
		indexOf[parentKey(e)] = i
	}
	seen := make(map[string]bool, len(overrides))
	for i, o := range overrides {
		key := overrideKey(o)
		path := lifecycle.EntryPath(parent, list, i, key)
		if seen[key] {
			m.errs = append(m.errs, field.Duplicate(path.Child(keyField), key))
			continue
		}
		seen[key] = true
		parentIndex, ok := indexOf[key]
		if !ok {
			parentIndex = -1
		}
		apply(o, path, parentIndex)
	}
}

// mergeLimits applies the override's limits. As in Gardener, a limit the
// override sets replaces the parent's; the parent's limit is a ceiling, so an
// override may only make it more restrictive.
func (m *merge) mergeLimits(override *v1alpha1.Limits, fldPath *field.Path) {
	if override == nil {
		return
	}
	if errs := lifecycle.ValidateLimits(override, fldPath); len(errs) > 0 {
		m.errs = append(m.errs, errs...)
		return
	}
	if override.MaxNodesTotal == nil {
		return
	}
	if m.spec.Limits != nil && m.spec.Limits.MaxNodesTotal != nil && *override.MaxNodesTotal > *m.spec.Limits.MaxNodesTotal {
		m.errs = append(m.errs, field.Forbidden(fldPath.Child("maxNodesTotal"),
			fmt.Sprintf("may only be more restrictive than parent CloudProfile %q's maxNodesTotal (%d)", m.parentName, *m.spec.Limits.MaxNodesTotal)))
		return
	}
	if m.spec.Limits == nil {
		m.spec.Limits = &v1alpha1.Limits{}
	}
	m.spec.Limits.MaxNodesTotal = override.MaxNodesTotal
}

// concatCABundles returns the parent's bundle followed by the override's. An
// unset or empty bundle on either side leaves the other as it is.
func concatCABundles(parent, override *string) *string {
	if override == nil || *override == "" {
		return parent
	}
	if parent == nil || *parent == "" {
		return override
	}
	separator := ""
	if !strings.HasSuffix(*parent, "\n") {
		separator = "\n"
	}
	joined := *parent + separator + *override
	return &joined
}
