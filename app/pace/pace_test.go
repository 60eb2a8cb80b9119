package pace

import (
	"context"
	"errors"
	"github.com/countersign/countersign/app/clock/clocktest"
	"slices"
	"testing"
	"time"
)

const forever = 1000 * time.Hour

func newBucket(t *testing.T, l Limits) (*Bucket, *clocktest.Fake) {
	t.Helper()
	clock := clocktest.New()
	b, err := New(l, clock)
	if err != nil {
		t.Fatal(err)
	}
	return b, clock
}

func TestPacedLimitsAndShares(t *testing.T) {
	for _, tc := range []struct {
		l                      Limits
		perMinute, perHour     int
		bgPerMinute, bgPerHour int
	}{
		{Default, 72, 450, 57, 360},
		{Limits{PerMinute: 80, PerHour: 500}, 80, 500, 80, 500},
		{Limits{PerMinute: 80, PerHour: 500, Margin: 1, Headroom: 0.5}, 80, 500, 40, 250},
		{Limits{PerMinute: 1, PerHour: 1, Margin: 0.5, Headroom: 0.9}, 1, 1, 1, 1},
		{Limits{PerMinute: 30, Margin: 0.9}, 27, 0, 27, 0},
	} {
		pm, ph := tc.l.Paced()
		if pm != tc.perMinute || ph != tc.perHour {
			t.Errorf("%+v paces %d a minute and %d an hour, want %d and %d", tc.l, pm, ph, tc.perMinute, tc.perHour)
		}
		if got := tc.l.BackgroundShare(pm); got != tc.bgPerMinute {
			t.Errorf("%+v: background share of a minute %d, want %d", tc.l, got, tc.bgPerMinute)
		}
		if ph > 0 {
			if got := tc.l.BackgroundShare(ph); got != tc.bgPerHour {
				t.Errorf("%+v: background share of an hour %d, want %d", tc.l, got, tc.bgPerHour)
			}
		}
	}
}

func TestNewRejectsBadLimits(t *testing.T) {
	for _, l := range []Limits{{}, {PerMinute: -1}, {PerMinute: 10, PerHour: -1}, {PerMinute: 10, Margin: 1.5},
		{PerMinute: 10, Margin: -0.1}, {PerMinute: 10, Headroom: 1}, {PerMinute: 10, Headroom: -0.2}, {PerMinute: 10, Burst: -1}} {
		if _, err := New(l, nil); err == nil {
			t.Errorf("New(%+v) accepted", l)
		}
	}
}

func TestBackgroundBurstThenOneEveryRefill(t *testing.T) {
	b, clock := newBucket(t, Default) // 72 a minute: a burst of 7, then one every 833ms
	if got := b.Tokens(Background); got != 7 {
		t.Fatalf("a fresh bucket holds %d background tokens, want 7", got)
	}
	ctx := context.Background()
	for i := range 7 {
		if w, err := b.Wait(ctx, Background, forever); err != nil || w != 0 {
			t.Fatalf("write %d of the burst waited %v (%v)", i, w, err)
		}
	}
	if got := b.Tokens(Background); got != 0 {
		t.Fatalf("after the burst the bucket holds %d background tokens, want 0", got)
	}
	if got := b.Tokens(Interactive); got != 72-7 {
		t.Fatalf("after the burst %d interactive writes may go at once, want 65", got)
	}
	done := waitAsync(ctx, t, b, Background)
	waitPending(t, clock, 1)
	clock.Advance(time.Minute / 72)
	if w := <-done; w != time.Minute/72 {
		t.Fatalf("the 8th background write waited %v, want %v", w, time.Minute/72)
	}
	clock.Advance(2 * time.Hour)
	if got := b.Tokens(Background); got != 7 {
		t.Fatalf("after an idle hour the bucket holds %d tokens, want 7", got)
	}
	if _, err := b.Wait(ctx, Background, 0); err != nil {
		t.Fatal(err)
	}
	if n := len(b.grants); n != 1 {
		t.Fatalf("after an idle hour the bucket remembers %d grants, want 1 (the new one)", n)
	}
}

// maxIn is the most grants in any span of length w.
func maxIn(grants []time.Time, w time.Duration) int {
	slices.SortFunc(grants, func(a, b time.Time) int { return a.Compare(b) })
	most, j := 0, 0
	for i := range grants {
		for grants[i].Sub(grants[j]) >= w {
			j++
		}
		most = max(most, i-j+1)
	}
	return most
}

// TestWindowsAreNeverExceeded reserves turns of both classes, in bursts and
// one by one, for hours, and counts the grants where they end up (background
// ones move back behind interactive ones taken later) in every sliding
// minute and hour: all of them within the paced limits, background ones
// within their share of the hour, and the hourly cap reached rather than
// undershot.
func TestWindowsAreNeverExceeded(t *testing.T) {
	for _, tc := range []struct {
		l     Limits
		every int // one interactive reservation every so many background ones (0: none)
	}{
		{Default, 0}, {Default, 5}, {Default, 1},
		{Limits{PerMinute: 80, PerHour: 500, Burst: 80}, 3},
		{Limits{PerMinute: 30, Burst: 5, Headroom: 0.5}, 2},
	} {
		b, clock := newBucket(t, tc.l)
		pm, ph := tc.l.Paced()
		var tickets []*Ticket
		start := clock.Now()
		for taken := 0; taken < 1500; {
			class := Background
			if tc.every > 0 && len(tickets)%(tc.every+1) == tc.every {
				class = Interactive
			}
			tk := b.Reserve(class, 1+len(tickets)%3)
			tickets = append(tickets, tk)
			taken += tk.Left()
			if len(tickets)%4 == 1 { // the holders of earlier tickets come back now and then
				clock.Advance(max(tk.At().Sub(clock.Now()), 0))
			}
		}
		// Where the turns ended up: background ones move back behind
		// interactive ones taken later.
		var all, bg []time.Time
		for _, tk := range tickets {
			for _, g := range tk.grants {
				all = append(all, g.at)
				if tk.Class() == Background {
					bg = append(bg, g.at)
				}
			}
		}
		span := func(w time.Duration) time.Duration { return w + time.Second } // the bucket's slack: a minute/60
		if got := maxIn(all, span(time.Minute)); got > pm {
			t.Errorf("%+v/%d: %d writes in one minute, want at most %d", tc.l, tc.every, got, pm)
		}
		if ph > 0 {
			if got := maxIn(all, span(time.Hour)); got > ph {
				t.Errorf("%+v/%d: %d writes in one hour, want at most %d", tc.l, tc.every, got, ph)
			}
			if got, share := maxIn(bg, span(time.Hour)), tc.l.BackgroundShare(ph); got > share {
				t.Errorf("%+v/%d: %d background writes in one hour, want at most %d", tc.l, tc.every, got, share)
			}
			if tc.every == 0 { // background alone reaches its share of every hour
				last := slices.MaxFunc(all, func(a, b time.Time) int { return a.Compare(b) })
				hours := float64(len(all)) / float64(tc.l.BackgroundShare(ph))
				if took := last.Sub(start); took > time.Duration((hours+0.05)*float64(time.Hour)) {
					t.Errorf("%+v: %d background writes took %v, want about %.1fh", tc.l, len(all), took, hours)
				}
			}
		}
	}
}

// People first: however much background work is queued, and after it has
// used its share of the hour, an interactive turn is free at once.
func TestInteractiveGoesAheadOfQueuedBackground(t *testing.T) {
	b, clock := newBucket(t, Default)
	var tickets []*Ticket
	for range 200 { // a burst of new issues: far more than an hour's share
		tickets = append(tickets, b.Reserve(Background, 2))
	}
	for i := 1; i < len(tickets); i++ {
		if tickets[i].At().Before(tickets[i-1].Last()) {
			t.Fatalf("background ticket %d starts at %v, before ticket %d's last turn (%v): not in turn order",
				i, tickets[i].At(), i-1, tickets[i-1].Last())
		}
	}
	if last := tickets[len(tickets)-1].Last(); last.Sub(clock.Now()) < time.Hour {
		t.Fatalf("400 background turns all within %v: the hour's share is 360", last.Sub(clock.Now()))
	}
	for i := range 5 { // 15 turns: the minute's headroom
		clock.Advance(time.Second)
		tk := b.Reserve(Interactive, 3) // label, card, check
		if !tk.At().Equal(clock.Now()) || tk.Last().Sub(tk.At()) > 0 {
			t.Fatalf("interactive group %d waits from %v to %v behind queued background work", i, tk.At().Sub(clock.Now()), tk.Last().Sub(clock.Now()))
		}
	}
	// Spend the hour: holders of background tickets take their turns; then a
	// person still finds turns at once.
	clock.Advance(tickets[179].Last().Sub(clock.Now()) + time.Second) // 360 background turns gone by
	tk := b.Reserve(Interactive, 4)
	if wait := tk.Last().Sub(clock.Now()); wait != 0 {
		t.Fatalf("after background used its share of the hour, an interactive group waits %v", wait)
	}
}

func TestHeadroomIsKeptForInteractiveWrites(t *testing.T) {
	for _, headroom := range []float64{0, 0.2, 0.5} {
		l := Limits{PerMinute: 80, PerHour: 500, Margin: 0.9, Headroom: headroom}
		b, clock := newBucket(t, l)
		_, ph := l.Paced()
		share := l.BackgroundShare(ph)
		var bg []*Ticket
		for range share + 10 {
			bg = append(bg, b.Reserve(Background, 1))
		}
		// The last share of them fit in the hour; the 10 more wait for the next one.
		within := 0
		for _, tk := range bg {
			if tk.At().Sub(clock.Now()) < time.Hour {
				within++
			}
		}
		if within != share {
			t.Errorf("headroom %v: %d background turns within the hour, want %d", headroom, within, share)
		}
		start := clock.Now()
		clock.Advance(bg[share-1].At().Sub(clock.Now()))
		free := 0
		for free <= ph && b.Reserve(Interactive, 1).At().Before(start.Add(time.Hour)) {
			free++
		}
		if want := ph - share; free != want {
			t.Errorf("headroom %v: %d interactive turns left in the hour once background used its share, want %d", headroom, free, want)
		}
	}
}

func TestTicketTurnsAndRelease(t *testing.T) {
	b, clock := newBucket(t, Limits{PerMinute: 3, Burst: 1}) // one background group every 20 s
	ctx := context.Background()
	first := b.Reserve(Background, 3) // a decision's label, card and check: together
	if !first.At().Equal(clock.Now()) || !first.Last().Equal(clock.Now()) {
		t.Fatalf("a group of 3 goes from %v to %v, want all at once", first.At().Sub(clock.Now()), first.Last().Sub(clock.Now()))
	}
	second := b.Reserve(Background, 1) // the minute is full: after the first group leaves it
	if got := second.At().Sub(clock.Now()); got != 61*time.Second {
		t.Fatalf("the next group comes in %v, want 61s (a minute and its slack)", got)
	}
	var tl *TooLongError
	if _, err := second.Wait(ctx, time.Second); !errors.As(err, &tl) || tl.Wait != 61*time.Second || second.Left() != 1 {
		t.Fatalf("waiting a second at most for a turn 61s away: %v, %d turns left; want a TooLongError of 61s, the turn kept", err, second.Left())
	}
	second.Release()
	for i := range 2 {
		if w, err := first.Wait(ctx, forever); err != nil || w != 0 {
			t.Fatalf("turn %d waited %v (%v)", i, w, err)
		}
	}
	if first.Left() != 1 {
		t.Fatalf("the ticket holds %d turns, want 1", first.Left())
	}
	held := b.Reserve(Interactive, 1)
	if got := held.At().Sub(clock.Now()); got != 61*time.Second {
		t.Fatalf("with the minute full an interactive turn comes in %v, want 61s", got)
	}
	held.Release()
	first.Release() // the third turn was not needed (the check said the same)
	if first.Left() != 0 {
		t.Fatal("a released ticket still holds turns")
	}
	if _, err := first.Wait(ctx, forever); !errors.Is(err, ErrSpent) {
		t.Fatalf("a spent ticket's Wait returned %v", err)
	}
	if got := b.Reserve(Interactive, 1).At(); !got.Equal(clock.Now()) {
		t.Fatalf("after the release an interactive turn comes in %v, want at once", got.Sub(clock.Now()))
	}
	// A background turn waits for the token bucket's refill after the group.
	done := waitAsync(ctx, t, b, Background)
	waitPending(t, clock, 1)
	clock.Advance(61 * time.Second)
	if w := <-done; w != 61*time.Second {
		t.Fatalf("the next background turn waited %v, want 61s (the minute holds 3)", w)
	}
}

// A holder that comes back later than its turn has its turns renewed: the
// windows counted them where they were, not when the writes go. It keeps its
// place ahead of tickets taken after it.
func TestLateTicketIsRenewedInPlace(t *testing.T) {
	b, clock := newBucket(t, Limits{PerMinute: 2, Burst: 1})
	late := b.Reserve(Background, 1) // now
	clock.Advance(10 * time.Second)
	on := b.Reserve(Background, 1) // one refill (30 s) after the first
	if got := on.At().Sub(clock.Now()); got != 20*time.Second {
		t.Fatalf("the second turn comes in %v, want 20s", got)
	}
	late.Renew()
	if !late.At().Equal(clock.Now()) {
		t.Fatalf("the late holder's turn moved to %v, want now (the minute holds one other turn)", late.At().Sub(clock.Now()))
	}
	if n := len(b.grants); n != 2 {
		t.Fatalf("the bucket holds %d grants, want 2 (the late one's old turn handed back)", n)
	}
	if w, err := late.Wait(context.Background(), forever); err != nil || w != 0 {
		t.Fatalf("the renewed turn waited %v (%v)", w, err)
	}
	// The minute is full (the renewed turn and the second ticket's): a
	// person's turn goes ahead of the second ticket's, which was not used
	// yet and moves back until the renewed one leaves the minute. A turn
	// not yet come, or gone by within the slack, stays where it is.
	third := b.Reserve(Interactive, 1)
	if !third.At().Equal(clock.Now()) {
		t.Fatalf("an interactive turn in a minute full of background turns comes in %v, want now", third.At().Sub(clock.Now()))
	}
	if got := on.At().Sub(clock.Now()); got != 61*time.Second {
		t.Fatalf("the background turn the interactive one went ahead of comes in %v, want 61s", got)
	}
	fourth := b.Reserve(Interactive, 1)
	if got := fourth.At().Sub(clock.Now()); got != 61*time.Second {
		t.Fatalf("an interactive turn in a minute full of turns gone by comes in %v, want 61s", got)
	}
	if on.At().Before(fourth.At()) {
		t.Fatalf("the background turn comes %v before the second interactive one", fourth.At().Sub(on.At()))
	}
	at := fourth.At()
	fourth.Renew()
	clock.Advance(61*time.Second + b.slack)
	fourth.Renew()
	third = fourth
	if !third.At().Equal(at) {
		t.Fatalf("a turn gone by within the slack moved by %v", third.At().Sub(at))
	}
}

func TestWaitersAreServedInOrder(t *testing.T) {
	b, clock := newBucket(t, Limits{PerMinute: 60, Burst: 1})
	ctx := context.Background()
	if _, err := b.Wait(ctx, Background, forever); err != nil { // empties the bucket
		t.Fatal(err)
	}
	order := make(chan int, 5)
	for i := range 5 {
		go func() {
			if _, err := b.Wait(ctx, Background, forever); err != nil {
				t.Error(err)
			}
			order <- i
		}()
		waitPending(t, clock, i+1) // i has its reservation before i+1 asks
	}
	for want := range 5 {
		clock.Advance(time.Second)
		if got := <-order; got != want {
			t.Fatalf("waiter %d went before waiter %d", got, want)
		}
	}
}

func TestCancelledWaitHandsItsTurnBack(t *testing.T) {
	b, clock := newBucket(t, Limits{PerMinute: 60, Burst: 1})
	if _, err := b.Wait(context.Background(), Background, forever); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error)
	go func() {
		_, err := b.Wait(ctx, Background, forever)
		errc <- err
	}()
	waitPending(t, clock, 1)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled wait returned %v, want context.Canceled", err)
	}
	if n := len(b.grants); n != 1 {
		t.Fatalf("the bucket holds %d grants after a cancelled wait, want 1", n)
	}
	if _, err := b.Wait(ctx, Background, forever); !errors.Is(err, context.Canceled) {
		t.Fatalf("a wait with an ended context returned %v", err)
	}
}

func TestTooLongReservesNothing(t *testing.T) {
	b, clock := newBucket(t, Limits{PerMinute: 60, Burst: 1})
	if _, err := b.Wait(context.Background(), Background, 0); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		_, err := b.Wait(context.Background(), Background, 500*time.Millisecond)
		var tl *TooLongError
		if !errors.As(err, &tl) || tl.Wait != time.Second {
			t.Fatalf("got %v, want a TooLongError of 1s", err)
		}
	}
	clock.Advance(time.Second)
	if w, err := b.Wait(context.Background(), Background, 0); err != nil || w != 0 {
		t.Fatalf("after the refill a write waited %v (%v): refused writes took turns", w, err)
	}
}

func waitPending(t *testing.T, c *clocktest.Fake, n int) {
	t.Helper()
	c.WaitTimers(t, n)
}

// waitAsync waits for a turn of class c in a goroutine; the channel gets how
// long it waited.
func waitAsync(ctx context.Context, t *testing.T, b *Bucket, c Class) <-chan time.Duration {
	t.Helper()
	done := make(chan time.Duration, 1)
	go func() {
		w, err := b.Wait(ctx, c, forever)
		if err != nil {
			t.Error(err)
		}
		done <- w
	}()
	return done
}

// Under a saturated minute, a group's turns are taken together, at the first
// moment the windows hold all of them, not spread one by one over the
// moments single turns free up. Spread, the group could never go: the
// holder sleeps until its last turn is near (a write waits inside a delivery
// only a slack's worth), comes back, finds its first turn gone by unused
// for longer than the slack, and is renewed, spread again, behind every
// ticket taken meanwhile, and so on forever (seen: 136 keys waiting and no
// write for minutes).
func TestGroupTurnsGoTogetherUnderASaturatedMinute(t *testing.T) {
	b, clock := newBucket(t, Limits{PerMinute: 60, Burst: 1}) // a background turn a second; slack 1 s
	ctx := context.Background()
	// Fill the minute one turn a second, as a steady stream of writes does.
	fillSteadily(t, b, clock, 60)
	slack := time.Minute / 60
	for i := range 5 {
		group := b.Reserve(Background, 3)
		if !group.At().Equal(group.Last()) {
			t.Fatalf("group %d: its 3 turns go from %v to %v, want together", i, group.At().Sub(clock.Now()), group.Last().Sub(clock.Now()))
		}
		// The holder sleeps until its group is near, as a deferred key does,
		// and comes back then: its turns are still its own.
		at := group.At()
		clock.Advance(group.Last().Sub(clock.Now()))
		group.Renew()
		if !group.At().Equal(at) {
			t.Fatalf("group %d: coming back on time, its turns moved by %v", i, group.At().Sub(at))
		}
		for j := range 3 {
			if w, err := group.Wait(ctx, slack); err != nil || w != 0 {
				t.Fatalf("group %d, turn %d: waited %v (%v)", i, j, w, err)
			}
		}
	}
}

// A late holder's group is renewed together too.
func TestLateGroupIsRenewedTogether(t *testing.T) {
	b, clock := newBucket(t, Limits{PerMinute: 60, Burst: 1})
	fillSteadily(t, b, clock, 60)
	group := b.Reserve(Background, 3)
	clock.Advance(group.Last().Sub(clock.Now()) + 5*time.Second) // late
	group.Renew()
	if !group.At().Equal(group.Last()) || group.At().Before(clock.Now()) {
		t.Fatalf("renewed, the group goes from %v to %v, want together, not before now", group.At().Sub(clock.Now()), group.Last().Sub(clock.Now()))
	}
}

// fillSteadily uses n background turns, each when it comes, as a steady
// stream of writes does.
func fillSteadily(t *testing.T, b *Bucket, clock *clocktest.Fake, n int) {
	t.Helper()
	for range n {
		tk := b.Reserve(Background, 1)
		clock.Advance(max(tk.At().Sub(clock.Now()), 0))
		if _, err := tk.Wait(context.Background(), 0); err != nil {
			t.Fatal(err)
		}
	}
}

// Bulk drains at the paced rate: with no person's writes waiting, a burst
// of background groups fills the whole paced minute (72 of GitHub's 80), not
// only its share of it. A person's group taken in the middle of the drain
// goes ahead of the background turns queued before it, waiting about one
// refill per write (a sliding minute frees a slot about every refill); the
// background turns it went ahead of move back, in their order, and no
// window holds more than the paced limit.
func TestBackgroundDrainsAtThePacedMinute(t *testing.T) {
	b, clock := newBucket(t, Default)
	pm, _ := Default.Paced()
	start := clock.Now()
	var bg []*Ticket
	for range 150 {
		bg = append(bg, b.Reserve(Background, 2)) // a new task's label and card
	}
	span := time.Minute + b.slack
	within := func(tks []*Ticket, from time.Time, d time.Duration) int {
		n := 0
		for _, tk := range tks {
			for _, g := range tk.grants {
				if !g.at.Before(from) && g.at.Before(from.Add(d)) {
					n++
				}
			}
		}
		return n
	}
	if got := within(bg, start, span); got != pm {
		t.Fatalf("%d background turns in the first minute, want the paced minute (%d)", got, pm)
	}
	// Half a minute in, the holders have used their turns so far; a person's
	// /verify takes four turns (label swap, card, check).
	clock.Advance(30 * time.Second)
	before := make(map[*Ticket]time.Time)
	for _, tk := range bg {
		before[tk] = tk.At()
	}
	person := b.Reserve(Interactive, 4)
	if wait := person.Last().Sub(clock.Now()); wait > 4*b.interval+b.slack {
		t.Fatalf("a person's group waits %v behind queued background work, want at most about four refills (%v)", wait, 4*b.interval)
	}
	moved := 0
	for i, tk := range bg {
		if tk.At().Before(before[tk]) {
			t.Fatalf("background ticket %d moved earlier", i)
		}
		if tk.At().After(before[tk]) {
			moved++
		}
		if i > 0 && tk.At().Before(bg[i-1].Last()) {
			t.Fatalf("background ticket %d starts before ticket %d's last turn: out of order", i, i-1)
		}
	}
	if moved == 0 {
		t.Fatal("no background turn moved back for the person's group")
	}
	var all []time.Time
	for _, tk := range append(bg, person) {
		for _, g := range tk.grants {
			all = append(all, g.at)
		}
	}
	if got := maxIn(all, span); got > pm {
		t.Fatalf("%d turns in one minute, want at most %d", got, pm)
	}
	// 300 background turns: the drain ends in about 300/72 minutes.
	last := bg[len(bg)-1].Last()
	if took := last.Sub(start); took > 5*time.Minute {
		t.Fatalf("300 background turns end %v after the burst, want within 5 minutes", took)
	}
	t.Logf("300 background turns and a person's 4: the last background turn %v after the burst; %d groups moved back", last.Sub(start), moved)
}

// A background holder that comes back late, while the queue ahead is full
// for minutes, keeps its place: its turn moves to the next free slot, not
// behind every ticket taken after it, and those move back behind it.
func TestLateBackgroundHolderKeepsItsPlaceInAFullQueue(t *testing.T) {
	b, clock := newBucket(t, Default)
	var bg []*Ticket
	for range 200 {
		bg = append(bg, b.Reserve(Background, 1))
	}
	late := bg[20]
	clock.Advance(late.At().Sub(clock.Now()) + 5*time.Second) // its turn went by 5 s ago, unused
	ahead := map[*Ticket]bool{}
	for _, tk := range bg {
		ahead[tk] = tk.At().After(clock.Now())
	}
	late.Renew()
	if wait := late.At().Sub(clock.Now()); wait < 0 || wait > 2*b.interval+b.slack {
		t.Fatalf("the late holder's turn comes in %v, want within about a refill (%v)", wait, b.interval)
	}
	for i := 21; i < len(bg); i++ {
		if ahead[bg[i]] && bg[i].At().Before(late.At()) {
			t.Fatalf("ticket %d, taken after the late one, goes %v before it", i, late.At().Sub(bg[i].At()))
		}
	}
	var all []time.Time
	for _, tk := range bg {
		for _, g := range tk.grants {
			all = append(all, g.at)
		}
	}
	pm, _ := Default.Paced()
	if got := maxIn(all, time.Minute+b.slack); got > pm {
		t.Fatalf("%d turns in one minute, want at most %d", got, pm)
	}
}

// A bucket is idle (can be dropped and made again) only once every grant
// it handed out has left every window and its token bucket is full: a
// bucket that was dropped earlier would let the installation exceed its
// limits.
func TestIdleOnlyOnceEveryWindowIsEmpty(t *testing.T) {
	b, clock := newBucket(t, Default)
	if !b.Idle() {
		t.Fatal("a new bucket is not idle")
	}
	tk := b.Reserve(Background, 3)
	if b.Idle() {
		t.Fatal("idle with turns ahead")
	}
	clock.Advance(2 * time.Minute)
	if b.Idle() {
		t.Fatal("idle with writes inside the hour's window")
	}
	clock.Advance(59 * time.Minute)
	if !b.Idle() {
		t.Fatalf("not idle an hour and more after its last write (%d turns left on the ticket)", tk.Left())
	}
	if _, err := b.Wait(context.Background(), Interactive, time.Second); err != nil {
		t.Fatal(err)
	}
	if b.Idle() {
		t.Fatal("idle just after an interactive write")
	}
	tk2 := b.Reserve(Interactive, 2)
	tk2.Release()
	if b.Idle() {
		t.Fatal("idle with the first write still inside its windows")
	}
}
