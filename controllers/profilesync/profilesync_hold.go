package profilesync

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/controllers/transient"
	"github.com/profilesync/profilesync/internal/syncplan"
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
// Which holds are honoured, refused, ignored or end, and what each waits
// on, is the sync's plan (internal/syncplan, holds.go says when a hold
// ends). The reconciler executes it: a hold that ends is released by
// removing its two annotations (releaseHolds), only once the plan refuses
// nothing and after its writes, and only if hold-until still has the value
// the plan judged. A change of the hold annotations on a profile syncs the
// ProfileSyncs whose inventory lists it at once (holdChanged), so a hold is
// judged, and its drift recorded, when it is set, not at the next interval.
// status.holds lists the honoured holds, so a hold that passes its expiry is
// told from one set in the past, across restarts too: the hold lives on the
// object, and the status says which of them the sync honoured.

// releaseHolds executes the plan's releases, each reported once made, and
// then lists the holds that still stand in status.holds.
func (r *ProfileSyncReconciler) releaseHolds(ctx context.Context, obj *v1alpha1.ProfileSync, plan *syncplan.Plan, live syncplan.Live) error {
	for _, release := range plan.Releases {
		// Both kinds of profile are client.Objects; nil when it is gone.
		target, ok := live.Object(release.Entry).(client.Object)
		if !ok {
			continue
		}
		if err := r.endHold(ctx, release, target); err != nil {
			return err
		}
		r.emit(obj, []syncplan.Event{release.Event()})
	}
	obj.Status.Holds = plan.Holds
	return nil
}

// annotationPatchOp is one operation of a JSON patch (RFC 6902) on an
// annotation.
type annotationPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value string `json:"value,omitempty"`
}

// endHold removes the hold annotations of a released hold from live with
// the operator's own identity (its role has the hold verb): a JSON patch
// that first tests that hold-until still has the value the plan judged, so
// a hold extended meanwhile is left for the next sync to judge. Nothing else
// of the object is touched.
func (r *ProfileSyncReconciler) endHold(ctx context.Context, release syncplan.Release, live client.Object) error {
	ref := syncplan.ObjectRef(release.Entry)
	path := func(annotation string) string {
		return "/metadata/annotations/" + strings.ReplaceAll(strings.ReplaceAll(annotation, "~", "~0"), "/", "~1")
	}
	ops := []annotationPatchOp{
		{Op: "test", Path: path(v1alpha1.HoldUntilAnnotation), Value: release.Until},
		{Op: "remove", Path: path(v1alpha1.HoldUntilAnnotation)},
	}
	if release.HasReason {
		ops = append(ops, annotationPatchOp{Op: "remove", Path: path(v1alpha1.HoldReasonAnnotation)})
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return fmt.Errorf("end the hold of %s: %w", ref, err)
	}
	// A new object to patch: the live one is the cache's, shared.
	target := live.DeepCopyObject().(client.Object)
	err = transient.Retry(func() error { return r.Patch(ctx, target, client.RawPatch(types.JSONPatchType, patch)) })
	if err != nil {
		return applyFailed(fmt.Errorf("end the hold of %s: remove annotations %s and %s: %w", ref, v1alpha1.HoldUntilAnnotation, v1alpha1.HoldReasonAnnotation, err))
	}
	return nil
}

// syncRequeue is the wait before the next sync: the interval, or sooner the
// earliest expiry of a hold status.holds lists, so a hold ends exactly when
// it expires without polling. An expiry already past is in the list only
// when the sync stopped before it released it (a refused revision), and
// waking at once would only stop there again.
func syncRequeue(obj *v1alpha1.ProfileSync, now time.Time, interval time.Duration) time.Duration {
	if hold := syncplan.HoldRequeue(obj.Status.Holds, now); hold > 0 && hold < interval {
		return hold
	}
	return interval
}
