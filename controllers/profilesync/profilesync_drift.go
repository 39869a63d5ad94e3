package profilesync

import (
	"fmt"
	"strings"

	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// objectDrift is an object that differs from Git on fields Git sets while
// Git did not change it, under driftDetection mode warn: the object and the
// fields (driftedFields).
type objectDrift struct {
	ref    string
	fields []string
}

func (d objectDrift) String() string {
	return fmt.Sprintf("%s: %s", d.ref, fieldList(d.fields))
}

// reportDrift reports the drift left in place under mode warn: the Drifted
// condition listing every drifted object and its fields, a DriftDetected
// warning per object whose drift is new or changed, and the
// profilesync_drifted_objects gauge. No drift removes the condition. In mode
// correct there is never any (the apply puts it back).
func (r *ProfileSyncReconciler) reportDrift(obj *v1alpha1.ProfileSync, drifts []objectDrift) {
	lines := make([]string, 0, len(drifts))
	for _, d := range drifts {
		lines = append(lines, d.String())
	}
	for _, line := range r.memory.fresh(client.ObjectKeyFromObject(obj), eventTopic{kind: topicDrift}, lines) {
		r.event(obj, corev1.EventTypeWarning, v1alpha1.DriftDetectedReason,
			"%s changed on the cluster; left as it is (driftDetection mode warn)", line)
	}
	r.Metrics.ObserveDrift(obj, len(drifts))
	if len(drifts) == 0 {
		conditions.Delete(obj, v1alpha1.DriftedCondition)
		return
	}
	conditions.MarkTrue(obj, v1alpha1.DriftedCondition, v1alpha1.DriftDetectedReason, "%s",
		boundedMessage(fmt.Sprintf("%d objects differ from Git on fields Git sets; driftDetection mode warn leaves them:\n%s", len(drifts), strings.Join(lines, "\n"))))
}
