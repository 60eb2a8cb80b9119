// Package intake is countersign's HTTP side: POST /webhook, which answers 202
// only once a delivery is durably queued, and the routes /healthz, /readyz and
// /metrics.
package intake

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/countersign/countersign/app/metrics"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/app/worker"
	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Queue is what intake needs of the store: queueing a delivery, and
// answering a readiness probe.
type Queue interface {
	Accept(ctx context.Context, d store.Delivery) (bool, error)
	Ping(ctx context.Context) error
}

// Notifier is told that a delivery was queued (the worker pool).
type Notifier interface {
	Notify()
}

// Config is what intake reads of the settings.
type Config struct {
	// WebhookSecret authenticates deliveries; it must not be empty.
	WebhookSecret []byte
	// BodyTimeout bounds how long a delivery's body may take to arrive (0:
	// DefaultBodyTimeout).
	BodyTimeout time.Duration
}

// Intake serves the HTTP routes.
type Intake struct {
	cfg      Config
	queue    Queue
	notify   Notifier
	metrics  *metrics.Metrics
	log      *slog.Logger
	router   *mux.Router
	stopping atomic.Bool
	// readyErrors rate-limits the log of failed readiness probes,
	// queueErrors that of deliveries the store could not queue.
	readyErrors, queueErrors *worker.LogLimiter
	// self and records recognise echoes (echo.go); nil: every delivery is
	// queued.
	self    Self
	records Records
	// ready are more conditions of readiness (the webhook proxy's stream).
	ready []func() error
}

// New builds the routes over the queue; notify is told of each delivery queued.
func New(cfg Config, q Queue, notify Notifier, m *metrics.Metrics, log *slog.Logger) *Intake {
	in := &Intake{cfg: cfg, queue: q, notify: notify, metrics: m, log: log, readyErrors: worker.NewLogLimiter(10 * time.Second), queueErrors: worker.NewLogLimiter(10 * time.Second)}
	r := mux.NewRouter()
	r.HandleFunc("/webhook", in.serveWebhook).Methods(http.MethodPost)
	r.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	}).Methods(http.MethodGet)
	r.HandleFunc("/readyz", in.serveReady).Methods(http.MethodGet)
	r.Handle("/metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{})).Methods(http.MethodGet)
	in.router = r
	return in
}

// Handler is the HTTP handler of all routes.
func (in *Intake) Handler() http.Handler { return in.router }

// Stopping marks the process as shutting down: /readyz answers 503 from now on.
func (in *Intake) Stopping() { in.stopping.Store(true) }

// AddReady adds a condition of readiness: /readyz answers 503 with its error
// while it returns one. Call it before serving.
func (in *Intake) AddReady(check func() error) { in.ready = append(in.ready, check) }

// serveReady is GET /readyz: 200 while the store answers and the server is not
// shutting down, so a load balancer sends deliveries only where they can be queued.
func (in *Intake) serveReady(w http.ResponseWriter, r *http.Request) {
	if in.stopping.Load() {
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := in.queue.Ping(ctx); err != nil {
		if ok, suppressed := in.readyErrors.Allow(); ok {
			in.log.Warn("not ready: store unreachable", "error", err, "suppressed", suppressed)
		}
		http.Error(w, "store unreachable", http.StatusServiceUnavailable)
		return
	}
	for _, check := range in.ready {
		if err := check(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
	}
	fmt.Fprintln(w, "ready")
}
