package metrics

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/countersign/countersign/app/ghhealth"
	"github.com/countersign/countersign/app/store"
	"github.com/prometheus/client_golang/prometheus"
)

// StatsCache reads the store's Stats at most once a second, so that one
// scrape of /metrics reads them once for all the gauges built on them.
type StatsCache struct {
	st store.Store

	mu   sync.Mutex
	at   time.Time
	last store.Stats
	err  error
}

// NewStatsCache reads st's Stats through a cache.
func NewStatsCache(st store.Store) *StatsCache { return &StatsCache{st: st} }

// Get is the store's Stats, read at most a second ago.
func (c *StatsCache) Get() (store.Stats, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.at) < time.Second {
		return c.last, c.err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c.last, c.err = c.st.Stats(ctx)
	c.at = time.Now()
	return c.last, c.err
}

// pendingCollector exports what is waiting to be done (docs/recovery.md):
// the store's outbox effects and delayed keys, the keys waiting for GitHub
// and for a write turn in this process, and their total.
type pendingCollector struct {
	Pending

	workPending, effects, delayed, delayedWake, waitingGitHub, waitingWake, away, deferred *prometheus.Desc
}

// Pending is where the pending-work gauges read what waits.
type Pending struct {
	Stats func() (store.Stats, error)
	// Away lists the installations GitHub is away for (nil: none is
	// tracked).
	Away func() []ghhealth.ScopeState
	// Deferred is how many keys wait for a write turn under the pacing
	// (nil: not counted).
	Deferred func() int
}

// RegisterPending registers the gauges of pending work (docs/recovery.md)
// on m's registry.
func (m *Metrics) RegisterPending(p Pending) error {
	c := &pendingCollector{Pending: p,
		workPending: prometheus.NewDesc("countersign_work_pending",
			"Work accepted and not yet done: queued deliveries plus outbox effects not yet applied, whatever they wait for (GitHub, the store, a write turn). Alert on it staying above 0. -1: the store cannot be read.", nil, nil),
		effects: prometheus.NewDesc("countersign_outbox_effects",
			"Effects on GitHub recorded and not yet applied, in every key's outbox.", nil, nil),
		delayed: prometheus.NewDesc("countersign_keys_delayed",
			"Keys with work that wait before they are tried again (GitHub away, a write turn, a failed attempt), in the whole store.", nil, nil),
		delayedWake: prometheus.NewDesc("countersign_keys_delayed_next_wake_seconds",
			"Seconds until the first delayed key may be tried again by itself; no sample when none is delayed.", nil, nil),
		waitingGitHub: prometheus.NewDesc("countersign_github_waiting_keys",
			"Keys this process parked until GitHub is back for their installation (the probe wakes them), by installation (\"app\": the App's own requests).", []string{"installation"}, nil),
		waitingWake: prometheus.NewDesc("countersign_github_next_probe_seconds",
			"Seconds until GitHub is probed again for an installation it is away for (when the keys waiting for it may wake), by installation.", []string{"installation"}, nil),
		away: prometheus.NewDesc("countersign_github_away",
			"1 while GitHub is away for the installation (unreachable, 5xx, rate limited): its requests wait for the probe; no series otherwise.", []string{"installation"}, nil),
		deferred: prometheus.NewDesc("countersign_keys_deferred",
			"Keys this process put off because their write's turn under the write pacing was too far.", nil, nil),
	}
	if err := m.Registry.Register(c); err != nil {
		return fmt.Errorf("register the pending-work metrics: %w", err)
	}
	return nil
}

func (c *pendingCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.workPending, c.effects, c.delayed, c.delayedWake, c.waitingGitHub, c.waitingWake, c.away, c.deferred} {
		ch <- d
	}
}

func (c *pendingCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	now := time.Now()
	if st, err := c.Stats(); err != nil {
		gauge(c.workPending, -1)
	} else {
		gauge(c.workPending, float64(st.Queued+st.Effects))
		gauge(c.effects, float64(st.Effects))
		gauge(c.delayed, float64(st.Delayed))
		wake := 0.0 // none delayed
		if !st.NextWake.IsZero() {
			wake = max(st.NextWake.Sub(now).Seconds(), 0)
		}
		gauge(c.delayedWake, wake)
	}
	if c.Deferred != nil {
		gauge(c.deferred, float64(c.Deferred()))
	}
	if c.Away == nil {
		return
	}
	for _, s := range c.Away() {
		inst := s.Scope.String()
		gauge(c.away, 1, inst)
		gauge(c.waitingGitHub, float64(s.Parked), inst)
		gauge(c.waitingWake, max(s.NextProbe.Sub(now).Seconds(), 0), inst)
	}
}
