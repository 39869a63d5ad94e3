package profilesync

import (
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/gitsource"
	"github.com/profilesync/profilesync/internal/rollout"
)

// OperatorRolloutDecision is the rollout decision of the operator's sync,
// for the tests of package profilesync_test that hold it against `rollout
// status`: a ProfileSync of landscape that follows branch and runs running
// (with spec.rollout.hold set by hold) decides on landscapes at now, as
// decideRollout does (decideCandidates, then follow). It returns the commit
// the sync applies, status.rollout and the Waiting condition's message.
// With upstreamKeys (spec.rollout.upstreamKeys's file), it counts only
// the upstream records they verify, as checkUpstreamSignatures makes it.
func OperatorRolloutDecision(landscapes *gitsource.Landscapes, landscape rollout.Landscape, branch, running string, hold bool, hotfix string, now time.Time,
	upstreamKeys *gitsource.RecordKeys) (string, *v1alpha1.RolloutStatus, string, error) {
	r := &ProfileSyncReconciler{EventRecorder: record.NewFakeRecorder(100), Clock: clocktesting.NewFakePassiveClock(now)}
	obj := &v1alpha1.ProfileSync{
		ObjectMeta: metav1.ObjectMeta{Name: "agreement", Namespace: "default"},
		Spec:       v1alpha1.ProfileSyncSpec{Rollout: &v1alpha1.ProfileSyncRollout{Hold: hold, Hotfix: hotfix}},
		Status:     v1alpha1.ProfileSyncStatus{Rollout: &v1alpha1.RolloutStatus{Landscape: landscape.Name}},
	}
	var requireSigned []string
	if upstreamKeys != nil {
		landscapes.CheckRecordSignatures(*upstreamKeys, now)
		requireSigned = landscape.After
	}
	answer, err := r.decideCandidates(obj, landscapes, &landscape, branch, running, requireSigned)
	if err != nil {
		return "", nil, "", err
	}
	target, _ := r.follow(obj, answer, running, branch)
	return target, obj.Status.Rollout, conditions.GetMessage(obj, v1alpha1.WaitingCondition), nil
}
