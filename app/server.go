// Package app wires countersign together: it opens the store, builds every
// part from concrete types (New), and runs them (Run: HTTP intake, the
// workers, the heal and reconcile loops).
package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/countersign/countersign/app/board"
	"github.com/countersign/countersign/app/decide"
	"github.com/countersign/countersign/app/deliveries"
	"github.com/countersign/countersign/app/effects"
	"github.com/countersign/countersign/app/elect"
	"github.com/countersign/countersign/app/gh"
	"github.com/countersign/countersign/app/goals"
	"github.com/countersign/countersign/app/heal"
	"github.com/countersign/countersign/app/intake"
	"github.com/countersign/countersign/app/lookup"
	"github.com/countersign/countersign/app/mergequeue"
	"github.com/countersign/countersign/app/metrics"
	"github.com/countersign/countersign/app/pace"
	"github.com/countersign/countersign/app/process"
	"github.com/countersign/countersign/app/proxy"
	"github.com/countersign/countersign/app/reconcile"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/app/store/bolt"
	"github.com/countersign/countersign/app/store/redisstore"
	"github.com/countersign/countersign/app/worker"
	"github.com/countersign/countersign/rules"
	"github.com/prometheus/client_golang/prometheus"
)

// noticeKinds are the label values of countersign_replies_held_total.
var noticeKinds = []string{string(rules.NoticeRefused), string(rules.NoticeIgnored), string(rules.NoticeRejected),
	string(rules.NoticeEscalated), string(rules.NoticeReopened), string(rules.NoticeRegression), string(rules.NoticeStatus),
	string(rules.NoticeHelp), string(rules.NoticeFailed), string(rules.NoticeContradiction), string(rules.NoticeGoalRefused),
	string(rules.NoticeGoalReady), string(rules.NoticeGoalVerified), string(rules.NoticeGoalRejected),
	string(rules.NoticeGoalReopened), string(rules.NoticeGoalStatus)}

// Server is one countersign process: HTTP intake plus the worker pool.
type Server struct {
	settings Settings
	log      *slog.Logger
	store    store.Store
	gh       *gh.GitHub
	metrics  *metrics.Metrics
	worker   *worker.Worker
	exec     *effects.Executor // takes the checks' write leases as owner
	healer   *heal.Healer
	owner    string
	intake   *intake.Intake
	proxy    *proxy.Proxy // nil: deliveries come only to POST /webhook
}

// OpenStore opens the store the settings name: Redis when RedisURL is set, else
// the embedded bbolt file.
func OpenStore(ctx context.Context, st Settings) (store.Store, error) {
	if st.RedisURL != "" {
		s, err := redisstore.Open(ctx, st.RedisURL)
		if err != nil {
			return nil, fmt.Errorf("REDIS_URL: %w", err)
		}
		return s, nil
	}
	s, err := bolt.Open(st.DataPath)
	if err != nil {
		return nil, fmt.Errorf("COUNTERSIGN_DATA: %w", err)
	}
	return s, nil
}

// OpenExistingStore opens the store the settings name, as OpenStore does, but
// never creates one: an embedded store file that does not exist is an error
// (a command that reads or repairs the store must not start an empty one
// because of a typo).
func OpenExistingStore(ctx context.Context, st Settings) (store.Store, error) {
	if st.RedisURL == "" {
		fi, err := os.Stat(st.DataPath)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("COUNTERSIGN_DATA (--data): no store at %s (serve creates it; check the path)", st.DataPath)
		case err != nil:
			return nil, fmt.Errorf("COUNTERSIGN_DATA (--data): %w", err)
		case fi.IsDir():
			return nil, fmt.Errorf("COUNTERSIGN_DATA (--data): %s is a directory, not a store file", st.DataPath)
		case fi.Size() == 0:
			return nil, fmt.Errorf("COUNTERSIGN_DATA (--data): %s is empty, not a store file (serve creates it; check the path)", st.DataPath)
		}
	}
	return OpenStore(ctx, st)
}

// New builds a server over an open store (which it closes when Run ends).
func New(st Settings, s store.Store, log *slog.Logger) (*Server, error) {
	if len(st.WebhookSecret) == 0 {
		// go-github skips signature checks when the secret is empty: never serve so.
		return nil, errors.New("GITHUB_WEBHOOK_SECRET is empty: deliveries could not be authenticated")
	}
	srv := &Server{settings: st, log: log, store: s}
	stats := metrics.NewStatsCache(s)
	srv.metrics = metrics.New(func() (int, int) {
		st, err := stats.Get()
		if err != nil {
			return -1, -1
		}
		return st.Queued, st.DeadLetters
	})
	g, err := gh.New(st.APIURL, st.AppID, st.PrivateKey, srv.metrics)
	if err != nil {
		return nil, err
	}
	srv.gh = g
	if st.WritesPerMinute > 0 {
		if err := g.PaceWrites(pace.Limits{PerMinute: st.WritesPerMinute, PerHour: st.WritesPerHour, Minute: st.PaceMinute,
			Margin: st.WriteMargin, Headroom: st.WriteHeadroom}); err != nil {
			return nil, fmt.Errorf("write pacing: %w", err)
		}
	}
	keys, err := recordKeys(st)
	if err != nil {
		return nil, err
	}
	exec := effects.New(s, g, clientsAs(g, func(c *gh.Client) effects.Client { return c }), log, srv.metrics, keys, st.GoalCoalesce)
	look := lookup.New(s, g)
	gd := goals.New(s, g, clientsAs(g, func(c *gh.Client) goals.Client { return c }), look, keys)
	dd := decide.New(s, g, clientsAs(g, func(c *gh.Client) decide.Client { return c }), look, gd, keys, log, reconcile.NewMetrics(srv.metrics.Registry), mergequeue.NewMetrics(srv.metrics.Registry))
	// The board (docs/board.md): applied with the other effects, decided with the other deliveries.
	bd := board.New(s, func(inst int64) (board.Reader, board.Writer, error) {
		return g.GraphQL(inst), g.GraphQLWrites(inst), nil
	}, log)
	exec.Board(bd)
	dd.Board(bd)
	srv.owner = instanceName(st) // takeOver (in Run) confirms it
	exec.Heads(dd, srv.owner)
	srv.exec = exec
	proc := process.New(s, dd, exec)
	proc.Pace(g, srv.metrics.WritesDeferred.Inc)
	g.OnBack(s.Wake)
	srv.worker = worker.New(s, proc, log, srv.metrics, srv.owner, st.MaxAttempts, st.GitHubWaitMax)
	srv.worker.WaitFor(g.Health())
	if err := srv.metrics.RegisterPending(metrics.Pending{Stats: stats.Get, Away: g.Health().State, Deferred: srv.worker.Deferred}); err != nil {
		return nil, err
	}
	started := time.Now()
	hm := heal.NewMetrics(srv.metrics.Registry, func() time.Time {
		if st.HealInterval <= 0 {
			return time.Time{} // healing is off: -1
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if t := heal.LastSuccess(ctx, s); !t.IsZero() {
			return t
		}
		// Never healed (by any replica): the age since this process started,
		// so an alert on the age fires on a server that never could heal.
		return started
	})
	srv.healer = heal.New(s, g.App().Apps, log.With("component", "heal"), hm, heal.Config{
		Horizon: st.HealHorizon,
		Lease: func(ctx context.Context) bool {
			ok, err := s.Lease(ctx, healLease, srv.owner, elect.TTL)
			return ok && err == nil
		},
	})

	srv.metrics.Zero(deliveries.MetricEvents(), noticeKinds)
	srv.intake = intake.New(intake.Config{WebhookSecret: st.WebhookSecret, BodyTimeout: st.BodyTimeout}, s, srv.worker, srv.metrics, log)
	srv.intake.RecogniseEchoes(g, s)
	if st.WebhookProxyURL != "" {
		srv.proxy = newProxy(srv, st)
	}
	return srv, nil
}

// newProxy subscribes the server to a webhook proxy channel: its deliveries
// go through the intake's own POST /webhook; /readyz answers 503 while the
// stream is down, countersign_webhook_proxy_connected says whether it is up,
// and what GitHub sent while it was down is asked for again once it is back.
func newProxy(srv *Server, st Settings) *proxy.Proxy {
	connected := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "countersign_webhook_proxy_connected",
		Help: "1 while the webhook proxy's event stream (COUNTERSIGN_WEBHOOK_PROXY_URL) is connected, else 0; absent without a proxy.",
	})
	srv.metrics.Registry.MustRegister(connected)
	log := srv.log.With("component", "webhook-proxy")
	p := proxy.New(proxy.Config{
		URL: st.WebhookProxyURL, Handler: srv.intake.Handler(), Secret: st.WebhookSecret, Log: log,
		Backoff: st.ProxyBackoff,
		OnConnected: func(up bool) {
			if up {
				connected.Set(1)
			} else {
				connected.Set(0)
			}
		},
		OnResume: func(ctx context.Context, from, to time.Time) {
			res, err := srv.healer.Gap(ctx, from, to)
			if err != nil && ctx.Err() == nil {
				log.Warn("deliveries sent while the webhook proxy was down not asked for again", "error", err, "requests", res.Requests)
				return
			}
			log.Info("deliveries sent while the webhook proxy was down asked for again", "scanned", res.Scanned,
				"redelivered", res.Redelivered, "requests", res.Requests)
		},
	})
	srv.intake.AddReady(p.Ready)
	return p
}

// Handler is the server's HTTP handler (all routes).
func (s *Server) Handler() http.Handler { return s.intake.Handler() }

// Worker is the server's worker pool.
func (s *Server) Worker() *worker.Worker { return s.worker }

// Store is the server's store.
func (s *Server) Store() store.Store { return s.store }

// Run serves HTTP on ln and runs the workers until ctx is done, then shuts down
// gracefully: it stops taking deliveries, finishes those under way, and closes
// the store.
func (s *Server) Run(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{Handler: s.intake.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 60 * time.Second,
		WriteTimeout: 60 * time.Second, IdleTimeout: 120 * time.Second,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	workCtx, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWork()
	defer s.gh.Close()
	var wg sync.WaitGroup
	if s.proxy != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.proxy.Run(workCtx)
		}()
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()
	s.log.Info("countersign serving", "addr", ln.Addr().String(), "github_api", RedactURL(s.settings.APIURL), "workers", s.settings.Workers,
		"store", storeName(s.settings))

	// Deliveries are taken in meanwhile; the work starts under this
	// process's identity, with what its predecessor held released.
	wg.Add(1)
	go func() {
		defer wg.Done()
		owner, nonce, err := takeOver(workCtx, s.store, s.log, s.owner)
		if err != nil {
			if workCtx.Err() == nil {
				s.log.Error("instance take-over failed; not processing", "error", err)
			}
			return
		}
		s.owner = owner
		s.worker.SetOwner(owner)
		s.exec.SetOwner(owner)
		if nonce != "" {
			wg.Add(1)
			go func() {
				defer wg.Done()
				keepPresence(workCtx, s.store, s.log, owner, nonce)
			}()
		}
		wg.Add(3)
		go func() {
			defer wg.Done()
			s.worker.Run(workCtx, s.settings.Workers)
		}()
		// Healing and reconciliation start once deliveries can be taken in.
		go func() {
			defer wg.Done()
			s.healLoop(workCtx)
		}()
		go func() {
			defer wg.Done()
			s.reconcileLoop(workCtx)
		}()
	}()

	var err error
	select {
	case <-ctx.Done():
	case err = <-serveErr:
	}
	s.intake.Stopping()
	s.log.Info("shutting down")
	shutCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if e := hs.Shutdown(shutCtx); e != nil {
		s.log.Warn("http shutdown", "error", e)
	}
	stopWork()
	wg.Wait()
	if e := s.store.Close(); e != nil {
		s.log.Warn("store close", "error", e)
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// The named leases that elect the replica doing periodic work.
const (
	healLease      = "heal"
	reconcileLease = "reconcile"
)

// healLoop runs a heal pass at start-up and every HealInterval, on one
// replica at a time.
func (s *Server) healLoop(ctx context.Context) {
	if s.settings.HealInterval <= 0 {
		return
	}
	log := s.log.With("component", "heal")
	elect.Loop(ctx, s.store, log, healLease, s.owner, s.settings.HealInterval, func(ctx context.Context) {
		res, err := s.healer.Pass(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("heal pass failed; trying again at the next", "error", err, "requests", res.Requests, "redelivered", res.Redelivered)
		case res.Missed > 0 || res.Redelivered > 0 || res.Pending > 0:
			log.Info("heal pass", "scanned", res.Scanned, "missed", res.Missed, "redelivered", res.Redelivered,
				"pending", res.Pending, "requests", res.Requests)
		default:
			log.Debug("heal pass", "scanned", res.Scanned, "requests", res.Requests)
		}
	})
}

// reconcileLoop queues a resync of every tracked repository at start-up (the
// tasks touched since the last one, or in the last day) and then every
// ReconcileInterval, on one replica at a time.
func (s *Server) reconcileLoop(ctx context.Context) {
	log := s.log.With("component", "reconcile")
	why := "start-up"
	interval := s.settings.ReconcileInterval
	once := interval <= 0
	if once {
		interval = 24 * time.Hour
	}
	elect.Loop(ctx, s.store, log, reconcileLease, s.owner, interval, func(ctx context.Context) {
		if once && why != "start-up" {
			return
		}
		// A bounded, paced pass: PassRate repositories a second, ending
		// within half the interval, while this replica keeps the lease.
		n, err := reconcile.SchedulePaced(ctx, s.store, why, reconcile.StartupWindow, time.Now(), reconcile.Pacing{
			Rate: reconcile.PassRate, Within: interval / 2, KeepEvery: elect.TTL / 3, Queued: s.worker.Notify,
			Keep: func(ctx context.Context) bool {
				ok, err := s.store.Lease(ctx, reconcileLease, s.owner, elect.TTL)
				return ok && err == nil
			},
		})
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("resync not scheduled", "error", err, "why", why)
			}
			return
		}
		log.Debug("resyncs queued", "repos", n, "why", why)
		why = "schedule"
	})
}

// clientsAs is installation clients as a package's interface of them: the one
// adapter (gh.Client) serves every package's.
func clientsAs[C any](g *gh.GitHub, as func(*gh.Client) C) func(inst int64) (C, error) {
	return func(inst int64) (C, error) {
		c, err := g.Client(inst)
		if err != nil {
			var none C
			return none, err
		}
		return as(c), nil
	}
}

// storeName says which store the settings name, for the start-up line: Redis
// (its URL without the password) or the embedded file.
func storeName(st Settings) string {
	if st.RedisURL != "" {
		return "redis " + RedactURL(st.RedisURL)
	}
	return "bolt " + st.DataPath
}
