package store_test

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/app/store/redistest"
)

// Deliveries queued by a version that stored them as JSON (the payload base64
// inside) are claimed, committed, nacked and dead-lettered by this one.
func TestLegacyDeliveriesAfterUpgrade(t *testing.T) {
	t.Parallel()
	t.Run("bolt", func(t *testing.T) {
		t.Parallel()
		testLegacyDeliveries(t, openBolt(t, filepath.Join(t.TempDir(), "store.db")))
	})
	t.Run("redis", func(t *testing.T) {
		t.Parallel()
		testLegacyDeliveries(t, openRedis(t, redistest.Start(t), uniquePrefix()))
	})
}

func testLegacyDeliveries(t *testing.T, s store.Store) {
	ctx := t.Context()
	received := time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC)
	legacy := func(id, key string) store.Delivery {
		d := store.Delivery{ID: id, Event: "issues", Key: key, ReceivedAt: received,
			Payload: []byte(`{"action":"opened","bytes":"\u0000\u00ff` + id + `"}`), Attempts: 1, LastError: "earlier"}
		if ok, err := store.AcceptLegacy(ctx, s, d); err != nil || !ok {
			t.Fatalf("AcceptLegacy(%s) = %v, %v", id, ok, err)
		}
		return d
	}
	same := func(got *store.Delivery, want store.Delivery) {
		t.Helper()
		if got == nil || got.ID != want.ID || got.Event != want.Event || got.Key != want.Key ||
			!bytes.Equal(got.Payload, want.Payload) || !got.ReceivedAt.Equal(want.ReceivedAt) ||
			got.Attempts != want.Attempts || got.LastError != want.LastError {
			t.Fatalf("delivery = %+v\nwant %+v", got, want)
		}
	}
	claimOne := func(key string) *store.Claim {
		t.Helper()
		c, err := s.Claim(ctx, "w", time.Minute)
		if err != nil || c == nil || c.Key != key {
			t.Fatalf("Claim = %+v, %v; want key %s", c, err, key)
		}
		return c
	}

	// Committed: the head check recognises the old form.
	a1, a2 := legacy("a1", "k#1"), legacy("a2", "k#1")
	c := claimOne("k#1")
	same(c.Delivery, a1)
	if err := s.Commit(ctx, c, store.Commit{Records: map[string][]byte{"r": []byte("v")}}); err != nil {
		t.Fatalf("Commit of a legacy delivery: %v", err)
	}
	if err := s.Commit(ctx, c, store.Commit{}); err == nil {
		t.Fatalf("second Commit of a legacy delivery succeeded")
	}
	if err := s.Release(ctx, c); err != nil {
		t.Fatal(err)
	}

	// Nacked: rewritten in the new form, with the attempt counted.
	c = claimOne("k#1")
	same(c.Delivery, a2)
	if err := s.Nack(ctx, c, "boom", 0); err != nil {
		t.Fatalf("Nack of a legacy delivery: %v", err)
	}
	c = claimOne("k#1")
	a2.Attempts, a2.LastError = 2, "boom"
	same(c.Delivery, a2)

	// Dead-lettered, listed and retried.
	if err := s.DeadLetter(ctx, c, "gave up"); err != nil {
		t.Fatalf("DeadLetter of a legacy delivery: %v", err)
	}
	dead, err := s.DeadLetters(ctx)
	if err != nil || len(dead) != 1 {
		t.Fatalf("DeadLetters = %+v, %v", dead, err)
	}
	a2.Attempts, a2.LastError = 3, "gave up"
	same(&dead[0], a2)
	if err := s.RetryDeadLetter(ctx, "a2"); err != nil {
		t.Fatal(err)
	}
	c = claimOne("k#1")
	a2.Attempts = 0
	same(c.Delivery, a2)
	if err := s.Commit(ctx, c, store.Commit{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, c); err != nil {
		t.Fatal(err)
	}
	if ok, err := store.AcceptLegacy(ctx, s, a1); err != nil || ok {
		t.Fatalf("legacy redelivery of a1 = %v, %v; want a duplicate", ok, err)
	}
	if ok, err := s.Accept(ctx, a1); err != nil || ok {
		t.Fatalf("redelivery of a1 = %v, %v; want a duplicate", ok, err)
	}
}

// A dead letter stored as JSON by an earlier version is listed and retried.
func TestBoltLegacyDeadLetter(t *testing.T) {
	t.Parallel()
	s := openBolt(t, filepath.Join(t.TempDir(), "store.db"))
	d := store.Delivery{ID: "old", Event: "issues", Key: "k#2", Payload: []byte(`{"action":"closed"}`),
		ReceivedAt: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC), Attempts: 8, LastError: "x"}
	if err := store.LegacyDeadLetter(s, d); err != nil {
		t.Fatal(err)
	}
	dead, err := s.DeadLetters(t.Context())
	if err != nil || len(dead) != 1 || dead[0].ID != "old" || !bytes.Equal(dead[0].Payload, d.Payload) || dead[0].Attempts != 8 {
		t.Fatalf("DeadLetters = %+v, %v", dead, err)
	}
	if err := s.RetryDeadLetter(t.Context(), "old"); err != nil {
		t.Fatal(err)
	}
	c, err := s.Claim(t.Context(), "w", time.Minute)
	if err != nil || c == nil || c.Delivery == nil || c.Delivery.ID != "old" || !bytes.Equal(c.Delivery.Payload, d.Payload) {
		t.Fatalf("Claim = %+v, %v", c, err)
	}
}
