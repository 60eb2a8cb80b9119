package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// SetSeenTTL shortens how long s remembers delivery ids, for tests. Call it
// before using s.
func SetSeenTTL(s Store, d time.Duration) {
	switch v := s.(type) {
	case *Bolt:
		v.seenTTL = d
	case *Redis:
		v.seenTTL = d
	}
}

// BoltSeenCount returns the number of entries in the seen id buckets.
func BoltSeenCount(b *Bolt) (seen, byTime int, err error) {
	err = b.db.View(func(tx *bolt.Tx) error {
		seen = tx.Bucket(bktSeen).Stats().KeyN
		byTime = tx.Bucket(bktSeenExp).Stats().KeyN
		return nil
	})
	return seen, byTime, err
}

// AcceptLegacy is Accept storing d as versions before the binary delivery
// form did: json.Marshal of Delivery, its payload base64 inside.
func AcceptLegacy(ctx context.Context, s Store, d Delivery) (bool, error) {
	if d.ReceivedAt.IsZero() {
		d.ReceivedAt = time.Now()
	}
	raw, err := json.Marshal(struct {
		ID         string    `json:"id"`
		Event      string    `json:"event"`
		Key        string    `json:"key"`
		Payload    []byte    `json:"payload"`
		ReceivedAt time.Time `json:"received_at"`
		Attempts   int       `json:"attempts"`
		LastError  string    `json:"last_error,omitempty"`
	}{d.ID, d.Event, d.Key, d.Payload, d.ReceivedAt, d.Attempts, d.LastError})
	if err != nil {
		return false, err
	}
	var accepted bool
	switch v := s.(type) {
	case *Bolt:
		err = v.write(ctx, func(t *btx) error {
			var err error
			accepted, err = t.enqueue(d.ID, d.Key, raw, d.Interactive)
			return err
		})
	case *Redis:
		var n int64
		n, err = v.run(ctx, luaAccept, v.seenMS(), d.Key, d.ID, raw, urgentArg(d)).Int64()
		accepted = n == 1
	default:
		err = fmt.Errorf("AcceptLegacy: unknown store %T", s)
	}
	return accepted, err
}

// LegacyDeadLetter stores d as a dead letter in the JSON form earlier
// versions wrote (Bolt only).
func LegacyDeadLetter(b *Bolt, d Delivery) error {
	raw, err := json.Marshal(d)
	if err != nil {
		return err
	}
	return b.write(context.Background(), func(t *btx) error { return t.addDead(d.ID, raw) })
}
