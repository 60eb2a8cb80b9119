package bolt

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/app/store/internal/backend"
)

// readyAt is when the ready-index entry k becomes claimable (ns).
func readyAt(k []byte) int64 {
	if len(k) < 16 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(k))
}

// Wake implements Store.
func (b *Store) Wake(ctx context.Context, keys ...string) error {
	if len(keys) == 0 {
		return ctx.Err()
	}
	err := b.write(ctx, func(t *btx) error {
		for _, k := range keys {
			if backend.CheckName("key", k) != nil {
				continue
			}
			m, err := t.meta(k)
			if err != nil {
				return err
			}
			if !m.hasWork() || m.leased(t.now) || m.Ready == nil || readyAt(m.Ready) <= t.now {
				continue
			}
			if err := t.index(m, t.now); err != nil { // a later sequence: after those ready now
				return err
			}
		}
		return nil
	})
	return wrapBolt("wake", err)
}

// ReleaseOwned implements Store.
func (b *Store) ReleaseOwned(ctx context.Context, owner string) (int, error) {
	if err := backend.CheckName("lease owner", owner); err != nil {
		return 0, err
	}
	var n int
	err := b.write(ctx, func(t *btx) error {
		n = 0
		var keys []string
		err := t.metaB.ForEach(func(k, v []byte) error {
			var m keyMeta
			if err := decodeMeta(v, &m); err != nil {
				return fmt.Errorf("decode meta of %q: %w", k, err)
			}
			if (m.Token != "" && m.Owner == owner) || m.Parked == owner {
				keys = append(keys, string(k))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range keys {
			m, err := t.meta(k)
			if err != nil {
				return err
			}
			switch {
			case m.Token != "" && m.Owner == owner:
				m.clearLease()
				m.Parked = ""
				if err := t.unindex(m); err != nil { // flush re-indexes it now if it has work
					return err
				}
				n++
			case m.Parked == owner && !m.leased(t.now):
				m.Parked = ""
				if m.hasWork() && m.Ready != nil && readyAt(m.Ready) > t.now {
					if err := t.index(m, t.now); err != nil {
						return err
					}
					n++
				}
			}
		}
		bk := t.tx.Bucket(bktLeases)
		var names [][]byte
		err = bk.ForEach(func(k, v []byte) error {
			if len(v) > 8 && string(v[:len(v)-9]) == owner {
				names = append(names, append([]byte(nil), k...))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, name := range names {
			if err := bk.Delete(name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, wrapBolt(fmt.Sprintf("release owned by %q", owner), err)
	}
	return n, nil
}

// pending sums the outbox effects of every key and finds the delayed keys.
func (b *Store) pending(tx *bbolt.Tx, s *store.Stats) error {
	now := b.now().UnixNano()
	return tx.Bucket(bktMeta).ForEach(func(k, v []byte) error {
		var m keyMeta
		if err := decodeMeta(v, &m); err != nil {
			return fmt.Errorf("decode meta of %q: %w", k, err)
		}
		s.Effects += int(m.OTail - m.OHead)
		if at := readyAt(m.Ready); m.hasWork() && !m.leased(now) && at > now {
			s.Delayed++
			if wake := time.Unix(0, at); s.NextWake.IsZero() || wake.Before(s.NextWake) {
				s.NextWake = wake
			}
		}
		return nil
	})
}
