// Package clock is the time that packages which wait take as a parameter, so
// that their tests can move it by hand (clocktest).
package clock

import "time"

// Clock tells the time and sleeps.
type Clock interface {
	Now() time.Time
	// After sends the time once d has passed.
	After(d time.Duration) <-chan time.Time
}

// Real is the system clock.
type Real struct{}

// Now implements Clock.
func (Real) Now() time.Time { return time.Now() }

// After implements Clock.
func (Real) After(d time.Duration) <-chan time.Time { return time.After(d) }
