package bolt

import (
	"context"
	"encoding/json"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/app/store/storetest"
)

// SetSeenTTL shortens how long b remembers delivery ids, for tests. Call it
// before using b.
func SetSeenTTL(b *Store, d time.Duration) { b.seenTTL = d }

// SeenCount returns the number of entries in the seen id buckets.
func SeenCount(b *Store) (seen, byTime int, err error) {
	err = b.db.View(func(tx *bbolt.Tx) error {
		seen = tx.Bucket(bktSeen).Stats().KeyN
		byTime = tx.Bucket(bktSeenExp).Stats().KeyN
		return nil
	})
	return seen, byTime, err
}

// AcceptLegacy is Accept storing d as versions before the binary delivery
// form did (storetest.LegacyJSON).
func AcceptLegacy(ctx context.Context, b *Store, d store.Delivery) (bool, error) {
	raw, err := storetest.LegacyJSON(d)
	if err != nil {
		return false, err
	}
	var accepted bool
	err = b.write(ctx, func(t *btx) error {
		var err error
		accepted, err = t.enqueue(d.ID, d.Key, raw, d.Interactive)
		return err
	})
	return accepted, err
}

// LegacyDeadLetter stores d as a dead letter in the JSON form earlier
// versions wrote.
func LegacyDeadLetter(b *Store, d store.Delivery) error {
	raw, err := json.Marshal(d)
	if err != nil {
		return err
	}
	return b.write(context.Background(), func(t *btx) error { return t.addDead(d.ID, raw) })
}

// Trim drops the file's resident pages now, as the store does every
// trimEvery.
func Trim(b *Store) error { return b.trim() }
