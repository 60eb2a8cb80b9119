package store

import (
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
