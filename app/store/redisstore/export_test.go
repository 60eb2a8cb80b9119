package redisstore

import (
	"context"
	"time"

	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/app/store/storetest"
)

// SetSeenTTL shortens how long r remembers delivery ids, for tests. Call it
// before using r.
func SetSeenTTL(r *Store, d time.Duration) { r.seenTTL = d }

// AcceptLegacy is Accept storing d as versions before the binary delivery
// form did (storetest.LegacyJSON).
func AcceptLegacy(ctx context.Context, r *Store, d store.Delivery) (bool, error) {
	raw, err := storetest.LegacyJSON(d)
	if err != nil {
		return false, err
	}
	n, err := r.run(ctx, luaAccept, r.seenMS(), d.Key, d.ID, raw, urgentArg(d)).Int64()
	return n == 1, err
}
