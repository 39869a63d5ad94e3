package prdiff

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/lifecycle"
	"github.com/profilesync/profilesync/internal/policy"
	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/internal/rollout"
)

// Landscape is one overlay's profiles as profile.Set.Evaluate returns them.
type Landscape struct {
	// Name names the overlay, e.g. "dev".
	Name    string
	Objects []profile.Object
}

// RolloutWarning is a version that reaches a lifecycle stage in a landscape
// before an earlier landscape of the rollout order does.
type RolloutWarning struct {
	// Landscape is the later landscape, which reaches the stage first, and
	// EarlierLandscape the one that should have reached it no later.
	Landscape        string `json:"landscape"`
	EarlierLandscape string `json:"earlierLandscape"`
	// Kind, Namespace and Name identify the profile in both landscapes.
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// MachineImage is the machine image's name; empty for Kubernetes.
	MachineImage string `json:"machineImage,omitempty"`
	Version      string `json:"version"`
	// Stage is the stage the later landscape declares and reaches first.
	Stage v1alpha1.VersionClassification `json:"stage"`
	// At is when the later landscape reaches Stage, nil when it is in that
	// stage (or beyond) from the beginning.
	At *time.Time `json:"at"`
	// EarlierAt is when the earlier landscape reaches it, nil when it never
	// does.
	EarlierAt *time.Time `json:"earlierAt"`
	// EarlierClassification is the earlier landscape's classification at At
	// (at the time of the check when At is nil).
	EarlierClassification v1alpha1.VersionClassification `json:"earlierClassification"`
	// Lag is how long after EarlierAt the stage may start in Landscape, as
	// the rollout file sets it (e.g. "7d"); empty for none.
	Lag string `json:"lag,omitempty"`
	// Severity is the rollout file's for the stage: warning or error.
	// Empty for a check of --rollout, whose findings are all warnings.
	Severity policy.Severity `json:"severity,omitempty"`
	// Due is EarlierAt plus the lag: when Landscape may reach Stage at
	// the earliest. Nil without a lag, or when EarlierAt is nil.
	Due *time.Time `json:"due,omitempty"`
}

// Ref names the profile as KIND/NAME or KIND/NAMESPACE/NAME.
func (w RolloutWarning) Ref() string { return profile.ObjectRef(w.Kind, w.Namespace, w.Name) }

// String describes the warning in one line, naming both landscapes, the
// profile, the version and both dates, e.g.
//
//	prod: CloudProfile/aws: kubernetes 1.34.2 is supported from 2026-11-25T00:00:00Z, 6d before dev (2026-12-01T00:00:00Z)
func (w RolloutWarning) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s: %s %s is %s ", w.Landscape, w.Ref(), subjectName(w.MachineImage), w.Version, w.Stage)
	if w.At == nil {
		b.WriteString("from the beginning")
	} else {
		b.WriteString("from " + w.At.UTC().Format(time.RFC3339))
	}
	switch {
	case w.EarlierAt == nil:
		fmt.Fprintf(&b, ", but never in %s (%s then)", w.EarlierLandscape, w.EarlierClassification)
	case w.At == nil:
		fmt.Fprintf(&b, ", before %s (%s)", w.EarlierLandscape, w.EarlierAt.UTC().Format(time.RFC3339))
	case w.Due != nil:
		ahead := strings.TrimPrefix(formatShift(w.Due.Sub(*w.At)), "+")
		fmt.Fprintf(&b, ", %s before %s (%s) plus the lag of %s", ahead, w.EarlierLandscape, w.EarlierAt.UTC().Format(time.RFC3339), w.Lag)
	default:
		ahead := strings.TrimPrefix(formatShift(w.EarlierAt.Sub(*w.At)), "+")
		fmt.Fprintf(&b, ", %s before %s (%s)", ahead, w.EarlierLandscape, w.EarlierAt.UTC().Format(time.RFC3339))
	}
	return b.String()
}

// severity is the warning's severity, warning for a check of --rollout.
func (w RolloutWarning) severity() policy.Severity {
	if w.Severity == "" {
		return policy.SeverityWarning
	}
	return w.Severity
}

// subjectName is how tables and messages name what a version belongs to,
// as the timeline does.
func subjectName(machineImage string) string {
	if machineImage == "" {
		return "kubernetes"
	}
	return machineImage
}

// CheckRolloutOrder checks that changes roll out in the order of
// landscapes (e.g. dev, staging, prod): no landscape may take a version into
// a stage before an earlier landscape does. For every pair of landscapes,
// every profile both have (matched by kind, namespace and name, merged spec
// for namespaced profiles) and every version both list, and for each stage
// the later landscape declares (in lifecycle form), it compares when each
// landscape reaches that stage or a later one. Reaching rather than starting
// the stage, because a landscape may skip one: a version expired in prod
// while dev has it deprecated, or never ends it at all, is reported as
// expired in prod first.
//
// Inversions that are entirely over at now (the earlier landscape reached
// the stage too) are history no change can fix, and are left out. Versions
// one landscape does not list are not compared: an earlier landscape may
// already have dropped an expired version a later one still lists.
//
// Warnings are ordered by later landscape, earlier landscape, profile,
// subject, version and stage. The result is never nil.
func CheckRolloutOrder(landscapes []Landscape, now time.Time) []RolloutWarning {
	var pairs []RolloutPair
	for later := range landscapes {
		for earlier := range later {
			pairs = append(pairs, RolloutPair{Later: later, Earlier: earlier})
		}
	}
	return CheckRolloutPairs(landscapes, pairs, now)
}

// RolloutPair is one later landscape checked against one earlier one, by
// their indexes in the landscapes checked, as a rollout file's after makes
// them: the later landscape waits for the earlier.
type RolloutPair struct {
	Later, Earlier int
	// Lags are, per stage of the later landscape, how long after the
	// earlier landscape reaches it the later one may, and what breaking
	// that does. A stage without one may not be reached before the earlier
	// landscape reaches it, a warning, as CheckRolloutOrder checks.
	Lags map[v1alpha1.VersionClassification]rollout.Lag
}

// CheckRolloutPairs is CheckRolloutOrder over the given pairs only, each
// with its lags: a stage the later landscape reaches before the earlier
// one's date plus the lag is reported, with the lag's severity. Inversions
// over at now (the earlier landscape's date plus the lag passed) are left
// out.
func CheckRolloutPairs(landscapes []Landscape, pairs []RolloutPair, now time.Time) []RolloutWarning {
	warnings := []RolloutWarning{}
	indexes := make([]map[profileKey]profile.Object, len(landscapes))
	for i, l := range landscapes {
		indexes[i] = indexProfiles(l.Objects)
	}
	for _, pair := range pairs {
		for key, laterObject := range indexes[pair.Later] {
			earlierObject, found := indexes[pair.Earlier][key]
			if !found {
				continue
			}
			check := rolloutPair{
				landscape: landscapes[pair.Later].Name, earlierLandscape: landscapes[pair.Earlier].Name,
				key: key, now: now, lags: pair.Lags,
			}
			warnings = check.profiles(warnings, effectiveSpecOrEmpty(laterObject), effectiveSpecOrEmpty(earlierObject))
		}
	}
	order := make(map[string]int, len(landscapes))
	for i := len(landscapes) - 1; i >= 0; i-- {
		order[landscapes[i].Name] = i
	}
	slices.SortFunc(warnings, func(a, b RolloutWarning) int {
		return cmp.Or(
			cmp.Compare(order[a.Landscape], order[b.Landscape]),
			cmp.Compare(order[a.EarlierLandscape], order[b.EarlierLandscape]),
			profileKey{a.Kind, a.Namespace, a.Name}.compare(profileKey{b.Kind, b.Namespace, b.Name}),
			cmp.Compare(a.MachineImage, b.MachineImage),
			compareVersions(a.Version, b.Version),
			cmp.Compare(lifecycle.Rank(a.Stage), lifecycle.Rank(b.Stage)),
		)
	})
	return warnings
}

// rolloutPair checks one profile of a later landscape against an earlier one.
type rolloutPair struct {
	landscape, earlierLandscape string
	key                         profileKey
	now                         time.Time
	lags                        map[v1alpha1.VersionClassification]rollout.Lag
}

func (p rolloutPair) profiles(warnings []RolloutWarning, later, earlier *v1alpha1.CloudProfileSpec) []RolloutWarning {
	warnings = p.versions(warnings, "", later.Kubernetes.Versions, earlier.Kubernetes.Versions)
	earlierImages := imagesByName(earlier)
	for name, image := range imagesByName(later) {
		if earlierImage, found := earlierImages[name]; found {
			warnings = p.versions(warnings, name, imageVersions(image), imageVersions(earlierImage))
		}
	}
	return warnings
}

func (p rolloutPair) versions(warnings []RolloutWarning, image string, later, earlier []v1alpha1.ExpirableVersion) []RolloutWarning {
	earlierVersions := versionsByName(earlier)
	for version, laterVersion := range versionsByName(later) {
		earlierVersion, found := earlierVersions[version]
		if !found {
			continue
		}
		for _, broken := range rollout.CheckLag(lifecycle.Stages(laterVersion), lifecycle.Stages(earlierVersion), p.lags, p.now) {
			at := p.now
			if broken.At != nil {
				at = *broken.At
			}
			warning := RolloutWarning{
				Landscape: p.landscape, EarlierLandscape: p.earlierLandscape,
				Kind: p.key.kind, Namespace: p.key.namespace, Name: p.key.name,
				MachineImage: image, Version: version, Stage: broken.Stage,
				At: broken.At, EarlierAt: broken.EarlierAt, Due: broken.Due,
				EarlierClassification: lifecycle.ClassificationAt(earlierVersion, at),
			}
			if broken.Lag != nil {
				warning.Severity = broken.Lag.Severity
				if broken.Lag.Duration > 0 {
					warning.Lag = rollout.FormatDuration(broken.Lag.Duration)
				}
			}
			warnings = append(warnings, warning)
		}
	}
	return warnings
}

// RolloutLine is one line of the rollout-order findings as people read
// them: a finding, or the count of the findings like the one before it that
// SummarizeRolloutWarnings cut.
type RolloutLine struct {
	Severity policy.Severity
	Text     string
}

// SummarizeRolloutWarnings returns the findings as lines for the text and
// markdown reports and the CLI's stderr, a mistake repeated many times cut
// short as profile.Problems.Summarize cuts problems: when more than
// profile.SummaryKeep findings have the same severity, landscapes, profile,
// subject and stage and differ only in the version and the dates, the first
// are kept and "... and 9,990 more like it" stands for the rest. A profile
// of ten thousand versions, each rolled out too early, reads as that one
// mistake. The JSON report keeps every finding, for code.
func SummarizeRolloutWarnings(warnings []RolloutWarning) []RolloutLine {
	problems := make(profile.Problems, len(warnings))
	for i, w := range warnings {
		problems[i] = profile.Problem{
			File: string(w.severity()), Kind: w.Kind, Namespace: w.Namespace, Name: w.Name,
			// The shape of a finding; only the message is written.
			Field:   fmt.Sprintf("%s after %s: %s %s", w.Landscape, w.EarlierLandscape, subjectName(w.MachineImage), w.Stage),
			Message: w.String(),
		}
	}
	summarized := problems.Summarize()
	lines := make([]RolloutLine, len(summarized))
	for i, p := range summarized {
		lines[i] = RolloutLine{Severity: policy.Severity(p.File), Text: p.Message}
	}
	return lines
}
