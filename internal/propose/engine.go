package propose

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/lifecycle"
	"github.com/profilesync/profilesync/internal/policy"
	"github.com/profilesync/profilesync/internal/render/profile"
)

// Release is one version a source found.
type Release struct {
	// Version is the version as the tag names it (the tag pattern's group).
	Version string
	// Released is when it was tagged; zero when the source cannot tell,
	// which a cooldown treats as just released.
	Released time.Time
}

// Discovered is what one source found for one list it feeds.
type Discovered struct {
	// Source is the source's name, which skips and proposals name.
	Source   string
	Cooldown time.Duration
	Target   Feed
	Releases []Release
}

// Input is everything the engine reads.
type Input struct {
	// Profiles are the repository's profiles as decoded from their files
	// (not built): the CloudProfiles the sources feed and every
	// NamespacedCloudProfile, whose overrides keep a version from retiring.
	Profiles []profile.Object
	// ClusterOverrides are the NamespacedCloudProfiles on the cluster, which
	// the operator reads: a version one of them lists is not retired, as
	// for those of the repository. Nil when the cluster is not read (the
	// CLI); they are not checked or edited.
	ClusterOverrides []profile.Object
	// Policy is the versioning policy of the profiles; nil checks
	// validation only.
	Policy     *policy.Policy
	Schedule   Schedule
	Now        time.Time
	Discovered []Discovered
}

// Proposal is one change a person reviews: a new version with what it
// replaces, or a retirement, as edits and one line that says why.
type Proposal struct {
	Source string
	Target Feed
	// Summary is the line of the commit message: "kubernetes 1.34.3 (tagged
	// 2026-11-20) supported from 2026-12-28; 1.34.2 deprecated from
	// 2026-12-28 with 30 days' notice, expires 2027-04-27".
	Summary string
	Edits   []Edit
}

// Skip is something the engine did not propose, and why: a source's list
// that is not there, a release in its cooldown, a change the validation or
// the policy would refuse.
type Skip struct {
	Source  string
	Target  Feed
	Version string
	Reason  string
}

func (s Skip) String() string {
	version := ""
	if s.Version != "" {
		version = " " + s.Version
	}
	return fmt.Sprintf("source %s: %s%s: %s", s.Source, targetLabel(s.Target), version, s.Reason)
}

// Result is what the engine proposes.
type Result struct {
	Proposals []Proposal
	Skipped   []Skip
	// Profiles are Input.Profiles with every proposal's edits made.
	Profiles []profile.Object
}

// Edits are the edits of every proposal, in order.
func (r *Result) Edits() []Edit {
	var edits []Edit
	for _, p := range r.Proposals {
		edits = append(edits, p.Edits...)
	}
	return edits
}

// Propose computes the proposals for in, each checked against the
// validation and the policy at in.Now and at every instant its edits
// schedule: a proposal that would add a refusal is skipped, with the
// refusal as its reason. Proposals build on the ones before them. Run on
// its own Result.Profiles with the same releases, it proposes nothing.
func Propose(in Input) (*Result, error) {
	now := in.Now.UTC().Truncate(time.Second)
	e := &engine{in: in, now: now, check: newChecker(in.Profiles, in.Policy, now)}
	state := in.Profiles
	result := &Result{}
	// One proposal can make another acceptable (a retirement refused
	// while it would shift the policy's window, until a new minor takes
	// that place): passes repeat until one accepts nothing, so that a run
	// on the result proposes nothing. The skips are the last pass's.
	for pass := 0; ; pass++ {
		var skipped []Skip
		accepted := 0
		for _, d := range in.Discovered {
			if _, err := listOf(state, d.Target); err != nil {
				skipped = append(skipped, Skip{Source: d.Source, Target: d.Target, Reason: err.Error()})
				continue
			}
			for _, candidate := range e.candidates(state, d, &skipped) {
				proposal, ok := candidate(state)
				if !ok {
					continue
				}
				after, err := ApplyEdits(state, proposal.Edits)
				if err != nil {
					return nil, fmt.Errorf("source %s: %w", d.Source, err)
				}
				if refusals := e.check.refusals(after, instantsOf(proposal.Edits, now)); len(refusals) > 0 {
					reason := "not proposed, it would be refused: " + refusals[0]
					if len(refusals) > 1 {
						reason += fmt.Sprintf(" (and %d more)", len(refusals)-1)
					}
					skipped = append(skipped, Skip{Source: d.Source, Target: d.Target, Version: proposal.Edits[0].Version, Reason: reason})
					continue
				}
				state = after
				result.Proposals = append(result.Proposals, proposal)
				accepted++
			}
		}
		if accepted == 0 || pass >= maxPasses {
			result.Skipped = skipped
			break
		}
	}
	result.Profiles = state
	return result, nil
}

// maxPasses bounds the passes of Propose: each accepted proposal adds or
// removes a version for good, so passes end on their own; the bound is for
// the case nobody has thought of.
const maxPasses = 20

type engine struct {
	in    Input
	now   time.Time
	check *checker
}

// candidate builds a proposal from the profiles as the proposals before it
// left them; false when there is nothing left to propose.
type candidate func(state []profile.Object) (Proposal, bool)

// kubernetesVersion is the only form a Kubernetes version may take
// (internal/lifecycle refuses any other).
var kubernetesVersion = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`)

// candidates lists, in order, the retirements of d's list and then, group
// by group from the oldest, the newest release out of its cooldown that is
// newer than every version of its group.
func (e *engine) candidates(state []profile.Object, d Discovered, skipped *[]Skip) []candidate {
	l, _ := listOf(state, d.Target)
	var out []candidate
	for i := range l.len() {
		v := *l.at(i)
		if e.retires(v, d.Target) {
			out = append(out, e.retirement(d, v.Version))
		}
	}
	// Kubernetes versions are grouped by minor, as images updated by patch.
	strategy := v1alpha1.UpdateStrategyPatch
	if l.image != nil {
		strategy = lifecycle.UpdateStrategyOrDefault(l.image.UpdateStrategy)
	}
	type newest struct {
		version *semver.Version
		release Release
	}
	byGroup := map[string]newest{}
	var inCooldown []Skip
	listed := l.canonicalVersions()
	for _, r := range d.Releases {
		v, err := semver.NewVersion(r.Version)
		if err != nil || v.Prerelease() != "" || v.Metadata() != "" || (d.Target.MachineImage == "" && !kubernetesVersion.MatchString(r.Version)) {
			continue
		}
		if listed[v.String()] {
			continue
		}
		if ready := r.Released.Add(d.Cooldown); d.Cooldown > 0 && (r.Released.IsZero() || ready.After(e.now)) {
			until := "its release time is unknown"
			if !r.Released.IsZero() {
				until = "until " + formatDate(ready)
			}
			inCooldown = append(inCooldown, Skip{Source: d.Source, Target: d.Target, Version: r.Version,
				Reason: fmt.Sprintf("in its cooldown of %s, %s", formatDays(d.Cooldown), until)})
			continue
		}
		key := groupOf(v, strategy).String()
		if have, ok := byGroup[key]; !ok || v.GreaterThan(have.version) {
			byGroup[key] = newest{v, r}
		}
	}
	groups := make([]*semver.Version, 0, len(byGroup))
	for _, n := range byGroup {
		groups = append(groups, groupOf(n.version, strategy))
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i].LessThan(groups[j]) })
	for _, g := range groups {
		n := byGroup[g.String()]
		out = append(out, e.newVersion(d, strategy, n.version, n.release))
	}
	// A release in its cooldown is reported when it would be proposed
	// otherwise: it is newer than its group's versions and proposals.
	for _, s := range inCooldown {
		v, _ := semver.NewVersion(s.Version)
		g := groupOf(v, strategy)
		if n, ok := byGroup[g.String()]; ok && !v.GreaterThan(n.version) {
			continue
		}
		if highest := highestOf(l, g, strategy); highest != nil && !v.GreaterThan(highest) {
			continue
		}
		*skipped = append(*skipped, s)
	}
	return out
}

// retires reports whether v has been expired for longer than the
// retirement age and no NamespacedCloudProfile of the repository (or, in
// the operator, of the cluster) lists it for the target's CloudProfile.
func (e *engine) retires(v v1alpha1.ExpirableVersion, target Feed) bool {
	expiry, ok := expiryOf(v)
	if !ok || expiry.Add(e.in.Schedule.RetirementAge).After(e.now) || lifecycle.ClassificationAt(v, e.now) != v1alpha1.ClassificationExpired {
		return false
	}
	return !overridden(e.in.Profiles, target, v.Version) && !overridden(e.in.ClusterOverrides, target, v.Version)
}

// overridesChecked names where the NamespacedCloudProfiles that keep a
// version from retiring were looked for, for the retirement's reason.
func (e *engine) overridesChecked() string {
	if e.in.ClusterOverrides != nil {
		return "the repository or the cluster"
	}
	return "the repository"
}

// overridden reports whether a NamespacedCloudProfile whose parent is the
// target's CloudProfile lists version in the target's list.
func overridden(objects []profile.Object, target Feed, version string) bool {
	for _, o := range objects {
		ncp := o.NamespacedCloudProfile
		if ncp == nil || ncp.Spec.Parent.Name != target.CloudProfile {
			continue
		}
		spec := &v1alpha1.CloudProfileSpec{}
		if ncp.Spec.Kubernetes != nil {
			spec.Kubernetes = *ncp.Spec.Kubernetes
		}
		for _, image := range ncp.Spec.MachineImages {
			spec.MachineImages = append(spec.MachineImages, v1alpha1.MachineImage{Name: image.Name, Versions: image.Versions})
		}
		l, ok := specList(spec, target)
		if ok && l.index(version) >= 0 {
			return true
		}
	}
	return false
}

func specList(spec *v1alpha1.CloudProfileSpec, target Feed) (list, bool) {
	if target.MachineImage == "" {
		return list{kubernetes: &spec.Kubernetes.Versions}, true
	}
	for i := range spec.MachineImages {
		if spec.MachineImages[i].Name == target.MachineImage {
			return list{image: &spec.MachineImages[i]}, true
		}
	}
	return list{}, false
}

func (e *engine) retirement(d Discovered, version string) candidate {
	return func(state []profile.Object) (Proposal, bool) {
		l, err := listOf(state, d.Target)
		if err != nil || l.index(version) < 0 {
			return Proposal{}, false
		}
		expiry, _ := expiryOf(*l.at(l.index(version)))
		reason := fmt.Sprintf("%s %s retired: expired on %s, more than %s ago, and no NamespacedCloudProfile of %s lists it",
			subjectName(d.Target), version, formatDate(expiry), formatDays(e.in.Schedule.RetirementAge), e.overridesChecked())
		return Proposal{Source: d.Source, Target: d.Target, Summary: reason, Edits: []Edit{{
			Target: d.Target, Action: RemoveVersion, Version: version, Reason: reason,
		}}}, true
	}
}

// newVersion proposes v: in an existing group, it takes over from the
// older versions of the group; in a new group, it enters in preview and the
// group that leaves the policy's supported window is deprecated.
func (e *engine) newVersion(d Discovered, strategy v1alpha1.MachineImageUpdateStrategy, v *semver.Version, r Release) candidate {
	return func(state []profile.Object) (Proposal, bool) {
		l, err := listOf(state, d.Target)
		if err != nil || l.index(r.Version) >= 0 {
			return Proposal{}, false
		}
		group := groupOf(v, strategy)
		highest := highestOf(l, group, strategy)
		if highest != nil {
			if !v.GreaterThan(highest) {
				return Proposal{}, false
			}
			return e.newPatch(d, l, strategy, group, r), true
		}
		if newestGroup := newestGroupOf(l, strategy); newestGroup != nil && group.LessThan(newestGroup) {
			return Proposal{}, false // an old minor: never brought back
		}
		return e.newGroup(state, d, l, strategy, r), true
	}
}

func (e *engine) notice() time.Duration {
	if p := e.in.Policy; p != nil && p.Rules.Notice != nil {
		return time.Duration(p.Rules.Notice.Days) * day
	}
	return 0
}

func (e *engine) newPatch(d Discovered, l list, strategy v1alpha1.MachineImageUpdateStrategy, group *semver.Version, r Release) Proposal {
	takeover := ceilDay(e.now.Add(max(e.in.Schedule.PreviewDuration, e.notice())))
	// A takeover the profile already plans for later (a preview patch
	// scheduled to become supported) keeps its date.
	for i := range l.len() {
		old := l.at(i)
		if !sameGroup(old.Version, group, strategy) {
			continue
		}
		if start, ok := stageStart(*old, v1alpha1.ClassificationSupported); ok && start.After(takeover) {
			takeover = start
		}
	}
	deprecations, deprecated := e.deprecateGroup(d.Target, l, group, strategy, takeover)
	edits := append([]Edit{e.addition(d.Target, l, r.Version, takeover)}, deprecations...)
	summary := fmt.Sprintf("%s %s%s supported from %s", subjectName(d.Target), r.Version, tagged(r), formatDate(takeover))
	for _, line := range deprecated {
		summary += "; " + line
	}
	for i := range edits {
		edits[i].Reason = summary
	}
	return Proposal{Source: d.Source, Target: d.Target, Summary: summary, Edits: edits}
}

// deprecateGroup deprecates at at every version of group in l that is not
// deprecated by then already, with a line for each in the summary.
func (e *engine) deprecateGroup(target Feed, l list, group *semver.Version, strategy v1alpha1.MachineImageUpdateStrategy, at time.Time) ([]Edit, []string) {
	var edits []Edit
	var lines []string
	for i := range l.len() {
		old := l.at(i)
		if !sameGroup(old.Version, group, strategy) || lifecycle.Rank(lifecycle.ClassificationAt(*old, at)) >= lifecycle.Rank(v1alpha1.ClassificationDeprecated) {
			continue
		}
		edit, line := e.deprecation(target, *old, at)
		edits = append(edits, edit)
		lines = append(lines, line)
	}
	return edits, lines
}

func (e *engine) newGroup(state []profile.Object, d Discovered, l list, strategy v1alpha1.MachineImageUpdateStrategy, r Release) Proposal {
	preview := e.in.Schedule.PreviewDuration
	if p := e.in.Policy; p != nil && p.Rules.Preview != nil && p.Rules.Preview.MaxDays != nil && d.Target.MachineImage == "" {
		preview = min(preview, time.Duration(*p.Rules.Preview.MaxDays)*day)
	}
	supported := ceilDay(e.now.Add(preview))
	addition := e.addition(d.Target, l, r.Version, supported)
	edits := []Edit{addition}
	summary := fmt.Sprintf("%s %s%s in preview, supported from %s", subjectName(d.Target), r.Version, tagged(r), formatDate(supported))
	window := e.window(d.Target)
	if window > 0 {
		// The group that leaves the window when this one is released, once
		// the notice allows.
		at := maxTime(supported, ceilDay(e.now.Add(e.notice())))
		after, err := ApplyEdits(state, edits)
		if err == nil {
			al, _ := listOf(after, d.Target)
			released := releasedGroups(al, strategy, at)
			if len(released) > window {
				leaving := released[window]
				deprecations, lines := e.deprecateGroup(d.Target, al, leaving, strategy, at)
				edits = append(edits, deprecations...)
				if len(lines) > 0 {
					summary += fmt.Sprintf("; %s leaves the %d supported %s: %s", groupLabel(leaving, strategy, d.Target), window, groupWord(d.Target, window), strings.Join(lines, ", "))
				}
			}
		}
	}
	for i := range edits {
		edits[i].Reason = summary
	}
	return Proposal{Source: d.Source, Target: d.Target, Summary: summary, Edits: edits}
}

// window is how many groups the policy keeps supported: its supported
// minors for Kubernetes, its machine image groups for an image (0: no
// window).
func (e *engine) window(target Feed) int {
	p := e.in.Policy
	if p == nil || p.Rules.Supported == nil {
		return 0
	}
	if target.MachineImage == "" {
		return p.Rules.Supported.Minors
	}
	return p.Rules.Supported.MachineImageGroups
}

// addition adds version in preview, supported from supportedFrom; a machine
// image version copies the fields of the newest version below it.
func (e *engine) addition(target Feed, l list, version string, supportedFrom time.Time) Edit {
	stages := []v1alpha1.LifecycleStage{{Classification: v1alpha1.ClassificationPreview}}
	if supportedFrom.After(e.now) {
		stages = append(stages, stage(v1alpha1.ClassificationSupported, supportedFrom))
	} else {
		stages = []v1alpha1.LifecycleStage{stage(v1alpha1.ClassificationSupported, supportedFrom)}
	}
	edit := Edit{Target: target, Action: AddVersion, Version: version, Lifecycle: stages}
	if l.image != nil {
		v, _ := semver.NewVersion(version)
		var best *semver.Version
		for i := range l.len() {
			have, err := semver.NewVersion(l.at(i).Version)
			if err == nil && have.LessThan(v) && (best == nil || have.GreaterThan(best)) {
				best, edit.Template = have, l.at(i).Version
			}
		}
	}
	return edit
}

// deprecation deprecates old at at and lets it expire after the schedule's
// duration (or sooner, when it already expires sooner); the stages before
// at are kept, later ones below deprecated dropped (a supported stage
// planned after a newer patch took over would never be in effect).
func (e *engine) deprecation(target Feed, old v1alpha1.ExpirableVersion, at time.Time) (Edit, string) {
	var stages []v1alpha1.LifecycleStage
	for _, s := range lifecycle.Stages(old) {
		if lifecycle.Rank(s.Classification) < lifecycle.Rank(v1alpha1.ClassificationDeprecated) && (s.StartTime == nil || s.StartTime.Time.Before(at)) {
			var c v1alpha1.LifecycleStage
			s.DeepCopyInto(&c)
			stages = append(stages, c)
		}
	}
	expiry := at.Add(e.in.Schedule.ExpiryAfterDeprecation)
	if existing, ok := expiryOf(old); ok && existing.After(at) && existing.Before(expiry) {
		expiry = existing
	}
	stages = append(stages, stage(v1alpha1.ClassificationDeprecated, at), stage(v1alpha1.ClassificationExpired, expiry))
	noticeDays := int(at.Sub(e.now) / day)
	line := fmt.Sprintf("%s deprecated from %s with %d %s notice, expires %s", old.Version, formatDate(at), noticeDays, plural(noticeDays, "day's", "days'"), formatDate(expiry))
	return Edit{Target: target, Action: SetLifecycle, Version: old.Version, Lifecycle: stages}, line
}

func stage(c v1alpha1.VersionClassification, start time.Time) v1alpha1.LifecycleStage {
	t := metav1Time(start)
	return v1alpha1.LifecycleStage{Classification: c, StartTime: &t}
}

// expiryOf is when v expires (its expired stage or expirationDate); false
// when it never does or the stage has no start.
func expiryOf(v v1alpha1.ExpirableVersion) (time.Time, bool) {
	return stageStart(v, v1alpha1.ClassificationExpired)
}

// stageStart is the start of v's stage of classification c, when it has one
// with a start time.
func stageStart(v v1alpha1.ExpirableVersion, c v1alpha1.VersionClassification) (time.Time, bool) {
	for _, s := range lifecycle.Stages(v) {
		if s.Classification == c && s.StartTime != nil {
			return s.StartTime.Time, true
		}
	}
	return time.Time{}, false
}

// groupOf is the group of v that an update strategy keeps clusters within
// (Kubernetes: the minor, as patch): 1.34.0 for 1.34.3 by patch, 1877.0.0
// for 1877.3.0 by minor, 0.0.0 for every version by major.
func groupOf(v *semver.Version, strategy v1alpha1.MachineImageUpdateStrategy) *semver.Version {
	switch strategy {
	case v1alpha1.UpdateStrategyPatch:
		return semver.New(v.Major(), v.Minor(), 0, "", "")
	case v1alpha1.UpdateStrategyMinor:
		return semver.New(v.Major(), 0, 0, "", "")
	}
	return semver.New(0, 0, 0, "", "")
}

func sameGroup(version string, group *semver.Version, strategy v1alpha1.MachineImageUpdateStrategy) bool {
	v, err := semver.NewVersion(version)
	return err == nil && groupOf(v, strategy).Equal(group)
}

// highestOf is the highest listed version of group; nil when the group has
// none.
func highestOf(l list, group *semver.Version, strategy v1alpha1.MachineImageUpdateStrategy) *semver.Version {
	var highest *semver.Version
	for i := range l.len() {
		v, err := semver.NewVersion(l.at(i).Version)
		if err == nil && groupOf(v, strategy).Equal(group) && (highest == nil || v.GreaterThan(highest)) {
			highest = v
		}
	}
	return highest
}

func newestGroupOf(l list, strategy v1alpha1.MachineImageUpdateStrategy) *semver.Version {
	var newest *semver.Version
	for i := range l.len() {
		v, err := semver.NewVersion(l.at(i).Version)
		if err != nil {
			continue
		}
		if g := groupOf(v, strategy); newest == nil || g.GreaterThan(newest) {
			newest = g
		}
	}
	return newest
}

// releasedGroups are the groups of l released at t (a version of them
// supported, deprecated or expired: the policy's reading), newest first.
func releasedGroups(l list, strategy v1alpha1.MachineImageUpdateStrategy, t time.Time) []*semver.Version {
	seen := map[string]*semver.Version{}
	for i := range l.len() {
		v, err := semver.NewVersion(l.at(i).Version)
		if err != nil || lifecycle.Rank(lifecycle.ClassificationAt(*l.at(i), t)) < lifecycle.Rank(v1alpha1.ClassificationSupported) {
			continue
		}
		g := groupOf(v, strategy)
		seen[g.String()] = g
	}
	groups := make([]*semver.Version, 0, len(seen))
	for _, g := range seen {
		groups = append(groups, g)
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i].GreaterThan(groups[j]) })
	return groups
}

// instantsOf are the stage starts edits write after now: the transitions a
// proposal schedules.
func instantsOf(edits []Edit, now time.Time) []time.Time {
	var out []time.Time
	for _, e := range edits {
		for _, s := range e.Lifecycle {
			if s.StartTime != nil && s.StartTime.After(now) && !slices.ContainsFunc(out, s.StartTime.Time.Equal) {
				out = append(out, s.StartTime.Time)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return out
}

func subjectName(t Feed) string {
	if t.MachineImage == "" {
		return "kubernetes"
	}
	return t.MachineImage
}

func groupLabel(g *semver.Version, strategy v1alpha1.MachineImageUpdateStrategy, t Feed) string {
	switch {
	case t.MachineImage == "" || strategy == v1alpha1.UpdateStrategyPatch:
		return fmt.Sprintf("minor %d.%d", g.Major(), g.Minor())
	case strategy == v1alpha1.UpdateStrategyMinor:
		return fmt.Sprintf("major %d", g.Major())
	}
	return "the image"
}

func groupWord(t Feed, n int) string {
	if t.MachineImage == "" {
		return plural(n, "minor", "minors")
	}
	return plural(n, "group", "groups")
}

func tagged(r Release) string {
	if r.Released.IsZero() {
		return ""
	}
	return " (tagged " + r.Released.UTC().Format(time.DateOnly) + ")"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// ceilDay is t rounded up to midnight UTC: the dates proposals write are
// whole days, a little later than the notice asks, never sooner.
func ceilDay(t time.Time) time.Time {
	t = t.UTC()
	if midnight := t.Truncate(day); !midnight.Equal(t) {
		return midnight.Add(day)
	}
	return t
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func formatDate(t time.Time) string {
	t = t.UTC()
	if t.Equal(t.Truncate(day)) {
		return t.Format(time.DateOnly)
	}
	return t.Format(time.RFC3339)
}

// NewerThanListed reports whether version could be proposed for one of
// feeds' lists in objects: it is newer than every listed version of its
// group, or its group is newer than every listed one. A source asks for the
// release time of those versions only.
func NewerThanListed(objects []profile.Object, feeds []Feed, version string) bool {
	v, err := semver.NewVersion(version)
	if err != nil {
		return false
	}
	for _, feed := range feeds {
		l, err := listOf(objects, feed)
		if err != nil {
			continue
		}
		strategy := v1alpha1.UpdateStrategyPatch
		if l.image != nil {
			strategy = lifecycle.UpdateStrategyOrDefault(l.image.UpdateStrategy)
		}
		group := groupOf(v, strategy)
		if highest := highestOf(l, group, strategy); highest != nil {
			if v.GreaterThan(highest) {
				return true
			}
			continue
		}
		if newest := newestGroupOf(l, strategy); newest == nil || !group.LessThan(newest) {
			return true
		}
	}
	return false
}
