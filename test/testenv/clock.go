package testenv

import (
	"sync"
	"testing"
	"time"
)

// SwitchableClock is real time unless a test fixes it to an instant. A suite
// runs its manager on one, and the tests that drive a reconcile at an exact
// instant fix it, so the manager and the test agree on "now".
type SwitchableClock struct {
	mu    sync.Mutex
	fixed *time.Time
}

// Now is the fixed instant, or the real time when none is fixed.
func (c *SwitchableClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fixed != nil {
		return *c.fixed
	}
	return time.Now()
}

// Since is the time from t to Now.
func (c *SwitchableClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// Set fixes the clock at t until the test ends, then makes it real again.
func (c *SwitchableClock) Set(tb testing.TB, t time.Time) {
	c.mu.Lock()
	c.fixed = &t
	c.mu.Unlock()
	tb.Cleanup(func() {
		c.mu.Lock()
		c.fixed = nil
		c.mu.Unlock()
	})
}
