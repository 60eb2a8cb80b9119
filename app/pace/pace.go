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
// moment the windows allow counting the grants already gone by and the
// interactive ones ahead, not the background ones ahead: those are moved
// back behind it (in their order), so a person's writes go ahead of
// background work however much of it is queued. A background grant goes
// after every earlier background grant, is smoothed by a token bucket
// (Burst at once, then one per refill), and may fill the whole paced minute
// when no person's writes wait (a sliding minute frees a slot about every
// refill, so an interactive group waits about one refill per write), but
// only (1 - Headroom) of the hour, so that part of every hour stays free for
// people.
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
	// leave Headroom of every hour free.
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
	// Headroom is the share of each hour (after the margin) that background
	// writes leave free for interactive ones (0: none). Within a minute
	// interactive writes go ahead of background ones instead.
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
// requests, paced at 90% of it, with a fifth of every hour kept for
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

// BackgroundShare is how many of an hour's paced grants background writes
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

// grant is one turn handed out. Its moment may move later while it is
// ahead (reflow); read it with the bucket's lock held.
type grant struct {
	at      time.Time
	id      uint64
	ticket  uint64 // the ticket (group) it was taken for
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
	grants []*grant  // every grant still inside a window or ahead, by time
	tat    time.Time // background token bucket (GCRA): when it is full again
	lastBg time.Time // the latest background grant: background is first come, first served
	lastIn time.Time // the latest interactive grant, likewise
	nextID uint64
	// nextTicket numbers the groups of grants.
	nextTicket uint64
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
	// Background may fill the whole minute: interactive grants go ahead of
	// it anyway (reflow).
	b.windows = append(b.windows, window{span: l.Minute + slack, capacity: [2]int{perMinute, perMinute}})
	b.horizon = l.Minute + slack
	if perHour > 0 {
		b.windows = append(b.windows, window{span: 60*l.Minute + slack, capacity: [2]int{perHour, l.BackgroundShare(perHour)}})
		b.horizon = 60*l.Minute + slack
	}
	return b, nil
}

// Clock is the bucket's clock.
func (b *Bucket) Clock() clock.Clock { return b.clock }

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
	p := b.index(t)
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

// index is where a grant at t goes in b.grants: after those at t or before.
// Call with b.mu held.
func (b *Bucket) index(t time.Time) int {
	i, _ := slices.BinarySearchFunc(b.grants, t, func(g *grant, t time.Time) int {
		if g.at.After(t) {
			return 1
		}
		return -1 // equal times: the new grant goes after
	})
	return i
}

// insert puts g in b.grants at its moment. Call with b.mu held.
func (b *Bucket) insert(g *grant) {
	b.grants = slices.Insert(b.grants, b.index(g.at), g)
}

// book records a grant of class c at at for ticket tk. Call with b.mu held.
func (b *Bucket) book(now time.Time, c Class, at time.Time, tk uint64) *grant {
	g := &grant{at: at, class: c, prevTat: b.tat, ticket: tk}
	if c == Interactive {
		b.lastIn = latest(b.lastIn, at)
	} else {
		b.tat = latest(latest(b.tat, now), at).Add(b.interval)
		b.lastBg = latest(b.lastBg, at)
	}
	b.nextID++
	g.id = b.nextID
	b.insert(g)
	return g
}

// takeGroup reserves n grants of class c at one moment, the first at or
// after from at which the windows hold all n, and returns them; nil when no
// moment can (n is more than a window holds). Call with b.mu held.
func (b *Bucket) takeGroup(now time.Time, c Class, from time.Time, n int, tk uint64) []*grant {
	at, ok := b.earliestGroup(from, c, n)
	if !ok {
		return nil
	}
	gs := make([]*grant, n)
	for i := range gs {
		gs[i] = b.book(now, c, at, tk)
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
	var probes []*grant
	defer func() {
		for _, g := range probes {
			b.drop(g)
		}
	}()
	for k := range n {
		if !b.fits(t, c) {
			return false
		}
		if k == n-1 {
			break
		}
		g := &grant{at: t, class: c, id: uint64(math.MaxUint64) - uint64(k)} // never a real grant's id
		b.insert(g)
		probes = append(probes, g)
	}
	return true
}

// drop hands grant g back. Call with b.mu held.
func (b *Bucket) drop(g *grant) {
	if i := slices.Index(b.grants, g); i >= 0 {
		b.grants = slices.Delete(b.grants, i, i+1)
	}
}

// lift takes the background grants ahead of now out of the windows, so that
// an interactive group is placed ahead of them; reflow puts them back. Call
// with b.mu held.
func (b *Bucket) lift(now time.Time) []*grant {
	var lifted []*grant
	kept := b.grants[:0]
	for _, g := range b.grants {
		if g.class == Background && g.at.After(now) {
			lifted = append(lifted, g)
			continue
		}
		kept = append(kept, g)
	}
	clear(b.grants[len(kept):])
	b.grants = kept
	return lifted
}

// reflow puts lifted background grants back, in their order, each group
// (the grants of one ticket) at the first moment at or after where it was,
// and after the group before it, that the windows (the interactive grants
// just placed among them) allow: grants that still fit stay where they
// were. Call with b.mu held.
func (b *Bucket) reflow(lifted []*grant) {
	var prev time.Time
	for i := 0; i < len(lifted); {
		j := i + 1
		for j < len(lifted) && lifted[j].ticket == lifted[i].ticket && lifted[j].at.Equal(lifted[i].at) {
			j++
		}
		group := lifted[i:j]
		from := latest(group[0].at, prev)
		at, ok := time.Time{}, false
		if len(group) > 1 {
			at, ok = b.earliestGroup(from, Background, len(group))
		}
		for _, g := range group {
			if !ok {
				at = b.earliest(from, Background)
			}
			g.at = at
			b.insert(g)
			from = at
		}
		prev = at
		b.lastBg = latest(b.lastBg, at)
		i = j
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
	id     uint64
	grants []*grant // not used yet, by time
}

// Reserve takes n turns of class c at once, and returns them as a ticket
// (n < 1 reserves one): the first the earliest the class's order allows, the
// others right with it, as soon as the windows allow.
func (b *Bucket) Reserve(c Class, n int) *Ticket {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	b.forget(now)
	b.nextTicket++
	t := &Ticket{b: b, class: c, id: b.nextTicket}
	t.grants = b.place(now, c, b.start(now, c), max(n, 1), t.id)
	return t
}

// place takes n turns of class c from from for ticket tk (takeTogether); an
// interactive group is placed ahead of the background grants ahead, which
// move back behind it. Call with b.mu held.
func (b *Bucket) place(now time.Time, c Class, from time.Time, n int, tk uint64) []*grant {
	if c == Background {
		return b.takeTogether(now, c, from, n, tk)
	}
	lifted := b.lift(now)
	gs := b.takeTogether(now, c, from, n, tk)
	b.reflow(lifted)
	return gs
}

// takeTogether takes n turns of class c from from: at one moment when the
// windows hold them all (a group whose turns were spread over the moments
// single turns free up could wait for its last while its first went by),
// else each as soon as the windows allow after the one before. Call with
// b.mu held.
func (b *Bucket) takeTogether(now time.Time, c Class, from time.Time, n int, tk uint64) []*grant {
	if n > 1 {
		if gs := b.takeGroup(now, c, from, n, tk); gs != nil {
			return gs
		}
	}
	gs := make([]*grant, 0, n)
	for i := range n {
		after := from
		if i > 0 {
			after = gs[i-1].at
		}
		gs = append(gs, b.book(now, c, b.earliest(after, c), tk))
	}
	return gs
}

// Bucket is the bucket the ticket's turns were taken from.
func (t *Ticket) Bucket() *Bucket { return t.b }

// Class is the class the ticket's turns were taken in.
func (t *Ticket) Class() Class { return t.class }

// Left is how many turns the ticket still holds.
func (t *Ticket) Left() int { return len(t.grants) }

// At is when the ticket's next turn comes (zero when it holds none). A
// background ticket's turns may move later while they are ahead (a person's
// writes go first).
func (t *Ticket) At() time.Time {
	if len(t.grants) == 0 {
		return time.Time{}
	}
	t.b.mu.Lock()
	defer t.b.mu.Unlock()
	return t.grants[0].at
}

// Last is when the ticket's last turn comes (zero when it holds none).
func (t *Ticket) Last() time.Time {
	if len(t.grants) == 0 {
		return time.Time{}
	}
	t.b.mu.Lock()
	defer t.b.mu.Unlock()
	return t.grants[len(t.grants)-1].at
}

// ErrSpent says a ticket has no turn left.
var ErrSpent = errors.New("pace: the ticket's turns are used up")

// Renew moves the ticket's turns, when its next one went by unused (the
// holder came back later than the windows' slack covers), to the earliest
// moment from now that the windows allow: the windows counted them where
// they were, not when the writes go. The holder keeps its place: the turns
// are not put behind the tickets taken after it, whose background turns
// move back behind them instead.
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
		b.drop(g)
	}
	b.forget(now)
	// The background turns ahead, taken after these, move back behind them.
	lifted := b.lift(now)
	t.grants = b.takeTogether(now, t.class, now, len(t.grants), t.id)
	b.reflow(lifted)
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
	var waited time.Duration
	for {
		// The turn may move later meanwhile (a person's writes went first):
		// it is looked at again after each sleep.
		wait := t.At().Sub(b.clock.Now())
		if wait <= 0 {
			break
		}
		if waited+wait > maxWait {
			return 0, &TooLongError{Wait: wait}
		}
		select {
		case <-b.clock.After(wait):
			waited += wait
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	b.mu.Lock()
	t.grants = t.grants[1:]
	b.mu.Unlock()
	return waited, nil
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
		b.drop(g)
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

// Idle reports whether the bucket is as New makes it: no grant inside any
// window or ahead, and its background token bucket full. Dropping an idle
// bucket and making a new one when the installation writes again loses
// nothing of what the limits count.
func (b *Bucket) Idle() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	b.forget(now)
	return len(b.grants) == 0 && !b.tat.After(now) && !b.lastBg.After(now) && !b.lastIn.After(now)
}
