package profilestatus

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/controllers/inventory"
)

// A profile's status.heldUntil (the Held Until column of kubectl get) says
// whether the sync honours a hold of break glass on it. The hold
// annotations alone cannot: anyone with the verb may set one the sync then
// refuses (further ahead than --max-hold, say), and on-call would read
// "held" while the sync puts the edit back. Who decides is the sync, and it
// records its decision in the owning ProfileSync's status.holds; the
// profile's status belongs to the status controllers. So they copy the
// decision: heldUntil is the expiry the owner's status.holds lists for the
// profile, and only while the profile's hold-until annotation still has
// that value (a hold changed since is the sync's to judge again). They
// reconcile a profile when its hold annotations change (inventory.HoldChanged) and
// when a ProfileSync's status.holds changes (heldProfiles).

// honouredHoldUntil is the expiry of the hold the sync honours on the
// profile obj of kind: the Until of its entry in the status.holds of a
// ProfileSync whose inventory lists it, when obj's hold-until annotation
// has that same time; nil otherwise.
func honouredHoldUntil(ctx context.Context, c client.Reader, kind string, obj client.Object) (*metav1.Time, error) {
	annotation, ok := obj.GetAnnotations()[v1alpha1.HoldUntilAnnotation]
	if !ok {
		return nil, nil
	}
	until, err := time.Parse(time.RFC3339, annotation)
	if err != nil {
		// No sync honours a hold it cannot read.
		return nil, nil
	}
	key := inventory.Key(kind, obj.GetNamespace(), obj.GetName())
	var owners v1alpha1.ProfileSyncList
	if err := c.List(ctx, &owners, client.MatchingFields{inventory.Index: key}); err != nil {
		return nil, fmt.Errorf("list the ProfileSyncs of %s %s to show its hold: %w", kind, client.ObjectKeyFromObject(obj), err)
	}
	for _, owner := range owners.Items {
		for _, h := range owner.Status.Holds {
			if inventory.Key(h.Kind, h.Namespace, h.Name) == key && h.Until.Time.Equal(until) {
				honoured := h.Until
				return &honoured, nil
			}
		}
	}
	return nil, nil
}

// heldProfiles enqueues the profiles of kind whose hold a ProfileSync's
// status.holds lists, before or after a change of it: their heldUntil
// follows the sync's decision.
func heldProfiles(kind string) handler.EventHandler {
	enqueue := func(q workqueue.TypedRateLimitingInterface[reconcile.Request], objs ...client.Object) {
		for _, obj := range objs {
			sync, ok := obj.(*v1alpha1.ProfileSync)
			if !ok {
				continue
			}
			for _, h := range sync.Status.Holds {
				if h.Kind == kind {
					q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: h.Namespace, Name: h.Name}})
				}
			}
		}
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, e.Object)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if holdsOf(e.ObjectOld) != holdsOf(e.ObjectNew) {
				enqueue(q, e.ObjectOld, e.ObjectNew)
			}
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, e.Object)
		},
	}
}

// holdsOf is the holds a ProfileSync honours, as one comparable string of
// each hold's object and expiry.
func holdsOf(obj client.Object) string {
	sync, ok := obj.(*v1alpha1.ProfileSync)
	if !ok {
		return ""
	}
	var holds string
	for _, h := range sync.Status.Holds {
		holds += inventory.Key(h.Kind, h.Namespace, h.Name) + "@" + h.Until.UTC().Format(time.RFC3339) + "\n"
	}
	return holds
}
