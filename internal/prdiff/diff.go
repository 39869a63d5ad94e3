package prdiff

import (
	"github.com/profilesync/profilesync/internal/render/merge"
	"github.com/profilesync/profilesync/internal/render/profile"

	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/lifecycle"
)

// DefaultHorizon is how far ahead Diff compares classifications when it
// is given no horizon: half a year covers the stages a pull request usually
// schedules, while a stage moved further out is still reported as moved.
const DefaultHorizon = 180 * 24 * time.Hour

// ChangeKind says what a Change is about; it is the "kind" of its JSON.
type ChangeKind string

// The kinds of Change, in the order Diff lists them for one version.
const (
	// ChangeImageAdded is a machine image only head has; Head lists its
	// versions.
	ChangeImageAdded ChangeKind = "image-added"
	// ChangeImageRemoved is a machine image only base has; Base lists its
	// versions.
	ChangeImageRemoved ChangeKind = "image-removed"
	// ChangeUpdateStrategy is a machine image whose update strategy
	// differs, unset counting as major (the API's default).
	ChangeUpdateStrategy ChangeKind = "update-strategy"
	// ChangeVersionAdded is a version only head has; Head is its
	// classification at the diff's time.
	ChangeVersionAdded ChangeKind = "version-added"
	// ChangeVersionRemoved is a version only base has; Base is its
	// classification at the diff's time.
	ChangeVersionRemoved ChangeKind = "version-removed"
	// ChangeDeclaredClassification is the deprecated API's classification
	// field of a version written that way on both sides; nil is unset
	// (which means supported).
	ChangeDeclaredClassification ChangeKind = "declared-classification"
	// ChangeExpirationDate is the deprecated API's expirationDate of a
	// version written that way on both sides; nil is unset.
	ChangeExpirationDate ChangeKind = "expiration-date"
	// ChangeStageAdded is a lifecycle stage only head has; Head is its
	// start, nil when it has none (from the beginning).
	ChangeStageAdded ChangeKind = "stage-added"
	// ChangeStageRemoved is a lifecycle stage only base has; Base is its
	// start, nil when it has none.
	ChangeStageRemoved ChangeKind = "stage-removed"
	// ChangeStageMoved is a lifecycle stage whose start differs; nil is no
	// start.
	ChangeStageMoved ChangeKind = "stage-moved"
	// ChangeClassification is a stretch of time within the horizon during
	// which a version present on both sides has a different classification
	// (From, Until).
	ChangeClassification ChangeKind = "classification"
	// ChangeUpdatePath is an update target (Path) of a version present on
	// both sides that differs at the diff's time; nil is no target.
	ChangeUpdatePath ChangeKind = "update-path"
)

// UpdatePathKind names one of the two update targets of a version.
type UpdatePathKind string

const (
	// UpdatePathAuto is the target of an automatic update
	// (lifecycle.UpdatePaths.Auto).
	UpdatePathAuto UpdatePathKind = "auto"
	// UpdatePathForce is the target of a forced update, as if the version
	// were expired (lifecycle.UpdatePaths.Force).
	UpdatePathForce UpdatePathKind = "force"
)

// ProfileStatus says whether a profile is in base, head or both.
type ProfileStatus string

const (
	// ProfileAdded is a profile only head has.
	ProfileAdded ProfileStatus = "added"
	// ProfileRemoved is a profile only base has.
	ProfileRemoved ProfileStatus = "removed"
	// ProfileChanged is a profile on both sides that differs.
	ProfileChanged ProfileStatus = "changed"
)

// Report is what the renderers print: the diffs of the landscapes of a
// pull request in the caller's order (e.g. dev, staging, prod), and the
// rollout order warnings of its head (CheckRolloutOrder).
type Report struct {
	// Base and Head name the two revisions for people, for example a
	// branch and a commit; the renderers print them when set.
	Base string `json:"base,omitempty"`
	Head string `json:"head,omitempty"`
	// Landscapes are the overlays' diffs, all computed at the same time.
	Landscapes []LandscapeDiff `json:"landscapes"`
	// RolloutWarnings are the head's rollout order warnings.
	RolloutWarnings []RolloutWarning `json:"rolloutWarnings"`
	// Policy has the versioning policy findings of each landscape that has
	// a policy (diff_render_policy.go).
	Policy []PolicySection `json:"policy,omitempty"`
}

// LandscapeDiff is how one landscape's profiles differ between base and head.
type LandscapeDiff struct {
	// Landscape names the overlay, e.g. "dev".
	Landscape string `json:"landscape"`
	// Now is the time the diff was computed at, and Until the end of its
	// horizon (Now plus the horizon), both UTC.
	Now   time.Time `json:"now"`
	Until time.Time `json:"until"`
	// Profiles are the profiles that differ, ordered by kind, namespace and
	// name; never nil.
	Profiles []ProfileDiff `json:"profiles"`
	// Unchanged counts the profiles present on both sides without a change.
	Unchanged int `json:"unchanged"`
}

// ProfileDiff is how one profile differs. A namespaced profile is compared
// by its merged spec (status.cloudProfileSpec), so a change of its parent
// shows under it too: that is what its namespace sees.
type ProfileDiff struct {
	Kind      string        `json:"kind"`
	Namespace string        `json:"namespace,omitempty"`
	Name      string        `json:"name"`
	Status    ProfileStatus `json:"status"`
	// Changes are the differences of a profile on both sides, ordered by
	// subject (Kubernetes first, then machine images by name), version
	// (by semver), then kind; empty for an added or removed profile.
	Changes []Change `json:"changes"`
}

// Ref names the profile as KIND/NAME or KIND/NAMESPACE/NAME.
func (p ProfileDiff) Ref() string { return profile.ObjectRef(p.Kind, p.Namespace, p.Name) }

// Change is one difference of a profile. Which fields are set depends on
// Kind (see the ChangeKind constants); Base and Head are always present in
// JSON, null where the ChangeKind says nil.
type Change struct {
	Kind ChangeKind `json:"kind"`
	// MachineImage is the machine image's name; empty for Kubernetes.
	MachineImage string `json:"machineImage,omitempty"`
	// Version is the version; empty for a change of a whole image.
	Version string `json:"version,omitempty"`
	// Stage is the lifecycle stage of stage-* changes.
	Stage v1alpha1.VersionClassification `json:"stage,omitempty"`
	// Path is the update target of an update-path change.
	Path UpdatePathKind `json:"path,omitempty"`
	// Base and Head are the values on each side: RFC 3339 times for stages
	// and expiration dates, classifications, strategies, versions.
	Base *string `json:"base"`
	Head *string `json:"head"`
	// Shift is how far a start moved, head minus base, like "-92d" or
	// "+1d12h"; empty unless both sides have a time.
	Shift string `json:"shift,omitempty"`
	// From and Until bound a classification change: it holds from From
	// (the diff's time or a transition within the horizon) until Until,
	// nil when it still holds at the end of the horizon.
	From  *time.Time `json:"from,omitempty"`
	Until *time.Time `json:"until,omitempty"`
}

// Diff compares the profiles of one landscape built from two revisions,
// base and head, each as returned by profile.Set.Evaluate (a namespaced profile needs
// its merged spec), at now and over horizon (DefaultHorizon when zero or
// negative). Profiles are matched by kind, namespace and name; should a set
// hold one twice, the first counts, as profile.Validate reports the second.
//
// For each profile on both sides it reports, versions matched by their
// written version and images by name:
//
//   - Kubernetes and machine image versions added and removed, machine
//     images added and removed, and update strategies changed;
//   - for each version on both sides, what changed in its lifecycle: the
//     deprecated API's classification and expirationDate when both sides use
//     it, otherwise every stage (in lifecycle form, lifecycle.Stages) that
//     was added, removed or moved, with the shift;
//   - when its classification differs: the classifications of both sides
//     are compared at now and at every transition of either side up to
//     now+horizon, which are the only instants where either can change, and
//     each stretch with the same pair of different classifications is one
//     Change. A stage moved beyond the horizon thus shows as moved only;
//   - when its automatic or forced update target (lifecycle.Paths) at now
//     differs. Versions whose targets cannot be computed (not semver) are
//     skipped: validation reports them.
func Diff(landscape string, base, head []profile.Object, now time.Time, horizon time.Duration) LandscapeDiff {
	if horizon <= 0 {
		horizon = DefaultHorizon
	}
	now = now.UTC()
	w := diffWindow{now: now, until: now.Add(horizon)}
	result := LandscapeDiff{Landscape: landscape, Now: w.now, Until: w.until, Profiles: []ProfileDiff{}}

	baseProfiles, headProfiles := indexProfiles(base), indexProfiles(head)
	keys := make([]profileKey, 0, len(baseProfiles)+len(headProfiles))
	for key := range baseProfiles {
		keys = append(keys, key)
	}
	for key := range headProfiles {
		if _, inBase := baseProfiles[key]; !inBase {
			keys = append(keys, key)
		}
	}
	slices.SortFunc(keys, profileKey.compare)

	for _, key := range keys {
		b, inBase := baseProfiles[key]
		h, inHead := headProfiles[key]
		diff := ProfileDiff{Kind: key.kind, Namespace: key.namespace, Name: key.name, Changes: []Change{}}
		switch {
		case !inBase:
			diff.Status = ProfileAdded
		case !inHead:
			diff.Status = ProfileRemoved
		default:
			diff.Status = ProfileChanged
			diff.Changes = w.specChanges(effectiveSpecOrEmpty(b), effectiveSpecOrEmpty(h))
			if len(diff.Changes) == 0 {
				result.Unchanged++
				continue
			}
		}
		result.Profiles = append(result.Profiles, diff)
	}
	return result
}

// profileKey identifies a profile across revisions and landscapes.
type profileKey struct{ kind, namespace, name string }

func (k profileKey) compare(other profileKey) int {
	return cmp.Or(cmp.Compare(k.kind, other.kind), cmp.Compare(k.namespace, other.namespace), cmp.Compare(k.name, other.name))
}

func keyOf(o profile.Object) profileKey { return profileKey{o.Kind(), o.Namespace(), o.Name()} }

// indexProfiles maps each profile to its object, keeping the first of a
// duplicate.
func indexProfiles(objects []profile.Object) map[profileKey]profile.Object {
	index := make(map[profileKey]profile.Object, len(objects))
	for _, o := range objects {
		if _, seen := index[keyOf(o)]; !seen {
			index[keyOf(o)] = o
		}
	}
	return index
}

// effectiveSpecOrEmpty is the spec to compare; a namespaced profile that was
// not evaluated has none, and then compares as empty rather than crashing.
func effectiveSpecOrEmpty(o profile.Object) *v1alpha1.CloudProfileSpec {
	if spec := o.EffectiveSpec(); spec != nil {
		return spec
	}
	return &v1alpha1.CloudProfileSpec{}
}

// diffWindow is the stretch of time a diff looks at.
type diffWindow struct{ now, until time.Time }

// specChanges lists every change between two specs of one profile, ordered.
func (w diffWindow) specChanges(base, head *v1alpha1.CloudProfileSpec) []Change {
	var changes []Change
	kubernetes := versionSides{
		base: kubernetesVersions(base), head: kubernetesVersions(head),
		baseSpec: base, headSpec: head,
	}
	changes = w.appendVersionChanges(changes, kubernetes)

	baseImages, headImages := imagesByName(base), imagesByName(head)
	for _, name := range unionOfKeys(baseImages, headImages, strings.Compare) {
		b, inBase := baseImages[name]
		h, inHead := headImages[name]
		switch {
		case !inBase:
			changes = append(changes, Change{Kind: ChangeImageAdded, MachineImage: name, Head: pointer(versionList(h))})
		case !inHead:
			changes = append(changes, Change{Kind: ChangeImageRemoved, MachineImage: name, Base: pointer(versionList(b))})
		default:
			if bs, hs := strategyOf(b), strategyOf(h); bs != hs {
				changes = append(changes, Change{Kind: ChangeUpdateStrategy, MachineImage: name, Base: pointer(string(bs)), Head: pointer(string(hs))})
			}
			changes = w.appendVersionChanges(changes, versionSides{
				image: name, base: imageVersions(b), head: imageVersions(h), baseSpec: base, headSpec: head,
			})
		}
	}
	sortChanges(changes)
	return changes
}

// versionSides are the versions of one subject (Kubernetes or an image) on
// both sides, with the specs their update paths are computed in.
type versionSides struct {
	image              string
	base, head         []v1alpha1.ExpirableVersion
	baseSpec, headSpec *v1alpha1.CloudProfileSpec
}

func (w diffWindow) appendVersionChanges(changes []Change, sides versionSides) []Change {
	base, head := versionsByName(sides.base), versionsByName(sides.head)
	for _, version := range unionOfKeys(base, head, compareVersions) {
		b, inBase := base[version]
		h, inHead := head[version]
		at := Change{MachineImage: sides.image, Version: version}
		switch {
		case !inBase:
			at.Kind, at.Head = ChangeVersionAdded, pointer(string(lifecycle.ClassificationAt(h, w.now)))
			changes = append(changes, at)
		case !inHead:
			at.Kind, at.Base = ChangeVersionRemoved, pointer(string(lifecycle.ClassificationAt(b, w.now)))
			changes = append(changes, at)
		default:
			changes = appendLifecycleChanges(changes, at, b, h)
			changes = w.appendClassificationChanges(changes, at, b, h)
			changes = w.appendUpdatePathChanges(changes, at, sides)
		}
	}
	return changes
}

// appendLifecycleChanges compares what the specs say about a version's
// lifecycle. Both sides in the deprecated API are compared field by field,
// as written; otherwise both are read in lifecycle form, so that moving a
// version from the deprecated API to lifecycle shows as the stages that
// actually changed.
func appendLifecycleChanges(changes []Change, at Change, base, head v1alpha1.ExpirableVersion) []Change {
	if len(base.Lifecycle) == 0 && len(head.Lifecycle) == 0 {
		if !equalPtr(base.Classification, head.Classification) {
			c := at
			c.Kind, c.Base, c.Head = ChangeDeclaredClassification, classificationString(base.Classification), classificationString(head.Classification)
			changes = append(changes, c)
		}
		if !equalTimePtr(timeOf(base.ExpirationDate), timeOf(head.ExpirationDate)) {
			c := at
			c.Kind = ChangeExpirationDate
			c.Base, c.Head, c.Shift = timeChange(timeOf(base.ExpirationDate), timeOf(head.ExpirationDate))
			changes = append(changes, c)
		}
		return changes
	}

	baseStages, headStages := lifecycle.Stages(base), lifecycle.Stages(head)
	for _, stage := range stageUnion(baseStages, headStages) {
		b, inBase := merge.StageStart(baseStages, stage)
		h, inHead := merge.StageStart(headStages, stage)
		c := at
		c.Stage = stage
		switch {
		case !inBase:
			c.Kind, c.Head = ChangeStageAdded, formatTime(h)
		case !inHead:
			c.Kind, c.Base = ChangeStageRemoved, formatTime(b)
		case equalTimePtr(b, h):
			continue
		default:
			c.Kind = ChangeStageMoved
			c.Base, c.Head, c.Shift = timeChange(b, h)
		}
		changes = append(changes, c)
	}
	return changes
}

// appendClassificationChanges compares a version's classification on both
// sides at now and at every transition of either side within the horizon;
// between two such instants neither side changes, so the comparison is
// exact, and each run of instants with the same pair of different
// classifications becomes one change.
func (w diffWindow) appendClassificationChanges(changes []Change, at Change, base, head v1alpha1.ExpirableVersion) []Change {
	instants := append([]time.Time{w.now}, w.transitions(base)...)
	instants = append(instants, w.transitions(head)...)
	slices.SortFunc(instants, time.Time.Compare)
	instants = slices.CompactFunc(instants, time.Time.Equal)

	type pair struct {
		base, head v1alpha1.VersionClassification
	}
	pairs := make([]pair, len(instants))
	for i, t := range instants {
		pairs[i] = pair{lifecycle.ClassificationAt(base, t), lifecycle.ClassificationAt(head, t)}
	}
	for start := 0; start < len(instants); {
		end := start + 1
		for end < len(instants) && pairs[end] == pairs[start] {
			end++
		}
		if p := pairs[start]; p.base != p.head {
			c := at
			c.Kind, c.Base, c.Head = ChangeClassification, pointer(string(p.base)), pointer(string(p.head))
			c.From = pointer(instants[start])
			if end < len(instants) {
				c.Until = pointer(instants[end])
			}
			changes = append(changes, c)
		}
		start = end
	}
	return changes
}

// transitions lists the instants after now, up to and including the end of
// the horizon, at which v changes classification.
func (w diffWindow) transitions(v v1alpha1.ExpirableVersion) []time.Time {
	transitions := lifecycle.Transitions(v, w.now, w.until)
	instants := make([]time.Time, len(transitions))
	for i, tr := range transitions {
		instants[i] = tr.At.UTC()
	}
	return instants
}

// appendUpdatePathChanges compares where a cluster on the version would be
// moved now, automatically and forced, in each side's spec.
func (w diffWindow) appendUpdatePathChanges(changes []Change, at Change, sides versionSides) []Change {
	subject := lifecycle.UpdateSubject{MachineImage: sides.image, Version: at.Version}
	base, err := lifecycle.Paths(sides.baseSpec, subject, w.now)
	if err != nil {
		return changes
	}
	head, err := lifecycle.Paths(sides.headSpec, subject, w.now)
	if err != nil {
		return changes
	}
	for _, path := range []struct {
		kind       UpdatePathKind
		base, head *string
	}{{UpdatePathAuto, base.Auto, head.Auto}, {UpdatePathForce, base.Force, head.Force}} {
		if !equalPtr(path.base, path.head) {
			c := at
			c.Kind, c.Path, c.Base, c.Head = ChangeUpdatePath, path.kind, path.base, path.head
			changes = append(changes, c)
		}
	}
	return changes
}

// changeKindOrder is the order of kinds within one subject and version:
// what exists, then what the spec says, then what that means over time and
// for clusters.
var changeKindOrder = map[ChangeKind]int{
	ChangeImageAdded: 0, ChangeImageRemoved: 1, ChangeUpdateStrategy: 2,
	ChangeVersionAdded: 3, ChangeVersionRemoved: 4,
	ChangeDeclaredClassification: 5, ChangeExpirationDate: 6,
	// Stages of one version sort by rank among themselves, whatever happened
	// to them, so that a lifecycle reads in order.
	ChangeStageAdded: 7, ChangeStageRemoved: 7, ChangeStageMoved: 7,
	ChangeClassification: 8, ChangeUpdatePath: 9,
}

// sortChanges orders changes by subject (Kubernetes, then images by name),
// version (semver), kind, and within a kind by stage rank, update path and
// start of the stretch.
func sortChanges(changes []Change) {
	pathOrder := map[UpdatePathKind]int{UpdatePathAuto: 0, UpdatePathForce: 1}
	slices.SortStableFunc(changes, func(a, b Change) int {
		return cmp.Or(
			cmp.Compare(a.MachineImage, b.MachineImage),
			compareVersions(a.Version, b.Version),
			cmp.Compare(changeKindOrder[a.Kind], changeKindOrder[b.Kind]),
			cmp.Compare(lifecycle.Rank(a.Stage), lifecycle.Rank(b.Stage)),
			cmp.Compare(pathOrder[a.Path], pathOrder[b.Path]),
			compareTimePtr(a.From, b.From),
		)
	})
}

// compareVersions orders versions by semver, the empty version (a change of
// a whole image) first and versions that do not parse last, by text; equal
// versions written differently (1.7 and 1.7.0) by text, so the order is
// total.
func compareVersions(a, b string) int {
	if a == "" || b == "" {
		return cmp.Compare(a, b)
	}
	va, errA := semver.NewVersion(a)
	vb, errB := semver.NewVersion(b)
	switch {
	case errA == nil && errB == nil:
		return cmp.Or(va.Compare(vb), cmp.Compare(a, b))
	case errA == nil:
		return -1
	case errB == nil:
		return 1
	}
	return cmp.Compare(a, b)
}

func kubernetesVersions(spec *v1alpha1.CloudProfileSpec) []v1alpha1.ExpirableVersion {
	return spec.Kubernetes.Versions
}

func imageVersions(image *v1alpha1.MachineImage) []v1alpha1.ExpirableVersion {
	versions := make([]v1alpha1.ExpirableVersion, len(image.Versions))
	for i := range image.Versions {
		versions[i] = image.Versions[i].ExpirableVersion
	}
	return versions
}

func imagesByName(spec *v1alpha1.CloudProfileSpec) map[string]*v1alpha1.MachineImage {
	images := make(map[string]*v1alpha1.MachineImage, len(spec.MachineImages))
	for i := range spec.MachineImages {
		if _, seen := images[spec.MachineImages[i].Name]; !seen {
			images[spec.MachineImages[i].Name] = &spec.MachineImages[i]
		}
	}
	return images
}

func versionsByName(versions []v1alpha1.ExpirableVersion) map[string]v1alpha1.ExpirableVersion {
	byName := make(map[string]v1alpha1.ExpirableVersion, len(versions))
	for _, v := range versions {
		if _, seen := byName[v.Version]; !seen {
			byName[v.Version] = v
		}
	}
	return byName
}

// versionList lists an image's versions for an image added or removed, in
// semver order.
func versionList(image *v1alpha1.MachineImage) string {
	versions := make([]string, 0, len(image.Versions))
	for _, v := range image.Versions {
		versions = append(versions, v.Version)
	}
	slices.SortFunc(versions, compareVersions)
	return strings.Join(versions, ", ")
}

// strategyOf is the image's update strategy with the API's default, so that
// writing out the default is not a change.
func strategyOf(image *v1alpha1.MachineImage) v1alpha1.MachineImageUpdateStrategy {
	return lifecycle.UpdateStrategyOrDefault(image.UpdateStrategy)
}

// unionOfKeys returns the keys of both maps, sorted by compare.
func unionOfKeys[V1, V2 any](a map[string]V1, b map[string]V2, compare func(x, y string) int) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, inA := a[k]; !inA {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, compare)
	return keys
}

// stageUnion lists the classifications of the stages of both lifecycles in
// rank order.
func stageUnion(a, b []v1alpha1.LifecycleStage) []v1alpha1.VersionClassification {
	var stages []v1alpha1.VersionClassification
	for _, s := range slices.Concat(a, b) {
		if !slices.Contains(stages, s.Classification) {
			stages = append(stages, s.Classification)
		}
	}
	slices.SortStableFunc(stages, func(x, y v1alpha1.VersionClassification) int {
		return cmp.Compare(lifecycle.Rank(x), lifecycle.Rank(y))
	})
	return stages
}

// timeChange renders a time that changed, and the shift when both sides
// have one.
func timeChange(base, head *time.Time) (b, h *string, shift string) {
	if base != nil && head != nil {
		shift = formatShift(head.Sub(*base))
	}
	return formatTime(base), formatTime(head), shift
}

// formatShift writes a duration the way a reviewer counts: signed days, then
// hours, minutes and seconds that are not zero ("-92d", "+1d12h", "+30m").
func formatShift(d time.Duration) string {
	var b strings.Builder
	if d < 0 {
		b.WriteByte('-')
		d = -d
	} else {
		b.WriteByte('+')
	}
	units := []struct {
		size time.Duration
		name string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}}
	wrote := false
	for _, unit := range units {
		if n := d / unit.size; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, unit.name)
			d -= n * unit.size
			wrote = true
		}
	}
	if !wrote {
		// Less than a second: metav1.Time keeps seconds, so this only
		// happens for times made in code.
		b.WriteString(d.String())
	}
	return b.String()
}

func formatTime(t *time.Time) *string {
	if t == nil {
		return nil
	}
	return pointer(t.UTC().Format(time.RFC3339))
}

func classificationString(c *v1alpha1.VersionClassification) *string {
	if c == nil {
		return nil
	}
	return pointer(string(*c))
}

func equalPtr[T comparable](a, b *T) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

func equalTimePtr(a, b *time.Time) bool {
	return (a == nil) == (b == nil) && (a == nil || a.Equal(*b))
}

func compareTimePtr(a, b *time.Time) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	return a.Compare(*b)
}

func pointer[T any](v T) *T { return &v }

// timeOf unwraps a metav1.Time, nil when unset.
func timeOf(t *metav1.Time) *time.Time {
	if t == nil {
		return nil
	}
	return pointer(t.Time)
}
