// Package applygate holds a profile's status write while its ProfileSync
// builds and applies a new revision (Gate), shared by the ProfileSync
// reconciler and the status reconcilers of one manager.
package applygate

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// DefaultWait bounds how long a profile's status write waits for
// the apply of its ProfileSync (Gate).
const DefaultWait = time.Minute

// Gate holds the status writes of the profiles a ProfileSync owns while
// that ProfileSync applies a revision, and lets them go when the apply ends.
// A sync of a new revision begins the hold before its build: a status
// written while the revision builds and validates competes with them for
// the CPU the apply then waits for (on a push, the previous push's
// NamespacedCloudProfile writes did), and is written again once the
// revision is applied.
//
// Why: a first sync creates every profile, and each creation wakes the
// status controllers at once. Their writes are the API server's largest: a
// NamespacedCloudProfile's status holds its whole merged profile. Written
// while the apply is under way, they compete with it for the API server,
// and the revision takes longer to be applied while its profiles' status
// takes no less. Held, the revision is applied first and the statuses
// follow, computed once from the applied specs (docs/performance.md has the
// figures). The wait is bounded (Wait) so that a stuck apply cannot hold a
// lifecycle transition for long; a status written before the apply ends is
// still correct, it only competes with the apply again.
//
// The gate is in-process: the sync and the status controllers of one
// manager share it. A nil gate holds nothing.
type Gate struct {
	// Wait bounds the hold of one status write; zero means
	// DefaultWait.
	Wait time.Duration

	mu sync.Mutex
	// applying has a channel per ProfileSync whose apply is under way,
	// closed when it ends.
	applying map[types.NamespacedName]chan struct{}
}

// Begin marks the ProfileSync's apply as under way; end lets the held status
// writes go. end may be called more than once: only the first call does
// anything, so a caller can end the hold as soon as its apply ends and
// still defer end for the paths that return before.
func (g *Gate) Begin(profileSync types.NamespacedName) (end func()) {
	if g == nil {
		return func() {}
	}
	done := make(chan struct{})
	g.mu.Lock()
	if g.applying == nil {
		g.applying = map[types.NamespacedName]chan struct{}{}
	}
	g.applying[profileSync] = done
	g.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			if g.applying[profileSync] == done {
				delete(g.applying, profileSync)
			}
			g.mu.Unlock()
			close(done)
		})
	}
}

// Holds tells whether the status writes of the profiles profileSync owns
// are held now.
func (g *Gate) Holds(profileSync types.NamespacedName) bool {
	if g == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.applying[profileSync]
	return ok
}

// hold waits until the apply of the ProfileSync that owns the profile (by
// its owner labels) has ended, at most Wait, and tells whether it waited: a
// caller that did re-reads the profile, which the apply may have changed.
func (g *Gate) hold(ctx context.Context, profile client.Object) bool {
	if g == nil {
		return false
	}
	labels := profile.GetLabels()
	owner := types.NamespacedName{Namespace: labels[v1alpha1.OwnerNamespaceLabel], Name: labels[v1alpha1.OwnerNameLabel]}
	if owner.Name == "" {
		return false
	}
	g.mu.Lock()
	done, ok := g.applying[owner]
	g.mu.Unlock()
	if !ok {
		return false
	}
	wait := g.Wait
	if wait <= 0 {
		wait = DefaultWait
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
	case <-ctx.Done():
	}
	return true
}

// Get reads the profile and, if the apply of its ProfileSync is under way,
// waits for it (hold) and reads the profile again.
func (g *Gate) Get(ctx context.Context, c client.Reader, key client.ObjectKey, profile client.Object) error {
	if err := c.Get(ctx, key, profile); err != nil {
		return err
	}
	if g.hold(ctx, profile) {
		return c.Get(ctx, key, profile)
	}
	return nil
}
