// Package elect runs periodic work on one replica at a time: replicas sharing
// a store compete for a named lease, and only its holder works. The holder
// renews the lease while it lives; when it dies the lease lapses and another
// replica takes over within the lease's TTL.
package elect

import (
	"context"
	"log/slog"
	"time"

	"github.com/countersign/countersign/app/store"
)

// TTL is how long a lease outlives its holder's last renewal.
const TTL = 30 * time.Second

// Lease is the store's named lease (store.Store.Lease).
type Lease interface {
	Lease(ctx context.Context, name, owner string, ttl time.Duration) (bool, error)
}

var _ Lease = store.Store(nil)

// Loop calls work at once and then every interval, while this process (owner)
// holds the lease name, until ctx ends. Every tick (at most TTL/3 apart) the
// holder renews the lease and the others try to take it; a replica that has
// just taken it works at once. work gets a context that ends when ctx does.
func Loop(ctx context.Context, st Lease, log *slog.Logger, name, owner string, interval time.Duration, work func(context.Context)) {
	tick := min(interval, TTL/3)
	var last time.Time
	holding := false
	for {
		ok, err := st.Lease(ctx, name, owner, TTL)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("lease not renewed", "lease", name, "error", err)
			holding = false
		case err == nil && ok && !holding:
			log.Debug("lease taken", "lease", name)
			holding, last = true, time.Time{}
		case err == nil && !ok:
			holding = false
		}
		if holding && time.Since(last) >= interval {
			last = time.Now()
			work(ctx)
		}
		t := time.NewTimer(tick)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}
