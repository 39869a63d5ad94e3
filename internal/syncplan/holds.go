package syncplan

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/render/profile"
)

// Break glass. An on-call engineer who must change a profile now edits it
// with kubectl and sets v1alpha1.HoldUntilAnnotation on it. While the hold
// stands, the plan writes nothing to that object: it neither corrects its
// drift nor applies new revisions of it, not even their labels and
// annotations, and it does not prune it when Git drops it. Every other
// object of the revision is planned as usual.
//
// A hold ends by itself (Plan.Releases):
//   - when Git catches up: the desired object from Git (its spec with the
//     API server's defaults, and the labels and annotations Git sets) equals
//     the live object on every field that drifted under the hold. Those are
//     recorded in status.holds[].driftedFields when the hold is first
//     judged, and grow with later edits (recordDrift), but not with what Git
//     changes during the hold. Git has caught up only with something that
//     drifted under the hold (gitCaughtUp): a hold set before its edit is
//     judged at once, with nothing drifted yet, and stays to hold the edit
//     that follows;
//   - when it expires: at the hold-until time on the sync's clock.
//
// A release is a step of the plan, executed only when the plan refuses
// nothing: a refused revision writes nothing, the end of a hold included,
// and the hold stands (in status.holds too) until a plan that passes ends
// it. A hold on an object the ProfileSync does not own (not in its
// inventory) is ignored (HoldIgnored). A hold annotation the sync cannot
// honour (v1alpha1.ParseHold refuses it: not RFC 3339, in the past, beyond
// --max-hold, or a hold-reason without hold-until) is refused (HoldRefused)
// and the object is planned as if it were not held: a hold nobody may have
// set must not keep Git out.

// Release is the end of a hold: the plan removes the two hold annotations
// of the live object, only if hold-until still has the value it judged.
type Release struct {
	Entry v1alpha1.InventoryEntry
	// Until is the hold-until value the hold ended at; the removal tests
	// that it is still there, so a hold extended meanwhile is left for the
	// next sync to judge.
	Until string
	// HasReason: the object carries a hold-reason too, which goes with it.
	HasReason bool
	// Reason is HoldReleasedReason (Git caught up) or HoldExpiredReason.
	Reason string
	// standing is the hold as status.holds listed it: it still stands until
	// the release is executed.
	standing *v1alpha1.ObjectHold
}

// holdJudgement is what the plan decided about the holds.
type holdJudgement struct {
	held []v1alpha1.ObjectHold
	// waiting are the recorded fields each held object still differs from
	// Git on: empty for an object under which nothing has drifted yet,
	// absent for an object Git no longer has.
	waiting  map[v1alpha1.InventoryEntry][]string
	releases []Release
	refused  []string
	// refusedHolds name each refused hold by its object and annotations,
	// which its message (ParseHold's, which may name the time) does not do
	// steadily.
	refusedHolds []string
	ignored      []string
}

// judgeHolds decides the hold of every live object of the revision and of
// every inventory entry the revision dropped, that carries a hold
// annotation, at in.Now.
func judgeHolds(in *Input, items []item, dropped []v1alpha1.InventoryEntry, owned map[v1alpha1.InventoryEntry]bool) (holdJudgement, error) {
	j := holdJudgement{waiting: map[v1alpha1.InventoryEntry][]string{}}
	previous := make(map[v1alpha1.InventoryEntry]v1alpha1.ObjectHold, len(in.PreviousHolds))
	for _, h := range in.PreviousHolds {
		previous[h.InventoryEntry] = h
	}
	judge := func(entry v1alpha1.InventoryEntry, live metav1.Object, it *item) error {
		annotations := live.GetAnnotations()
		until, hasUntil := annotations[v1alpha1.HoldUntilAnnotation]
		_, hasReason := annotations[v1alpha1.HoldReasonAnnotation]
		if !hasUntil && !hasReason {
			return nil
		}
		ref := ObjectRef(entry)
		if !owned[entry] {
			// A reason alone on an object that is not ours is no hold of
			// ours to refuse either.
			if hasUntil {
				j.ignored = append(j.ignored, ref)
			}
			return nil
		}
		before, judged := previous[entry]
		release := func(reason string) {
			r := Release{Entry: entry, Until: until, HasReason: hasReason, Reason: reason}
			if judged {
				r.standing = &before
			}
			j.releases = append(j.releases, r)
		}
		hold, err := v1alpha1.ParseHold(annotations, in.Now, in.MaxHold)
		if err != nil {
			if expiredHold(until, before.Until, in.Now) {
				release(v1alpha1.HoldExpiredReason)
				return nil
			}
			j.refused = append(j.refused, fmt.Sprintf("%s: %s", ref, err))
			j.refusedHolds = append(j.refusedHolds, fmt.Sprintf("%s %s=%q %s=%q", ref,
				v1alpha1.HoldUntilAnnotation, until, v1alpha1.HoldReasonAnnotation, annotations[v1alpha1.HoldReasonAnnotation]))
			return nil
		}
		held := v1alpha1.ObjectHold{InventoryEntry: entry, Until: metav1.NewTime(hold.Until), Reason: hold.Reason}
		if it != nil {
			if held.DriftedFields, err = recordDrift(*it, before); err != nil {
				return err
			}
			held.ObservedGeneration = live.GetGeneration()
			waiting, caughtUp, err := CatchUp(it.object, it.live, held.DriftedFields)
			if err != nil {
				return err
			}
			if caughtUp {
				release(v1alpha1.HoldReleasedReason)
				return nil
			}
			j.waiting[entry] = waiting
		}
		j.held = append(j.held, held)
		return nil
	}
	for i := range items {
		it := &items[i]
		if it.live == nil {
			continue
		}
		if err := judge(it.entry, it.live, it); err != nil {
			return holdJudgement{}, err
		}
	}
	for _, entry := range dropped {
		live := in.Live.Object(entry)
		if live == nil {
			continue
		}
		if err := judge(entry, live, nil); err != nil {
			return holdJudgement{}, err
		}
	}
	sort.Slice(j.held, func(a, b int) bool {
		return Key(j.held[a].Kind, j.held[a].Namespace, j.held[a].Name) < Key(j.held[b].Kind, j.held[b].Namespace, j.held[b].Name)
	})
	return j, nil
}

// CatchUp is the release decision of a hold on the live object, against
// the object of Git o: waiting are the fields the hold recorded
// (status.holds[].driftedFields) on which live still differs from Git, and
// Git has caught up when something drifted under the hold and none of it
// differs any more. A hold under which nothing has drifted yet is not caught
// up with: it was set before the edit it is for (or the edit only adds
// fields Git does not set), and it holds whatever is edited while it
// stands, until it expires or is removed. The sync's plan and
// `profilesync diff --cluster` both ask it.
func CatchUp(o profile.Object, live metav1.Object, recorded []string) (waiting []string, caughtUp bool, err error) {
	if waiting, err = stillDrifted(o, live, recorded); err != nil {
		return nil, false, err
	}
	return waiting, len(recorded) > 0 && len(waiting) == 0, nil
}

// maxRecordedFields bounds status.holds[].driftedFields, as its schema does
// (MaxItems, items' MaxLength).
const (
	maxRecordedFields    = 100
	maxRecordedFieldPath = 1024
)

// recordDrift is what a held object's hold waits on
// (ObjectHold.DriftedFields): the fields it differs from Git on when the
// hold is first judged; later, those recorded (previous) and the drift of
// any edit since. The fields that differ now are added only when they can
// be told to be the cluster's: the object has a new generation (an edit of
// its spec, perhaps along with a change in Git: the plan cannot tell, and
// holds rather than overwrite the edit), or Git has not changed the object
// since it was last applied (its applied digest is Git's), so every
// difference is an edit. What Git changed during the hold is thus not
// waited on, and the hold ends once Git has the emergency edit, whatever
// else Git changed meanwhile.
func recordDrift(it item, previous v1alpha1.ObjectHold) ([]string, error) {
	recorded := previous.DriftedFields
	// A hold not judged before (previous is the zero ObjectHold) has
	// observed no generation, so its first judgement records the drift of
	// the moment; a hold judged with nothing drifted yet records the first
	// edit made under it by the edit's new generation.
	edited := it.live.GetGeneration() != previous.ObservedGeneration ||
		it.live.GetAnnotations()[v1alpha1.AppliedDigestAnnotation] == it.digest
	if !edited {
		return recorded, nil
	}
	current, err := DriftedFields(it.object, it.live, nil)
	if err != nil {
		return nil, err
	}
	fields := slices.Clone(recorded)
	for _, f := range current {
		if !slices.Contains(fields, f) {
			fields = append(fields, f)
		}
	}
	return recordable(fields), nil
}

// recordable fits fields into status.holds[].driftedFields: when there are
// more than fit, or a path is too long, each field is recorded as the whole
// it belongs to (spec, metadata.labels or metadata.annotations), which
// waits on no less.
func recordable(fields []string) []string {
	fits := len(fields) <= maxRecordedFields
	for _, f := range fields {
		fits = fits && len(f) <= maxRecordedFieldPath
	}
	if fits {
		return fields
	}
	var wholes []string
	for _, f := range fields {
		whole := "spec"
		for _, metadata := range []string{"metadata.labels", "metadata.annotations"} {
			if strings.HasPrefix(f, metadata+"[") || f == metadata {
				whole = metadata
			}
		}
		if !slices.Contains(wholes, whole) {
			wholes = append(wholes, whole)
		}
	}
	return wholes
}

// expiredHold tells a hold that reached its expiry from one set in the past:
// the sync honoured it until exactly that hold-until value.
func expiredHold(until string, honoured metav1.Time, now time.Time) bool {
	t, err := time.Parse(time.RFC3339, until)
	return err == nil && !t.After(now) && !honoured.IsZero() && honoured.Time.Equal(t)
}

// HoldRequeue is when the sync must run again for its holds: at the
// earliest expiry of holds still ahead, zero when there is none.
func HoldRequeue(holds []v1alpha1.ObjectHold, now time.Time) time.Duration {
	var next time.Duration
	for _, h := range holds {
		wait := h.Until.Sub(now)
		if wait > 0 && (next == 0 || wait < next) {
			next = wait
		}
	}
	return next
}
