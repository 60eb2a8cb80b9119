// Package pace paces one GitHub installation's writes under GitHub's
// secondary rate limits (docs/cost.md): about 80 content-generating requests a
// minute and 500 an hour.
//
// A Bucket is a token bucket (refilled at PerMinute a minute, holding at most
// Burst tokens) whose grants are also capped by two sliding windows: at most
// PerMinute grants in any minute and PerHour in any hour, each window
// lengthened by a little slack, so that writes granted here still respect
// GitHub's count when they arrive a few milliseconds late. Grants are
// reservations taken in order under one lock: callers are served first come,
// first served, and a caller that gives up (its context ends) before its
// turn hands its reservation back when no later one was taken.
package pace

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Limits configure a Bucket.
type Limits struct {
	PerMinute int // grants in any minute, and the bucket's refill rate
	PerHour   int // grants in any hour; 0: no hourly cap
	Burst     int // tokens the bucket holds; 0: PerMinute/8, at least 1
	// Minute is how long a minute is (default time.Minute); an hour is 60 of
	// them. Tests shorten it to run a burst in seconds.
	Minute time.Duration
}

// Default is GitHub's published secondary limit for content-generating requests.
var Default = Limits{PerMinute: 80, PerHour: 500}

func (l Limits) withDefaults() Limits {
	if l.Minute <= 0 {
		l.Minute = time.Minute
	}
	if l.Burst <= 0 {
		l.Burst = max(l.PerMinute/8, 1)
	}
	l.Burst = min(l.Burst, l.PerMinute)
	return l
}

// Clock tells the time and sleeps; tests use a fake one.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// TooLongError says a write would have to wait longer than the caller
// allowed; nothing was reserved. Wait is how long it would have waited.
type TooLongError struct{ Wait time.Duration }

func (e *TooLongError) Error() string {
	return fmt.Sprintf("write pacing: next write allowed in %v", e.Wait.Round(time.Millisecond))
}

// Bucket paces one installation's writes. Its methods are safe for
// concurrent use.
type Bucket struct {
	l        Limits
	clock    Clock
	interval time.Duration // one token's refill time
	slack    time.Duration // added to each window

	mu    sync.Mutex
	tat   time.Time   // theoretical arrival time (GCRA): when the bucket is full again
	grant []time.Time // reserved grant times, non-decreasing, the last PerHour (or PerMinute) of them
	seq   uint64      // reservations taken, to know whether one is still the last
}

// New returns a full bucket for l (PerMinute must be positive); a nil clock
// is the real one.
func New(l Limits, clock Clock) (*Bucket, error) {
	if l.PerMinute <= 0 {
		return nil, errors.New("pace: PerMinute must be positive")
	}
	if l.PerHour < 0 {
		return nil, errors.New("pace: PerHour must not be negative")
	}
	if clock == nil {
		clock = realClock{}
	}
	l = l.withDefaults()
	return &Bucket{l: l, clock: clock, interval: l.Minute / time.Duration(l.PerMinute), slack: l.Minute / 60}, nil
}

// reservation is one grant taken: when, its sequence number, and the
// bucket's state before it (to hand it back).
type reservation struct {
	at      time.Time
	seq     uint64
	prevTat time.Time
}

// reserve takes the next grant, at or after now; when it lies more than
// maxWait ahead nothing is taken. Call with b.mu held.
func (b *Bucket) reserve(now time.Time, maxWait time.Duration) (reservation, error) {
	// Grants older than the hour window constrain nothing: forget them, so a
	// quiet installation's bucket holds no history.
	horizon := now.Add(-(60*b.l.Minute + b.slack))
	old := 0
	for old < len(b.grant) && b.grant[old].Before(horizon) {
		old++
	}
	if old > 0 {
		b.grant = append(b.grant[:0], b.grant[old:]...)
	}
	tat := b.tat
	if tat.Before(now) {
		tat = now
	}
	at := tat.Add(-time.Duration(b.l.Burst-1) * b.interval) // the bucket: Burst at once, then one per interval
	if at.Before(now) {
		at = now
	}
	if n := len(b.grant); n > 0 {
		at = latest(at, b.grant[n-1]) // first come, first served
		if n >= b.l.PerMinute {
			at = latest(at, b.grant[n-b.l.PerMinute].Add(b.l.Minute+b.slack))
		}
		if b.l.PerHour > 0 && n >= b.l.PerHour {
			at = latest(at, b.grant[n-b.l.PerHour].Add(60*b.l.Minute+b.slack))
		}
	}
	if wait := at.Sub(now); wait > maxWait {
		return reservation{}, &TooLongError{Wait: wait}
	}
	r := reservation{at: at, prevTat: b.tat}
	b.tat = latest(tat, at).Add(b.interval)
	keep := max(b.l.PerMinute, b.l.PerHour) + 1 // one more, so a handed-back grant loses none
	if len(b.grant) >= keep {
		b.grant = append(b.grant[:0], b.grant[len(b.grant)-keep+1:]...)
	}
	b.grant = append(b.grant, at)
	b.seq++
	r.seq = b.seq
	return r, nil
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Wait blocks until the caller may write, in order of arrival, and returns
// how long it waited. When the write would have to wait longer than maxWait
// it returns at once with a *TooLongError; when ctx ends first it returns
// ctx's error, and the reservation is handed back if no later one was taken.
func (b *Bucket) Wait(ctx context.Context, maxWait time.Duration) (time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	b.mu.Lock()
	now := b.clock.Now()
	r, err := b.reserve(now, maxWait)
	b.mu.Unlock()
	if err != nil {
		return 0, err
	}
	wait := r.at.Sub(now)
	if wait <= 0 {
		return 0, nil
	}
	select {
	case <-b.clock.After(wait):
		return wait, nil
	case <-ctx.Done():
		b.mu.Lock()
		if b.seq == r.seq { // still the last reservation: hand it back
			b.seq--
			b.grant = b.grant[:len(b.grant)-1]
			b.tat = r.prevTat
		}
		b.mu.Unlock()
		return 0, ctx.Err()
	}
}

// Tokens is how many writes could go at once now: the bucket's tokens, less
// what the windows still hold back.
func (b *Bucket) Tokens() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	tokens := b.l.Burst
	if b.tat.After(now) {
		tokens = b.l.Burst - int((b.tat.Sub(now)+b.interval-1)/b.interval)
	}
	inWindow := func(w time.Duration) int {
		n := 0
		for i := len(b.grant) - 1; i >= 0 && b.grant[i].After(now.Add(-w)); i-- {
			n++
		}
		return n
	}
	tokens = min(tokens, b.l.PerMinute-inWindow(b.l.Minute+b.slack))
	if b.l.PerHour > 0 {
		tokens = min(tokens, b.l.PerHour-inWindow(60*b.l.Minute+b.slack))
	}
	return max(tokens, 0)
}

// Limits are the bucket's limits, defaults filled in.
func (b *Bucket) Limits() Limits { return b.l }
