package bolt_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/app/store/bolt"
	"github.com/countersign/countersign/app/store/storetest"
)

// Deliveries queued by a version that stored them as JSON (the payload base64
// inside) are claimed, committed, nacked and dead-lettered by this one.
func TestLegacyDeliveriesAfterUpgrade(t *testing.T) {
	t.Parallel()
	s := openBolt(t, filepath.Join(t.TempDir(), "store.db"))
	storetest.LegacyDeliveries(t, s, func(ctx context.Context, d store.Delivery) (bool, error) {
		return bolt.AcceptLegacy(ctx, s, d)
	})
}

// A dead letter stored as JSON by an earlier version is listed and retried.
func TestBoltLegacyDeadLetter(t *testing.T) {
	t.Parallel()
	s := openBolt(t, filepath.Join(t.TempDir(), "store.db"))
	d := store.Delivery{ID: "old", Event: "issues", Key: "k#2", Payload: []byte(`{"action":"closed"}`),
		ReceivedAt: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC), Attempts: 8, LastError: "x"}
	if err := bolt.LegacyDeadLetter(s, d); err != nil {
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
