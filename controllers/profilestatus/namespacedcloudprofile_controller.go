package profilestatus

import (
	"context"
	"fmt"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/fluxcd/pkg/runtime/predicates"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/controllers/inventory"
	"github.com/profilesync/profilesync/internal/lifecycle"
	"github.com/profilesync/profilesync/internal/render/profile"
)

// +kubebuilder:rbac:groups=core.profilesync.io,resources=namespacedcloudprofiles,verbs=get;list;watch
// +kubebuilder:rbac:groups=core.profilesync.io,resources=namespacedcloudprofiles/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=core.profilesync.io,resources=cloudprofiles,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// ParentNameIndex indexes NamespacedCloudProfiles by spec.parent.name, so a
// parent's change finds its children without listing every profile.
const ParentNameIndex = ".spec.parent.name"

// NamespacedCloudProfileReconciler renders a NamespacedCloudProfile: its
// parent merged with its overrides into status.cloudProfileSpec, and the
// classification status of that merged spec at the clock's now. It wakes up at
// the merged spec's next transition and whenever its parent changes. When
// the parent's status is behind the parent's spec (a change of the parent
// woke both status controllers), it first waits until the parent's status
// reconcile has finished (ParentStatuses: at most Wait while that reconcile
// has not started, WriteWait once it is under way), so that the parent's
// status is written first; the merge needs the parent's spec only.
type NamespacedCloudProfileReconciler struct {
	ProfileStatusController
}

// SetupWithManager registers the reconciler, the parent-name index and the
// watch that maps a CloudProfile to its children.
func (r *NamespacedCloudProfileReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &v1alpha1.NamespacedCloudProfile{}, ParentNameIndex,
		func(obj client.Object) []string {
			return []string{obj.(*v1alpha1.NamespacedCloudProfile).Spec.Parent.Name}
		}); err != nil {
		return fmt.Errorf("index namespaced cloud profiles by %s: %w", ParentNameIndex, err)
	}
	overdueProfiles, err := r.watchOverdue(mgr, overdueSweep{
		kind: v1alpha1.NamespacedCloudProfileKind,
		list: func() client.ObjectList { return &v1alpha1.NamespacedCloudProfileList{} },
		next: func(o runtime.Object) *metav1.Time {
			return o.(*v1alpha1.NamespacedCloudProfile).Status.NextTransitionTime
		},
		item: func(namespace, name string) client.Object {
			return &v1alpha1.NamespacedCloudProfile{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
		},
	})
	if err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.NamespacedCloudProfile{}, builder.WithPredicates(
			predicate.Or(predicate.GenerationChangedPredicate{}, predicates.ReconcileRequestedPredicate{}, inventory.HoldChanged),
		)).
		// status.heldUntil follows the sync's decision on the profile's hold.
		Watches(&v1alpha1.ProfileSync{}, heldProfiles(v1alpha1.NamespacedCloudProfileKind)).
		// Create and delete of a parent pass the generation predicate too, so a
		// child whose parent appears recovers by itself.
		Watches(&v1alpha1.CloudProfile{},
			handler.EnqueueRequestsFromMapFunc(r.childrenOf),
			builder.WithPredicates(predicate.GenerationChangedPredicate{}),
		).
		WatchesRawSource(overdueProfiles).
		WithOptions(opts).
		Complete(r)
}

// childrenOf lists the NamespacedCloudProfiles whose parent is the given CloudProfile.
func (r *NamespacedCloudProfileReconciler) childrenOf(ctx context.Context, parent client.Object) []reconcile.Request {
	var children v1alpha1.NamespacedCloudProfileList
	if err := r.List(ctx, &children, client.MatchingFields{ParentNameIndex: parent.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list children of CloudProfile", "cloudProfile", parent.GetName())
		return nil
	}
	requests := make([]reconcile.Request, 0, len(children.Items))
	for i := range children.Items {
		requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&children.Items[i])})
	}
	return requests
}

// Reconcile renders one NamespacedCloudProfile and patches its status when it
// changed.
//
// When the parent is missing or the merge breaks a rule, the previous
// status.cloudProfileSpec is left as it was (clusters keep seeing the last good
// profile), and its classification status is still kept current, so the status
// never shows stale classifications of the spec clusters see.
func (r *NamespacedCloudProfileReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &v1alpha1.NamespacedCloudProfile{}
	return reconcileStatus(ctx, &r.ProfileStatusController, req, v1alpha1.NamespacedCloudProfileKind, obj,
		profileStatus{whole: &obj.Status, versions: &obj.Status.ProfileVersionsStatus, observedGeneration: &obj.Status.ObservedGeneration, heldUntil: &obj.Status.HeldUntil},
		func(now, wallNow time.Time) (ctrl.Result, error) {
			// A wait for the parent's status may make now a little older
			// than the write: the wake-up still comes at the next
			// transition itself (exactWake counts the time spent).
			parent, err := r.parentAfterItsStatus(ctx, obj.Spec.Parent.Name)
			switch {
			case apierrors.IsNotFound(err):
				// Not stalled: the parent watch reconciles this object when
				// the parent appears.
				conditions.MarkFalse(obj, v1alpha1.ReadyCondition, v1alpha1.ParentNotFoundReason,
					"parent CloudProfile %q not found", obj.Spec.Parent.Name)
				conditions.MarkReconciling(obj, v1alpha1.ParentNotFoundReason, "waiting for parent CloudProfile %q", obj.Spec.Parent.Name)
				conditions.Delete(obj, v1alpha1.StalledCondition)
				return r.keepPreviousSpecCurrent(obj, now, wallNow), nil
			case err != nil:
				return ctrl.Result{}, fmt.Errorf("get parent CloudProfile %q: %w", obj.Spec.Parent.Name, err)
			}

			status, errs := profile.NamespacedStatus(&parent.Spec, &obj.Spec, now)
			if len(errs) > 0 {
				// Stalled, but not a terminal error: the kept spec still has
				// transitions to wake up for, and a parent change re-renders
				// it.
				markInvalid(obj, r.EventRecorder, errs)
				return r.keepPreviousSpecCurrent(obj, now, wallNow), nil
			}

			recordClassificationChanges(r.EventRecorder, obj, &obj.Status.ProfileVersionsStatus, &status.ProfileVersionsStatus)
			obj.Status.CloudProfileSpec = status.CloudProfileSpec
			obj.Status.ProfileVersionsStatus = status.ProfileVersionsStatus
			markReady(obj, classificationSummary(&status.ProfileVersionsStatus))
			return ctrl.Result{RequeueAfter: requeueAfter(&status.ProfileVersionsStatus, wallNow)}, nil
		})
}

// parentAfterItsStatus reads the parent CloudProfile and, when its status is
// behind its spec, waits for its status reconcile (ParentStatuses.await)
// and reads it again: the spec may have moved on meanwhile.
//
// It reads without the cache's deep copy (a whole profile of hundreds of
// versions at every reconcile of each of its children): the merge copies
// what it keeps and never modifies the parent (merge.Namespaced).
func (r *NamespacedCloudProfileReconciler) parentAfterItsStatus(ctx context.Context, name string) (*v1alpha1.CloudProfile, error) {
	parent := &v1alpha1.CloudProfile{}
	key := client.ObjectKey{Name: name}
	if err := r.Get(ctx, key, parent, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	if parent.Status.ObservedGeneration >= parent.Generation || !r.ParentStatuses.await(ctx, name, parent.Generation) {
		return parent, nil
	}
	parent = &v1alpha1.CloudProfile{}
	if err := r.Get(ctx, key, parent, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	return parent, nil
}

// keepPreviousSpecCurrent recomputes the classification status of the
// cloudProfileSpec already in status, so it stays true while a new one cannot
// be rendered, and schedules the wake-up at its next transition. now is the
// time to compute at, wallNow the clock's (see statusTimes).
func (r *NamespacedCloudProfileReconciler) keepPreviousSpecCurrent(obj *v1alpha1.NamespacedCloudProfile, now, wallNow time.Time) ctrl.Result {
	if obj.Status.CloudProfileSpec == nil {
		obj.Status.ProfileVersionsStatus = v1alpha1.ProfileVersionsStatus{}
		return ctrl.Result{}
	}
	status := lifecycle.Status(obj.Status.CloudProfileSpec, now)
	recordClassificationChanges(r.EventRecorder, obj, &obj.Status.ProfileVersionsStatus, &status)
	obj.Status.ProfileVersionsStatus = status
	return ctrl.Result{RequeueAfter: requeueAfter(&status, wallNow)}
}
