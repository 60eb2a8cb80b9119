package worker

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/countersign/countersign/app/fault"
	"github.com/countersign/countersign/app/ghhealth"
	"github.com/countersign/countersign/app/store"
)

// parkStreak is how many consecutive waits a key spends parked on its
// installation's probe; after that (GitHub answers the probe but keeps
// failing this key's requests) it backs off on its own, up to waitMax.
const parkStreak = 4

// wait puts off key c.Key, using no attempt: GitHub is away (for its
// installation, or asked to wait), or the store could not be reached.
//   - GitHub away for an installation its requests met (scopes): the key is
//     parked on that installation's probe, which wakes it when GitHub is
//     back; it sleeps at most waitMax (or GitHub's hint) meanwhile.
//   - A write whose turn under the pacing is too far, and the rest: the key
//     waits GitHub's hint, or backs off on its own (waitDelay).
func (w *Worker) wait(ctx context.Context, c *store.Claim, err error, hint time.Duration, scopes []ghhealth.Scope, log *slog.Logger) {
	n, _ := w.waits.Load(c.Key)
	streak, _ := n.(int)
	w.waits.Store(c.Key, streak+1)
	storeDown := store.Unavailable(err)

	park, parked := ghhealth.Scope(0), false
	if w.health != nil && !storeDown && streak < parkStreak {
		for _, s := range scopes {
			if w.health.Away(s) {
				park, parked = s, true
				break
			}
		}
	}
	var wait time.Duration
	switch {
	case parked:
		wait = max(hint, w.waitMax)
	default:
		wait = fault.WaitDelay(streak, hint, w.waitMax)
		if _, paced := fault.IsWait(err); paced && !storeDown {
			w.deferred.Store(c.Key, struct{}{})
		}
	}
	if ok, suppressed := w.logLimit(storeDown).Allow(); ok {
		attrs := []any{"error", err, "waits", streak + 1, "suppressed", suppressed}
		switch {
		case storeDown:
			log.Warn("store error; will try again", append(attrs, "retry_in", wait)...)
		case parked:
			log.Warn("waiting for GitHub; the installation's probe wakes the key", append(attrs, "installation", park.String(), "at_most", wait)...)
		default:
			log.Warn("waiting for GitHub; will try again", append(attrs, "retry_in", wait)...)
		}
	}
	only := *c
	only.Delivery = nil
	if nerr := w.store.Nack(ctx, &only, err.Error(), wait); nerr != nil {
		if ok, suppressed := w.storeLogs.Allow(); ok {
			log.Error("store error: nack failed; releasing the key", "error", nerr, "suppressed", suppressed)
		}
		if rerr := w.store.Release(ctx, c); rerr != nil && !errors.Is(rerr, store.ErrLeaseLost) {
			log.Error("store error: release failed", "error", rerr)
		}
		return
	}
	if parked {
		if perr := w.health.Park(ctx, park, c.Key); perr != nil {
			log.Error("store error: could not wake the key GitHub is back for", "error", perr)
		}
	}
}

func (w *Worker) logLimit(storeDown bool) *LogLimiter {
	if storeDown {
		return w.storeLogs
	}
	return w.waitLogs
}

// Deferred is how many keys wait for a write turn under the pacing.
func (w *Worker) Deferred() int {
	n := 0
	w.deferred.Range(func(any, any) bool { n++; return true })
	return n
}
