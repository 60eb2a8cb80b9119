// Package heal catches up on webhook deliveries GitHub could not make.
//
// GitHub never retries a failed delivery: while countersign is down, answers
// 5xx, or a delivery is lost on the way, the event is only in the App's
// webhook delivery log. A heal pass reads that log (GET /app/hook/deliveries,
// with the App's JWT, newest first) back to where the last pass stopped, and
// asks GitHub once to redeliver (POST /app/hook/deliveries/{id}/attempts) each
// delivery that failed and has not succeeded since — neither in the log nor in
// the store's de-duplication (a delivery the bot took in but GitHub counted as
// failed, say on a timeout). Where it stopped and what it redelivered are kept
// in the store, so a restart neither redelivers twice nor misses a delivery.
// The redelivered webhook comes back with its original X-GitHub-Delivery, so
// it is processed exactly like the original would have been.
package heal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"time"

	"github.com/countersign/countersign/app/store"
	"github.com/google/go-github/v60/github"
	"github.com/prometheus/client_golang/prometheus"
)

// Defaults.
const (
	// GitHubKeeps is how long GitHub keeps the delivery log.
	GitHubKeeps = 72 * time.Hour
	// DefaultMaxRequests bounds the requests (pages and redeliveries) of one pass.
	DefaultMaxRequests = 500
	// budgetShare is the share of the App's remaining rate limit a pass may spend.
	budgetShare = 10 // 1/10
	perPage     = 100
)

// Store keys.
const (
	stateKey = "heal/state"
	lastKey  = "heal/last"
)

// API is the part of GitHub's REST API healing uses (go-github's AppsService,
// authenticated as the App).
type API interface {
	ListHookDeliveries(ctx context.Context, opts *github.ListCursorOptions) ([]*github.HookDelivery, *github.Response, error)
	RedeliverHookDelivery(ctx context.Context, deliveryID int64) (*github.HookDelivery, *github.Response, error)
}

// Config configures a Healer.
type Config struct {
	// Horizon is how far back a pass looks (at most GitHubKeeps; 0: GitHubKeeps).
	Horizon time.Duration
	// MaxRequests bounds one pass's requests (0: DefaultMaxRequests); a pass
	// also spends at most a tenth of the App's remaining rate limit.
	MaxRequests int
	// Lease is checked before every redelivery: false stops the pass (another
	// replica took over). Nil: always held.
	Lease func(context.Context) bool
}

// Healer runs heal passes.
type Healer struct {
	store store.Store
	api   API
	log   *slog.Logger
	cfg   Config
	m     *Metrics
	now   func() time.Time
}

// Metrics are healing's Prometheus metrics.
type Metrics struct {
	Redelivered prometheus.Counter
	Missed      prometheus.Counter
	Passes      *prometheus.CounterVec
}

// NewMetrics registers healing's metrics with reg; lastHeal reports the time
// of the last successful pass (zero: none yet).
func NewMetrics(reg prometheus.Registerer, lastHeal func() time.Time) *Metrics {
	m := &Metrics{
		Redelivered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "countersign_heal_redelivered_total",
			Help: "Failed webhook deliveries GitHub was asked to redeliver.",
		}),
		Missed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "countersign_heal_missed_total",
			Help: "Failed webhook deliveries found in the App's delivery log that countersign never took in.",
		}),
		Passes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "countersign_heal_passes_total",
			Help: "Heal passes, by outcome (ok, error).",
		}, []string{"outcome"}),
	}
	since := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "countersign_heal_last_success_age_seconds",
		Help: "Seconds since the last successful heal pass (by any replica); -1 before the first.",
	}, func() float64 {
		t := lastHeal()
		if t.IsZero() {
			return -1
		}
		return time.Since(t).Seconds()
	})
	reg.MustRegister(m.Redelivered, m.Missed, m.Passes, since)
	return m
}

// New returns a Healer.
func New(st store.Store, api API, log *slog.Logger, m *Metrics, cfg Config) *Healer {
	if cfg.Horizon <= 0 || cfg.Horizon > GitHubKeeps {
		cfg.Horizon = GitHubKeeps
	}
	if cfg.MaxRequests <= 0 {
		cfg.MaxRequests = DefaultMaxRequests
	}
	return &Healer{store: st, api: api, log: log, cfg: cfg, m: m, now: time.Now}
}

// state is what healing remembers between passes.
type state struct {
	// Cursor: every log entry with an id up to it has been looked at.
	Cursor int64 `json:"cursor"`
	// Resume continues a walk a pass cut short (GitHub's page cursor), down
	// to Cursor; ResumeTop is the newest id of that walk.
	Resume    string `json:"resume,omitempty"`
	ResumeTop int64  `json:"resume_top,omitempty"`
	// Pending are failed deliveries found and not yet redelivered (the
	// pass's budget ran out): guid -> the log entry to redeliver.
	Pending map[string]pending `json:"pending,omitempty"`
	// Redelivered: guid -> when GitHub was asked to redeliver it (once).
	Redelivered map[string]time.Time `json:"redelivered"`
}

type pending struct {
	ID     int64     `json:"id"`
	Event  string    `json:"event"`
	Action string    `json:"action,omitempty"`
	Status string    `json:"status"`
	At     time.Time `json:"at"`
}

// Result is what one pass did.
type Result struct {
	Requests    int // GitHub requests made
	Scanned     int // log entries read
	Missed      int // failed deliveries found that were never taken in
	Redelivered int
	Pending     int  // missed deliveries left for the next pass (budget)
	Complete    bool // the walk reached where the last one stopped
}

// LastSuccess is when a pass last succeeded (zero: never).
func LastSuccess(ctx context.Context, st store.Store) time.Time {
	b, err := st.Get(ctx, lastKey)
	if err != nil {
		return time.Time{}
	}
	var t time.Time
	if t.UnmarshalText(b) != nil {
		return time.Time{}
	}
	return t
}

// Pass reads the delivery log back to where the last pass stopped and asks
// GitHub to redeliver what failed. Run it on one replica at a time.
func (h *Healer) Pass(ctx context.Context) (Result, error) {
	res, err := h.pass(ctx)
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	h.m.Passes.WithLabelValues(outcome).Inc()
	return res, err
}

func (h *Healer) pass(ctx context.Context) (Result, error) {
	var res Result
	st, err := h.load(ctx)
	if err != nil {
		return res, err
	}
	now := h.now()
	oldest := now.Add(-h.cfg.Horizon)
	budget := h.cfg.MaxRequests
	if err := h.walk(ctx, st, oldest, &budget, &res); err != nil {
		return res, err
	}
	// Redeliver, oldest first, within the budget.
	order := make([]string, 0, len(st.Pending))
	for guid, p := range st.Pending {
		if p.At.Before(oldest) { // GitHub no longer has it
			delete(st.Pending, guid)
			continue
		}
		order = append(order, guid)
	}
	sort.Slice(order, func(i, j int) bool { return st.Pending[order[i]].ID < st.Pending[order[j]].ID })
	for i, guid := range order {
		if res.Requests >= budget || (h.cfg.Lease != nil && !h.cfg.Lease(ctx)) {
			break
		}
		p := st.Pending[guid]
		_, resp, err := h.api.RedeliverHookDelivery(ctx, p.ID)
		res.Requests++
		var accepted *github.AcceptedError
		if err != nil && !errors.As(err, &accepted) && !(resp != nil && resp.StatusCode == http.StatusAccepted) {
			if serr := h.save(ctx, st); serr != nil {
				err = errors.Join(err, serr)
			}
			return res, fmt.Errorf("redeliver %s (%s): %w", guid, p.Event, err)
		}
		delete(st.Pending, guid)
		st.Redelivered[guid] = now
		res.Redelivered++
		h.m.Redelivered.Inc()
		h.log.Info("missed delivery redelivered", "delivery", guid, "event", p.Event, "action", p.Action,
			"log_id", p.ID, "failed_with", p.Status)
		if i%20 == 19 { // a crash repeats at most a few requests (intake drops the duplicates)
			if err := h.save(ctx, st); err != nil {
				return res, err
			}
		}
	}
	res.Pending = len(st.Pending)
	for guid, at := range st.Redelivered {
		if now.Sub(at) > GitHubKeeps+24*time.Hour {
			delete(st.Redelivered, guid)
		}
	}
	if err := h.save(ctx, st); err != nil {
		return res, err
	}
	if b, err := now.UTC().MarshalText(); err == nil {
		if err := h.store.Put(ctx, lastKey, b); err != nil {
			return res, fmt.Errorf("record the heal pass: %w", err)
		}
	}
	return res, nil
}

// walk reads the log newest first down to the cursor (or the horizon), with
// at most half the budget (at least a page), and notes the deliveries that
// failed and have not succeeded since as pending. A walk cut short resumes
// in the next pass.
func (h *Healer) walk(ctx context.Context, st *state, oldest time.Time, budget *int, res *Result) error {
	var entries []*github.HookDelivery
	opt := &github.ListCursorOptions{PerPage: perPage, Cursor: st.Resume}
	top := st.ResumeTop
	cut := ""
	for {
		if res.Requests > 0 && res.Requests >= *budget/2 {
			cut = opt.Cursor
			break
		}
		page, resp, err := h.api.ListHookDeliveries(ctx, opt)
		res.Requests++
		if err != nil {
			return fmt.Errorf("list webhook deliveries: %w", err)
		}
		if res.Requests == 1 && resp != nil && resp.Rate.Limit > 0 {
			*budget = min(*budget, max(resp.Rate.Remaining/budgetShare, 2))
		}
		done := false
		for _, d := range page {
			if d.GetID() <= st.Cursor || (d.DeliveredAt != nil && d.DeliveredAt.Before(oldest)) {
				done = true
				break
			}
			if top == 0 {
				top = d.GetID()
			}
			entries = append(entries, d)
		}
		if done || resp == nil || resp.Cursor == "" || len(page) == 0 {
			break
		}
		opt.Cursor = resp.Cursor
	}
	res.Scanned = len(entries)

	// Oldest first: a success after a failure cancels it.
	sort.Slice(entries, func(i, j int) bool { return entries[i].GetID() < entries[j].GetID() })
	for _, d := range entries {
		guid := d.GetGUID()
		if guid == "" {
			continue
		}
		if succeeded(d) {
			delete(st.Pending, guid)
			continue
		}
		if _, done := st.Redelivered[guid]; done {
			continue
		}
		if _, known := st.Pending[guid]; known {
			continue
		}
		seen, err := h.store.Seen(ctx, guid)
		if err != nil {
			return fmt.Errorf("heal: %w", err)
		}
		if seen { // the bot took it in; GitHub just did not hear back in time
			continue
		}
		res.Missed++
		h.m.Missed.Inc()
		if st.Pending == nil {
			st.Pending = map[string]pending{}
		}
		st.Pending[guid] = pending{ID: d.GetID(), Event: d.GetEvent(), Action: d.GetAction(), Status: d.GetStatus(), At: d.GetDeliveredAt().Time}
	}
	if cut != "" {
		st.Resume, st.ResumeTop = cut, top
		return nil
	}
	st.Cursor, st.Resume, st.ResumeTop = max(st.Cursor, top), "", 0
	res.Complete = true
	return nil
}

// succeeded reports whether the receiver answered the attempt with a 2xx.
func succeeded(d *github.HookDelivery) bool {
	return d.GetStatusCode() >= 200 && d.GetStatusCode() < 300
}

func (h *Healer) load(ctx context.Context) (*state, error) {
	st := &state{}
	b, err := h.store.Get(ctx, stateKey)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return nil, fmt.Errorf("read heal state: %w", err)
	default:
		if err := json.Unmarshal(b, st); err != nil {
			h.log.Warn("heal state unreadable; starting over from the horizon", "error", err)
			st = &state{}
		}
	}
	if st.Redelivered == nil {
		st.Redelivered = map[string]time.Time{}
	}
	return st, nil
}

func (h *Healer) save(ctx context.Context, st *state) error {
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encode heal state: %w", err)
	}
	if err := h.store.Put(ctx, stateKey, b); err != nil {
		return fmt.Errorf("write heal state: %w", err)
	}
	return nil
}
