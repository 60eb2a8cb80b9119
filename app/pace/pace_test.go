package pace

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []fakeTimer
}

type fakeTimer struct {
	at time.Time
	c  chan time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	c.timers = append(c.timers, fakeTimer{at: c.now.Add(d), c: ch})
	return ch
}

// Advance moves the clock by d and fires the timers then due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, t := range c.timers {
		if t.at.After(c.now) {
			kept = append(kept, t)
			continue
		}
		t.c <- c.now
	}
	c.timers = kept
}

func (c *fakeClock) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

const forever = 1000 * time.Hour

func TestBurstThenOneEveryInterval(t *testing.T) {
	clock := newFakeClock()
	b, err := New(Default, clock)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Tokens(); got != 10 {
		t.Fatalf("a fresh bucket holds %d tokens, want 10 (80/8)", got)
	}
	ctx := context.Background()
	for i := range 10 {
		if w, err := b.Wait(ctx, forever); err != nil || w != 0 {
			t.Fatalf("write %d of the burst waited %v (%v)", i, w, err)
		}
	}
	if got := b.Tokens(); got != 0 {
		t.Fatalf("after the burst the bucket holds %d tokens, want 0", got)
	}
	// The 11th write waits one refill: a minute / 80.
	done := make(chan time.Duration)
	go func() {
		w, err := b.Wait(ctx, forever)
		if err != nil {
			t.Error(err)
		}
		done <- w
	}()
	waitPending(t, clock, 1)
	clock.Advance(750 * time.Millisecond)
	if w := <-done; w != 750*time.Millisecond {
		t.Fatalf("the 11th write waited %v, want 750ms", w)
	}
	clock.Advance(time.Hour)
	if got := b.Tokens(); got != 10 {
		t.Fatalf("after an idle hour the bucket holds %d tokens, want 10", got)
	}
	clock.Advance(2 * time.Second) // past the hour window's slack
	if _, err := b.Wait(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if n := len(b.grant); n != 1 {
		t.Fatalf("after an idle hour the bucket remembers %d grants, want 1 (the new one)", n)
	}
}

// TestWindowsAreNeverExceeded drives writers that write as soon as they may
// for three hours and counts the grants in every sliding minute and hour.
func TestWindowsAreNeverExceeded(t *testing.T) {
	for _, l := range []Limits{Default, {PerMinute: 80, PerHour: 500, Burst: 80}, {PerMinute: 30, PerHour: 0, Burst: 5}} {
		clock := newFakeClock()
		b, err := New(l, clock)
		if err != nil {
			t.Fatal(err)
		}
		start := clock.Now()
		var grants []time.Time
		var idle time.Duration
		for len(grants) < 2000 {
			b.mu.Lock()
			r, err := b.reserve(clock.Now(), forever)
			b.mu.Unlock()
			if err != nil {
				t.Fatal(err)
			}
			if n := len(grants); n > 0 && r.at.Before(grants[n-1]) {
				t.Fatalf("%+v: grant %d at %v is before the previous one", l, n, r.at)
			}
			grants = append(grants, r.at)
			clock.Advance(r.at.Sub(clock.Now()))
			if len(grants)%97 == 0 { // now and then an idle spell, for the bucket to refill
				d := time.Duration(len(grants)%7) * 5 * time.Second
				clock.Advance(d)
				idle += d
			}
		}
		maxIn := func(w time.Duration) int {
			most, j := 0, 0
			for i := range grants {
				for grants[i].Sub(grants[j]) >= w {
					j++
				}
				most = max(most, i-j+1)
			}
			return most
		}
		if got := maxIn(time.Minute + time.Second); got > l.PerMinute {
			t.Errorf("%+v: %d writes in one minute, want at most %d", l, got, l.PerMinute)
		}
		if l.PerHour > 0 {
			if got := maxIn(time.Hour + time.Second); got > l.PerHour {
				t.Errorf("%+v: %d writes in one hour, want at most %d", l, got, l.PerHour)
			}
			// ... and the hourly cap is reached, not undershot: 2000 writes in about 4 hours.
			if took := grants[len(grants)-1].Sub(start) - idle; took > 4*time.Hour+time.Minute {
				t.Errorf("%+v: 2000 writes took %v, want about 4h", l, took)
			}
		} else if took, want := grants[len(grants)-1].Sub(start)-idle, time.Duration(2000/l.PerMinute)*time.Minute; took > want+want/30 { // the windows' slack costs 1/60
			t.Errorf("%+v: 2000 writes took %v, want about %v", l, took, want)
		}
	}
}

func TestWaitersAreServedInOrder(t *testing.T) {
	clock := newFakeClock()
	b, err := New(Limits{PerMinute: 60, Burst: 1}, clock)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := b.Wait(ctx, forever); err != nil { // empties the bucket
		t.Fatal(err)
	}
	order := make(chan int, 5)
	for i := range 5 {
		go func() {
			if _, err := b.Wait(ctx, forever); err != nil {
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
	clock := newFakeClock()
	b, err := New(Limits{PerMinute: 60, Burst: 1}, clock)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Wait(context.Background(), forever); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error)
	go func() {
		_, err := b.Wait(ctx, forever)
		errc <- err
	}()
	waitPending(t, clock, 1)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled wait returned %v, want context.Canceled", err)
	}
	// The next writer gets the turn the cancelled one gave back: in 1s, not 2s.
	done := make(chan time.Duration)
	go func() {
		w, err := b.Wait(context.Background(), forever)
		if err != nil {
			t.Error(err)
		}
		done <- w
	}()
	waitPending(t, clock, 2) // the cancelled waiter's timer is still in the fake clock
	clock.Advance(time.Second)
	if w := <-done; w != time.Second {
		t.Fatalf("the next writer waited %v, want 1s", w)
	}
	if _, err := b.Wait(ctx, forever); !errors.Is(err, context.Canceled) {
		t.Fatalf("a wait with an ended context returned %v", err)
	}
}

func TestTooLongReservesNothing(t *testing.T) {
	clock := newFakeClock()
	b, err := New(Limits{PerMinute: 60, Burst: 1}, clock)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Wait(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		_, err := b.Wait(context.Background(), 500*time.Millisecond)
		var tl *TooLongError
		if !errors.As(err, &tl) || tl.Wait != time.Second {
			t.Fatalf("got %v, want a TooLongError of 1s", err)
		}
	}
	clock.Advance(time.Second)
	if w, err := b.Wait(context.Background(), 0); err != nil || w != 0 {
		t.Fatalf("after the refill a write waited %v (%v): refused writes took tokens", w, err)
	}
}

func TestNewRejectsBadLimits(t *testing.T) {
	for _, l := range []Limits{{}, {PerMinute: -1}, {PerMinute: 10, PerHour: -1}} {
		if _, err := New(l, nil); err == nil {
			t.Errorf("New(%+v) accepted", l)
		}
	}
}

func waitPending(t *testing.T, c *fakeClock, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for c.pending() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d timers pending, want %d", c.pending(), n)
		}
		time.Sleep(time.Millisecond)
	}
}
