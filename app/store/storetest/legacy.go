package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/countersign/countersign/app/store"
)

// LegacyJSON is d as versions before the binary delivery form stored it:
// json.Marshal of Delivery, its payload base64 inside (ReceivedAt set to now
// when zero, as Accept does).
func LegacyJSON(d store.Delivery) ([]byte, error) {
	if d.ReceivedAt.IsZero() {
		d.ReceivedAt = time.Now()
	}
	return json.Marshal(struct {
		ID         string    `json:"id"`
		Event      string    `json:"event"`
		Key        string    `json:"key"`
		Payload    []byte    `json:"payload"`
		ReceivedAt time.Time `json:"received_at"`
		Attempts   int       `json:"attempts"`
		LastError  string    `json:"last_error,omitempty"`
	}{d.ID, d.Event, d.Key, d.Payload, d.ReceivedAt, d.Attempts, d.LastError})
}

// LegacyDeliveries checks that deliveries queued by a version that stored
// them as JSON are claimed, committed, nacked and dead-lettered by s.
// acceptLegacy is Accept storing a delivery in that form (see LegacyJSON).
func LegacyDeliveries(t *testing.T, s store.Store, acceptLegacy func(context.Context, store.Delivery) (bool, error)) {
	ctx := t.Context()
	received := time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC)
	legacy := func(id, key string) store.Delivery {
		d := store.Delivery{ID: id, Event: "issues", Key: key, ReceivedAt: received,
			Payload: []byte(`{"action":"opened","bytes":"\u0000\u00ff` + id + `"}`), Attempts: 1, LastError: "earlier"}
		if ok, err := acceptLegacy(ctx, d); err != nil || !ok {
			t.Fatalf("acceptLegacy(%s) = %v, %v", id, ok, err)
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
	if ok, err := acceptLegacy(ctx, a1); err != nil || ok {
		t.Fatalf("legacy redelivery of a1 = %v, %v; want a duplicate", ok, err)
	}
	if ok, err := s.Accept(ctx, a1); err != nil || ok {
		t.Fatalf("redelivery of a1 = %v, %v; want a duplicate", ok, err)
	}
}
