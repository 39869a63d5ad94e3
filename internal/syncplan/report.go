package syncplan

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/render/profile"
)

// Event is one event the plan reports on the ProfileSync.
type Event struct {
	// Type is corev1.EventTypeNormal or corev1.EventTypeWarning.
	Type, Reason, Message string
	// Topic, when set, reports the event only when Line is not among the
	// lines the previous sync reported on the topic (Plan.Topics has every
	// line of this one); empty reports it every time.
	Topic, Line string
}

// The topics of the plan's events: what the reconciler remembers per
// ProfileSync so that an unchanged hold or drift is reported once.
const (
	TopicHeld         = "held"
	TopicRefusedHolds = "refused-holds"
	TopicIgnoredHolds = "ignored-holds"
	TopicDrift        = "drift"
)

// Condition is a condition the plan sets on the ProfileSync; the plan's
// condition functions return nil for a condition to remove.
type Condition struct {
	Type    string
	Status  metav1.ConditionStatus
	Reason  string
	Message string
}

// reportHolds makes the events of the holds judged: HoldSet for a hold not
// honoured before with this expiry (on TopicHeld, so a sync that follows
// another at once does not report it twice), HoldRefused and HoldIgnored.
func (p *Plan) reportHolds(in *Input) {
	previous := make(map[v1alpha1.InventoryEntry]v1alpha1.ObjectHold, len(in.PreviousHolds))
	for _, h := range in.PreviousHolds {
		previous[h.InventoryEntry] = h
	}
	heldLines := make([]string, 0, len(p.Holds))
	for _, h := range p.Holds {
		line := ObjectRef(h.InventoryEntry) + " until " + h.Until.UTC().Format(time.RFC3339)
		heldLines = append(heldLines, line)
		before, listed := previous[h.InventoryEntry]
		if !listed || !before.Until.Equal(&h.Until) {
			p.Events = append(p.Events, Event{Type: corev1.EventTypeNormal, Reason: v1alpha1.HoldSetReason, Message: p.describeHold(h), Topic: TopicHeld, Line: line})
		}
	}
	p.Topics[TopicHeld] = heldLines
	// A refused hold is reported once for its object and annotations: its
	// message may name the time (ParseHold's example of an expiry).
	p.Topics[TopicRefusedHolds] = p.refusedHolds
	for i, refused := range p.RefusedHolds {
		p.Events = append(p.Events, Event{Type: corev1.EventTypeWarning, Reason: v1alpha1.HoldRefusedReason,
			Message: refused + "; the object is synced as if not held", Topic: TopicRefusedHolds, Line: p.refusedHolds[i]})
	}
	p.Topics[TopicIgnoredHolds] = p.IgnoredHolds
	for _, ignored := range p.IgnoredHolds {
		p.Events = append(p.Events, Event{Type: corev1.EventTypeWarning, Reason: v1alpha1.HoldIgnoredReason,
			Message: fmt.Sprintf("%s: annotation %s ignored: the object is not in this ProfileSync's inventory, so its hold is not this ProfileSync's to honour",
				ignored, v1alpha1.HoldUntilAnnotation),
			Topic: TopicIgnoredHolds, Line: ignored})
	}
}

// reportDrift makes a DriftDetected warning per drifted object, on
// TopicDrift: reported when its drift is new or changed.
func (p *Plan) reportDrift() {
	lines := make([]string, 0, len(p.Drifts))
	for _, d := range p.Drifts {
		line := d.String()
		lines = append(lines, line)
		p.Events = append(p.Events, Event{Type: corev1.EventTypeWarning, Reason: v1alpha1.DriftDetectedReason,
			Message: line + " changed on the cluster; left as it is (driftDetection mode warn)", Topic: TopicDrift, Line: line})
	}
	p.Topics[TopicDrift] = lines
}

// reportApplied makes the events of the writes, reported once they are
// made: one DriftCorrected per live object that differed although the
// revision did not change (it was edited by hand and is put back), naming
// the fields, and one summary.
func (p *Plan) reportApplied(in *Input) {
	var created, configured int
	for _, w := range p.Writes {
		if w.Create {
			created++
			continue
		}
		configured++
		if in.LastAppliedRevision == in.Revision {
			p.Applied = append(p.Applied, Event{Type: corev1.EventTypeNormal, Reason: v1alpha1.DriftCorrectedReason,
				Message: fmt.Sprintf("%s: %s changed on the cluster; restored from %s", w.Object.Ref(), FieldList(w.Fields), in.Revision)})
		}
	}
	if created+configured > 0 {
		p.Applied = append(p.Applied, Event{Type: corev1.EventTypeNormal, Reason: v1alpha1.AppliedReason,
			Message: fmt.Sprintf("revision %s: %d created, %d configured", in.Revision, created, configured)})
	}
}

// Event is the event of a release, once made.
func (r Release) Event() Event {
	ref := ObjectRef(r.Entry)
	if r.Reason == v1alpha1.HoldReleasedReason {
		return Event{Type: corev1.EventTypeNormal, Reason: r.Reason,
			Message: fmt.Sprintf("%s: Git caught up with the object held until %s; the hold is released and the object synced again", ref, r.Until)}
	}
	return Event{Type: corev1.EventTypeNormal, Reason: r.Reason,
		Message: fmt.Sprintf("%s: the hold expired at %s; the object is synced again", ref, r.Until)}
}

// PrunedEvent is the event of a prune, once made.
func PrunedEvent(e v1alpha1.InventoryEntry) Event {
	key := e.Name
	if e.Namespace != "" {
		key = e.Namespace + "/" + e.Name
	}
	return Event{Type: corev1.EventTypeNormal, Reason: v1alpha1.PrunedReason, Message: fmt.Sprintf("%s %s removed from Git: deleted", e.Kind, key)}
}

// describeHold is one line of the Held condition: the object, its expiry,
// its reason and the fields it differs from Git on.
func (p *Plan) describeHold(h v1alpha1.ObjectHold) string {
	line := fmt.Sprintf("%s held until %s", ObjectRef(h.InventoryEntry), h.Until.UTC().Format(time.RFC3339))
	if h.Reason != "" {
		line += ": " + strings.Join(strings.Fields(h.Reason), " ")
	}
	if ending := p.ending(h.InventoryEntry); ending != "" {
		return line + " (" + ending + ")"
	}
	f, inGit := p.waiting[h.InventoryEntry]
	switch {
	case !inGit:
		line += " (removed from Git; pruned when the hold ends)"
	case len(f) > 0:
		line += " (differs from Git on " + FieldList(f) + ")"
	default:
		line += " (nothing drifted yet: any edit is held until the hold expires or is removed)"
	}
	return line
}

// ending says why a hold the refused plan keeps standing ends once a
// revision is applied; empty for a hold that does not end.
func (p *Plan) ending(e v1alpha1.InventoryEntry) string {
	reason, ok := p.standingEnds[e]
	switch {
	case !ok:
		return ""
	case reason == v1alpha1.HoldReleasedReason:
		return "Git has caught up: the hold is released when a revision is applied"
	default:
		return "expired: the hold is removed when a revision is applied"
	}
}

// HeldCondition is the Held condition of the plan's holds: True listing the
// held objects and the refused holds, False with HoldRefused when only
// refused holds are to report, nil (removed) when there is neither.
func (p *Plan) HeldCondition() *Condition {
	lines := make([]string, 0, len(p.Holds)+len(p.RefusedHolds))
	for _, h := range p.Holds {
		lines = append(lines, p.describeHold(h))
	}
	for _, refused := range p.RefusedHolds {
		lines = append(lines, "refused: "+refused+"; the object is synced as if not held")
	}
	switch {
	case len(p.Holds) > 0:
		return &Condition{Type: v1alpha1.HeldCondition, Status: metav1.ConditionTrue, Reason: v1alpha1.HeldReason, Message: strings.Join(lines, "\n")}
	case len(p.RefusedHolds) > 0:
		return &Condition{Type: v1alpha1.HeldCondition, Status: metav1.ConditionFalse, Reason: v1alpha1.HoldRefusedReason, Message: strings.Join(lines, "\n")}
	}
	return nil
}

// DriftedCondition is the Drifted condition: True listing every object
// whose drift mode warn leaves in place, nil (removed) when there is none.
func (p *Plan) DriftedCondition() *Condition {
	if len(p.Drifts) == 0 {
		return nil
	}
	lines := make([]string, 0, len(p.Drifts))
	for _, d := range p.Drifts {
		lines = append(lines, d.String())
	}
	return &Condition{Type: v1alpha1.DriftedCondition, Status: metav1.ConditionTrue, Reason: v1alpha1.DriftDetectedReason,
		Message: fmt.Sprintf("%d objects differ from Git on fields Git sets; driftDetection mode warn leaves them:\n%s", len(p.Drifts), strings.Join(lines, "\n"))}
}

// DesiredObject is the object the sync applies: apiVersion, kind, name,
// namespace, the labels and annotations of Git plus the owner labels, Git's
// content digest (v1alpha1.AppliedDigestAnnotation), and spec. Status is
// never sent.
func DesiredObject(o profile.Object, owner map[string]string, digest string) (*unstructured.Unstructured, error) {
	var typed runtime.Object
	var source metav1.Object
	if cp := o.CloudProfile; cp != nil {
		apply := &v1alpha1.CloudProfile{Spec: cp.Spec}
		apply.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind(v1alpha1.CloudProfileKind))
		typed, source = apply, cp
	} else {
		ncp := o.NamespacedCloudProfile
		apply := &v1alpha1.NamespacedCloudProfile{Spec: ncp.Spec}
		apply.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind(v1alpha1.NamespacedCloudProfileKind))
		typed, source = apply, ncp
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		return nil, fmt.Errorf("convert %s: %w", o.Ref(), err)
	}
	delete(content, "status")
	delete(content, "metadata")
	u := &unstructured.Unstructured{Object: content}
	u.SetName(source.GetName())
	u.SetNamespace(source.GetNamespace())
	labels := make(map[string]string, len(owner)+len(source.GetLabels()))
	for k, v := range owner {
		labels[k] = v
	}
	for k, v := range source.GetLabels() {
		labels[k] = v
	}
	u.SetLabels(labels)
	annotations := make(map[string]string, len(source.GetAnnotations())+1)
	for k, v := range source.GetAnnotations() {
		annotations[k] = v
	}
	annotations[v1alpha1.AppliedDigestAnnotation] = digest
	u.SetAnnotations(annotations)
	return u, nil
}
