// Package storetest is the conformance suite every store.Store must pass.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/app/store"
)

// Opener opens a fresh, empty store for one test. It must arrange for the store
// to be closed when the test ends (t.Cleanup); Close may be called twice.
type Opener func(t *testing.T) store.Store

// ReopenOpener opens a fresh, empty store and returns a function that opens
// another handle on the same data (same file, same server and prefix). The suite
// closes the first handle before calling reopen; the opener closes what reopen
// returns when the test ends.
type ReopenOpener func(t *testing.T) (s store.Store, reopen func(t *testing.T) store.Store)

// Option configures Run.
type Option func(*config)

type config struct {
	reopen ReopenOpener
}

// WithReopen adds the durability test: data written before Close is there after
// reopening.
func WithReopen(open ReopenOpener) Option { return func(c *config) { c.reopen = open } }

// Lease durations. Short leases are meant to expire during a test; long ones
// must not.
const (
	shortTTL = 300 * time.Millisecond
	longTTL  = 30 * time.Second
	// waitFor bounds how long a test polls for something that should happen
	// after a short lease or delay.
	waitFor = 10 * time.Second
)

// Run runs the conformance suite. Every subtest gets its own store from open and
// runs in parallel with the others.
func Run(t *testing.T, open Opener, opts ...Option) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"AcceptDedup", testAcceptDedup},
		{"AcceptInvalid", testAcceptInvalid},
		{"ClaimEmpty", testClaimEmpty},
		{"FIFOPerKey", testFIFOPerKey},
		{"OldestReadyKeyFirst", testOldestReadyKeyFirst},
		{"InteractiveKeysFirst", testInteractiveFirst},
		{"OneHolderPerKey", testOneHolderPerKey},
		{"LeaseExpiryAndReclaim", testLeaseExpiry},
		{"RenewKeepsLease", testRenewKeepsLease},
		{"RenewAfterExpiry", testRenewAfterExpiry},
		{"Commit", testCommit},
		{"CommitLeaseLostWritesNothing", testCommitLeaseLost},
		{"CommitInvalidWritesNothing", testCommitInvalid},
		{"CommitTwiceDoesNotSkip", testCommitTwice},
		{"DerivedDeliveriesDeduped", testDerivedDedup},
		{"OutboxOnlyClaim", testOutboxOnly},
		{"CommitPopsEffect", testCommitPopsEffect},
		{"Nack", testNack},
		{"DeadLetterAndRetry", testDeadLetter},
		{"Records", testRecords},
		{"PutAll", testPutAll},
		{"Seen", testSeen},
		{"NamedLease", testNamedLease},
		{"Counters", testCounters},
		{"Stats", testStats},
		{"PendingStats", testPending},
		{"Wake", testWake},
		{"ReleaseOwned", testReleaseOwned},
		{"Ping", testPing},
		{"BadInput", testBadInput},
		{"ConcurrentClaimers", testConcurrent},
		{"ConcurrentClaimersWithCrashes", testConcurrentCrashes},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, open(t))
		})
	}
	if cfg.reopen != nil {
		t.Run("DurableAcrossReopen", func(t *testing.T) {
			t.Parallel()
			testReopen(t, cfg.reopen)
		})
	}
}

func testSeen(t *testing.T, s store.Store) {
	ctx := t.Context()
	for _, id := range []string{"s1", "s2", ""} {
		if ok, err := s.Seen(ctx, id); err != nil || ok {
			t.Fatalf("Seen(%q) before any delivery = %v, %v; want false, nil", id, ok, err)
		}
	}
	accept(t, s, del("s1", "o/r#1"))
	c := claimKey(t, s, longTTL, "o/r#1", "s1")
	must(t, "Commit", s.Commit(ctx, c, store.Commit{Enqueue: []store.Delivery{del("s2", "o/r#2")}}))
	must(t, "Release", s.Release(ctx, c))
	for _, id := range []string{"s1", "s2"} {
		if ok, err := s.Seen(ctx, id); err != nil || !ok {
			t.Errorf("Seen(%q) after it was accepted = %v, %v; want true, nil", id, ok, err)
		}
	}
	if ok, err := s.Seen(ctx, "s3"); err != nil || ok {
		t.Errorf("Seen(s3) = %v, %v; want false, nil", ok, err)
	}
}

func testNamedLease(t *testing.T, s store.Store) {
	ctx := t.Context()
	take := func(name, owner string, ttl time.Duration, want bool) {
		t.Helper()
		got, err := s.Lease(ctx, name, owner, ttl)
		if err != nil || got != want {
			t.Fatalf("Lease(%s, %s) = %v, %v; want %v, nil", name, owner, got, err, want)
		}
	}
	take("heal", "a", 300*time.Millisecond, true)
	take("heal", "b", time.Minute, false)
	take("heal", "a", 300*time.Millisecond, true) // renewed by its holder
	take("other", "b", time.Minute, true)         // names are independent
	time.Sleep(400 * time.Millisecond)
	take("heal", "b", time.Minute, true) // expired: someone else may take it
	take("heal", "a", time.Minute, false)
	for _, bad := range []struct {
		name, owner string
		ttl         time.Duration
	}{{"", "a", time.Second}, {"x", "", time.Second}, {"x", "a", 0}, {"x", "a", -time.Second}} {
		if _, err := s.Lease(ctx, bad.name, bad.owner, bad.ttl); err == nil {
			t.Errorf("Lease(%q, %q, %v) = nil error; want one", bad.name, bad.owner, bad.ttl)
		}
	}
}

// ---- helpers ----

var received = time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)

func del(id, key string) store.Delivery {
	return store.Delivery{
		ID:         id,
		Event:      "issues",
		Key:        key,
		Payload:    []byte(`{"id":"` + id + `","bytes":"\u0000\u00ff"}`),
		ReceivedAt: received,
	}
}

func accept(t *testing.T, s store.Store, ds ...store.Delivery) {
	t.Helper()
	for _, d := range ds {
		ok, err := s.Accept(t.Context(), d)
		if err != nil {
			t.Fatalf("Accept(%s): %v", d.ID, err)
		}
		if !ok {
			t.Fatalf("Accept(%s) = false, want true (new id)", d.ID)
		}
	}
}

func claim(t *testing.T, s store.Store, ttl time.Duration) *store.Claim {
	t.Helper()
	c, err := s.Claim(t.Context(), "test-"+t.Name(), ttl)
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if c == nil {
		t.Fatalf("Claim = nil, want a claim")
	}
	if c.Key == "" || c.Token == "" {
		t.Fatalf("Claim = %+v, want key and token", c)
	}
	return c
}

// claimKey claims and checks the key and the head delivery id ("" for none).
func claimKey(t *testing.T, s store.Store, ttl time.Duration, key, id string) *store.Claim {
	t.Helper()
	c := claim(t, s, ttl)
	checkClaim(t, c, key, id)
	return c
}

func checkClaim(t *testing.T, c *store.Claim, key, id string) {
	t.Helper()
	if c.Key != key {
		t.Fatalf("claimed key %q, want %q", c.Key, key)
	}
	switch {
	case id == "" && c.Delivery != nil:
		t.Fatalf("claim of %q has delivery %q, want none (outbox only)", key, c.Delivery.ID)
	case id != "" && c.Delivery == nil:
		t.Fatalf("claim of %q has no delivery, want %q", key, id)
	case id != "" && c.Delivery.ID != id:
		t.Fatalf("claim of %q has delivery %q, want %q", key, c.Delivery.ID, id)
	}
}

func claimNone(t *testing.T, s store.Store) {
	t.Helper()
	c, err := s.Claim(t.Context(), "test", longTTL)
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if c != nil {
		t.Fatalf("Claim = key %q (delivery %v), want nothing claimable", c.Key, c.Delivery)
	}
}

// waitClaim polls until something is claimable.
func waitClaim(t *testing.T, s store.Store, ttl time.Duration) *store.Claim {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		c, err := s.Claim(t.Context(), "test-wait", ttl)
		if err != nil {
			t.Fatalf("Claim: %v", err)
		}
		if c != nil {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing claimable after %s", waitFor)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func mustLost(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("%s: err = %v, want ErrLeaseLost", what, err)
	}
}

func checkStats(t *testing.T, s store.Store, want store.Stats) {
	t.Helper()
	got, err := s.Stats(t.Context())
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	// The counts of pending work (Effects, Delayed, NextWake) are checked by
	// testPending.
	got.Effects, got.Delayed, got.NextWake = want.Effects, want.Delayed, want.NextWake
	if got != want {
		t.Fatalf("Stats = %+v, want %+v", got, want)
	}
}

func checkOutbox(t *testing.T, s store.Store, c *store.Claim, want ...string) {
	t.Helper()
	got, err := s.Outbox(t.Context(), c)
	if err != nil {
		t.Fatalf("Outbox(%s): %v", c.Key, err)
	}
	if len(got) != len(want) {
		t.Fatalf("Outbox(%s) = %q, want %q", c.Key, got, want)
	}
	for i := range want {
		if string(got[i]) != want[i] {
			t.Fatalf("Outbox(%s) = %q, want %q", c.Key, got, want)
		}
	}
}

func checkRecord(t *testing.T, s store.Store, key, want string) {
	t.Helper()
	got, err := s.Get(t.Context(), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	if string(got) != want {
		t.Fatalf("Get(%q) = %q, want %q", key, got, want)
	}
}

func checkNoRecord(t *testing.T, s store.Store, key string) {
	t.Helper()
	got, err := s.Get(t.Context(), key)
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get(%q) = %q, %v; want ErrNotFound", key, got, err)
	}
}

func sameDelivery(t *testing.T, got *store.Delivery, want store.Delivery) {
	t.Helper()
	if got == nil {
		t.Fatalf("delivery = nil, want %s", want.ID)
	}
	if got.ID != want.ID || got.Event != want.Event || got.Key != want.Key ||
		!bytes.Equal(got.Payload, want.Payload) || !got.ReceivedAt.Equal(want.ReceivedAt) ||
		got.Attempts != want.Attempts || got.LastError != want.LastError {
		t.Fatalf("delivery = %+v\nwant %+v", *got, want)
	}
}

// ---- tests ----

func testAcceptDedup(t *testing.T, s store.Store) {
	ctx := t.Context()
	d1 := del("d1", "o/r#1")
	accept(t, s, d1)
	for _, dup := range []store.Delivery{d1, del("d1", "o/r#2")} {
		ok, err := s.Accept(ctx, dup)
		if err != nil || ok {
			t.Fatalf("Accept(duplicate %s on %s) = %v, %v; want false, nil", dup.ID, dup.Key, ok, err)
		}
	}
	accept(t, s, del("d2", "o/r#1"))
	checkStats(t, s, store.Stats{Queued: 2, Keys: 1})

	c := claimKey(t, s, longTTL, "o/r#1", "d1")
	sameDelivery(t, c.Delivery, d1)
	must(t, "Commit", s.Commit(ctx, c, store.Commit{}))
	must(t, "Release", s.Release(ctx, c))
	// Processed ids are still remembered.
	if ok, err := s.Accept(ctx, d1); err != nil || ok {
		t.Fatalf("Accept(processed d1) = %v, %v; want false, nil", ok, err)
	}
	checkStats(t, s, store.Stats{Queued: 1, Keys: 1})

	// A delivery without ReceivedAt gets one.
	d3 := del("d3", "o/r#3")
	d3.ReceivedAt = time.Time{}
	accept(t, s, d3)
	claimKey(t, s, longTTL, "o/r#1", "d2")
	c3 := claimKey(t, s, longTTL, "o/r#3", "d3")
	if c3.Delivery.ReceivedAt.IsZero() {
		t.Errorf("ReceivedAt of a delivery accepted without one is zero")
	}
}

func testAcceptInvalid(t *testing.T, s store.Store) {
	ctx := t.Context()
	for _, d := range []store.Delivery{
		{ID: "", Key: "k"},
		{ID: "x", Key: ""},
		{ID: "bad\xff", Key: "k"},
		{ID: "y", Key: "k\xfe"},
		{},
	} {
		if ok, err := s.Accept(ctx, d); err == nil || ok {
			t.Errorf("Accept(%+v) = %v, %v; want an error", d, ok, err)
		}
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if ok, err := s.Accept(canceled, del("c", "k")); err == nil || ok {
		t.Errorf("Accept with a canceled context = %v, %v; want an error", ok, err)
	}
	checkStats(t, s, store.Stats{})
	claimNone(t, s)
}

func testClaimEmpty(t *testing.T, s store.Store) {
	claimNone(t, s)
	for _, ttl := range []time.Duration{0, -time.Second} {
		if c, err := s.Claim(t.Context(), "x", ttl); err == nil || c != nil {
			t.Errorf("Claim(ttl %s) = %v, %v; want an error", ttl, c, err)
		}
	}
}

func testFIFOPerKey(t *testing.T, s store.Store) {
	ctx := t.Context()
	const key = "o/r#7"
	var want []store.Delivery
	for i := range 6 {
		d := del(fmt.Sprintf("fifo-%d", i), key)
		d.Event = fmt.Sprintf("event-%d", i)
		want = append(want, d)
		accept(t, s, d)
	}
	for i, d := range want {
		c := claimKey(t, s, longTTL, key, d.ID)
		sameDelivery(t, c.Delivery, d)
		claimNone(t, s) // the rest of the queue waits for the holder
		must(t, "Commit", s.Commit(ctx, c, store.Commit{}))
		claimNone(t, s) // the lease is kept after Commit
		checkStats(t, s, store.Stats{Queued: len(want) - i - 1, Keys: min(len(want)-i-1, 1)})
		must(t, "Release", s.Release(ctx, c))
	}
	claimNone(t, s)
}

func testOldestReadyKeyFirst(t *testing.T, s store.Store) {
	ctx := t.Context()
	// Arrival order differs from key order on purpose.
	for _, k := range []string{"k3", "k1", "k2"} {
		accept(t, s, del("a-"+k, k))
		time.Sleep(2 * time.Millisecond)
	}
	accept(t, s, del("b-k3", "k3"))
	c := claimKey(t, s, longTTL, "k3", "a-k3")
	must(t, "Commit", s.Commit(ctx, c, store.Commit{}))
	time.Sleep(2 * time.Millisecond)
	must(t, "Release", s.Release(ctx, c)) // k3 becomes ready again, after k1 and k2
	claimKey(t, s, longTTL, "k1", "a-k1")
	claimKey(t, s, longTTL, "k2", "a-k2")
	claimKey(t, s, longTTL, "k3", "b-k3")
	claimNone(t, s)
}

// interactive is del for a delivery a person waits for.
func interactive(id, key string) store.Delivery {
	d := del(id, key)
	d.Interactive = true
	return d
}

// testInteractiveFirst: a key holding an interactive delivery (accepted, or
// enqueued by a commit) is claimed before keys that became ready a moment
// earlier, until its queue is empty; a delay (Nack) stays a delay.
func testInteractiveFirst(t *testing.T, s store.Store) {
	ctx := t.Context()
	for _, k := range []string{"bg1", "bg2", "bg3"} {
		accept(t, s, del("a-"+k, k))
		time.Sleep(2 * time.Millisecond)
	}
	accept(t, s, interactive("verify", "person"))
	c := claimKey(t, s, longTTL, "person", "verify")
	must(t, "Commit", s.Commit(ctx, c, store.Commit{}))
	must(t, "Release", s.Release(ctx, c))

	// An interactive delivery joining a key's queue moves the key ahead; the
	// key stays ahead until its queue is empty.
	accept(t, s, interactive("verify-bg3", "bg3"))
	c = claimKey(t, s, longTTL, "bg3", "a-bg3")
	must(t, "Commit", s.Commit(ctx, c, store.Commit{}))
	must(t, "Release", s.Release(ctx, c))
	c = claimKey(t, s, longTTL, "bg3", "verify-bg3")
	// A delivery a commit enqueues for a person is ahead too.
	must(t, "Commit", s.Commit(ctx, c, store.Commit{Enqueue: []store.Delivery{del("later-bg3", "bg3"), interactive("fanned", "pr")}}))
	must(t, "Release", s.Release(ctx, c))
	claimKey(t, s, longTTL, "pr", "fanned")
	// bg3 is urgent until its queue is empty, so later-bg3 goes ahead too.
	c = claimKey(t, s, longTTL, "bg3", "later-bg3")
	must(t, "Commit", s.Commit(ctx, c, store.Commit{Enqueue: []store.Delivery{del("last-bg3", "bg3")}}))
	must(t, "Release", s.Release(ctx, c))
	c = claimKey(t, s, longTTL, "bg3", "last-bg3") // its queue was not empty
	claimKey(t, s, longTTL, "bg1", "a-bg1")
	claimKey(t, s, longTTL, "bg2", "a-bg2")
	claimNone(t, s)
	// Its queue empty, bg3 is urgent no more.
	must(t, "Commit", s.Commit(ctx, c, store.Commit{}))
	must(t, "Release", s.Release(ctx, c))
	accept(t, s, del("a-bg4", "bg4"))
	time.Sleep(2 * time.Millisecond)
	accept(t, s, del("again-bg3", "bg3"))
	claimKey(t, s, longTTL, "bg4", "a-bg4")
	claimKey(t, s, longTTL, "bg3", "again-bg3")
	claimNone(t, s)

	// A delayed key keeps its delay, urgent or not.
	accept(t, s, interactive("retry", "nacked"))
	c = claimKey(t, s, longTTL, "nacked", "retry")
	must(t, "Nack", s.Nack(ctx, c, "wait", time.Minute))
	accept(t, s, interactive("retry-2", "nacked"))
	claimNone(t, s)
}

func testOneHolderPerKey(t *testing.T, s store.Store) {
	ctx := t.Context()
	accept(t, s, del("a1", "A"), del("a2", "A"))
	ca := claimKey(t, s, longTTL, "A", "a1")
	claimNone(t, s)
	accept(t, s, del("a3", "A"), del("b1", "B"))
	cb := claimKey(t, s, longTTL, "B", "b1")
	claimNone(t, s)
	must(t, "Commit A", s.Commit(ctx, ca, store.Commit{}))
	claimNone(t, s)
	must(t, "Release A", s.Release(ctx, ca))
	claimKey(t, s, longTTL, "A", "a2")
	must(t, "Release B", s.Release(ctx, cb)) // b1 was not committed: still there
	claimKey(t, s, longTTL, "B", "b1")
}

func testLeaseExpiry(t *testing.T, s store.Store) {
	ctx := t.Context()
	d := del("d", "o/r#1")
	accept(t, s, d)
	start := time.Now()
	c1 := claimKey(t, s, shortTTL, "o/r#1", "d")
	if c1.Expires.Before(start) || c1.Expires.After(time.Now().Add(shortTTL+time.Second)) {
		t.Errorf("Expires = %v, want about %v", c1.Expires, start.Add(shortTTL))
	}
	claimNone(t, s)
	c2 := waitClaim(t, s, longTTL) // the holder "crashed"
	if waited := time.Since(start); waited < shortTTL-50*time.Millisecond {
		t.Errorf("key reclaimed after %s, before its %s lease expired", waited, shortTTL)
	}
	checkClaim(t, c2, "o/r#1", "d")
	sameDelivery(t, c2.Delivery, d)
	if c2.Token == c1.Token {
		t.Fatalf("new claim has the old token")
	}
	claimNone(t, s)

	// The old holder has lost the key for everything.
	mustLost(t, "Renew(old)", s.Renew(ctx, c1, longTTL))
	mustLost(t, "Commit(old)", s.Commit(ctx, c1, store.Commit{
		Records: map[string][]byte{"r": []byte("x")},
		Effects: [][]byte{[]byte("e")},
		Enqueue: []store.Delivery{del("derived", "other")},
	}))
	_, err := s.Outbox(ctx, c1)
	mustLost(t, "Outbox(old)", err)
	mustLost(t, "PopEffect(old)", s.PopEffect(ctx, c1))
	mustLost(t, "Nack(old)", s.Nack(ctx, c1, "x", 0))
	mustLost(t, "DeadLetter(old)", s.DeadLetter(ctx, c1, "x"))
	mustLost(t, "Release(old)", s.Release(ctx, c1))

	// ...and none of that touched the new holder's state.
	checkNoRecord(t, s, "r")
	checkOutbox(t, s, c2)
	checkStats(t, s, store.Stats{Queued: 1, Keys: 1})
	if dl, err := s.DeadLetters(ctx); err != nil || len(dl) != 0 {
		t.Fatalf("DeadLetters = %v, %v; want none", dl, err)
	}
	claimNone(t, s)
	must(t, "Renew(new)", s.Renew(ctx, c2, longTTL))
	must(t, "Commit(new)", s.Commit(ctx, c2, store.Commit{}))
	must(t, "Release(new)", s.Release(ctx, c2))
	checkStats(t, s, store.Stats{})
}

func testRenewKeepsLease(t *testing.T, s store.Store) {
	ctx := t.Context()
	accept(t, s, del("d", "k"))
	c := claimKey(t, s, shortTTL, "k", "d")
	deadline := time.Now().Add(3 * shortTTL)
	for time.Now().Before(deadline) {
		time.Sleep(shortTTL / 4)
		must(t, "Renew", s.Renew(ctx, c, shortTTL))
		claimNone(t, s)
	}
	must(t, "Release", s.Release(ctx, c))
	claimKey(t, s, longTTL, "k", "d")
}

func testRenewAfterExpiry(t *testing.T, s store.Store) {
	ctx := t.Context()
	accept(t, s, del("d", "k"))
	c := claimKey(t, s, 100*time.Millisecond, "k", "d")
	time.Sleep(400 * time.Millisecond)
	// Nobody took the key, but the lease is over: the holder must stop.
	mustLost(t, "Renew after expiry", s.Renew(ctx, c, longTTL))
	mustLost(t, "Commit after expiry", s.Commit(ctx, c, store.Commit{}))
	c2 := claimKey(t, s, longTTL, "k", "d")
	if c2.Token == c.Token {
		t.Fatalf("reclaim reused the token")
	}
}

func testCommit(t *testing.T, s store.Store) {
	ctx := t.Context()
	must(t, "Put", s.Put(ctx, "goal:x", []byte("old")))
	accept(t, s, del("d1", "A"))
	c := claimKey(t, s, longTTL, "A", "d1")
	must(t, "Commit", s.Commit(ctx, c, store.Commit{
		Records: map[string][]byte{"task:A": []byte("v1"), "goal:x": []byte("v2"), "goal:gone": nil},
		Effects: [][]byte{[]byte("e1"), []byte("e2\x00bin")},
		Enqueue: []store.Delivery{del("der-B", "B"), del("der-A", "A")},
	}))
	checkRecord(t, s, "task:A", "v1")
	checkRecord(t, s, "goal:x", "v2")
	checkNoRecord(t, s, "goal:gone")
	checkOutbox(t, s, c, "e1", "e2\x00bin")
	checkStats(t, s, store.Stats{Queued: 2, Keys: 2})

	// The lease is kept: only B is claimable.
	must(t, "Renew", s.Renew(ctx, c, longTTL))
	cb := claimKey(t, s, longTTL, "B", "der-B")
	claimNone(t, s)

	must(t, "PopEffect", s.PopEffect(ctx, c))
	checkOutbox(t, s, c, "e2\x00bin")
	must(t, "PopEffect", s.PopEffect(ctx, c))
	checkOutbox(t, s, c)
	must(t, "PopEffect on an empty outbox", s.PopEffect(ctx, c))
	must(t, "Release", s.Release(ctx, c))

	c = claimKey(t, s, longTTL, "A", "der-A")
	must(t, "Commit delete", s.Commit(ctx, c, store.Commit{Records: map[string][]byte{"goal:x": nil, "empty": {}}}))
	checkNoRecord(t, s, "goal:x")
	checkRecord(t, s, "empty", "")
	must(t, "Release", s.Release(ctx, c))
	must(t, "Commit B", s.Commit(ctx, cb, store.Commit{}))
	must(t, "Release B", s.Release(ctx, cb))
	checkStats(t, s, store.Stats{})
	claimNone(t, s)
}

func testCommitLeaseLost(t *testing.T, s store.Store) {
	ctx := t.Context()
	must(t, "Put", s.Put(ctx, "r", []byte("old")))
	accept(t, s, del("d", "A"))
	c1 := claimKey(t, s, shortTTL, "A", "d")
	c2 := waitClaim(t, s, longTTL)
	checkClaim(t, c2, "A", "d")
	mustLost(t, "Commit(old)", s.Commit(ctx, c1, store.Commit{
		Records: map[string][]byte{"r": []byte("new"), "r2": []byte("x")},
		Effects: [][]byte{[]byte("e")},
		Enqueue: []store.Delivery{del("der-lost", "B"), del("der-lost-A", "A")},
	}))
	checkRecord(t, s, "r", "old")
	checkNoRecord(t, s, "r2")
	checkOutbox(t, s, c2)
	checkStats(t, s, store.Stats{Queued: 1, Keys: 1})
	claimNone(t, s) // B got nothing
	// The derived ids were not marked seen either.
	accept(t, s, del("der-lost", "B"))
	// The delivery is still at the head for the new holder.
	must(t, "Commit(new)", s.Commit(ctx, c2, store.Commit{Effects: [][]byte{[]byte("e-new")}}))
	checkOutbox(t, s, c2, "e-new")
}

func testCommitInvalid(t *testing.T, s store.Store) {
	ctx := t.Context()
	accept(t, s, del("d", "A"))
	c := claimKey(t, s, longTTL, "A", "d")
	for i, w := range []store.Commit{
		{Records: map[string][]byte{"ok": []byte("x"), "": []byte("empty key")}, Effects: [][]byte{[]byte("e")}},
		{Records: map[string][]byte{"ok": []byte("x")}, Enqueue: []store.Delivery{del("good", "B"), {ID: "", Key: "B"}}},
		{Effects: [][]byte{[]byte("e")}, Enqueue: []store.Delivery{{ID: "x", Key: ""}}},
	} {
		if err := s.Commit(ctx, c, w); err == nil {
			t.Fatalf("Commit #%d with invalid input: err = nil", i)
		}
	}
	checkNoRecord(t, s, "ok")
	checkOutbox(t, s, c)
	checkStats(t, s, store.Stats{Queued: 1, Keys: 1})
	accept(t, s, del("good", "B")) // not marked seen
	must(t, "Commit", s.Commit(ctx, c, store.Commit{}))
}

func testCommitTwice(t *testing.T, s store.Store) {
	ctx := t.Context()
	accept(t, s, del("d1", "A"), del("d2", "A"))
	c := claimKey(t, s, longTTL, "A", "d1")
	must(t, "Commit", s.Commit(ctx, c, store.Commit{}))
	// c.Delivery (d1) is gone: these must not act on d2.
	if err := s.Commit(ctx, c, store.Commit{Records: map[string][]byte{"r": []byte("x")}}); err == nil {
		t.Fatalf("second Commit of the same delivery: err = nil")
	}
	if err := s.Nack(ctx, c, "x", time.Hour); err == nil {
		t.Fatalf("Nack of a committed delivery: err = nil")
	}
	if err := s.DeadLetter(ctx, c, "x"); err == nil {
		t.Fatalf("DeadLetter of a committed delivery: err = nil")
	}
	checkNoRecord(t, s, "r")
	checkStats(t, s, store.Stats{Queued: 1, Keys: 1})
	must(t, "Release", s.Release(ctx, c))
	c = claimKey(t, s, longTTL, "A", "d2")
	if c.Delivery.Attempts != 0 {
		t.Fatalf("d2 attempts = %d, want 0", c.Delivery.Attempts)
	}
}

func testDerivedDedup(t *testing.T, s store.Store) {
	ctx := t.Context()
	accept(t, s, del("a", "k1"))
	c := claimKey(t, s, longTTL, "k1", "a")
	must(t, "Commit", s.Commit(ctx, c, store.Commit{Enqueue: []store.Delivery{
		del("a", "k2"), // already seen through Accept
		del("x", "k2"),
		del("x", "k3"), // same id twice in one commit
		del("y", "k2"),
	}}))
	checkStats(t, s, store.Stats{Queued: 2, Keys: 1})
	if ok, err := s.Accept(ctx, del("x", "k2")); err != nil || ok {
		t.Fatalf("Accept(derived id) = %v, %v; want false, nil", ok, err)
	}
	must(t, "Release", s.Release(ctx, c))
	c2 := claimKey(t, s, longTTL, "k2", "x")
	must(t, "Commit", s.Commit(ctx, c2, store.Commit{Enqueue: []store.Delivery{del("y", "k2"), del("z", "k2")}}))
	must(t, "Release", s.Release(ctx, c2))
	claimKey(t, s, longTTL, "k2", "y")
	checkStats(t, s, store.Stats{Queued: 2, Keys: 1})
}

// testCommitPopsEffect: a Commit with PopEffect takes the oldest effect off
// the outbox with the records its application keeps, in one write, and
// before the commit's own effects are appended; under a lost lease it writes
// nothing.
func testCommitPopsEffect(t *testing.T, s store.Store) {
	ctx := t.Context()
	accept(t, s, del("d", "k"))
	c := claimKey(t, s, longTTL, "k", "d")
	if !c.NoEffects {
		t.Errorf("claim of a key with an empty outbox does not say NoEffects")
	}
	must(t, "Commit", s.Commit(ctx, c, store.Commit{Effects: [][]byte{[]byte("e1"), []byte("e2")}}))
	c.Delivery = nil
	must(t, "Commit popping e1", s.Commit(ctx, c, store.Commit{Records: map[string][]byte{"applied": []byte("e1")}, PopEffect: true}))
	checkRecord(t, s, "applied", "e1")
	checkOutbox(t, s, c, "e2")
	must(t, "Commit popping e2, adding e3", s.Commit(ctx, c, store.Commit{Effects: [][]byte{[]byte("e3")}, PopEffect: true}))
	checkOutbox(t, s, c, "e3")
	must(t, "Commit popping e3", s.Commit(ctx, c, store.Commit{PopEffect: true}))
	checkOutbox(t, s, c)
	must(t, "Commit popping from an empty outbox", s.Commit(ctx, c, store.Commit{Records: map[string][]byte{"applied": nil}, PopEffect: true}))
	checkNoRecord(t, s, "applied")
	checkStats(t, s, store.Stats{})
	must(t, "Commit", s.Commit(ctx, c, store.Commit{Effects: [][]byte{[]byte("e4")}}))
	must(t, "Release", s.Release(ctx, c))

	// The old holder's pop writes nothing.
	c2 := claimKey(t, s, longTTL, "k", "")
	if c2.NoEffects {
		t.Errorf("claim of a key with an outbox effect says NoEffects")
	}
	mustLost(t, "Commit(old) popping", s.Commit(ctx, c, store.Commit{Records: map[string][]byte{"r": []byte("x")}, PopEffect: true}))
	checkNoRecord(t, s, "r")
	checkOutbox(t, s, c2, "e4")
	must(t, "Commit popping e4", s.Commit(ctx, c2, store.Commit{PopEffect: true}))
	checkOutbox(t, s, c2)
	must(t, "Release", s.Release(ctx, c2))
	checkStats(t, s, store.Stats{})
}

func testOutboxOnly(t *testing.T, s store.Store) {
	ctx := t.Context()
	accept(t, s, del("d", "k"))
	c := claimKey(t, s, longTTL, "k", "d")
	must(t, "Commit", s.Commit(ctx, c, store.Commit{Effects: [][]byte{[]byte("e1"), []byte("e2")}}))
	checkStats(t, s, store.Stats{Queued: 0, Keys: 1})
	must(t, "Release", s.Release(ctx, c)) // effects not applied yet ("crash")

	c = claimKey(t, s, longTTL, "k", "")
	if c.NoEffects {
		t.Errorf("claim of a key with outbox effects says NoEffects")
	}
	checkOutbox(t, s, c, "e1", "e2")
	must(t, "PopEffect", s.PopEffect(ctx, c))
	must(t, "Nack", s.Nack(ctx, c, "github is down", 300*time.Millisecond))
	claimNone(t, s)
	c = waitClaim(t, s, longTTL)
	checkClaim(t, c, "k", "")
	checkOutbox(t, s, c, "e2")
	must(t, "PopEffect", s.PopEffect(ctx, c))
	checkOutbox(t, s, c)
	checkStats(t, s, store.Stats{})
	// A delivery arriving while the key is held waits for the holder.
	accept(t, s, del("d2", "k"))
	claimNone(t, s)
	must(t, "Release", s.Release(ctx, c))
	claimKey(t, s, longTTL, "k", "d2")
}

func testNack(t *testing.T, s store.Store) {
	ctx := t.Context()
	d1 := del("d1", "A")
	accept(t, s, d1, del("d2", "A"))
	accept(t, s, del("e1", "B"))
	c := claimKey(t, s, longTTL, "A", "d1")
	const delay = time.Second
	nacked := time.Now()
	must(t, "Nack", s.Nack(ctx, c, "boom", delay))
	mustLost(t, "Renew after Nack", s.Renew(ctx, c, longTTL))
	cb := claimKey(t, s, longTTL, "B", "e1") // other keys go on
	claimNone(t, s)
	checkStats(t, s, store.Stats{Queued: 3, Keys: 2})

	c = waitClaim(t, s, longTTL)
	if waited := time.Since(nacked); waited < delay-200*time.Millisecond {
		t.Fatalf("nacked key claimable after %s, want %s", waited, delay)
	}
	want := d1
	want.Attempts, want.LastError = 1, "boom"
	checkClaim(t, c, "A", "d1")
	sameDelivery(t, c.Delivery, want)

	must(t, "Nack", s.Nack(ctx, c, "boom again", -time.Second)) // negative: no delay
	c = claimKey(t, s, longTTL, "A", "d1")
	want.Attempts, want.LastError = 2, "boom again"
	sameDelivery(t, c.Delivery, want)
	must(t, "Commit", s.Commit(ctx, c, store.Commit{}))
	must(t, "Release", s.Release(ctx, c))
	c = claimKey(t, s, longTTL, "A", "d2")
	if c.Delivery.Attempts != 0 || c.Delivery.LastError != "" {
		t.Fatalf("d2 = %+v, want no attempts", c.Delivery)
	}
	must(t, "Release B", s.Release(ctx, cb))
}

func testDeadLetter(t *testing.T, s store.Store) {
	ctx := t.Context()
	d1 := del("d1", "A")
	accept(t, s, d1, del("d2", "A"))
	c := claimKey(t, s, longTTL, "A", "d1")
	must(t, "DeadLetter", s.DeadLetter(ctx, c, "fatal"))
	mustLost(t, "Renew after DeadLetter", s.Renew(ctx, c, longTTL))
	checkStats(t, s, store.Stats{Queued: 1, Keys: 1, DeadLetters: 1})
	c = claimKey(t, s, longTTL, "A", "d2") // the key goes on
	must(t, "Commit", s.Commit(ctx, c, store.Commit{}))
	must(t, "Release", s.Release(ctx, c))

	x := del("x", "B")
	accept(t, s, x)
	c = claimKey(t, s, longTTL, "B", "x")
	must(t, "Nack", s.Nack(ctx, c, "first", 0))
	c = claimKey(t, s, longTTL, "B", "x")
	must(t, "DeadLetter", s.DeadLetter(ctx, c, "second"))

	dl, err := s.DeadLetters(ctx)
	must(t, "DeadLetters", err)
	if len(dl) != 2 {
		t.Fatalf("DeadLetters = %+v, want d1 and x", dl)
	}
	wantD1 := d1
	wantD1.Attempts, wantD1.LastError = 1, "fatal"
	sameDelivery(t, &dl[0], wantD1)
	wantX := x
	wantX.Attempts, wantX.LastError = 2, "second"
	sameDelivery(t, &dl[1], wantX)
	checkStats(t, s, store.Stats{DeadLetters: 2})

	if err := s.RetryDeadLetter(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("RetryDeadLetter(unknown) = %v, want ErrNotFound", err)
	}
	if err := s.RetryDeadLetter(ctx, ""); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("RetryDeadLetter(\"\") = %v, want ErrNotFound", err)
	}
	accept(t, s, del("d3", "A"))
	must(t, "RetryDeadLetter", s.RetryDeadLetter(ctx, "d1")) // to the tail, after d3
	if err := s.RetryDeadLetter(ctx, "d1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second RetryDeadLetter = %v, want ErrNotFound", err)
	}
	dl, err = s.DeadLetters(ctx)
	must(t, "DeadLetters", err)
	if len(dl) != 1 || dl[0].ID != "x" {
		t.Fatalf("DeadLetters = %+v, want x", dl)
	}
	checkStats(t, s, store.Stats{Queued: 2, Keys: 1, DeadLetters: 1})
	c = claimKey(t, s, longTTL, "A", "d3")
	must(t, "Commit", s.Commit(ctx, c, store.Commit{}))
	must(t, "Release", s.Release(ctx, c))
	c = claimKey(t, s, longTTL, "A", "d1")
	if c.Delivery.Attempts != 0 || !bytes.Equal(c.Delivery.Payload, d1.Payload) {
		t.Fatalf("retried d1 = %+v, want attempts reset and the payload", c.Delivery)
	}

	// Retrying while the key is held: the delivery waits behind the holder.
	must(t, "RetryDeadLetter", s.RetryDeadLetter(ctx, "x"))
	cx := claimKey(t, s, longTTL, "B", "x")
	if cx.Delivery.Attempts != 0 {
		t.Fatalf("retried x attempts = %d", cx.Delivery.Attempts)
	}
	checkStats(t, s, store.Stats{Queued: 2, Keys: 2})
}

// PutAll writes several records as Put does, found by Get and Scan; a bad
// key writes none of them.
func testPutAll(t *testing.T, s store.Store) {
	ctx := t.Context()
	must(t, "Put", s.Put(ctx, "card:o/r#1:id", []byte("old")))
	must(t, "PutAll", s.PutAll(ctx, map[string][]byte{
		"card:o/r#1:id": []byte("7"), "card:o/r#1:url": []byte("https://x/1"), "card:o/r#1:digest": nil,
	}))
	checkRecord(t, s, "card:o/r#1:id", "7")
	checkRecord(t, s, "card:o/r#1:url", "https://x/1")
	checkRecord(t, s, "card:o/r#1:digest", "")
	keys, err := s.Scan(ctx, "card:o/r#1:")
	if err != nil || len(keys) != 3 {
		t.Fatalf("Scan after PutAll = %v, %v; want 3 keys", keys, err)
	}
	if err := s.PutAll(ctx, map[string][]byte{"card:o/r#2:id": []byte("8"), "": []byte("x")}); err == nil {
		t.Fatal("PutAll with an empty key: err = nil")
	}
	checkNoRecord(t, s, "card:o/r#2:id")
	must(t, "PutAll of none", s.PutAll(ctx, nil))
}

func testRecords(t *testing.T, s store.Store) {
	ctx := t.Context()
	checkNoRecord(t, s, "missing")
	if _, err := s.Get(ctx, ""); err == nil {
		t.Fatalf("Get(\"\"): err = nil")
	}
	if err := s.Put(ctx, "", []byte("x")); err == nil {
		t.Fatalf("Put(\"\"): err = nil")
	}
	vals := map[string]string{
		"task:o/r#2":  "2",
		"task:o/r#10": "10",
		"goal:x":      "g",
		"task":        "bare",
		"tasks:z":     "z",
		"bin":         "\x00\xff\x01",
		"empty":       "",
		"\xff\xff":    "ff",
		"\xff\xffa":   "ffa",
	}
	for k, v := range vals {
		must(t, "Put "+k, s.Put(ctx, k, []byte(v)))
	}
	for k, v := range vals {
		checkRecord(t, s, k, v)
	}
	must(t, "Put overwrite", s.Put(ctx, "goal:x", []byte("g2")))
	checkRecord(t, s, "goal:x", "g2")
	must(t, "Put nil", s.Put(ctx, "nil", nil)) // an empty record
	checkRecord(t, s, "nil", "")
	must(t, "Put", s.Put(ctx, "nil", []byte("x")))

	scan := func(prefix string, want ...string) {
		t.Helper()
		got, err := s.Scan(ctx, prefix)
		if err != nil {
			t.Fatalf("Scan(%q): %v", prefix, err)
		}
		if len(got) == 0 && len(want) == 0 {
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Scan(%q) = %q, want %q", prefix, got, want)
		}
	}
	scan("task:", "task:o/r#10", "task:o/r#2")
	scan("task", "task", "task:o/r#10", "task:o/r#2", "tasks:z")
	scan("", "bin", "empty", "goal:x", "nil", "task", "task:o/r#10", "task:o/r#2", "tasks:z", "\xff\xff", "\xff\xffa")
	scan("\xff", "\xff\xff", "\xff\xffa")
	scan("\xff\xff", "\xff\xff", "\xff\xffa")
	scan("zzz")
	scan("task:o/r#2", "task:o/r#2")

	// Commit writes and deletes show in Scan.
	accept(t, s, del("d", "k"))
	c := claimKey(t, s, longTTL, "k", "d")
	must(t, "Commit", s.Commit(ctx, c, store.Commit{Records: map[string][]byte{
		"task:o/r#2": nil, "task:o/r#3": []byte("3"), "task:never": nil,
	}}))
	scan("task:", "task:o/r#10", "task:o/r#3")
	checkNoRecord(t, s, "task:o/r#2")
	checkNoRecord(t, s, "task:never")

	// Values are copies.
	v, err := s.Get(ctx, "task:o/r#3")
	must(t, "Get", err)
	v[0] = 'X'
	checkRecord(t, s, "task:o/r#3", "3")
	buf := []byte("mutable")
	must(t, "Put", s.Put(ctx, "m", buf))
	buf[0] = 'X'
	checkRecord(t, s, "m", "mutable")
}

func testStats(t *testing.T, s store.Store) {
	ctx := t.Context()
	checkStats(t, s, store.Stats{})
	accept(t, s, del("a1", "A"), del("a2", "A"), del("b1", "B"))
	checkStats(t, s, store.Stats{Queued: 3, Keys: 2})
	c := claimKey(t, s, longTTL, "A", "a1")
	checkStats(t, s, store.Stats{Queued: 3, Keys: 2}) // claimed deliveries still count
	must(t, "Commit", s.Commit(ctx, c, store.Commit{Effects: [][]byte{[]byte("e")}, Enqueue: []store.Delivery{del("c1", "C")}}))
	checkStats(t, s, store.Stats{Queued: 3, Keys: 3})
	must(t, "Release", s.Release(ctx, c)) // A is ready again, behind B and C
	c = claimKey(t, s, longTTL, "B", "b1")
	must(t, "Commit", s.Commit(ctx, c, store.Commit{}))
	checkStats(t, s, store.Stats{Queued: 2, Keys: 2})
	must(t, "Release", s.Release(ctx, c))
	c = claimKey(t, s, longTTL, "C", "c1")
	must(t, "Commit", s.Commit(ctx, c, store.Commit{}))
	must(t, "Release", s.Release(ctx, c))
	checkStats(t, s, store.Stats{Queued: 1, Keys: 1})
	c = claimKey(t, s, longTTL, "A", "a2")
	must(t, "DeadLetter", s.DeadLetter(ctx, c, "x"))
	checkStats(t, s, store.Stats{Queued: 0, Keys: 1, DeadLetters: 1}) // the outbox still holds e
	c = claimKey(t, s, longTTL, "A", "")
	must(t, "PopEffect", s.PopEffect(ctx, c))
	checkStats(t, s, store.Stats{DeadLetters: 1})
	must(t, "Release", s.Release(ctx, c))
	claimNone(t, s)
}

func testPing(t *testing.T, s store.Store) {
	must(t, "Ping", s.Ping(t.Context()))
	must(t, "Ping", s.Ping(t.Context()))
}

func testBadInput(t *testing.T, s store.Store) {
	ctx := t.Context()
	accept(t, s, del("d", "k"))
	for _, c := range []*store.Claim{nil, {}, {Key: "k"}, {Token: "t"}} {
		if err := s.Renew(ctx, c, time.Second); err == nil {
			t.Errorf("Renew(%+v): err = nil", c)
		}
		if err := s.Commit(ctx, c, store.Commit{}); err == nil {
			t.Errorf("Commit(%+v): err = nil", c)
		}
		if _, err := s.Outbox(ctx, c); err == nil {
			t.Errorf("Outbox(%+v): err = nil", c)
		}
		if err := s.PopEffect(ctx, c); err == nil {
			t.Errorf("PopEffect(%+v): err = nil", c)
		}
		if err := s.Release(ctx, c); err == nil {
			t.Errorf("Release(%+v): err = nil", c)
		}
		if err := s.Nack(ctx, c, "", 0); err == nil {
			t.Errorf("Nack(%+v): err = nil", c)
		}
		if err := s.DeadLetter(ctx, c, ""); err == nil {
			t.Errorf("DeadLetter(%+v): err = nil", c)
		}
	}
	holder := claimKey(t, s, longTTL, "k", "d")
	for _, c := range []*store.Claim{
		{Key: "k", Token: "forged"},
		{Key: "k", Token: "forged", Delivery: &store.Delivery{}},
		{Key: "unknown", Token: holder.Token},
		{Key: "unknown", Token: "forged", Delivery: &store.Delivery{ID: "d"}},
	} {
		mustLost(t, "Renew(forged)", s.Renew(ctx, c, time.Second))
		mustLost(t, "Commit(forged)", s.Commit(ctx, c, store.Commit{Records: map[string][]byte{"r": nil}}))
		_, err := s.Outbox(ctx, c)
		mustLost(t, "Outbox(forged)", err)
		mustLost(t, "PopEffect(forged)", s.PopEffect(ctx, c))
		mustLost(t, "Nack(forged)", s.Nack(ctx, c, "", 0))
		mustLost(t, "DeadLetter(forged)", s.DeadLetter(ctx, c, ""))
		mustLost(t, "Release(forged)", s.Release(ctx, c))
	}
	if err := s.Renew(ctx, holder, 0); err == nil {
		t.Errorf("Renew(ttl 0): err = nil")
	}
	// Empty effects are effects. (Without its delivery, the claim's Commit
	// leaves the queue alone.)
	noDelivery := *holder
	noDelivery.Delivery = nil
	must(t, "Commit empty effects", s.Commit(ctx, &noDelivery, store.Commit{Effects: [][]byte{nil, {}}}))
	checkOutbox(t, s, holder, "", "")
	must(t, "PopEffect", s.PopEffect(ctx, holder))
	must(t, "PopEffect", s.PopEffect(ctx, holder))
	checkOutbox(t, s, holder)
	// Huge durations are accepted (and clamped).
	must(t, "Renew(huge ttl)", s.Renew(ctx, holder, time.Duration(1<<62)))
	must(t, "Nack(huge delay)", s.Nack(ctx, holder, "later", time.Duration(1<<62)))
	claimNone(t, s)
	checkStats(t, s, store.Stats{Queued: 1, Keys: 1})
	checkNoRecord(t, s, "\x00")
	if keys, err := s.Scan(ctx, "\x00\xff"); err != nil || len(keys) != 0 {
		t.Errorf("Scan(binary) = %q, %v", keys, err)
	}
	long := string(bytes.Repeat([]byte("k"), 100_000))
	if ok, err := s.Accept(ctx, del("long", long)); err == nil || ok {
		t.Errorf("Accept(100 kB key) = %v, %v; want an error", ok, err)
	}
	if err := s.Put(ctx, long, []byte("x")); err == nil {
		t.Errorf("Put(100 kB key): err = nil")
	}
}

func testConcurrent(t *testing.T, s store.Store) {
	Race(t, []store.Store{s}, RaceConfig{Keys: 16, PerKey: 10, Workers: 8, TTL: longTTL})
}

func testConcurrentCrashes(t *testing.T, s store.Store) {
	Race(t, []store.Store{s}, RaceConfig{Keys: 6, PerKey: 6, Workers: 4, TTL: shortTTL, CrashEvery: 6})
}

func testReopen(t *testing.T, open ReopenOpener) {
	s, reopen := open(t)
	ctx := t.Context()
	d1, d2, d3 := del("d1", "A"), del("d2", "A"), del("d3", "B")
	accept(t, s, d1, d2, d3)
	must(t, "Put", s.Put(ctx, "cfg", []byte("c")))
	c := claimKey(t, s, longTTL, "A", "d1")
	must(t, "Commit", s.Commit(ctx, c, store.Commit{
		Records: map[string][]byte{"task:A": []byte("t")},
		Effects: [][]byte{[]byte("e")},
	}))
	cb := claimKey(t, s, longTTL, "B", "d3")
	must(t, "DeadLetter", s.DeadLetter(ctx, cb, "fatal"))
	must(t, "Renew", s.Renew(ctx, c, shortTTL)) // then the process "crashes" holding A
	must(t, "Close", s.Close())

	s = reopen(t)
	checkRecord(t, s, "cfg", "c")
	checkRecord(t, s, "task:A", "t")
	checkStats(t, s, store.Stats{Queued: 1, Keys: 1, DeadLetters: 1})
	dl, err := s.DeadLetters(ctx)
	must(t, "DeadLetters", err)
	if len(dl) != 1 || dl[0].ID != "d3" || dl[0].LastError != "fatal" {
		t.Fatalf("DeadLetters = %+v, want d3", dl)
	}
	for _, d := range []store.Delivery{d1, d2, d3} {
		if ok, err := s.Accept(ctx, d); err != nil || ok {
			t.Fatalf("Accept(%s) after reopen = %v, %v; want false, nil", d.ID, ok, err)
		}
	}
	// The dead holder's lease ends (at the latest after its ttl) and A resumes.
	c = waitClaim(t, s, longTTL)
	checkClaim(t, c, "A", "d2")
	checkOutbox(t, s, c, "e")
	must(t, "Ping", s.Ping(ctx))
}

// ---- concurrency ----

// RaceConfig configures Race.
type RaceConfig struct {
	Keys    int           // ordering keys
	PerKey  int           // deliveries per key
	Workers int           // claiming goroutines per store
	TTL     time.Duration // lease ttl
	// CrashEvery > 0 makes about one claim in CrashEvery be abandoned without
	// release (a crashed holder), before or after its Commit; the key must come
	// back after TTL.
	CrashEvery int
	Timeout    time.Duration // default 60s
}

// Race runs producers and claimers on the given stores (handles on the same
// data, e.g. several replicas) at the same time and checks that no key is ever
// held by two claimers while the lease of the first is valid, that each key's
// deliveries are committed in arrival order, each exactly once, and that each
// committed effect is applied exactly once.
func Race(t *testing.T, stores []store.Store, cfg RaceConfig) {
	t.Helper()
	if cfg.Timeout == 0 {
		cfg.Timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(t.Context(), cfg.Timeout)
	defer cancel()
	total := cfg.Keys * cfg.PerKey
	keyName := func(k int) string { return fmt.Sprintf("race/repo#%d", k) }
	keyIdx := map[string]int{}
	for k := range cfg.Keys {
		keyIdx[keyName(k)] = k
	}
	idOf := func(k, i int) string { return fmt.Sprintf("race-%d-%d", k, i) }

	var (
		mu        sync.Mutex
		held      = map[string]*store.Claim{}
		next      = map[string]int{} // key -> index of the next delivery to commit
		committed = map[string]bool{}
		applied   = map[string]int{}
		failed    bool
		done      = make(chan struct{})
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		failed = true
		mu.Unlock()
		t.Errorf(format, args...)
	}

	var wg sync.WaitGroup
	// Producers: each owns some keys and accepts their deliveries in order,
	// alternating between stores.
	const producers = 4
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			for i := range cfg.PerKey {
				for k := p; k < cfg.Keys; k += producers {
					s := stores[n%len(stores)]
					n++
					ok, err := s.Accept(ctx, del(idOf(k, i), keyName(k)))
					if err != nil || !ok {
						fail("Accept(%s) = %v, %v", idOf(k, i), ok, err)
						return
					}
				}
			}
		}()
	}

	worker := func(s store.Store, name string, rng *rand.Rand) {
		defer wg.Done()
		crash := func() bool { return cfg.CrashEvery > 0 && rng.IntN(cfg.CrashEvery) == 0 }
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			default:
			}
			c, err := s.Claim(ctx, name, cfg.TTL)
			if err != nil {
				if ctx.Err() == nil {
					fail("%s: Claim: %v", name, err)
				}
				return
			}
			if c == nil {
				time.Sleep(time.Millisecond)
				continue
			}
			mu.Lock()
			if prev := held[c.Key]; prev != nil && time.Now().Before(prev.Expires) {
				mu.Unlock()
				fail("%s: claimed %s while another lease on it is valid until %v", name, c.Key, prev.Expires)
				return
			}
			held[c.Key] = c
			mu.Unlock()

			if c.Delivery != nil {
				id := c.Delivery.ID
				mu.Lock()
				want := idOf(keyIdx[c.Key], next[c.Key])
				mu.Unlock()
				if id != want {
					fail("%s: claimed %s on %s, want %s (arrival order)", name, id, c.Key, want)
					return
				}
				if crash() {
					continue // abandoned before Commit: must be redone
				}
				err := s.Commit(ctx, c, store.Commit{
					Records: map[string][]byte{"race:" + id: []byte(id)},
					Effects: [][]byte{[]byte(id)},
				})
				if err != nil {
					if errors.Is(err, store.ErrLeaseLost) && !time.Now().Before(c.Expires) {
						continue // too slow: someone else redoes it
					}
					fail("%s: Commit(%s): %v", name, id, err)
					return
				}
				mu.Lock()
				if committed[id] {
					mu.Unlock()
					fail("%s: %s committed twice", name, id)
					return
				}
				committed[id] = true
				next[c.Key]++
				mu.Unlock()
				if crash() {
					continue // abandoned after Commit: the outbox must be finished by someone
				}
			}
			effects, err := s.Outbox(ctx, c)
			if err != nil {
				if errors.Is(err, store.ErrLeaseLost) && !time.Now().Before(c.Expires) {
					continue
				}
				fail("%s: Outbox(%s): %v", name, c.Key, err)
				return
			}
			for _, e := range effects {
				if err := s.PopEffect(ctx, c); err != nil {
					if errors.Is(err, store.ErrLeaseLost) && !time.Now().Before(c.Expires) {
						break
					}
					fail("%s: PopEffect(%s): %v", name, c.Key, err)
					return
				}
				mu.Lock()
				applied[string(e)]++
				if applied[string(e)] > 1 {
					mu.Unlock()
					fail("%s: effect %s applied twice", name, e)
					return
				}
				mu.Unlock()
			}
			mu.Lock()
			if held[c.Key] == c {
				delete(held, c.Key)
			}
			mu.Unlock()
			if err := s.Release(ctx, c); err != nil && !(errors.Is(err, store.ErrLeaseLost) && !time.Now().Before(c.Expires)) {
				fail("%s: Release(%s): %v", name, c.Key, err)
				return
			}
		}
	}
	for si, s := range stores {
		for w := range cfg.Workers {
			wg.Add(1)
			go worker(s, fmt.Sprintf("store%d-worker%d", si, w), rand.New(rand.NewPCG(uint64(si), uint64(w))))
		}
	}

	// Monitor: done once everything is committed and every outbox is empty.
	var finalErr error
	func() {
		defer close(done)
		for {
			mu.Lock()
			n, bad := len(committed), failed
			mu.Unlock()
			if bad {
				return
			}
			if n == total {
				st, err := stores[0].Stats(ctx)
				if err != nil {
					finalErr = err
					return
				}
				if st.Queued == 0 && st.Keys == 0 {
					return
				}
			}
			select {
			case <-ctx.Done():
				st, _ := stores[0].Stats(context.Background())
				finalErr = fmt.Errorf("timed out after %s: %d/%d committed, stats %+v", cfg.Timeout, n, total, st)
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	wg.Wait()
	if finalErr != nil {
		t.Fatalf("Race: %v", finalErr)
	}
	if t.Failed() {
		return
	}
	if len(applied) != total {
		t.Fatalf("Race: %d effects applied, want %d", len(applied), total)
	}
	for k := range cfg.Keys {
		if next[keyName(k)] != cfg.PerKey {
			t.Fatalf("Race: %s: %d committed, want %d", keyName(k), next[keyName(k)], cfg.PerKey)
		}
	}
	checkRecord(t, stores[len(stores)-1], "race:"+idOf(cfg.Keys-1, cfg.PerKey-1), idOf(cfg.Keys-1, cfg.PerKey-1))
	checkStats(t, stores[0], store.Stats{})
}

// testCounters: a counter counts from 1 within its window, concurrent counts
// are never lost, it starts again after its window, and it is not a record.
func testCounters(t *testing.T, s store.Store) {
	ctx := context.Background()
	for i := int64(1); i <= 3; i++ {
		n, err := s.Count(ctx, "replies/acme/app#1/7", time.Hour)
		if err != nil || n != i {
			t.Fatalf("count %d = %d, %v", i, n, err)
		}
	}
	if n, err := s.Count(ctx, "replies/acme/app#1/8", time.Hour); err != nil || n != 1 {
		t.Fatalf("another counter = %d, %v; want 1", n, err)
	}
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.Count(ctx, "concurrent", time.Hour); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n, err := s.Count(ctx, "concurrent", time.Hour); err != nil || n != 21 {
		t.Fatalf("after 20 concurrent counts: %d, %v; want 21", n, err)
	}
	if n, err := s.Count(ctx, "short", 50*time.Millisecond); err != nil || n != 1 {
		t.Fatalf("short = %d, %v", n, err)
	}
	time.Sleep(120 * time.Millisecond)
	if n, err := s.Count(ctx, "short", 50*time.Millisecond); err != nil || n != 1 {
		t.Fatalf("after its window a counter starts again: %d, %v; want 1", n, err)
	}
	if keys, err := s.Scan(ctx, ""); err != nil || len(keys) != 0 {
		t.Fatalf("counters seen as records: %v, %v", keys, err)
	}
	if _, err := s.Count(ctx, "x", 0); err == nil {
		t.Fatal("a counter with no window was accepted")
	}
}
