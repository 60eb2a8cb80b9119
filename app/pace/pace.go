// Package pace paces one GitHub installation's writes under GitHub's
// secondary rate limits (docs/cost.md): about 80 content-generating requests a
// minute and 500 an hour.
//
// A Bucket hands out grants (moments at which one write may be sent) so that
// no sliding minute holds more than PerMinute of them and no sliding hour
// more than PerHour, each window lengthened by a little slack so that writes
// granted here still respect GitHub's count when they arrive a few
// milliseconds late. By default it paces a tenth under the documented limits
// (Margin), so that a difference in how GitHub counts is not a refusal.
//
// Writes come in two classes. Interactive writes answer what a person just
// did; background writes are everything else (new tasks' first cards,
// dashboards, repairs, replays). An interactive grant takes the earliest
// moment the windows allow, ahead of background grants already handed out;
// a background grant goes after every earlier background grant, is smoothed
// by a token bucket (Burst at once, then one per refill), and may only fill
// each window up to (1 - Headroom) of its limit, so that part of every minute
// and hour stays free for people.
//
// A grant far ahead is still a grant: Reserve hands out a Ticket holding the
// turns of a group of writes (one decision's label, card and check), taken
// together, and says when its first turn comes. The caller can sleep until
// then and come back with the ticket; callers therefore wake in turn order,
// one after the other, instead of all at once to race for the next turn.
package pace

import (
	"context"
	"errors"
	"fmt"
	"github.com/countersign/countersign/app/clock"
	"math"
	"slices"
	"sync"
	"time"
)

// Class is a write's priority.
type Class int

const (
	// Interactive writes answer what a person just did.
	Interactive Class = iota
	// Background writes are the rest; they go after interactive ones and
	// leave Headroom of every window free.
	Background
)

func (c Class) String() string {
	if c == Interactive {
		return "interactive"
	}
	return "background"
}

// Limits configure a Bucket.
type Limits struct {
	PerMinute int // GitHub's documented writes in any minute
	PerHour   int // GitHub's documented writes in any hour; 0: no hourly cap
	// Margin is the share of PerMinute and PerHour actually used (0 or 1:
	// all of it; Default: 0.9).
	Margin float64
	// Headroom is the share of each window (after the margin) that
	// background writes leave free for interactive ones (0: none).
	Headroom float64
	// Burst is how many background writes may go at once before they are
	// spread one per refill (a minute / the paced PerMinute); 0: a tenth of
	// the paced PerMinute, at least 1.
	Burst int
	// Minute is how long a minute is (default time.Minute); an hour is 60 of
	// them. Tests shorten it to run a burst in seconds.
	Minute time.Duration
}

// Default is GitHub's published secondary limit for content-generating
// requests, paced at 90% of it, with a fifth of every window kept for
// interactive writes.
var Default = Limits{PerMinute: 80, PerHour: 500, Margin: 0.9, Headroom: 0.2}

// Paced is how many writes the bucket grants in a minute and in an hour
// (the limits less the margin).
func (l Limits) Paced() (perMinute, perHour int) {
	m := l.Margin
	if m <= 0 || m > 1 {
		m = 1
	}
	perMinute = max(int(math.Floor(float64(l.PerMinute)*m)), min(l.PerMinute, 1))
	perHour = int(math.Floor(float64(l.PerHour) * m))
	if l.PerHour > 0 {
		perHour = max(perHour, 1)
	}
	return perMinute, perHour
}

// BackgroundShare is how many of a window's paced grants background writes
// may fill: the paced limit less the headroom, at least one.
func (l Limits) BackgroundShare(paced int) int {
	return max(int(math.Floor(float64(paced)*(1-l.Headroom))), 1)
}

func (l Limits) validate() error {
	switch {
	case l.PerMinute <= 0:
		return errors.New("pace: PerMinute must be positive")
	case l.PerHour < 0:
		return errors.New("pace: PerHour must not be negative")
	case l.Margin < 0 || l.Margin > 1:
		return fmt.Errorf("pace: Margin %v is not within 0 and 1", l.Margin)
	case l.Headroom < 0 || l.Headroom >= 1:
		return fmt.Errorf("pace: Headroom %v is not within 0 and 1 (1 excluded)", l.Headroom)
	case l.Burst < 0:
		return errors.New("pace: Burst must not be negative")
	}
	return nil
}

// TooLongError says a write would have to wait longer than the caller
// allowed; nothing was reserved. Wait is how long it would have waited.
type TooLongError struct{ Wait time.Duration }

func (e *TooLongError) Error() string {
	return fmt.Sprintf("write pacing: next write allowed in %v", e.Wait.Round(time.Millisecond))
}

// window is one sliding-window rule: at most capacity[class] grants in any
// span of length span.
type window struct {
	span     time.Duration
	capacity [2]int // by Class
}

// grant is one turn handed out.
type grant struct {
	at      time.Time
	id      uint64
	class   Class
	prevTat time.Time // background: the token bucket before this grant
}

// Bucket paces one installation's writes. Its methods are safe for
// concurrent use.
type Bucket struct {
	l        Limits
	clock    clock.Clock
	interval time.Duration // one background token's refill time
	burst    int
	slack    time.Duration // added to each window
	windows  []window
	horizon  time.Duration // the longest window: older grants constrain nothing

	mu     sync.Mutex
	grants []grant   // every grant still inside a window or ahead, by time
	tat    time.Time // background token bucket (GCRA): when it is full again
	lastBg time.Time // the latest background grant: background is first come, first served
	lastIn time.Time // the latest interactive grant, likewise
	nextID uint64
}

// New returns a full bucket for l; a nil clock is the real one.
func New(l Limits, clk clock.Clock) (*Bucket, error) {
	if err := l.validate(); err != nil {
		return nil, err
	}
	if clk == nil {
		clk = clock.Real{}
	}
	if l.Minute <= 0 {
		l.Minute = time.Minute
	}
	perMinute, perHour := l.Paced()
	burst := l.Burst
	if burst == 0 {
		burst = max(perMinute/10, 1)
	}
	burst = min(burst, perMinute)
	slack := l.Minute / 60
	b := &Bucket{l: l, clock: clk, interval: l.Minute / time.Duration(perMinute), burst: burst, slack: slack}
	b.windows = append(b.windows, window{span: l.Minute + slack, capacity: [2]int{perMinute, l.BackgroundShare(perMinute)}})
	b.horizon = l.Minute + slack
	if perHour > 0 {
		b.windows = append(b.windows, window{span: 60*l.Minute + slack, capacity: [2]int{perHour, l.BackgroundShare(perHour)}})
		b.horizon = 60*l.Minute + slack
	}
	return b, nil
}

// Limits are the bucket's limits, its default minute filled in.
func (b *Bucket) Limits() Limits { return b.l }

// forget drops grants older than every window. Call with b.mu held.
func (b *Bucket) forget(now time.Time) {
	cut := now.Add(-b.horizon)
	old := 0
	for old < len(b.grants) && b.grants[old].at.Before(cut) {
		old++
	}
	if old > 0 {
		b.grants = append(b.grants[:0], b.grants[old:]...)
	}
}

// fits reports whether one more grant of class c at t keeps every window
// that would hold it within c's capacity. Call with b.mu held.
func (b *Bucket) fits(t time.Time, c Class) bool {
	p, _ := slices.BinarySearchFunc(b.grants, t, func(g grant, t time.Time) int {
		if g.at.After(t) {
			return 1
		}
		return -1 // equal times: the new grant goes after
	})
	at := func(i int) time.Time { // the grants with t inserted at p
		switch {
		case i < p:
			return b.grants[i].at
		case i == p:
			return t
		}
		return b.grants[i-1].at
	}
	n := len(b.grants) + 1
	for _, w := range b.windows {
		capacity := w.capacity[c]
		// capacity+1 grants (t among them) closer than span: too many.
		for i := max(0, p-capacity); i <= p && i+capacity < n; i++ {
			if at(i+capacity).Sub(at(i)) < w.span {
				return false
			}
		}
	}
	return true
}

// earliest is the first moment at or after from at which a grant of class c
// fits. Call with b.mu held.
func (b *Bucket) earliest(from time.Time, c Class) time.Time {
	if b.fits(from, c) {
		return from
	}
	for _, t := range b.moments(from) {
		if b.fits(t, c) {
			return t
		}
	}
	// Past every grant's windows nothing constrains (moments holds that moment).
	panic("pace: no moment fits a grant")
}

// moments are the moments after from at which what fits can change, in
// order: a grant that does not fit at from fits once an earlier grant has
// left one of the windows, or just after a later grant. Call with b.mu held.
func (b *Bucket) moments(from time.Time) []time.Time {
	var cands []time.Time
	for _, g := range b.grants {
		if g.at.After(from) {
			cands = append(cands, g.at)
		}
		for _, w := range b.windows {
			if t := g.at.Add(w.span); t.After(from) {
				cands = append(cands, t)
			}
		}
	}
	slices.SortFunc(cands, func(a, b time.Time) int { return a.Compare(b) })
	return cands
}

// start is the first moment a new group of class c may take its turns
// from: interactive turns go after the latest interactive one; background
// turns after the latest background one, and as the token bucket allows
// (Burst at once, then one per refill). Call with b.mu held.
func (b *Bucket) start(now time.Time, c Class) time.Time {
	if c == Interactive {
		return latest(now, b.lastIn)
	}
	tat := latest(b.tat, now)
	from := latest(now, tat.Add(-time.Duration(b.burst-1)*b.interval))
	return latest(from, b.lastBg)
}

// book records a grant of class c at at. Call with b.mu held.
func (b *Bucket) book(now time.Time, c Class, at time.Time) grant {
	g := grant{at: at, class: c, prevTat: b.tat}
	if c == Interactive {
		b.lastIn = latest(b.lastIn, at)
	} else {
		b.tat = latest(latest(b.tat, now), at).Add(b.interval)
		b.lastBg = latest(b.lastBg, at)
	}
	b.nextID++
	g.id = b.nextID
	i, _ := slices.BinarySearchFunc(b.grants, at, func(g grant, t time.Time) int {
		if g.at.After(t) {
			return 1
		}
		return -1
	})
	b.grants = slices.Insert(b.grants, i, g)
	return g
}

// takeGroup reserves n grants of class c at one moment, the first at or
// after from at which the windows hold all n, and returns them; nil when no
// moment can (n is more than a window holds). Call with b.mu held.
func (b *Bucket) takeGroup(now time.Time, c Class, from time.Time, n int) []grant {
	at, ok := b.earliestGroup(from, c, n)
	if !ok {
		return nil
	}
	gs := make([]grant, n)
	for i := range gs {
		gs[i] = b.book(now, c, at)
	}
	return gs
}

// earliestGroup is the first moment at or after from at which n grants of
// class c fit together; false when none does. Call with b.mu held.
func (b *Bucket) earliestGroup(from time.Time, c Class, n int) (time.Time, bool) {
	for _, w := range b.windows {
		if n > w.capacity[c] {
			return time.Time{}, false
		}
	}
	if b.fitsGroup(from, c, n) {
		return from, true
	}
	for _, t := range b.moments(from) {
		if b.fitsGroup(t, c, n) {
			return t, true
		}
	}
	return time.Time{}, false
}

// fitsGroup reports whether n grants of class c fit together at t: each
// fits with the ones before it in place. Call with b.mu held.
func (b *Bucket) fitsGroup(t time.Time, c Class, n int) bool {
	var probes []uint64
	defer func() {
		for _, id := range probes {
			b.drop(id)
		}
	}()
	for k := range n {
		if !b.fits(t, c) {
			return false
		}
		if k == n-1 {
			break
		}
		id := uint64(math.MaxUint64) - uint64(k) // never a real grant's id
		i, _ := slices.BinarySearchFunc(b.grants, t, func(g grant, t time.Time) int {
			if g.at.After(t) {
				return 1
			}
			return -1
		})
		b.grants = slices.Insert(b.grants, i, grant{at: t, class: c, id: id})
		probes = append(probes, id)
	}
	return true
}

// drop hands grant id back. Call with b.mu held.
func (b *Bucket) drop(id uint64) {
	if i := slices.IndexFunc(b.grants, func(g grant) bool { return g.id == id }); i >= 0 {
		b.grants = slices.Delete(b.grants, i, i+1)
	}
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Ticket holds the turns reserved for a group of writes. Use its turns in
// order with Wait; Release hands back those not used. A Ticket is used by one
// goroutine at a time.
type Ticket struct {
	b      *Bucket
	class  Class
	grants []grant // not used yet, by time
}

// Reserve takes n turns of class c at once, and returns them as a ticket
// (n < 1 reserves one): the first the earliest the class's order allows, the
// others right with it, as soon as the windows allow.
func (b *Bucket) Reserve(c Class, n int) *Ticket {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	b.forget(now)
	t := &Ticket{b: b, class: c}
	t.grants = b.takeTogether(now, c, b.start(now, c), max(n, 1))
	return t
}

// takeTogether takes n turns of class c from from: at one moment when the
// windows hold them all (a group whose turns were spread over the moments
// single turns free up could wait for its last while its first went by),
// else each as soon as the windows allow after the one before. Call with
// b.mu held.
func (b *Bucket) takeTogether(now time.Time, c Class, from time.Time, n int) []grant {
	if n > 1 {
		if gs := b.takeGroup(now, c, from, n); gs != nil {
			return gs
		}
	}
	gs := make([]grant, 0, n)
	for i := range n {
		after := from
		if i > 0 {
			after = gs[i-1].at
		}
		gs = append(gs, b.book(now, c, b.earliest(after, c)))
	}
	slices.SortFunc(gs, func(x, y grant) int { return x.at.Compare(y.at) })
	return gs
}

// Bucket is the bucket the ticket's turns were taken from.
func (t *Ticket) Bucket() *Bucket { return t.b }

// Class is the class the ticket's turns were taken in.
func (t *Ticket) Class() Class { return t.class }

// Left is how many turns the ticket still holds.
func (t *Ticket) Left() int { return len(t.grants) }

// At is when the ticket's next turn comes (zero when it holds none).
func (t *Ticket) At() time.Time {
	if len(t.grants) == 0 {
		return time.Time{}
	}
	return t.grants[0].at
}

// Last is when the ticket's last turn comes (zero when it holds none).
func (t *Ticket) Last() time.Time {
	if len(t.grants) == 0 {
		return time.Time{}
	}
	return t.grants[len(t.grants)-1].at
}

// ErrSpent says a ticket has no turn left.
var ErrSpent = errors.New("pace: the ticket's turns are used up")

// Renew moves the ticket's turns, when its next one went by unused (the
// holder came back later than the windows' slack covers), to the earliest
// moment from now that the windows allow: the windows counted them where
// they were, not when the writes go. The holder keeps its place: the turns
// are not put behind the tickets taken after it.
func (t *Ticket) Renew() {
	if len(t.grants) == 0 {
		return
	}
	b := t.b
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	if now.Sub(t.grants[0].at) <= b.slack {
		return
	}
	for _, g := range t.grants {
		b.drop(g.id)
	}
	b.forget(now)
	t.grants = b.takeTogether(now, t.class, now, len(t.grants))
}

// Wait blocks until the ticket's next turn, uses it, and returns how long it
// waited (renewing the turns first when they went by unused). When the turn
// is further than maxWait ahead a *TooLongError says how far; when ctx ends
// first ctx's error is returned; either way the turn is kept.
func (t *Ticket) Wait(ctx context.Context, maxWait time.Duration) (time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if len(t.grants) == 0 {
		return 0, ErrSpent
	}
	t.Renew()
	b := t.b
	wait := t.grants[0].at.Sub(b.clock.Now())
	if wait > maxWait {
		return 0, &TooLongError{Wait: wait}
	}
	if wait > 0 {
		select {
		case <-b.clock.After(wait):
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	t.grants = t.grants[1:]
	return max(wait, 0), nil
}

// Release hands back the turns not used: the windows no longer count them.
func (t *Ticket) Release() {
	if len(t.grants) == 0 {
		return
	}
	b := t.b
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, g := range t.grants {
		b.drop(g.id)
	}
	// Turns are first come, first served within a class: when none of the
	// class was taken after these, the next one may come where they were.
	var last time.Time
	for _, g := range b.grants {
		if g.class == t.class {
			last = g.at
		}
	}
	if t.class == Interactive {
		b.lastIn = last
	} else {
		b.lastBg = last
		if first := t.grants[0]; !last.After(first.at) {
			b.tat = first.prevTat
		}
	}
	t.grants = nil
}

// Wait takes one turn of class c and blocks until it comes, returning how
// long it waited. When the turn is further than maxWait ahead nothing is
// reserved and a *TooLongError says how far; when ctx ends first the turn
// is handed back and ctx's error returned.
func (b *Bucket) Wait(ctx context.Context, c Class, maxWait time.Duration) (time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	t := b.Reserve(c, 1)
	if wait := t.At().Sub(b.clock.Now()); wait > maxWait {
		t.Release()
		return 0, &TooLongError{Wait: wait}
	}
	w, err := t.Wait(ctx, maxWait)
	if err != nil {
		t.Release()
	}
	return w, err
}

// Backlog is how far ahead of now the latest turn given to class c lies (0:
// none is ahead): how long a new group of the class would wait, roughly.
func (b *Bucket) Backlog(c Class) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	last := b.lastBg
	if c == Interactive {
		last = b.lastIn
	}
	return max(last.Sub(b.clock.Now()), 0)
}

// Tokens is how many writes of class c could go at once now.
func (b *Bucket) Tokens(c Class) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	b.forget(now)
	tokens := math.MaxInt
	if c == Background {
		tokens = b.burst
		if b.tat.After(now) {
			tokens = b.burst - int((b.tat.Sub(now)+b.interval-1)/b.interval)
		}
	}
	for _, w := range b.windows {
		// The grants in the window that starts now or ended now, whichever
		// holds more.
		past, ahead := 0, 0
		for _, g := range b.grants {
			if g.at.After(now.Add(-w.span)) && !g.at.After(now) {
				past++
			}
			if !g.at.Before(now) && g.at.Before(now.Add(w.span)) {
				ahead++
			}
		}
		tokens = min(tokens, w.capacity[c]-max(past, ahead))
	}
	return max(tokens, 0)
}
