package lifecycle

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// kubernetesVersionPattern is the only form a Kubernetes version may take:
// MAJOR.MINOR.PATCH, digits only, no "v" prefix and no pre-release.
var kubernetesVersionPattern = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`)

// declarableClassifications may be written as the deprecated classification
// field. expired is expressed by expirationDate and unavailable is derived.
var declarableClassifications = []string{
	string(v1alpha1.ClassificationPreview),
	string(v1alpha1.ClassificationSupported),
	string(v1alpha1.ClassificationDeprecated),
}

// declarableStages are the classifications a lifecycle may list, in rank
// order; unavailable is derived (every stage starts in the future), never
// declared.
var declarableStages = []v1alpha1.VersionClassification{
	v1alpha1.ClassificationPreview,
	v1alpha1.ClassificationSupported,
	v1alpha1.ClassificationDeprecated,
	v1alpha1.ClassificationExpired,
}

// IsDeclarableStage reports whether a lifecycle may list a stage of
// classification c (docs/semantics.md §2): preview, supported, deprecated or expired.
func IsDeclarableStage(c v1alpha1.VersionClassification) bool {
	return slices.Contains(declarableStages, c)
}

// StageNotDeclarable is the error for a lifecycle stage whose classification
// IsDeclarableStage refuses; it lists the classifications that may be
// declared. fldPath is the stage's classification field.
func StageNotDeclarable(fldPath *field.Path, c v1alpha1.VersionClassification) *field.Error {
	return field.NotSupported(fldPath, c, declarableStages)
}

var architectures = []string{"amd64", "arm64"}

// defaultArchitecture is what Gardener takes a machine type or image version
// of a profile without machineCapabilities to be built for when it names no
// architecture.
const defaultArchitecture = "amd64"

// EntryPath is the path of the i-th entry of the list field list below
// parent, naming the entry by key (its name or version) as the user wrote it:
// spec.kubernetes.versions[3] (1.33.7). The index alone is hard to find in a
// long list, and after a kustomize build it is the index in the built output,
// not in any file. An empty key gives the plain path, list[i].
func EntryPath(parent *field.Path, list string, i int, key string) *field.Path {
	if key == "" {
		return parent.Child(list).Index(i)
	}
	// Concatenated, not formatted: every version of every profile gets a
	// path at every validation: 16.8 -> 14.9 ms per 600-version profile
	// (BenchmarkValidateCloudProfileSpec).
	return parent.Child(list + "[" + strconv.Itoa(i) + "] (" + key + ")")
}

// versionsField is the JSON name of every list of versions in a profile.
const versionsField = "versions"

// listPath is a list field of a profile, so that its entries' paths can name
// them (EntryPath).
type listPath struct {
	parent *field.Path
	name   string
}

func (l listPath) path() *field.Path { return l.parent.Child(l.name) }

func (l listPath) entry(i int, key string) *field.Path { return EntryPath(l.parent, l.name, i, key) }

// ValidateCloudProfileSpec is ValidateCloudProfileSpecAt at no particular
// time: every supported window counts towards "one supported version per
// minor", however long ago it ended. Callers that know the time use
// ValidateCloudProfileSpecAt, so that versions that are no longer supported
// do not block a profile, as in Gardener.
func ValidateCloudProfileSpec(spec *v1alpha1.CloudProfileSpec, fldPath *field.Path) (errs field.ErrorList, warnings []string) {
	return ValidateCloudProfileSpecAt(spec, fldPath, time.Time{})
}

// ValidateCloudProfileSpecAt checks spec against every validation rule of
// docs/lifecycle.md that a single profile can break. All errors are
// collected, each with its field path below fldPath (for example
// spec.kubernetes.versions[3].lifecycle[1].startTime); a nil fldPath gives
// paths relative to the spec. warnings are "PATH: message" strings for rules
// that do not reject the profile.
//
// Two rules depend on now. "One supported version per minor": as in
// Gardener, it applies to versions while they are supported, so versions
// whose supported windows overlapped only before now are fine, and an
// unending supported stage overlapping another is refused for a version
// supported at now. And the bastion's image version must be supported at now
// (validateBastion), as Gardener requires. Everything else is independent of the time: a version that is already expired when first
// applied is accepted, as Gardener accepts it (gardener/gardener#8297), and
// the update rules that need the live object are ValidateUpdate and, for a
// namespaced profile, merge.CheckNamespacedChange.
//
// The namespaced merge runs this on the merged spec, so the messages name the
// rule and the versions involved rather than assuming the reader wrote them.
func ValidateCloudProfileSpecAt(spec *v1alpha1.CloudProfileSpec, fldPath *field.Path, now time.Time) (errs field.ErrorList, warnings []string) {
	if spec == nil {
		return field.ErrorList{field.Required(fldPath, "a cloud profile spec is required")}, nil
	}
	if spec.Type == "" {
		errs = append(errs, field.Required(fldPath.Child("type"), "the provider type is required"))
	}
	kubernetesErrs, kubernetesWarnings := validateKubernetesVersions(spec.Kubernetes.Versions, listPath{fldPath.Child("kubernetes"), versionsField}, now)
	errs = append(errs, kubernetesErrs...)
	warnings = append(warnings, kubernetesWarnings...)

	errs = append(errs, validateRequiredLists(spec, fldPath)...)
	imageErrs, imageWarnings := validateMachineImages(spec.MachineImages, fldPath, now)
	errs = append(errs, imageErrs...)
	warnings = append(warnings, imageWarnings...)
	errs = append(errs, validateGardenerFields(spec, fldPath, now)...)
	errs = append(errs, ValidateMachineTypes(spec.MachineTypes, fldPath)...)
	errs = append(errs, ValidateVolumeTypes(spec.VolumeTypes, fldPath)...)
	errs = append(errs, ValidateCABundle(spec.CABundle, fldPath.Child("caBundle"))...)
	return errs, warnings
}

// validateRequiredLists refuses a profile without a machine image, a machine
// type or a region, as Gardener does: clusters could not be created from it.
// An empty list counts as missing. A namespaced profile's merged spec takes
// regions from its parent and machine images and types from both, so the
// rule applies to it as it is written here. specPath is the spec's path.
func validateRequiredLists(spec *v1alpha1.CloudProfileSpec, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(spec.MachineImages) == 0 {
		errs = append(errs, field.Required(specPath.Child("machineImages"), "must provide at least one machine image"))
	}
	if len(spec.MachineTypes) == 0 {
		errs = append(errs, field.Required(specPath.Child("machineTypes"), "must provide at least one machine type"))
	}
	if len(spec.Regions) == 0 {
		errs = append(errs, field.Required(specPath.Child("regions"), "must provide at least one region"))
	}
	return errs
}

// ValidateExpirableVersion checks the classification rules of one version on
// its own (docs/semantics.md §2): the deprecated classification is preview, supported
// or deprecated; lifecycle is not combined with classification or
// expirationDate; and the lifecycle's stages are declarable, appear once, are
// in rank order, omit startTime only on the first stage, and never go back in
// time. fldPath is the version's path. Rules that compare versions with each
// other are left to ValidateCloudProfileSpec.
func ValidateExpirableVersion(v v1alpha1.ExpirableVersion, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if v.Classification != nil {
		classificationPath := fldPath.Child("classification")
		switch c := *v.Classification; c {
		case v1alpha1.ClassificationPreview, v1alpha1.ClassificationSupported, v1alpha1.ClassificationDeprecated:
		case v1alpha1.ClassificationExpired:
			errs = append(errs, field.Invalid(classificationPath, c,
				"expired may not be written as a classification: set expirationDate, or use lifecycle with an expired stage"))
		case v1alpha1.ClassificationUnavailable:
			errs = append(errs, field.Invalid(classificationPath, c,
				"unavailable may not be written as a classification: use lifecycle with stages that start in the future"))
		default:
			errs = append(errs, field.NotSupported(classificationPath, c, declarableClassifications))
		}
	}
	if len(v.Lifecycle) == 0 {
		return errs
	}
	if v.Classification != nil {
		errs = append(errs, field.Forbidden(fldPath.Child("classification"),
			"may not be combined with lifecycle: express the classification as a lifecycle stage"))
	}
	if v.ExpirationDate != nil {
		errs = append(errs, field.Forbidden(fldPath.Child("expirationDate"),
			"may not be combined with lifecycle: add an expired stage instead"))
	}
	return append(errs, validateLifecycle(v.Lifecycle, fldPath)...)
}

// validateLifecycle checks the stages of the version at versionPath. Paths
// are built only for errors: this runs for every version of a profile.
func validateLifecycle(stages []v1alpha1.LifecycleStage, versionPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	pathOf := func(i int, child string) *field.Path { return versionPath.Child("lifecycle").Index(i).Child(child) }
	seenAt := [5]int{-1, -1, -1, -1, -1} // index of the stage of each rank
	highestRank, highestAt := -1, -1
	lastStartAt := -1
	for i, stage := range stages {
		rank := Rank(stage.Classification)
		switch {
		case stage.Classification == v1alpha1.ClassificationUnavailable:
			errs = append(errs, field.Invalid(pathOf(i, "classification"), stage.Classification,
				"unavailable is derived (every stage starts in the future) and may not be declared"))
		case !IsDeclarableStage(stage.Classification):
			errs = append(errs, StageNotDeclarable(pathOf(i, "classification"), stage.Classification))
		case seenAt[rank] >= 0:
			errs = append(errs, field.Duplicate(pathOf(i, "classification"), stage.Classification))
		case rank < highestRank:
			errs = append(errs, field.Invalid(pathOf(i, "classification"), stage.Classification,
				fmt.Sprintf("stages must be in the order preview, supported, deprecated, expired, but %s comes after %s (lifecycle[%d])",
					stage.Classification, stages[highestAt].Classification, highestAt)))
		}
		if rank >= 0 {
			if seenAt[rank] < 0 {
				seenAt[rank] = i
			}
			if rank > highestRank {
				highestRank, highestAt = rank, i
			}
		}

		if stage.StartTime == nil {
			if i > 0 {
				errs = append(errs, field.Required(pathOf(i, "startTime"),
					"only the first lifecycle stage may omit startTime"))
			}
			continue
		}
		if lastStartAt >= 0 && stage.StartTime.Time.Before(stages[lastStartAt].StartTime.Time) {
			errs = append(errs, field.Invalid(pathOf(i, "startTime"), stage.StartTime.Time.UTC().Format(time.RFC3339),
				fmt.Sprintf("start times may not decrease: lifecycle[%d] (%s) starts at %s",
					lastStartAt, stages[lastStartAt].Classification, stages[lastStartAt].StartTime.Time.UTC().Format(time.RFC3339))))
		}
		lastStartAt = i
	}
	return errs
}

// parsedVersion is a version of a list with its semver, for the rules that
// compare versions of one list with each other.
type parsedVersion struct {
	index   int
	version *semver.Version
}

func validateKubernetesVersions(versions []v1alpha1.ExpirableVersion, list listPath, now time.Time) (field.ErrorList, []string) {
	var errs field.ErrorList
	if len(versions) == 0 {
		return field.ErrorList{field.Required(list.path(), "at least one Kubernetes version is required")}, nil
	}

	firstIndexOf := make(map[string]int, len(versions))
	parsed := make([]parsedVersion, 0, len(versions))
	for i := range versions {
		v := &versions[i]
		versionPath := list.entry(i, v.Version)
		switch first, seen := firstIndexOf[v.Version]; {
		case !kubernetesVersionPattern.MatchString(v.Version):
			errs = append(errs, field.Invalid(versionPath.Child("version"), v.Version,
				"a Kubernetes version must be MAJOR.MINOR.PATCH, digits only (regex "+kubernetesVersionPattern.String()+")"))
		case seen:
			errs = append(errs, field.Duplicate(versionPath.Child("version"),
				fmt.Sprintf("%s (also versions[%d])", v.Version, first)))
		default:
			firstIndexOf[v.Version] = i
			// The pattern guarantees the strict form; an error is only possible
			// for numbers beyond uint64, which then take no part in the
			// comparisons below.
			if sv, err := semver.StrictNewVersion(v.Version); err == nil {
				parsed = append(parsed, parsedVersion{index: i, version: sv})
			} else {
				errs = append(errs, field.Invalid(versionPath.Child("version"), v.Version, err.Error()))
			}
		}
		errs = append(errs, ValidateExpirableVersion(*v, versionPath)...)
	}

	errs = append(errs, validateHighestKubernetesVersion(versions, parsed, list)...)
	supportedErrs, warnings := validateOneSupportedPerMinor(expirableAt(versions), parsed, list, now)
	return append(errs, supportedErrs...), warnings
}

// validateHighestKubernetesVersion rejects an expiry on the highest Kubernetes
// version by semver, preview and future (unavailable) versions included:
// clusters on it would have nowhere to be forced to.
func validateHighestKubernetesVersion(versions []v1alpha1.ExpirableVersion, parsed []parsedVersion, list listPath) field.ErrorList {
	if len(parsed) == 0 {
		return nil
	}
	highest := parsed[0]
	for _, p := range parsed[1:] {
		if p.version.GreaterThan(highest.version) {
			highest = p
		}
	}
	v := &versions[highest.index]
	versionPath := list.entry(highest.index, v.Version)
	var errs field.ErrorList
	if v.ExpirationDate != nil {
		errs = append(errs, field.Forbidden(versionPath.Child("expirationDate"),
			fmt.Sprintf("%s is the highest Kubernetes version and may not expire: clusters must always have a version to move to", v.Version)))
	}
	if n := len(v.Lifecycle); n > 0 && v.Lifecycle[n-1].Classification == v1alpha1.ClassificationExpired {
		errs = append(errs, field.Forbidden(versionPath.Child("lifecycle").Index(n-1).Child("classification"),
			fmt.Sprintf("%s is the highest Kubernetes version and its lifecycle may not end in expired: clusters must always have a version to move to", v.Version)))
	}
	return errs
}

// supportedWindow is the time during which a version's declared supported
// stage is current: [start, end). A zero start means since always, a zero end
// means forever.
type supportedWindow struct {
	parsedVersion
	start, end   time.Time
	hasLifecycle bool
}

// endsAfter reports whether the window is not over at now: a version is
// supported at now or will be.
func (w supportedWindow) endsAfter(now time.Time) bool {
	return w.end.IsZero() || w.end.After(now)
}

// overlapEndsAfter reports whether the overlap of two overlapping windows is
// not over at now.
func (w supportedWindow) overlapEndsAfter(o supportedWindow, now time.Time) bool {
	return w.endsAfter(now) && o.endsAfter(now)
}

func (w supportedWindow) overlaps(o supportedWindow) bool {
	startsBeforeOtherEnds := o.end.IsZero() || w.start.Before(o.end)
	otherStartsBeforeEnd := w.end.IsZero() || o.start.Before(w.end)
	return startsBeforeOtherEnds && otherStartsBeforeEnd
}

// reachingFurther returns whichever of a and b ends later (a zero end is
// forever); a may be nil.
func reachingFurther(a, b *supportedWindow) *supportedWindow {
	if a == nil || (!a.end.IsZero() && (b.end.IsZero() || b.end.After(a.end))) {
		return b
	}
	return a
}

func (w supportedWindow) String() string {
	from, until := "always", "forever"
	if !w.start.IsZero() {
		from = w.start.UTC().Format(time.RFC3339)
	}
	if !w.end.IsZero() {
		until = w.end.UTC().Format(time.RFC3339)
	}
	return "[" + from + ", " + until + ")"
}

// declaredSupportedWindow returns v's supported window, if v declares a
// supported classification: a supported lifecycle stage, or the deprecated
// classification field set to supported (until expirationDate).
//
// A version with neither lifecycle nor classification is not counted even
// though its status reads supported: Gardener counts only versions whose
// classification field says supported, and counting defaults would reject
// profiles Gardener accepts (most profiles list several unclassified patches
// of a minor). A window that is empty because a later stage starts at the
// same instant is not returned: that supported stage is never current.
func declaredSupportedWindow(v *v1alpha1.ExpirableVersion) (start, end time.Time, ok bool) {
	if len(v.Lifecycle) == 0 {
		if v.Classification == nil || *v.Classification != v1alpha1.ClassificationSupported {
			return time.Time{}, time.Time{}, false
		}
		if v.ExpirationDate != nil {
			end = v.ExpirationDate.Time
		}
		return time.Time{}, end, end.IsZero() || end.After(start)
	}
	for i, stage := range v.Lifecycle {
		if stage.Classification != v1alpha1.ClassificationSupported {
			continue
		}
		if stage.StartTime != nil {
			start = stage.StartTime.Time
		}
		for _, later := range v.Lifecycle[i+1:] {
			if later.StartTime != nil {
				end = later.StartTime.Time
				break
			}
		}
		return start, end, end.IsZero() || end.After(start)
	}
	return time.Time{}, time.Time{}, false
}

// validateOneSupportedPerMinor applies "one supported version per minor" to
// one list of versions at now. versionAt gives the list's i-th version.
//
// As in Gardener, a version using the deprecated API whose classification
// field says supported is an error when another version of its major.minor
// is supported at the same time and that time is not over at now: another
// such deprecated-API version that has not expired, or a lifecycle version
// whose supported window overlaps its own. A deprecated-API version is
// supported from always until its expirationDate, so it overlaps every
// later supported stage unless it expires first. Each such version gets an
// error naming the others: which of them is the mistake is for the user to
// decide.
//
// Two lifecycle versions whose supported windows overlap follow Gardener
// since v1.137 (gardener/gardener#12543): a version supported at now is an
// error when the overlap is not over and one of the two supported stages
// never ends (unendingLifecycleOverlaps). Every other overlap is a warning
// (ours, docs/semantics.md §2): Gardener accepts it, but saying nothing
// would hide a likely mistake. Each version is reported at most once,
// against the earlier-starting version it overlaps, so a minor with many
// versions does not flood the output.
func validateOneSupportedPerMinor(versionAt func(int) *v1alpha1.ExpirableVersion, parsed []parsedVersion, list listPath, now time.Time) (field.ErrorList, []string) {
	var windows []supportedWindow
	for _, p := range parsed {
		v := versionAt(p.index)
		if start, end, ok := declaredSupportedWindow(v); ok {
			windows = append(windows, supportedWindow{parsedVersion: p, start: start, end: end, hasLifecycle: len(v.Lifecycle) > 0})
		}
	}
	if len(windows) < 2 {
		return nil, nil
	}
	// Group by major.minor; the stable sort keeps list order inside a group,
	// so the output is the same on every reconcile.
	sameMinor := func(a, b supportedWindow) bool {
		return a.version.Major() == b.version.Major() && a.version.Minor() == b.version.Minor()
	}
	sort.SliceStable(windows, func(i, j int) bool {
		a, b := windows[i].version, windows[j].version
		if a.Major() != b.Major() {
			return a.Major() < b.Major()
		}
		return a.Minor() < b.Minor()
	})

	var errs field.ErrorList
	var warnings []string
	for len(windows) > 0 {
		n := 1
		for n < len(windows) && sameMinor(windows[0], windows[n]) {
			n++
		}
		group := windows[:n]
		windows = windows[n:]
		if len(group) < 2 {
			continue
		}
		errs = append(errs, deprecatedAPISupportedConflicts(group, versionAt, list, now)...)
		overlapErrs, refused := unendingLifecycleOverlaps(group, versionAt, list, now)
		errs = append(errs, overlapErrs...)
		warnings = append(warnings, overlappingLifecycleWindows(group, versionAt, list, refused)...)
	}
	return errs, warnings
}

// deprecatedAPISupportedConflicts returns the errors of Gardener's rule for
// the supported windows of one minor (validateOneSupportedPerMinor).
func deprecatedAPISupportedConflicts(group []supportedWindow, versionAt func(int) *v1alpha1.ExpirableVersion, list listPath, now time.Time) field.ErrorList {
	var errs field.ErrorList
	for _, w := range group {
		if w.hasLifecycle || !w.endsAfter(now) {
			continue
		}
		var others []string
		classifiedOnly := true
		for _, o := range group {
			if o.index == w.index || !w.overlaps(o) || !w.overlapEndsAfter(o, now) {
				continue
			}
			others = append(others, list.entry(o.index, versionAt(o.index).Version).String())
			classifiedOnly = classifiedOnly && !o.hasLifecycle
		}
		if len(others) == 0 {
			continue
		}
		how := "is classified supported too"
		if !classifiedOnly {
			how = "is supported at the same time (a version without lifecycle is supported from always until its expirationDate)"
		}
		errs = append(errs, field.Forbidden(list.entry(w.index, versionAt(w.index).Version).Child("classification"),
			fmt.Sprintf("only one supported version per minor is allowed, but %s %s", strings.Join(others, " and "), how)))
	}
	return errs
}

// supportedAt reports whether the window is current at now: its start is
// not after now (a stage starts at its start time, docs/lifecycle.md) and
// its end is. At no particular time (a zero now) every window counts.
func (w supportedWindow) supportedAt(now time.Time) bool {
	return (now.IsZero() || !w.start.After(now)) && w.endsAfter(now)
}

// unendingLifecycleOverlaps returns the errors of Gardener's rule for two
// lifecycle versions of one minor (validateOneSupportedPerMinor), as
// gardener/gardener#12543 has it and worded as in gardener/gardener#14047:
// a version supported at now is refused when another lifecycle version's
// supported window overlaps its own and one of the two windows never ends.
// As for the deprecated-API rule, an overlap that is over at now does not
// count.
// Each refused version is named at its entry, the others are in refused
// (by list index) so that they get no warning as well.
func unendingLifecycleOverlaps(group []supportedWindow, versionAt func(int) *v1alpha1.ExpirableVersion, list listPath, now time.Time) (field.ErrorList, map[int]bool) {
	var errs field.ErrorList
	refused := make(map[int]bool)
	for _, w := range group {
		if !w.hasLifecycle || !w.supportedAt(now) {
			continue
		}
		for _, o := range group {
			if o.index == w.index || !o.hasLifecycle || !w.overlaps(o) || !w.overlapEndsAfter(o, now) ||
				(!w.end.IsZero() && !o.end.IsZero()) {
				continue
			}
			version := versionAt(w.index).Version
			errs = append(errs, field.Forbidden(list.entry(w.index, version),
				fmt.Sprintf("unable to add version %q with classification %q. %q lifecycle stages must not overlap per minor version",
					version, v1alpha1.ClassificationSupported, v1alpha1.ClassificationSupported)).WithOrigin(WriteTimeOrigin))
			refused[w.index] = true
			break
		}
	}
	return errs, refused
}

// overlappingLifecycleWindows returns the warnings for lifecycle versions of
// one minor whose supported windows overlap (validateOneSupportedPerMinor),
// leaving out the versions in refused (unendingLifecycleOverlaps).
func overlappingLifecycleWindows(group []supportedWindow, versionAt func(int) *v1alpha1.ExpirableVersion, list listPath, refused map[int]bool) []string {
	var lifecycleWindows []supportedWindow
	for _, w := range group {
		if w.hasLifecycle {
			lifecycleWindows = append(lifecycleWindows, w)
		}
	}
	// Sweep in order of start (list order among equal starts). A window
	// overlaps some earlier window exactly when it starts before the end of
	// the earlier window reaching furthest, so remembering that one is
	// enough.
	sort.SliceStable(lifecycleWindows, func(i, j int) bool { return lifecycleWindows[i].start.Before(lifecycleWindows[j].start) })
	var warnings []string
	var furthest *supportedWindow
	for i := range lifecycleWindows {
		w := &lifecycleWindows[i]
		if furthest != nil && w.overlaps(*furthest) && !refused[w.index] {
			warnings = append(warnings, fmt.Sprintf(
				"%s: supported window %s of %s overlaps supported window %s of %s (%s[%d]) in the same minor; "+
					"only one version per minor should be supported at a time",
				list.entry(w.index, versionAt(w.index).Version), w, versionAt(w.index).Version, furthest,
				versionAt(furthest.index).Version, list.name, furthest.index))
		}
		furthest = reachingFurther(furthest, w)
	}
	return warnings
}

func expirableAt(versions []v1alpha1.ExpirableVersion) func(int) *v1alpha1.ExpirableVersion {
	return func(i int) *v1alpha1.ExpirableVersion { return &versions[i] }
}

func machineImageExpirableAt(versions []v1alpha1.MachineImageVersion) func(int) *v1alpha1.ExpirableVersion {
	return func(i int) *v1alpha1.ExpirableVersion { return &versions[i].ExpirableVersion }
}

// validateMachineImages checks spec.machineImages; specPath is the spec's path.
func validateMachineImages(images []v1alpha1.MachineImage, specPath *field.Path, now time.Time) (field.ErrorList, []string) {
	var errs field.ErrorList
	var warnings []string
	firstIndexOf := make(map[string]int, len(images))
	// Profiles repeat the same few kubelet constraints on thousands of
	// versions, and parsing one runs several regular expressions.
	constraintErrs := make(map[string]error)
	for i := range images {
		image := &images[i]
		imagePath := EntryPath(specPath, "machineImages", i, image.Name)
		if image.Name == "" {
			errs = append(errs, field.Required(imagePath.Child("name"), "a machine image needs a name"))
		} else if first, seen := firstIndexOf[image.Name]; seen {
			errs = append(errs, field.Duplicate(imagePath.Child("name"), fmt.Sprintf("%s (also machineImages[%d])", image.Name, first)))
		} else {
			firstIndexOf[image.Name] = i
			errs = append(errs, ValidateQualifiedName(image.Name, imagePath.Child("name"))...)
		}
		errs = append(errs, ValidateUpdateStrategy(image.UpdateStrategy, imagePath.Child("updateStrategy"))...)
		imageErrs, imageWarnings := validateMachineImageVersions(image, listPath{imagePath, versionsField}, constraintErrs, now)
		errs = append(errs, imageErrs...)
		warnings = append(warnings, imageWarnings...)
	}
	return errs, warnings
}

// validateMachineImageVersions checks the versions of one image.
//
// Duplicates are compared as written, as Gardener compares them: 1.7 and
// 1.7.0 are two entries, each meaning itself. Every lookup of a version
// among the entries prefers the entry written exactly as asked
// (IndexOfVersion), so which classification applies is never ambiguous; and
// both count towards "one supported version per minor".
func validateMachineImageVersions(image *v1alpha1.MachineImage, list listPath, constraintErrs map[string]error, now time.Time) (field.ErrorList, []string) {
	var errs field.ErrorList
	if len(image.Versions) == 0 {
		return field.ErrorList{field.Required(list.path(), fmt.Sprintf("machine image %q needs at least one version", image.Name))}, nil
	}
	firstIndexOf := make(map[string]int, len(image.Versions))
	parsed := make([]parsedVersion, 0, len(image.Versions))
	for i := range image.Versions {
		v := &image.Versions[i]
		versionPath := list.entry(i, v.Version)
		if v.Version == "" {
			errs = append(errs, field.Required(versionPath.Child("version"), "a machine image version needs a version"))
		} else if first, seen := firstIndexOf[v.Version]; seen {
			errs = append(errs, field.Duplicate(versionPath.Child("version"), fmt.Sprintf("%s (also versions[%d])", v.Version, first)))
		} else {
			firstIndexOf[v.Version] = i
			if sv, err := semver.NewVersion(v.Version); err != nil {
				errs = append(errs, field.Invalid(versionPath.Child("version"), v.Version,
					fmt.Sprintf("not a semantic version (short forms such as 1 or 1.7 are allowed): %v", err)))
			} else {
				parsed = append(parsed, parsedVersion{index: i, version: sv})
			}
		}
		errs = append(errs, validateArchitectures(v.Architectures, versionPath.Child("architectures"))...)
		errs = append(errs, validateContainerRuntimes(v.CRI, versionPath.Child("cri"))...)
		if v.KubeletVersionConstraint != nil {
			if err := parseConstraint(*v.KubeletVersionConstraint, constraintErrs); err != nil {
				errs = append(errs, field.Invalid(versionPath.Child("kubeletVersionConstraint"), *v.KubeletVersionConstraint,
					fmt.Sprintf("not a semver constraint: %v", err)))
			}
		}
		errs = append(errs, ValidateExpirableVersion(v.ExpirableVersion, versionPath)...)
	}
	supportedErrs, warnings := validateOneSupportedPerMinor(machineImageExpirableAt(image.Versions), parsed, list, now)
	return append(errs, supportedErrs...), warnings
}

// parseConstraint parses a semver constraint, remembering the outcome per
// string in seen.
func parseConstraint(constraint string, seen map[string]error) error {
	if err, ok := seen[constraint]; ok {
		return err
	}
	_, err := semver.NewConstraint(constraint)
	seen[constraint] = err
	return err
}

func validateArchitectures(archs []string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, arch := range archs {
		switch {
		case arch != "amd64" && arch != "arm64":
			errs = append(errs, field.NotSupported(fldPath.Index(i), arch, architectures))
		case indexOf(archs[:i], arch) >= 0:
			errs = append(errs, field.Duplicate(fldPath.Index(i), arch))
		}
	}
	return errs
}

func indexOf(list []string, s string) int {
	for i, item := range list {
		if item == s {
			return i
		}
	}
	return -1
}
