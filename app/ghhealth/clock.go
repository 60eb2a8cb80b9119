package ghhealth

import "time"

// Clock is the time the probes keep; tests use a fake one.
type Clock interface {
	Now() time.Time
	// After sends the time once d has passed.
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
