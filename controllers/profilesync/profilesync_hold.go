package profilesync

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/controllers/inventory"
	"github.com/profilesync/profilesync/controllers/transient"
	"github.com/profilesync/profilesync/internal/render/profile"
)

// +kubebuilder:rbac:groups=core.profilesync.io,resources=cloudprofiles;namespacedcloudprofiles,verbs=hold

// Break glass. An on-call engineer who must change a profile now, before a
// pull request can be reviewed and promoted, edits it with kubectl and sets
// v1alpha1.HoldUntilAnnotation on it. While the hold stands, the sync writes
// nothing to that object: it neither corrects its drift nor applies new
// revisions of it, not even their labels and annotations, and it does not
// prune it when Git drops it. Every other object of the revision is applied
// as usual, and the status controllers keep computing the held object's
// status from its live spec, so an emergency expiry shows at once.
//
// This narrows "whole or not at all": a revision is still validated whole,
// and refused whole, but a revision that passes is applied whole except for
// the held objects, which keep what the engineer gave them. The alternative,
// holding back the whole revision while one object is held, is what
// suspending the ProfileSync already does, and it silently stops every other
// change of the landscape for as long as the emergency lasts. A hold is
// bounded instead: by the object (only what someone with the hold verb
// marked), by time (the expiry, at most --max-hold ahead), and by Git (it
// ends when Git has caught up).
//
// A change of the hold annotations on a profile syncs the ProfileSyncs
// whose inventory lists it at once (inventory.HoldChanged), so a hold is judged, and
// its drift recorded, when it is set, not at the next interval.
//
// A hold ends by itself:
//   - when Git catches up: the desired object from Git (its spec with the
//     API server's defaults, and the labels and annotations Git sets) equals
//     the live object on every field that drifted. Those are recorded in
//     status.holds[].driftedFields when the hold is first judged, and grow
//     with later edits (recordDrift), but not with what Git changes during
//     the hold: the pull request that brings the emergency edit into Git
//     ends the hold even when another of Git's changes to the object landed
//     meanwhile, which the same sync then applies. Git has caught up only
//     with something that drifted under the hold (gitCaughtUp): a hold set
//     before its edit is judged at once, by the sync its setting triggers,
//     with nothing drifted yet, and stays to hold the edit that follows.
//     Fields only the cluster has are not drift, so a hold on an edit that
//     only adds them waits on nothing until it expires or is removed, and
//     the edit stays after it too (server-side apply leaves it to its
//     manager);
//   - when it expires: at the hold-until time on the sync's clock, which is
//     when the sync next runs (syncRequeue wakes it exactly then).
//
// Either way the sync removes the two hold annotations (only if hold-until
// still has the value it judged) and applies the object as any other, in
// the same sync. A hold on an object the ProfileSync does not own (not in
// its inventory) is ignored with a HoldIgnored warning. A hold annotation
// the sync cannot honour (v1alpha1.ParseHold refuses it: not RFC 3339, in
// the past, beyond --max-hold, or a hold-reason without hold-until) is
// reported in the Held condition and a HoldRefused warning, and the object
// is synced as if it were not held: a hold nobody may have set must not keep
// Git out, and admission refuses the same annotation when the webhooks are
// installed. status.holds lists the
// honoured holds, so a hold that passes its expiry is told from one set in
// the past, across restarts too: the hold lives on the object, and the
// status says which of them the sync honoured.

// holdJudgement is what the sync decided about the holds of one sync's
// objects: the objects of the revision and the inventory entries it prunes.
type holdJudgement struct {
	// held are the holds honoured, sorted by kind, namespace and name.
	held []v1alpha1.ObjectHold
	// heldFields are the recorded fields each held object still differs
	// from Git on, by inventory key: what its hold waits on; empty for an
	// object under which nothing has drifted yet, absent for an object Git
	// no longer has.
	heldFields map[string][]string
	// ended are the holds that end in this sync.
	ended []endedHold
	// refused are the holds the sync cannot honour: the object's reference
	// and ParseHold's message.
	refused []string
	// ignored are the objects of the revision that carry a hold but are not
	// in the inventory.
	ignored []string
}

// endedHold is a hold that ends: the live object, the hold-until value it
// ended at, and why (HoldReleasedReason or HoldExpiredReason).
type endedHold struct {
	ref    string
	live   client.Object
	until  string
	reason string
}

// judgeHolds decides the hold of every object of the plan that carries
// HoldUntilAnnotation at now. It reads the inventory and status.holds of obj
// and writes nothing.
func judgeHolds(obj *v1alpha1.ProfileSync, plan *applyPlan, now time.Time, maxHold time.Duration) (holdJudgement, error) {
	j := holdJudgement{heldFields: map[string][]string{}}
	owned := map[string]bool{}
	if obj.Status.Inventory != nil {
		for _, e := range obj.Status.Inventory.Entries {
			owned[inventory.Key(e.Kind, e.Namespace, e.Name)] = true
		}
	}
	previous := honouredHolds(obj)
	judge := func(entry v1alpha1.InventoryEntry, live client.Object, item *planItem) error {
		annotations := live.GetAnnotations()
		until, hasUntil := annotations[v1alpha1.HoldUntilAnnotation]
		_, hasReason := annotations[v1alpha1.HoldReasonAnnotation]
		if !hasUntil && !hasReason {
			return nil
		}
		key := inventory.Key(entry.Kind, entry.Namespace, entry.Name)
		ref := objectRef(entry)
		if !owned[key] {
			// A reason alone on an object that is not ours is no hold of
			// ours to refuse either.
			if hasUntil {
				j.ignored = append(j.ignored, ref)
			}
			return nil
		}
		hold, err := v1alpha1.ParseHold(annotations, now, maxHold)
		if err != nil {
			if expiredHold(until, previous[key].Until, now) {
				j.ended = append(j.ended, endedHold{ref: ref, live: live, until: until, reason: v1alpha1.HoldExpiredReason})
				return nil
			}
			j.refused = append(j.refused, fmt.Sprintf("%s: %s", ref, err))
			return nil
		}
		held := v1alpha1.ObjectHold{InventoryEntry: entry, Until: metav1.NewTime(hold.Until), Reason: hold.Reason}
		var waiting []string
		if item != nil {
			if held.DriftedFields, err = recordDrift(*item, previous[key]); err != nil {
				return err
			}
			held.ObservedGeneration = live.GetGeneration()
			if waiting, err = stillDrifted(*item, held.DriftedFields); err != nil {
				return err
			}
			if gitCaughtUp(held.DriftedFields, waiting) {
				j.ended = append(j.ended, endedHold{ref: ref, live: live, until: until, reason: v1alpha1.HoldReleasedReason})
				return nil
			}
			j.heldFields[key] = waiting
		}
		j.held = append(j.held, held)
		return nil
	}
	for i := range plan.items {
		item := &plan.items[i]
		if item.live == nil {
			continue
		}
		entry := v1alpha1.InventoryEntry{Kind: item.object.Kind(), Namespace: item.object.Namespace(), Name: item.object.Name()}
		if err := judge(entry, item.live, item); err != nil {
			return holdJudgement{}, err
		}
	}
	for _, entry := range plan.pruned {
		live := plan.live.object(entry)
		if live == nil {
			continue
		}
		if err := judge(entry, live, nil); err != nil {
			return holdJudgement{}, err
		}
	}
	sort.Slice(j.held, func(a, b int) bool {
		return inventory.Key(j.held[a].Kind, j.held[a].Namespace, j.held[a].Name) < inventory.Key(j.held[b].Kind, j.held[b].Namespace, j.held[b].Name)
	})
	return j, nil
}

// gitCaughtUp is the release decision of a hold: Git has caught up when
// something drifted under the hold (recorded, status.holds[].driftedFields)
// and none of it differs from Git any more (waiting, stillDrifted). A hold
// under which nothing has drifted yet is not caught up with: it was set
// before the edit it is for (or the edit only adds fields Git does not set),
// and it holds whatever is edited while it stands, until it expires or is
// removed.
func gitCaughtUp(recorded, waiting []string) bool {
	return len(recorded) > 0 && len(waiting) == 0
}

// honouredHolds are status.holds by inventory key: the holds the last sync
// that judged them honoured.
func honouredHolds(obj *v1alpha1.ProfileSync) map[string]v1alpha1.ObjectHold {
	honoured := make(map[string]v1alpha1.ObjectHold, len(obj.Status.Holds))
	for _, h := range obj.Status.Holds {
		honoured[inventory.Key(h.Kind, h.Namespace, h.Name)] = h
	}
	return honoured
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
// its spec, perhaps along with a change in Git: the sync cannot tell, and
// holds rather than overwrite the edit), or Git has not changed the object
// since it was last applied (its applied digest is Git's), so every
// difference is an edit. What Git changed during the hold is thus not
// waited on, and the hold ends once Git has the emergency edit, whatever
// else Git changed meanwhile.
func recordDrift(item planItem, previous v1alpha1.ObjectHold) ([]string, error) {
	recorded := previous.DriftedFields
	// A hold not judged before (previous is the zero ObjectHold) has
	// observed no generation, so its first judgement records the drift of
	// the moment; a hold judged with nothing drifted yet records the first
	// edit made under it by the edit's new generation.
	edited := item.live.GetGeneration() != previous.ObservedGeneration ||
		item.live.GetAnnotations()[v1alpha1.AppliedDigestAnnotation] == item.digest
	if !edited {
		return recorded, nil
	}
	current, err := driftedFields(item, nil)
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

// stillDrifted are those of fields, recorded by recordDrift, on which the
// live object does not have what Git has (profile.DriftedAt; a label or
// annotation the same way). Empty means Git has caught up.
func stillDrifted(item planItem, fields []string) ([]string, error) {
	desired, desiredValues, liveValues, err := comparedSpecValues(item)
	if err != nil {
		return nil, err
	}
	var specFields []string
	for _, f := range fields {
		if f == "spec" || strings.HasPrefix(f, "spec.") {
			specFields = append(specFields, f)
		}
	}
	var specDrift []string
	if len(specFields) > 0 {
		if specDrift, err = profile.DriftedAt(item.object.Kind(), "spec", desiredValues, liveValues, specFields); err != nil {
			return nil, fmt.Errorf("compare %s: %w", item.object.Ref(), err)
		}
	}
	var drifted []string
	for _, f := range fields {
		switch {
		case slices.Contains(specDrift, f):
			drifted = append(drifted, f)
		case strings.HasPrefix(f, "metadata.labels"):
			if metadataDrifted(f, "metadata.labels", desired.GetLabels(), item.live.GetLabels()) {
				drifted = append(drifted, f)
			}
		case strings.HasPrefix(f, "metadata.annotations"):
			if metadataDrifted(f, "metadata.annotations", desired.GetAnnotations(), item.live.GetAnnotations()) {
				drifted = append(drifted, f)
			}
		}
	}
	return drifted, nil
}

// metadataDrifted tells whether field, path[key] or path as a whole, differs
// between Git (want) and the live object (have). A key Git no longer sets is
// caught up only when the live object lacks it too, as for the spec.
func metadataDrifted(field, path string, want, have map[string]string) bool {
	if field == path {
		return len(driftedKeys(path, want, have)) > 0
	}
	key := strings.TrimSuffix(strings.TrimPrefix(field, path+"["), "]")
	wanted, inGit := want[key]
	value, live := have[key]
	return inGit != live || wanted != value
}

// expiredHold tells a hold that reached its expiry from one set in the past:
// the sync honoured it until exactly that hold-until value.
func expiredHold(until string, honoured metav1.Time, now time.Time) bool {
	t, err := time.Parse(time.RFC3339, until)
	return err == nil && !t.After(now) && !honoured.IsZero() && honoured.Time.Equal(t)
}

// objectRef names an inventory entry as messages do: Kind/name or
// Kind/namespace/name.
func objectRef(e v1alpha1.InventoryEntry) string {
	if e.Namespace == "" {
		return e.Kind + "/" + e.Name
	}
	return e.Kind + "/" + e.Namespace + "/" + e.Name
}

// object is the live object of an inventory entry, nil when there is none.
func (l *liveProfiles) object(e v1alpha1.InventoryEntry) client.Object {
	if e.Kind == v1alpha1.CloudProfileKind {
		if cp, ok := l.cloudProfiles[e.Name]; ok {
			return cp
		}
		return nil
	}
	if ncp, ok := l.namespaced[client.ObjectKey{Namespace: e.Namespace, Name: e.Name}]; ok {
		return ncp
	}
	return nil
}

// hold takes the held objects out of the plan: their items are not written,
// and held entries the revision dropped are neither pruned nor dropped from
// the inventory.
func (p *applyPlan) hold(j holdJudgement) {
	held := make(map[string]bool, len(j.held))
	for _, h := range j.held {
		held[inventory.Key(h.Kind, h.Namespace, h.Name)] = true
	}
	for i := range p.items {
		o := p.items[i].object
		p.items[i].held = held[inventory.Key(o.Kind(), o.Namespace(), o.Name())]
	}
	var pruned []v1alpha1.InventoryEntry
	for _, e := range p.pruned {
		if held[inventory.Key(e.Kind, e.Namespace, e.Name)] {
			p.kept = append(p.kept, e)
			continue
		}
		pruned = append(pruned, e)
	}
	p.pruned = pruned
}

// holds judges the holds of the plan, ends those that end (removing their
// annotations), takes the held objects out of the plan, and records the
// outcome in obj's status and events.
func (r *ProfileSyncReconciler) holds(ctx context.Context, obj *v1alpha1.ProfileSync, plan *applyPlan) error {
	now := r.Clock.Now()
	j, err := judgeHolds(obj, plan, now, r.MaxHold)
	if err != nil {
		return err
	}
	for _, end := range j.ended {
		if err := r.endHold(ctx, end); err != nil {
			return err
		}
	}
	plan.hold(j)
	key := client.ObjectKeyFromObject(obj)
	// A hold is new when the status does not list it with this expiry, so
	// a restarted manager reports none again, and when this manager did not
	// honour it at its last sync either: a sync that follows another at
	// once (a hold's change triggers one) may read a status from the cache
	// older than the other's write.
	previous := honouredHolds(obj)
	heldLines := make([]string, 0, len(j.held))
	for _, h := range j.held {
		heldLines = append(heldLines, objectRef(h.InventoryEntry)+" until "+h.Until.UTC().Format(time.RFC3339))
	}
	fresh := r.memory.fresh(key, eventTopic{kind: topicHeld}, heldLines)
	for i, h := range j.held {
		before, listed := previous[inventory.Key(h.Kind, h.Namespace, h.Name)]
		if (!listed || !before.Until.Equal(&h.Until)) && slices.Contains(fresh, heldLines[i]) {
			r.event(obj, corev1.EventTypeNormal, v1alpha1.HoldSetReason, "%s", describeHold(h, j.heldFields))
		}
	}
	for _, end := range j.ended {
		if end.reason == v1alpha1.HoldReleasedReason {
			r.event(obj, corev1.EventTypeNormal, end.reason, "%s: Git caught up with the object held until %s; the hold is released and the object synced again", end.ref, end.until)
		} else {
			r.event(obj, corev1.EventTypeNormal, end.reason, "%s: the hold expired at %s; the object is synced again", end.ref, end.until)
		}
	}
	for _, refused := range r.memory.fresh(key, eventTopic{kind: topicHoldRefused}, j.refused) {
		r.event(obj, corev1.EventTypeWarning, v1alpha1.HoldRefusedReason, "%s; the object is synced as if not held", refused)
	}
	for _, ignored := range r.memory.fresh(key, eventTopic{kind: topicHoldIgnored}, j.ignored) {
		r.event(obj, corev1.EventTypeWarning, v1alpha1.HoldIgnoredReason,
			"%s: annotation %s ignored: the object is not in this ProfileSync's inventory, so its hold is not this ProfileSync's to honour", ignored, v1alpha1.HoldUntilAnnotation)
	}
	obj.Status.Holds = j.held
	r.Metrics.ObserveRefusedHolds(obj, len(j.refused))
	markHeld(obj, j)
	return nil
}

// describeHold is one line of the Held condition: the object, its expiry,
// its reason and the fields it differs from Git on.
func describeHold(h v1alpha1.ObjectHold, fields map[string][]string) string {
	line := fmt.Sprintf("%s held until %s", objectRef(h.InventoryEntry), h.Until.UTC().Format(time.RFC3339))
	if h.Reason != "" {
		line += ": " + strings.Join(strings.Fields(h.Reason), " ")
	}
	f, inGit := fields[inventory.Key(h.Kind, h.Namespace, h.Name)]
	switch {
	case !inGit:
		line += " (removed from Git; pruned when the hold ends)"
	case len(f) > 0:
		line += " (differs from Git on " + fieldList(f) + ")"
	default:
		line += " (nothing drifted yet: any edit is held until the hold expires or is removed)"
	}
	return line
}

// markHeld sets the Held condition: True listing the held objects and the
// refused holds, False with HoldRefused when only refused holds are to
// report, absent when there is neither.
func markHeld(obj *v1alpha1.ProfileSync, j holdJudgement) {
	lines := make([]string, 0, len(j.held)+len(j.refused))
	for _, h := range j.held {
		lines = append(lines, describeHold(h, j.heldFields))
	}
	for _, refused := range j.refused {
		lines = append(lines, "refused: "+refused+"; the object is synced as if not held")
	}
	switch {
	case len(j.held) > 0:
		conditions.MarkTrue(obj, v1alpha1.HeldCondition, v1alpha1.HeldReason, "%s", boundedMessage(strings.Join(lines, "\n")))
	case len(j.refused) > 0:
		conditions.MarkFalse(obj, v1alpha1.HeldCondition, v1alpha1.HoldRefusedReason, "%s", boundedMessage(strings.Join(lines, "\n")))
	default:
		conditions.Delete(obj, v1alpha1.HeldCondition)
	}
}

// annotationPatchOp is one operation of a JSON patch (RFC 6902) on an
// annotation.
type annotationPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value string `json:"value,omitempty"`
}

// endHold removes the hold annotations of an ended hold with the operator's
// own identity (its role has the hold verb): a JSON patch that first tests
// that hold-until still has the value the sync judged, so a hold extended
// meanwhile is left for the next sync to judge. Nothing else of the object
// is touched.
func (r *ProfileSyncReconciler) endHold(ctx context.Context, end endedHold) error {
	path := func(annotation string) string {
		return "/metadata/annotations/" + strings.ReplaceAll(strings.ReplaceAll(annotation, "~", "~0"), "/", "~1")
	}
	ops := []annotationPatchOp{
		{Op: "test", Path: path(v1alpha1.HoldUntilAnnotation), Value: end.until},
		{Op: "remove", Path: path(v1alpha1.HoldUntilAnnotation)},
	}
	if _, ok := end.live.GetAnnotations()[v1alpha1.HoldReasonAnnotation]; ok {
		ops = append(ops, annotationPatchOp{Op: "remove", Path: path(v1alpha1.HoldReasonAnnotation)})
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return fmt.Errorf("end the hold of %s: %w", end.ref, err)
	}
	// A new object to patch: the live one is the cache's, shared.
	target := end.live.DeepCopyObject().(client.Object)
	err = transient.Retry(func() error { return r.Patch(ctx, target, client.RawPatch(types.JSONPatchType, patch)) })
	if err != nil {
		return applyFailed(fmt.Errorf("end the hold of %s: remove annotations %s and %s: %w", end.ref, v1alpha1.HoldUntilAnnotation, v1alpha1.HoldReasonAnnotation, err))
	}
	return nil
}

// holdRequeue is when the sync must run again for its holds: at the
// earliest expiry of status.holds still ahead, zero when there is none. A
// sync that judged the holds lists only those ahead; an expiry already past
// is in the list only when the sync stopped before it judged them (a
// refused revision), and waking at once would only stop there again.
func holdRequeue(obj *v1alpha1.ProfileSync, now time.Time) time.Duration {
	var next time.Duration
	for _, h := range obj.Status.Holds {
		wait := h.Until.Sub(now)
		if wait > 0 && (next == 0 || wait < next) {
			next = wait
		}
	}
	return next
}

// syncRequeue is the wait before the next sync: the interval, or sooner the
// earliest expiry of a hold, so a hold ends exactly when it expires without
// polling.
func syncRequeue(obj *v1alpha1.ProfileSync, now time.Time, interval time.Duration) time.Duration {
	if hold := holdRequeue(obj, now); hold > 0 && hold < interval {
		return hold
	}
	return interval
}
