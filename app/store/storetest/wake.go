package storetest

import (
	"testing"
	"time"

	"github.com/countersign/countersign/app/store"
)

// pending reads the counts of pending work.
func pending(t *testing.T, s store.Store) store.Stats {
	t.Helper()
	st, err := s.Stats(t.Context())
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	return st
}

func checkPending(t *testing.T, s store.Store, effects, delayed int) store.Stats {
	t.Helper()
	st := pending(t, s)
	if st.Effects != effects || st.Delayed != delayed {
		t.Fatalf("Stats = %+v, want %d effects and %d delayed keys", st, effects, delayed)
	}
	if (delayed == 0) != st.NextWake.IsZero() {
		t.Fatalf("Stats.NextWake = %v with %d delayed keys", st.NextWake, delayed)
	}
	return st
}

// Stats count the outbox effects not yet applied and the keys a Nack delays,
// with the soonest wake.
func testPending(t *testing.T, s store.Store) {
	ctx := t.Context()
	checkPending(t, s, 0, 0)
	accept(t, s, del("a1", "A"), del("b1", "B"), del("c1", "C"))
	c := claimKey(t, s, longTTL, "A", "a1")
	must(t, "Commit", s.Commit(ctx, c, store.Commit{Effects: [][]byte{[]byte("e1"), []byte("e2")}}))
	checkPending(t, s, 2, 0) // leased, not delayed
	before := time.Now()
	c.Delivery = nil // committed
	must(t, "Nack A", s.Nack(ctx, c, "wait", time.Hour))
	st := checkPending(t, s, 2, 1)
	if st.NextWake.Before(before.Add(time.Hour-time.Minute)) || st.NextWake.After(time.Now().Add(time.Hour+time.Minute)) {
		t.Fatalf("NextWake = %v, want about an hour after %v", st.NextWake, before)
	}
	c = claimKey(t, s, longTTL, "B", "b1")
	must(t, "Nack B", s.Nack(ctx, c, "boom", 10*time.Minute))
	st = checkPending(t, s, 2, 2)
	if st.NextWake.After(time.Now().Add(11 * time.Minute)) {
		t.Fatalf("NextWake = %v, want B's, in 10 minutes", st.NextWake)
	}
	must(t, "Wake", s.Wake(ctx, "A", "B"))
	checkPending(t, s, 2, 0)
	checkStats(t, s, store.Stats{Queued: 2, Keys: 3})
}

// Wake makes delayed keys claimable now, in the order given, behind the keys
// already claimable; it leaves leased and undelayed keys alone.
func testWake(t *testing.T, s store.Store) {
	ctx := t.Context()
	must(t, "Wake nothing", s.Wake(ctx))
	must(t, "Wake unknown", s.Wake(ctx, "nobody"))
	accept(t, s, del("a1", "A"), del("b1", "B"), del("c1", "C"), del("d1", "D"))
	for _, k := range []string{"A", "B", "C"} {
		c := claimKey(t, s, longTTL, k, string([]byte{k[0] + 'a' - 'A'})+"1")
		must(t, "Nack "+k, s.Nack(ctx, c, "wait", time.Hour))
	}
	held := claimKey(t, s, longTTL, "D", "d1")
	claimNone(t, s)
	must(t, "Wake", s.Wake(ctx, "C", "D", "A")) // D is leased: left alone
	claimKey(t, s, longTTL, "C", "c1")
	claimKey(t, s, longTTL, "A", "a1")
	claimNone(t, s) // B still sleeps
	accept(t, s, del("e1", "E"))
	must(t, "Wake B", s.Wake(ctx, "B"))
	claimKey(t, s, longTTL, "E", "e1") // ready before B was woken
	c := claimKey(t, s, longTTL, "B", "b1")
	if c.Delivery.Attempts != 1 {
		t.Fatalf("b1 has %d attempts, want the Nack's 1 (Wake charges none)", c.Delivery.Attempts)
	}
	must(t, "Wake leased", s.Wake(ctx, "B"))
	claimNone(t, s)
	must(t, "Release D", s.Release(ctx, held))
}

// ReleaseOwned ends the key leases and named leases an owner holds, and the
// waits its Nacks without a delivery started; other owners' are kept.
func testReleaseOwned(t *testing.T, s store.Store) {
	ctx := t.Context()
	if _, err := s.ReleaseOwned(ctx, ""); err == nil {
		t.Fatal("ReleaseOwned(\"\") = nil error, want invalid")
	}
	accept(t, s, del("a1", "A"), del("b1", "B"), del("c1", "C"), del("d1", "D"), del("e1", "E"))
	mine := func(key, id string) *store.Claim {
		t.Helper()
		c, err := s.Claim(ctx, "me", longTTL)
		must(t, "Claim", err)
		if c == nil {
			t.Fatalf("Claim = nil, want %s", key)
		}
		checkClaim(t, c, key, id)
		return c
	}
	a := mine("A", "a1") // held when "me" died
	b := mine("B", "b1")
	must(t, "Commit B", s.Commit(ctx, b, store.Commit{Effects: [][]byte{[]byte("e")}}))
	must(t, "Nack B (a wait)", s.Nack(ctx, &store.Claim{Key: b.Key, Token: b.Token}, "waiting for GitHub", time.Hour))
	c := mine("C", "c1")
	must(t, "Nack C (an attempt)", s.Nack(ctx, c, "boom", time.Hour))
	d := claimKey(t, s, longTTL, "D", "d1") // someone else's
	e := mine("E", "e1")
	must(t, "Commit E", s.Commit(ctx, e, store.Commit{})) // leased, no work left
	if ok, err := s.Lease(ctx, "heal", "me", longTTL); err != nil || !ok {
		t.Fatalf("Lease(heal, me) = %v, %v", ok, err)
	}
	if ok, err := s.Lease(ctx, "other", "someone", longTTL); err != nil || !ok {
		t.Fatalf("Lease(other, someone) = %v, %v", ok, err)
	}
	claimNone(t, s)

	n, err := s.ReleaseOwned(ctx, "me")
	must(t, "ReleaseOwned", err)
	if n != 3 { // A's and E's leases, B's wait
		t.Fatalf("ReleaseOwned = %d, want 3 (two leases, one wait)", n)
	}
	mustLost(t, "Renew A after ReleaseOwned", s.Renew(ctx, a, longTTL))
	mustLost(t, "Renew E after ReleaseOwned", s.Renew(ctx, e, longTTL))
	must(t, "Renew D", s.Renew(ctx, d, longTTL))
	got := map[string]bool{}
	for range 2 {
		c := claim(t, s, longTTL)
		got[c.Key] = true
	}
	if !got["A"] || !got["B"] {
		t.Fatalf("claimable after ReleaseOwned: %v, want A and B", got)
	}
	claimNone(t, s) // C's failed attempt keeps its delay; D is held
	accept(t, s, del("e2", "E"))
	claimKey(t, s, longTTL, "E", "e2") // E's lease is gone
	if ok, err := s.Lease(ctx, "heal", "you", longTTL); err != nil || !ok {
		t.Fatalf("Lease(heal, you) after ReleaseOwned(me) = %v, %v, want it free", ok, err)
	}
	if ok, err := s.Lease(ctx, "other", "you", longTTL); err != nil || ok {
		t.Fatalf("Lease(other, you) = %v, %v, want someone's kept", ok, err)
	}
	if n, err := s.ReleaseOwned(ctx, "me"); err != nil || n != 0 {
		t.Fatalf("second ReleaseOwned = %d, %v, want 0", n, err)
	}
}
