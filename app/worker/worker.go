// Package worker runs the pool that claims queued deliveries from the store,
// renews their leases, hands them to the processor, and settles each claim:
// done, retried with backoff, waiting for GitHub (no attempt used), or
// dead-lettered.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/countersign/countersign/app/deliveries"
	"github.com/countersign/countersign/app/fault"
	"github.com/countersign/countersign/app/ghhealth"
	"github.com/countersign/countersign/app/metrics"
	"github.com/countersign/countersign/app/store"
)

// Handler processes one claim (process.Processor).
type Handler interface {
	Handle(ctx context.Context, c *store.Claim, log *slog.Logger) error
}

// Worker runs the pool that takes claims from the store and processes them.
type Worker struct {
	store    store.Store
	proc     Handler
	log      *slog.Logger
	m        *metrics.Metrics
	owner    string
	leaseTTL time.Duration
	// maxAttempts failed attempts at one delivery dead-letter it.
	maxAttempts int
	poll        time.Duration

	notify chan struct{}
	busy   atomic.Int64
	// effectFailures counts consecutive failed attempts at a key's outbox, so
	// that effects GitHub keeps refusing back off like deliveries do.
	effectFailures sync.Map // key -> int
	// waits counts a key's consecutive waits for GitHub (an outage, a rate
	// limit), which back off up to waitMax and use no attempt.
	waits   sync.Map // key -> int
	waitMax time.Duration
	// claimErrors rate-limits the log of a store that cannot be reached.
	claimErrors *LogLimiter
	// health says whom GitHub is away for; keys wait for its probe
	// (wait.go). nil: each key backs off on its own.
	health *ghhealth.Health
	// waitLogs and storeLogs rate-limit the logs of keys waiting for GitHub
	// and of the store failing; deferred holds the keys whose write turn
	// under the pacing was too far, until they are handled again.
	waitLogs, storeLogs *LogLimiter
	deferred            sync.Map // key -> struct{}
}

// New is the pool claiming from st as owner and handing claims to proc.
// maxAttempts failed attempts dead-letter a delivery (0: 8); waitMax is the
// longest wait for GitHub between two tries (0: 5 minutes).
func New(st store.Store, proc Handler, log *slog.Logger, m *metrics.Metrics, owner string, maxAttempts int, waitMax time.Duration) *Worker {
	w := &Worker{store: st, proc: proc, log: log, m: m, owner: owner, leaseTTL: 30 * time.Second,
		maxAttempts: 8, poll: 250 * time.Millisecond, notify: make(chan struct{}, 1), waitMax: 5 * time.Minute,
		claimErrors: NewLogLimiter(10 * time.Second), waitLogs: NewLogLimiter(10 * time.Second), storeLogs: NewLogLimiter(10 * time.Second)}
	if maxAttempts > 0 {
		w.maxAttempts = maxAttempts
	}
	if waitMax > 0 {
		w.waitMax = waitMax
	}
	return w
}

// WaitFor makes keys that met GitHub away for their installation wait for
// h's probe to wake them (wait.go), instead of each backing off on its own.
// Call it before Run.
func (w *Worker) WaitFor(h *ghhealth.Health) { w.health = h }

// Health is what WaitFor set (nil: none).
func (w *Worker) Health() *ghhealth.Health { return w.health }

// SetOwner names the identity the pool claims under from now on (the one
// this process took over at start-up). Call it before Run.
func (w *Worker) SetOwner(owner string) { w.owner = owner }

// Notify wakes an idle worker: a delivery was just queued.
func (w *Worker) Notify() {
	select {
	case w.notify <- struct{}{}:
	default:
	}
}

// Busy is how many claims are being processed right now.
func (w *Worker) Busy() int64 { return w.busy.Load() }

// Run processes claims with n goroutines until ctx is done; work under way when
// ctx ends is finished first.
func (w *Worker) Run(ctx context.Context, n int) {
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.loop(ctx)
		}()
	}
	wg.Wait()
}

func (w *Worker) loop(ctx context.Context) {
	for ctx.Err() == nil {
		c, err := w.store.Claim(ctx, w.owner, w.leaseTTL)
		if err != nil {
			if ctx.Err() == nil {
				if ok, suppressed := w.claimErrors.Allow(); ok {
					w.log.Error("claim failed", "error", err, "suppressed", suppressed)
				}
				sleep(ctx, time.Second)
			}
			continue
		}
		if c == nil {
			select {
			case <-ctx.Done():
			case <-w.notify:
			case <-time.After(w.poll):
			}
			continue
		}
		w.busy.Add(1)
		w.handle(context.WithoutCancel(ctx), c)
		w.busy.Add(-1)
		// More may be waiting: let another idle worker look too.
		w.Notify()
	}
}

// handle processes one claim, renewing its lease meanwhile, and settles it:
// released when done, nacked (retried later) or dead-lettered when it failed.
func (w *Worker) handle(ctx context.Context, c *store.Claim) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var lost atomic.Bool
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		t := time.NewTicker(w.leaseTTL / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := w.store.Renew(ctx, c, w.leaseTTL); err != nil {
					if ctx.Err() == nil {
						w.log.Error("lease lost; abandoning the claim", "key", c.Key, "error", err)
						lost.Store(true)
						cancel()
					}
					return
				}
			}
		}
	}()

	d := c.Delivery // Handle sets c.Delivery to nil once the delivery is committed
	event := "outbox"
	var log *slog.Logger
	if d != nil {
		event = d.Event
		log = w.log.With(slog.String("delivery", d.ID), slog.String("event", event), slog.String("key", c.Key))
	} else {
		log = w.log.With(slog.String("key", c.Key))
	}
	start := time.Now()
	tracked, seen := ghhealth.Track(ctx) // which installations GitHub was away for
	w.deferred.Delete(c.Key)
	err := w.safeHandle(tracked, c, log)
	cancel()
	<-renewed
	if lost.Load() && err != nil {
		err = store.ErrLeaseLost
	}
	end := time.Now() // before the key is released: another worker may take it at once
	settle := context.WithoutCancel(ctx)
	committed := d != nil && c.Delivery == nil // whatever became of its effects
	outcome := "done"
	defer func() {
		if d == nil {
			return
		}
		log.Info("delivery processed", "outcome", outcome, "duration_ms", end.Sub(start).Milliseconds(),
			"started_ns", start.UnixNano(), "ended_ns", end.UnixNano())
	}()
	if committed {
		w.m.Processed.WithLabelValues(deliveries.MetricEvent(event), "done").Inc()
	}
	hint, waiting := fault.GitHubWait(err, time.Now())
	storeDown := store.Unavailable(err)

	if !waiting && !storeDown {
		w.waits.Delete(c.Key)
	}
	switch {
	case err == nil:
		w.effectFailures.Delete(c.Key)
		if d != nil {
			w.m.ProcessLatency.WithLabelValues(deliveries.MetricEvent(event)).Observe(time.Since(d.ReceivedAt).Seconds())
		}
		if err := w.store.Release(settle, c); err != nil && !errors.Is(err, store.ErrLeaseLost) {
			log.Error("release failed", "error", err)
		}
	case errors.Is(err, store.ErrLeaseLost):
		if !committed {
			outcome = "lease_lost"
		}
		log.Warn("lease lost while processing; another worker takes over", "error", err)
	case waiting || storeDown: // GitHub or the store is away: the key waits, no attempt is used
		if !committed {
			outcome = "waiting"
			w.m.Processed.WithLabelValues(deliveries.MetricEvent(event), "waiting").Inc()
		}
		w.wait(settle, c, err, hint, seen.Scopes(), log)
	case c.Delivery != nil && !fault.IsOutbox(err) && (fault.IsPermanent(err) || c.Delivery.Attempts+1 >= w.maxAttempts):
		if derr := w.store.DeadLetter(settle, c, err.Error()); derr != nil {
			log.Error("dead-letter failed", "error", derr)
			break
		}
		w.m.Processed.WithLabelValues(deliveries.MetricEvent(event), "dead_lettered").Inc()
		outcome = "dead_lettered"
		log.Error("delivery dead-lettered", "error", err, "attempts", c.Delivery.Attempts+1)
	default:
		var attempts int
		if fault.IsOutbox(err) { // effects failed: delay the key, charge no delivery
			n, _ := w.effectFailures.Load(c.Key)
			attempts, _ = n.(int)
			w.effectFailures.Store(c.Key, attempts+1)
			only := *c
			only.Delivery = nil
			c = &only
			if !committed {
				outcome = "deferred" // earlier effects first
			}
		} else if c.Delivery != nil {
			attempts = c.Delivery.Attempts
			w.m.Processed.WithLabelValues(deliveries.MetricEvent(event), "retried").Inc()
			outcome = "retried"
		}
		wait := retryDelay(attempts)
		log.Warn("processing failed; will retry", "error", err, "retry_in", wait)
		if nerr := w.store.Nack(settle, c, err.Error(), wait); nerr != nil {
			log.Error("nack failed; releasing the key", "error", nerr)
			if rerr := w.store.Release(settle, c); rerr != nil && !errors.Is(rerr, store.ErrLeaseLost) {
				log.Error("release failed", "error", rerr)
			}
		}
	}
}

// safeHandle runs the processor, turning a panic into a permanent error so one
// bad delivery is dead-lettered instead of stopping the process.
func (w *Worker) safeHandle(ctx context.Context, c *store.Claim, log *slog.Logger) (err error) {
	defer func() {
		if r := recover(); r != nil {
			log.Error("panic while processing", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = fault.Permanent(fmt.Errorf("panic: %v", r))
		}
	}()
	return w.proc.Handle(ctx, c, log)
}

// retryDelay is the wait before the next attempt: exponential from 1 s, capped
// at 5 min, with jitter.
func retryDelay(attempts int) time.Duration {
	d := time.Second << min(attempts, 8)
	d = min(d, 5*time.Minute)
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
