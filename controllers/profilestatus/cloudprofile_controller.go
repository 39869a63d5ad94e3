package profilestatus

import (
	"context"
	"errors"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/fluxcd/pkg/runtime/predicates"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/controllers/inventory"
	"github.com/profilesync/profilesync/internal/lifecycle"
)

// +kubebuilder:rbac:groups=core.profilesync.io,resources=cloudprofiles,verbs=get;list;watch
// +kubebuilder:rbac:groups=core.profilesync.io,resources=cloudprofiles/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// CloudProfileReconciler keeps a CloudProfile's status true for "now": every
// version's classification at the clock's current time, the next transition,
// and Ready. It wakes up at exactly the next transition and never polls in
// between (overdue.go says how a step of the wall clock is noticed); it
// never writes spec. Each reconcile it finishes, the status written or not
// (an invalid spec included), is announced to ParentStatuses, which the
// profile's NamespacedCloudProfiles wait for: a changed CloudProfile's
// status is written before its children's.
type CloudProfileReconciler struct {
	ProfileStatusController
}

// SetupWithManager registers the reconciler. Only spec changes (generation),
// reconcile requests (the reconcile.fluxcd.io/requestedAt annotation), a
// change of the hold annotations, a change of the holds a ProfileSync
// honours (status.heldUntil) and a status the wall clock has overdue
// (overdue.go) trigger a reconcile, besides the wake-up at the next
// transition; the controller's own status writes do not.
func (r *CloudProfileReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	overdueProfiles, err := r.watchOverdue(mgr, overdueSweep{
		kind: v1alpha1.CloudProfileKind,
		list: func() client.ObjectList { return &v1alpha1.CloudProfileList{} },
		next: func(o runtime.Object) *metav1.Time { return o.(*v1alpha1.CloudProfile).Status.NextTransitionTime },
		item: func(_, name string) client.Object {
			return &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: name}}
		},
	})
	if err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.CloudProfile{}, builder.WithPredicates(
			predicate.Or(predicate.GenerationChangedPredicate{}, predicates.ReconcileRequestedPredicate{}, inventory.HoldChanged),
		)).
		// status.heldUntil follows the sync's decision on the profile's hold.
		Watches(&v1alpha1.ProfileSync{}, heldProfiles(v1alpha1.CloudProfileKind)).
		WatchesRawSource(overdueProfiles).
		WithOptions(opts).
		Complete(r)
}

// Reconcile computes the status of one CloudProfile and patches it when it
// changed.
func (r *CloudProfileReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &v1alpha1.CloudProfile{}
	return reconcileStatus(ctx, &r.ProfileStatusController, req, v1alpha1.CloudProfileKind, obj,
		profileStatus{whole: &obj.Status, versions: &obj.Status.ProfileVersionsStatus, observedGeneration: &obj.Status.ObservedGeneration, heldUntil: &obj.Status.HeldUntil,
			announce: r.ParentStatuses},
		func(now, wallNow time.Time) (ctrl.Result, error) {
			errs, warnings := lifecycle.ValidateCloudProfileSpecAt(&obj.Spec, field.NewPath("spec"), now)
			// The profile is stored: what Gardener judges only when it is
			// written (a bastion image supported then) stops nothing now.
			if errs = lifecycle.WithoutWriteTimeRules(errs); len(errs) > 0 {
				// No status guesswork: classifications of an invalid spec
				// would claim things that are not so; the condition says
				// what to fix.
				obj.Status.ProfileVersionsStatus = v1alpha1.ProfileVersionsStatus{}
				// Stalled until the spec changes: retrying cannot help.
				return ctrl.Result{}, reconcile.TerminalError(errors.New(markInvalid(obj, r.EventRecorder, errs)))
			}
			if obj.Status.ObservedGeneration != obj.Generation {
				for _, w := range warnings {
					r.EventRecorder.Event(obj, corev1.EventTypeWarning, v1alpha1.ValidationFailedReason, w)
				}
			}

			status := lifecycle.Status(&obj.Spec, now)
			recordClassificationChanges(r.EventRecorder, obj, &obj.Status.ProfileVersionsStatus, &status)
			obj.Status.ProfileVersionsStatus = status
			markReady(obj, classificationSummary(&status))
			return ctrl.Result{RequeueAfter: requeueAfter(&status, wallNow)}, nil
		})
}

// conditionsObject is a profile whose conditions the controllers set.
type conditionsObject interface {
	client.Object
	conditions.Setter
}

// markReady records a successful reconcile.
func markReady(obj conditionsObject, message string) {
	conditions.MarkTrue(obj, v1alpha1.ReadyCondition, v1alpha1.SucceededReason, "%s", message)
	conditions.Delete(obj, v1alpha1.ReconcilingCondition)
	conditions.Delete(obj, v1alpha1.StalledCondition)
}

// markInvalid records a spec that breaks the rules: the object is stalled
// until its spec (or its parent) changes. It returns the message naming every
// field.
func markInvalid(obj conditionsObject, recorder record.EventRecorder, errs field.ErrorList) string {
	msg := fieldErrorsMessage(errs)
	conditions.MarkFalse(obj, v1alpha1.ReadyCondition, v1alpha1.ValidationFailedReason, "%s", msg)
	conditions.MarkStalled(obj, v1alpha1.ValidationFailedReason, "%s", msg)
	conditions.Delete(obj, v1alpha1.ReconcilingCondition)
	recorder.Event(obj, corev1.EventTypeWarning, v1alpha1.ValidationFailedReason, msg)
	return msg
}
