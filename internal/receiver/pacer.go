package receiver

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// DefaultTriggerSpacing is the least time between two syncs the receiver of
// one replica starts for one ProfileSync. Pushes a second or more apart each
// start a sync at once (a push, its sync and the next push take longer), while
// a replayed request costs at most one listing of the Git host's refs per
// second.
const DefaultTriggerSpacing = time.Second

// maxPaced is the number of ProfileSyncs whose last trigger the pacer keeps
// before it forgets those triggered longer than the spacing ago. Only
// ProfileSyncs whose token a request proved get an entry.
const maxPaced = 4096

// pace is what the pacer makes of an accepted request.
type pace int

const (
	// paceNow: trigger the sync now.
	paceNow pace = iota
	// paceDeferred: a sync was triggered less than the spacing ago; one more
	// is scheduled for the end of the spacing.
	paceDeferred
	// paceCoalesced: a scheduled sync is pending already and will see the
	// push too; the request adds nothing.
	paceCoalesced
)

// pacer spaces the triggers of each ProfileSync: a request within the
// spacing of the last trigger is folded into one trigger at the end of the
// spacing, and while that one is pending further requests are dropped. A
// trigger is never dropped outright, because a push made while the previous
// sync was running must still be synced; it is only delayed.
type pacer struct {
	clock   clock.WithDelayedExecution
	spacing time.Duration
	// fire triggers a deferred sync; it runs in a goroutine of its own.
	fire func(types.NamespacedName)

	mu sync.Mutex
	// last is when the last trigger of each ProfileSync happened, or will
	// happen when one is pending.
	last    map[types.NamespacedName]time.Time
	pending map[types.NamespacedName]clock.Timer
	stopped bool
}

func newPacer(c clock.WithDelayedExecution, spacing time.Duration, fire func(types.NamespacedName)) *pacer {
	return &pacer{
		clock:   c,
		spacing: spacing,
		fire:    fire,
		last:    map[types.NamespacedName]time.Time{},
		pending: map[types.NamespacedName]clock.Timer{},
	}
}

// admit decides about a request for key. With paceNow the caller triggers
// the sync and, if that fails, calls undo with the returned time.
func (p *pacer) admit(key types.NamespacedName) (pace, time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.pending[key]; ok {
		return paceCoalesced, time.Time{}
	}
	now := p.clock.Now()
	last, ok := p.last[key]
	if !ok || now.Sub(last) >= p.spacing {
		p.forgetOld(now)
		p.last[key] = now
		return paceNow, now
	}
	if p.stopped {
		return paceCoalesced, time.Time{}
	}
	due := last.Add(p.spacing)
	p.last[key] = due
	// The fake clock of the tests runs the function while it holds its own
	// lock, so the work happens in a goroutine.
	p.pending[key] = p.clock.AfterFunc(due.Sub(now), func() {
		p.mu.Lock()
		delete(p.pending, key)
		stopped := p.stopped
		p.mu.Unlock()
		if !stopped {
			go p.fire(key)
		}
	})
	return paceDeferred, time.Time{}
}

// undo forgets the trigger admit allowed at at, which failed, so that the
// sender's next attempt is not held back.
func (p *pacer) undo(key types.NamespacedName, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last[key].Equal(at) {
		delete(p.last, key)
	}
}

// stop cancels every pending trigger; the receiver is shutting down.
func (p *pacer) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped = true
	for key, timer := range p.pending {
		timer.Stop()
		delete(p.pending, key)
	}
}

// forgetOld drops the entries that can no longer hold a trigger back, once
// there are many. p.mu is held.
func (p *pacer) forgetOld(now time.Time) {
	if len(p.last) < maxPaced {
		return
	}
	for key, last := range p.last {
		if _, ok := p.pending[key]; !ok && now.Sub(last) >= p.spacing {
			delete(p.last, key)
		}
	}
}
