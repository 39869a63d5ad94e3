package profilesync

import (
	"slices"

	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/syncplan"
)

// reportPlan reports what the plan decided, before anything of it is
// executed (and when it refuses): its events, each line of a topic only when
// the previous sync did not report it (reportedLines), the holds in
// status.holds and the Held condition when it judged them, the drift in the
// Drifted condition and the profilesync_drifted_objects gauge when it
// compared the objects. Until the plan's releases are made, status.holds
// lists the holds that end as they stood (StandingHolds), so a sync that
// stops before them judges them again.
func (r *ProfileSyncReconciler) reportPlan(obj *v1alpha1.ProfileSync, plan *syncplan.Plan) {
	key := client.ObjectKeyFromObject(obj)
	topics := make([]string, 0, len(plan.Topics))
	for topic := range plan.Topics {
		topics = append(topics, topic)
	}
	slices.Sort(topics)
	fresh := make(map[string][]string, len(topics))
	for _, topic := range topics {
		fresh[topic] = r.memory.fresh(key, eventTopic{kind: planTopics[topic]}, plan.Topics[topic])
	}
	for _, e := range plan.Events {
		if e.Topic == "" || slices.Contains(fresh[e.Topic], e.Line) {
			r.event(obj, e.Type, e.Reason, "%s", e.Message)
		}
	}
	if plan.HoldsJudged {
		obj.Status.Holds = plan.StandingHolds()
		setPlanCondition(obj, v1alpha1.HeldCondition, plan.HeldCondition())
		r.Metrics.ObserveRefusedHolds(obj, len(plan.RefusedHolds))
	}
	if plan.DriftJudged {
		setPlanCondition(obj, v1alpha1.DriftedCondition, plan.DriftedCondition())
		r.Metrics.ObserveDrift(obj, len(plan.Drifts))
	}
}

// planTopics are the kinds of the memory's event topics (syncMemory) of
// the plan's topics.
var planTopics = map[string]topicKind{
	syncplan.TopicHeld:         topicHeld,
	syncplan.TopicRefusedHolds: topicHoldRefused,
	syncplan.TopicIgnoredHolds: topicHoldIgnored,
	syncplan.TopicDrift:        topicDrift,
}

// emit reports events the plan made for a step once it is executed.
func (r *ProfileSyncReconciler) emit(obj *v1alpha1.ProfileSync, events []syncplan.Event) {
	for _, e := range events {
		r.event(obj, e.Type, e.Reason, "%s", e.Message)
	}
}

// setPlanCondition sets the condition of type the plan decided, its message
// cut to boundedMessage; nil removes it.
func setPlanCondition(obj *v1alpha1.ProfileSync, conditionType string, c *syncplan.Condition) {
	switch {
	case c == nil:
		conditions.Delete(obj, conditionType)
	case c.Status == metav1.ConditionTrue:
		conditions.MarkTrue(obj, c.Type, c.Reason, "%s", boundedMessage(c.Message))
	default:
		conditions.MarkFalse(obj, c.Type, c.Reason, "%s", boundedMessage(c.Message))
	}
}
