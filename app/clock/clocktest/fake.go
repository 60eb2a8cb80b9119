// Package clocktest is a clock that moves only when a test says.
package clocktest

import (
	"sync"
	"testing"
	"time"
)

// Fake is a clock.Clock that moves only by Advance.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	timers  []timer
	changed chan struct{}
}

type timer struct {
	at time.Time
	ch chan time.Time
}

// New returns a Fake set to a fixed instant.
func New() *Fake {
	return &Fake{now: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), changed: make(chan struct{}, 1)}
}

// Now implements clock.Clock.
func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After implements clock.Clock.
func (c *Fake) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	c.timers = append(c.timers, timer{at: c.now.Add(d), ch: ch})
	select {
	case c.changed <- struct{}{}:
	default:
	}
	return ch
}

// Advance moves the clock by d and fires the timers then due.
func (c *Fake) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, t := range c.timers {
		if t.at.After(c.now) {
			kept = append(kept, t)
			continue
		}
		t.ch <- c.now
	}
	c.timers = kept
}

// Pending is how many timers wait.
func (c *Fake) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// Next is how long until the soonest timer fires (false: none waits).
func (c *Fake) Next() (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.timers) == 0 {
		return 0, false
	}
	d := c.timers[0].at.Sub(c.now)
	for _, t := range c.timers[1:] {
		d = min(d, t.at.Sub(c.now))
	}
	return d, true
}

// WaitTimers waits (in real time, at most 5 s) until n timers wait.
func (c *Fake) WaitTimers(t testing.TB, n int) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for c.Pending() < n {
		select {
		case <-c.changed:
		case <-time.After(time.Millisecond):
		case <-deadline:
			t.Fatalf("%d timers wait after 5 s, want %d", c.Pending(), n)
		}
	}
}
