package v1alpha1

import (
	"fmt"
	"time"
)

// The annotations of break glass: an on-call engineer who edits a
// CloudProfile or NamespacedCloudProfile by hand in an emergency sets
// HoldUntilAnnotation on it, and the sync leaves the object alone until Git
// catches up with the edit or the hold expires. Setting or changing them needs
// the custom RBAC verb HoldVerb on the kind, checked by the admission webhook:
// rights to edit the object are not enough. A profile in Git may not set them
// (they are in ReservedLabelDomain).
const (
	// HoldUntilAnnotation is when the hold expires, in RFC 3339.
	HoldUntilAnnotation = ReservedLabelDomain + "/hold-until"

	// HoldReasonAnnotation is free text saying why the object is held.
	HoldReasonAnnotation = ReservedLabelDomain + "/hold-reason"

	// HoldVerb is the custom RBAC verb that sets, changes or removes the hold
	// annotations.
	HoldVerb = "hold"

	// DefaultMaxHold is how far in the future a hold may expire unless the
	// manager's --max-hold says otherwise: long enough for a pull request to
	// be reviewed and promoted, short enough that a forgotten hold ends.
	DefaultMaxHold = 7 * 24 * time.Hour

	// maxHoldReasonLength bounds the reason, which is shown in conditions and
	// events.
	maxHoldReasonLength = 1024
)

// Hold is a parsed hold on one object.
//
// +kubebuilder:object:generate=false
type Hold struct {
	// Until is when the hold expires.
	Until time.Time
	// Reason is HoldReasonAnnotation, empty when unset.
	Reason string
}

// ParseHold reads the hold annotations of an object at time now. It returns
// nil and no error when the object is not held (neither annotation set). A
// hold that cannot be parsed, has already expired, or expires more than
// maxHold after now is an error naming the annotation and the reason, so the
// sync and admission refuse it with the same words. So is a reason without an
// expiry: whoever set it meant to hold the object, and saying nothing would
// let the sync undo their edit while they believe it held. maxHold <= 0
// means DefaultMaxHold.
func ParseHold(annotations map[string]string, now time.Time, maxHold time.Duration) (*Hold, error) {
	until, ok := annotations[HoldUntilAnnotation]
	if !ok {
		if _, hasReason := annotations[HoldReasonAnnotation]; hasReason {
			return nil, fmt.Errorf("annotation %s is set without %s, so nothing is held; set %s to when the hold expires, in RFC 3339 (for example %s), or remove %s",
				HoldReasonAnnotation, HoldUntilAnnotation, HoldUntilAnnotation, now.Add(24*time.Hour).UTC().Format(time.RFC3339), HoldReasonAnnotation)
		}
		return nil, nil
	}
	if maxHold <= 0 {
		maxHold = DefaultMaxHold
	}
	reason := annotations[HoldReasonAnnotation]
	if len(reason) > maxHoldReasonLength {
		return nil, fmt.Errorf("annotation %s: %d bytes, more than the %d allowed", HoldReasonAnnotation, len(reason), maxHoldReasonLength)
	}
	if until == "" {
		return nil, fmt.Errorf("annotation %s: empty; a hold needs an expiry time in RFC 3339 (for example %s)",
			HoldUntilAnnotation, now.Add(24*time.Hour).UTC().Format(time.RFC3339))
	}
	t, err := time.Parse(time.RFC3339, until)
	if err != nil {
		return nil, fmt.Errorf("annotation %s: %q is not an RFC 3339 time (for example %s)",
			HoldUntilAnnotation, until, now.Add(24*time.Hour).UTC().Format(time.RFC3339))
	}
	if !t.After(now) {
		return nil, fmt.Errorf("annotation %s: %s is not in the future; remove the hold annotations, or set a later expiry",
			HoldUntilAnnotation, until)
	}
	// Not t.Sub(now) > maxHold: Sub saturates at about 292 years, so under a
	// maxHold that long (diff --cluster reads holds of any length) a later
	// expiry would pass.
	if t.After(now.Add(maxHold)) {
		return nil, fmt.Errorf("annotation %s: %s is more than %s from now (the manager's --max-hold); hold for at most that long, and extend it later if Git has not caught up",
			HoldUntilAnnotation, until, maxHold)
	}
	return &Hold{Until: t, Reason: reason}, nil
}
