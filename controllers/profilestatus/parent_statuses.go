package profilestatus

import (
	"context"
	"sync"
	"time"
)

// DefaultParentStatusWait bounds how long a NamespacedCloudProfile's status
// reconcile waits for its parent's (ParentStatuses) while the parent's has
// not started. Two seconds: the parent's status controller is woken by the
// same change, so the bound is only reached when it is not getting to the
// parent at all (not running, its workers busy elsewhere); then the
// children go on, at most this late. A parent's reconcile under way is
// waited for up to DefaultParentStatusWriteWait.
const DefaultParentStatusWait = 2 * time.Second

// DefaultParentStatusWriteWait bounds how long a NamespacedCloudProfile's
// status reconcile waits for a parent's status reconcile that is under way
// (ParentStatuses.WriteWait). The parent's reconcile is then getting to it:
// its status write is in flight, and on a loaded API server a CloudProfile's
// write of 600 versions takes seconds (kube-apiserver's CPU for it, see
// docs/performance.md, "A push"). Children that gave up on it at
// DefaultParentStatusWait would send their far larger writes beside it and
// delay it further. Ten seconds, twice the slowest such write measured on
// the bench landscape's 2 cores under a load of 14: a write still under
// way then is stuck, not slow, and the children go on.
const DefaultParentStatusWriteWait = 10 * time.Second

// ParentStatuses orders the status writes of a changed CloudProfile and its
// NamespacedCloudProfiles: the CloudProfile's status reconcile announces
// when it has finished at a generation, written or not (finished), and a
// NamespacedCloudProfile's status reconcile whose parent's status is behind
// the parent's spec waits for that announcement (await), at most Wait.
//
// Why: a change of a CloudProfile's spec wakes its status controller and,
// through its generation (childrenOf), the status controller of each of its
// children at once. The children's writes are the largest the API server
// takes (each holds the whole merged profile), so, running at the same
// time, they delay the parent's small one: what a user, and the push
// benchmark, see first is the parent's status. The children's merged
// profile depends on the parent's spec, not its status, so waiting costs
// them nothing but the parent's write.
//
// A wait that reaches Wait while the parent's status reconcile of the
// generation is under way (started, not yet finished) goes on waiting for
// it, up to WriteWait from the wait's start: the parent's controller is
// getting to it, and the children's writes would only slow its write down.
//
// It is in-process: the two status controllers of one manager share it. A
// nil ParentStatuses orders nothing.
type ParentStatuses struct {
	// Wait bounds one wait while the parent's status reconcile has not
	// started; zero means DefaultParentStatusWait.
	Wait time.Duration
	// WriteWait bounds one wait for a parent's status reconcile under way;
	// zero means DefaultParentStatusWriteWait. A WriteWait shorter than
	// Wait adds nothing.
	WriteWait time.Duration

	mu      sync.Mutex
	parents map[string]*parentStatus
}

// parentStatus is what ParentStatuses knows of one CloudProfile.
type parentStatus struct {
	// settled is the latest generation whose status reconcile has finished,
	// or that a wait gave up on.
	settled int64
	// running is the generation whose status reconcile is under way
	// (started, not finished), zero when none is: the controller never
	// runs two reconciles of one CloudProfile at once.
	running int64
	// changed is closed, and replaced, when settled moves or the entry is
	// forgotten.
	changed chan struct{}
}

// entry returns the CloudProfile's entry, made on first use; p.mu is held.
func (p *ParentStatuses) entry(name string) *parentStatus {
	if p.parents == nil {
		p.parents = map[string]*parentStatus{}
	}
	st, ok := p.parents[name]
	if !ok {
		st = &parentStatus{changed: make(chan struct{})}
		p.parents[name] = st
	}
	return st
}

// settle records that the CloudProfile's status is settled at generation
// and wakes the waiters; p.mu is held.
func (p *ParentStatuses) settle(name string, generation int64) {
	st := p.entry(name)
	if generation <= st.settled {
		return
	}
	st.settled = generation
	close(st.changed)
	st.changed = make(chan struct{})
}

// started announces that the status reconcile of the CloudProfile is
// under way at generation, read after the apply gate: children waiting for
// that generation wait for its end beyond Wait (up to WriteWait).
func (p *ParentStatuses) started(name string, generation int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.entry(name).running = generation
}

// finished announces that the status reconcile of the CloudProfile has
// finished at generation, whether it wrote the status or not: the children
// waiting for it go on.
func (p *ParentStatuses) finished(name string, generation int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.entry(name).running = 0
	p.settle(name, generation)
}

// forget drops a CloudProfile that is gone; its waiters go on. A
// CloudProfile created again under the name starts at generation 1.
func (p *ParentStatuses) forget(name string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if st, ok := p.parents[name]; ok {
		close(st.changed)
		delete(p.parents, name)
	}
}

// await waits until the status reconcile of the CloudProfile has finished
// at generation or later, at most Wait, or WriteWait while that reconcile
// is under way, and tells whether it waited (the caller then reads the
// parent again). A wait that reaches its bound settles the generation, so
// that no other reconcile waits for it again: a parent whose status
// controller is not running costs each of its generations one bound, not
// one per child reconcile.
func (p *ParentStatuses) await(ctx context.Context, name string, generation int64) (waited bool) {
	if p == nil {
		return false
	}
	wait := p.Wait
	if wait <= 0 {
		wait = DefaultParentStatusWait
	}
	writeWait := p.WriteWait
	if writeWait <= 0 {
		writeWait = DefaultParentStatusWriteWait
	}
	// The bounds are real-time timeouts, as the apply gate's: the
	// reconcilers' clock may be a fixed one in tests, and it has no timers.
	timer := time.NewTimer(wait)
	defer timer.Stop()
	var writeTimer <-chan time.Time
	if writeWait > wait {
		writeTimeout := time.NewTimer(writeWait)
		defer writeTimeout.Stop()
		writeTimer = writeTimeout.C
	}
	// giveUp settles the generation unless the entry was forgotten
	// meanwhile.
	giveUp := func(st *parentStatus) {
		p.mu.Lock()
		if p.parents[name] == st {
			p.settle(name, generation)
		}
		p.mu.Unlock()
	}
	for {
		p.mu.Lock()
		st := p.entry(name)
		if st.settled >= generation {
			p.mu.Unlock()
			return waited
		}
		changed := st.changed
		p.mu.Unlock()
		waited = true
		select {
		case <-changed:
			p.mu.Lock()
			gone := p.parents[name] != st
			p.mu.Unlock()
			if gone {
				return waited
			}
		case <-timer.C:
			p.mu.Lock()
			underWay := p.parents[name] == st && st.running >= generation
			p.mu.Unlock()
			if !underWay || writeTimer == nil {
				giveUp(st)
				return waited
			}
			// The parent's write is in flight: wait for its end (changed)
			// up to writeWait.
		case <-writeTimer:
			giveUp(st)
			return waited
		case <-ctx.Done():
			return waited
		}
	}
}
