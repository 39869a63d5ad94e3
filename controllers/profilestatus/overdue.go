package profilestatus

import (
	"context"
	"fmt"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// A profile's status is computed again at its next transition and at no
// other time: the reconcile asks to be woken exactly then (requeueAfter),
// and nothing else wakes it but a change (its spec, its parent, a hold).
// The wait runs on the monotonic clock, which a step of the wall clock (an
// NTP correction, a resumed virtual machine) does not move: after a step
// forward, the wall clock passes a transition before the wake-up comes. A
// profile used to be reconciled every StatusRecheck for that, whether or
// not anything had happened: reconciles between transitions, which an idle
// landscape should not have. Instead, every StatusRecheck one sweep per
// kind reads the profiles from the cache, reconciles nothing, and wakes
// only the profiles whose status still names a next transition that the
// wall clock has passed (overdue). Without a step there are none: each
// such profile's wake-up has come. A step back needs no sweep: the wake-up
// comes early, finds the status as it is (statusTimes) and waits for the
// wall clock's way to the transition.

// overdueGrace is how long after a profile's next transition its own
// wake-up may still be in hand (queued, or its reconcile writing the
// status) before the sweep takes the status for overdue.
const overdueGrace = time.Second

// overdue tells whether a status whose next transition is next is overdue
// at the wall clock's now.
func overdue(next *metav1.Time, wallNow time.Time) bool {
	return next != nil && !wallNow.Before(next.Add(overdueGrace))
}

// overdueSweep is one kind's sweep: every period it lists the kind's
// profiles from the cache and sends the overdue ones to wake.
type overdueSweep struct {
	c    *ProfileStatusController
	kind string
	// list makes an empty list of the kind; next is the status's next
	// transition of one of its items.
	list func() client.ObjectList
	next func(runtime.Object) *metav1.Time
	wake chan<- event.GenericEvent
	// item makes the object a wake names (its name and namespace only).
	item func(namespace, name string) client.Object
}

// Start runs the sweep until ctx ends; the manager runs it on the leader
// only (the default of a Runnable), as it does the controllers.
func (s *overdueSweep) Start(ctx context.Context) error {
	ticker := time.NewTicker(statusRecheck(s.c.StatusRecheck))
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
			if err := s.sweep(ctx); err != nil {
				ctrl.LoggerFrom(ctx).Error(err, "look for overdue profile statuses", "kind", s.kind)
			}
		}
	}
}

// sweep wakes every profile of the kind whose status is overdue.
func (s *overdueSweep) sweep(ctx context.Context) error {
	list := s.list()
	// Read only: the names of the overdue profiles are copied out.
	if err := s.c.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("list %s: %w", s.kind, err)
	}
	wallNow := s.c.Clock.Now()
	var due []client.Object
	err := apimeta.EachListItem(list, func(o runtime.Object) error {
		if overdue(s.next(o), wallNow) {
			obj, err := apimeta.Accessor(o)
			if err != nil {
				return err
			}
			due = append(due, s.item(obj.GetNamespace(), obj.GetName()))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read %s: %w", s.kind, err)
	}
	for _, obj := range due {
		select {
		case s.wake <- event.GenericEvent{Object: obj}:
		case <-ctx.Done():
			return nil
		}
	}
	return nil
}

// watchOverdue adds the kind's overdue sweep to mgr and returns the source
// of its wakes, for the controller to watch.
func (c *ProfileStatusController) watchOverdue(mgr ctrl.Manager, sweep overdueSweep) (source.Source, error) {
	wake := make(chan event.GenericEvent)
	sweep.c, sweep.wake = c, wake
	if err := mgr.Add(manager.Runnable(&sweep)); err != nil {
		return nil, fmt.Errorf("add the sweep of overdue %s: %w", sweep.kind, err)
	}
	return source.Channel(wake, &handler.EnqueueRequestForObject{}), nil
}
