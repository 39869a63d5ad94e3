// Package lifecycle holds the rules of version lifecycles (docs/semantics.md
// sections 1, 2 and 4): the classification of a version at a time t, the next
// transition, validation of a profile and update paths. It has no Kubernetes
// client; the controllers, the sync and the offline CLI all call it, so a
// profile means the same thing everywhere.
package lifecycle

import (
	"time"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// Rank orders classifications: unavailable(0) < preview(1) < supported(2) <
// deprecated(3) < expired(4). An unknown classification ranks -1.
func Rank(c v1alpha1.VersionClassification) int {
	switch c {
	case v1alpha1.ClassificationUnavailable:
		return 0
	case v1alpha1.ClassificationPreview:
		return 1
	case v1alpha1.ClassificationSupported:
		return 2
	case v1alpha1.ClassificationDeprecated:
		return 3
	case v1alpha1.ClassificationExpired:
		return 4
	}
	return -1
}

// Stages returns the lifecycle of v in lifecycle form (docs/semantics.md §1.1 and 1.2).
//
// A version with lifecycle stages is returned as is (the slice is shared, not
// copied). A version using the deprecated API is read as one stage of its
// classification (supported when unset) with no start, followed by an expired
// stage at expirationDate when that is set; so a passed expirationDate means
// expired whatever classification says. A version with neither is supported
// forever. The default lives only here and in the status; it is never written
// into a spec.
func Stages(v v1alpha1.ExpirableVersion) []v1alpha1.LifecycleStage {
	if len(v.Lifecycle) > 0 {
		return v.Lifecycle
	}
	stages := []v1alpha1.LifecycleStage{{Classification: deprecatedAPIClassification(v.Classification)}}
	if v.ExpirationDate != nil {
		stages = append(stages, v1alpha1.LifecycleStage{
			Classification: v1alpha1.ClassificationExpired,
			StartTime:      v.ExpirationDate.DeepCopy(),
		})
	}
	return stages
}

// deprecatedAPIClassification is the classification a version written in the
// deprecated API has until its expirationDate: the classification field, or
// supported when that is unset (docs/semantics.md §1.1). Stages and evaluate both read
// the deprecated API, evaluate without building the stages, so the default is
// kept here rather than in either of them.
func deprecatedAPIClassification(classification *v1alpha1.VersionClassification) v1alpha1.VersionClassification {
	if classification == nil {
		return v1alpha1.ClassificationSupported
	}
	return *classification
}

// ClassificationAt returns the classification of v at time t (docs/semantics.md §1.3).
//
// Starting from unavailable, the stages are walked in list order and every
// stage whose start is at or before t becomes current; a missing start is the
// zero time. So equal start times let the later stage win, and a version whose
// stages all start after t is unavailable.
//
// (ours) Gardener compares strictly before, so a reconcile woken exactly at a
// start time sees no change; here the stage is in effect at its start time.
func ClassificationAt(v v1alpha1.ExpirableVersion, t time.Time) v1alpha1.VersionClassification {
	return evaluate(v, t).current
}

func classificationAt(stages []v1alpha1.LifecycleStage, t time.Time) v1alpha1.VersionClassification {
	current := v1alpha1.ClassificationUnavailable
	for _, s := range stages {
		if s.StartTime == nil || !s.StartTime.After(t) {
			current = s.Classification
		}
	}
	return current
}

// NextTransition returns the earliest stage start of v strictly after t and the
// classification in effect from then on (docs/semantics.md §1.5). ok is false when no
// stage starts after t.
//
// When several stages start at that same instant, the classification returned
// is the one ClassificationAt reports at that instant (the later stage wins).
func NextTransition(v v1alpha1.ExpirableVersion, t time.Time) (at time.Time, next v1alpha1.VersionClassification, ok bool) {
	e := evaluate(v, t)
	return e.nextAt, e.next, e.hasNext
}

// Transition is one stage start of a version: at At the classification
// From gives way to To. From and To are equal when a stage starts with the
// classification already in effect.
type Transition struct {
	At       time.Time
	From, To v1alpha1.VersionClassification
}

// Transitions lists the transitions of v strictly after from and, unless
// until is zero, at or before until, in time order: NextTransition walked
// from from to the end of the window.
func Transitions(v v1alpha1.ExpirableVersion, from, until time.Time) []Transition {
	var transitions []Transition
	for e := evaluate(v, from); e.hasNext && (until.IsZero() || !e.nextAt.After(until)); e = evaluate(v, e.nextAt) {
		transitions = append(transitions, Transition{At: e.nextAt, From: e.current, To: e.next})
	}
	return transitions
}

// evaluation is a version's classification at one instant together with its
// next transition.
type evaluation struct {
	current v1alpha1.VersionClassification
	next    v1alpha1.VersionClassification
	nextAt  time.Time
	hasNext bool
}

// evaluate computes ClassificationAt and NextTransition in one pass without
// allocating: the status runs it for every version on every reconcile, so the
// deprecated API is read directly instead of through Stages, which would build
// a slice per version.
func evaluate(v v1alpha1.ExpirableVersion, t time.Time) evaluation {
	if len(v.Lifecycle) > 0 {
		return evaluateStages(v.Lifecycle, t)
	}
	first := deprecatedAPIClassification(v.Classification)
	if v.ExpirationDate == nil {
		return evaluation{current: first}
	}
	expiry := v.ExpirationDate.Time
	if !expiry.After(t) {
		return evaluation{current: v1alpha1.ClassificationExpired}
	}
	return evaluation{current: first, next: v1alpha1.ClassificationExpired, nextAt: expiry, hasNext: true}
}

func evaluateStages(stages []v1alpha1.LifecycleStage, t time.Time) evaluation {
	e := evaluation{current: v1alpha1.ClassificationUnavailable}
	for _, s := range stages {
		if s.StartTime == nil || !s.StartTime.After(t) {
			e.current = s.Classification
			continue
		}
		if !e.hasNext || s.StartTime.Time.Before(e.nextAt) {
			e.nextAt, e.hasNext = s.StartTime.Time, true
		}
	}
	if e.hasNext {
		// Start times may decrease in an invalid lifecycle, so the stage in
		// effect at nextAt is not simply the one found above.
		e.next = classificationAt(stages, e.nextAt)
	}
	return e
}
