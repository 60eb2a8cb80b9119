package ghhealth_test

import (
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock that moves only when told.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []waiter
	changed chan struct{}
}

type waiter struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), changed: make(chan struct{}, 1)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	c.waiters = append(c.waiters, waiter{at: c.now.Add(d), ch: ch})
	select {
	case c.changed <- struct{}{}:
	default:
	}
	return ch
}

// Advance moves the clock by d and fires the timers due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at.After(c.now) {
			kept = append(kept, w)
			continue
		}
		w.ch <- c.now
	}
	c.waiters = kept
}

// next is how long until the soonest timer fires (false: none).
func (c *fakeClock) next() (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.waiters) == 0 {
		return 0, false
	}
	d := c.waiters[0].at.Sub(c.now)
	for _, w := range c.waiters[1:] {
		d = min(d, w.at.Sub(c.now))
	}
	return d, true
}

// waitTimers waits until n timers are pending.
func (c *fakeClock) waitTimers(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		c.mu.Lock()
		k := len(c.waiters)
		c.mu.Unlock()
		if k >= n {
			return
		}
		select {
		case <-c.changed:
		case <-time.After(time.Millisecond):
		case <-deadline:
			t.Fatalf("%d timers pending after 5 s, want %d", k, n)
		}
	}
}
