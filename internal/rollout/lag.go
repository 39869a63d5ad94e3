package rollout

import (
	"fmt"
	"time"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/lifecycle"
)

// The lag rule (docs/rollout.md, "The dates inside the data keep their
// order across landscapes"): a stage of a version may start in a landscape
// no earlier than the same stage starts in each of its upstream landscapes,
// plus the lag the rollout file sets for the stage. internal/prdiff applies
// it to every profile and version two landscapes share; the rule itself,
// over one version's lifecycle in both, is here.

// LagBreak is one stage that a landscape's version reaches before its
// upstream's reach of it plus the lag allows.
type LagBreak struct {
	// Stage is the stage the landscape declares and reaches too early.
	Stage v1alpha1.VersionClassification
	// At is when the landscape reaches Stage, nil when it is in that stage
	// (or beyond) from the beginning; UTC.
	At *time.Time
	// EarlierAt is when the upstream reaches it, nil when it never does;
	// UTC.
	EarlierAt *time.Time
	// Lag is the rollout file's lag of Stage; nil when the file sets none,
	// and the stage may then not be reached before the upstream reaches it.
	Lag *Lag
	// Due is EarlierAt plus the lag: when the landscape may reach Stage at
	// the earliest. Nil without a lag (or a zero one), or when EarlierAt
	// is nil.
	Due *time.Time
}

// CheckLag checks one version's lifecycle stages in a landscape (later)
// against the same version's in one of its upstream landscapes (earlier),
// with the landscape's lags, at now. For every stage later declares, it
// compares when each reaches that stage or a later one: reaching rather
// than starting the stage, because a landscape may skip one (a version
// expired in prod while dev has it deprecated, or never ends it at all, is
// expired in prod first). A stage reached before the upstream's reach plus
// the lag is a break, unless that moment has passed at now: an inversion
// that is over is history no change can fix. Breaks are in the order of
// later's stages.
func CheckLag(later, earlier []v1alpha1.LifecycleStage, lags map[v1alpha1.VersionClassification]Lag, now time.Time) []LagBreak {
	var breaks []LagBreak
	for _, stage := range later {
		lag, lagged := lags[stage.Classification]
		laterReach := reachOf(later, stage.Classification)
		earlierReach := reachOf(earlier, stage.Classification)
		if due := earlierReach.plus(lag.Duration); !laterReach.before(due) || !due.after(now) {
			continue
		}
		found := LagBreak{Stage: stage.Classification, At: utcPointer(laterReach.start), EarlierAt: utcPointer(earlierReach.start)}
		if lagged {
			found.Lag = &lag
			if lag.Duration > 0 && found.EarlierAt != nil {
				due := found.EarlierAt.Add(lag.Duration)
				found.Due = &due
			}
		}
		breaks = append(breaks, found)
	}
	return breaks
}

// FormatDuration writes a duration as the rollout file does: whole days as
// "7d", else as Go writes it ("36h0m0s"). ParseDuration reads both.
func FormatDuration(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.String()
}

// stageReach is when a version first has a classification of some rank or
// higher: never, from the beginning (start nil), or at start.
type stageReach struct {
	never bool
	start *time.Time
}

// reachOf is when stages first reach c or a later stage. Stages of a
// valid lifecycle are in rank order with starts that never decrease, so
// that is the earliest start among them.
func reachOf(stages []v1alpha1.LifecycleStage, c v1alpha1.VersionClassification) stageReach {
	result := stageReach{never: true}
	for _, s := range stages {
		if lifecycle.Rank(s.Classification) < lifecycle.Rank(c) {
			continue
		}
		if s.StartTime == nil {
			return stageReach{}
		}
		if result.never || s.StartTime.Time.Before(*result.start) {
			start := s.StartTime.Time
			result = stageReach{start: &start}
		}
	}
	return result
}

// before reports whether r comes strictly before other, "from the
// beginning" being before every time and "never" after every time.
func (r stageReach) before(other stageReach) bool {
	switch {
	case r.never:
		return false
	case other.never:
		return true
	case other.start == nil:
		return false
	case r.start == nil:
		return true
	}
	return r.start.Before(*other.start)
}

// plus is r moved later by d; "never" and "from the beginning" stay.
func (r stageReach) plus(d time.Duration) stageReach {
	if r.never || r.start == nil || d == 0 {
		return r
	}
	start := r.start.Add(d)
	return stageReach{start: &start}
}

// after reports whether r is strictly after t.
func (r stageReach) after(t time.Time) bool {
	return r.never || (r.start != nil && r.start.After(t))
}

func utcPointer(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	utc := t.UTC()
	return &utc
}
