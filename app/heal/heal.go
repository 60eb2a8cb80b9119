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
	// MaxTries is how often one missed delivery is redelivered at most: a
	// redelivery that fails too (the bot was not reachable yet) is tried again,
	// after 1, 2, 4 and 8 minutes.
	MaxTries = 5
	// overlap is how far below the cursor (in delivery time) a walk reads
	// again: GitHub logs concurrent deliveries in no strict order, so an entry
	// logged late may carry an id below one already read.
	overlap = 2 * time.Minute
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
	// Now is the clock (nil: time.Now), for tests.
	Now func() time.Time
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
	Refused     prometheus.Counter // redeliveries GitHub refused for good
	Passes      *prometheus.CounterVec
}

// NewMetrics registers healing's metrics with reg; lastHeal reports the time
// of the last successful pass, or when the process started if there was none
// (zero: healing is off).
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
		Refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "countersign_heal_refused_total",
			Help: "Missed deliveries GitHub refused to redeliver (gone, or not redeliverable): given up.",
		}),
		Passes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "countersign_heal_passes_total",
			Help: "Heal passes, by outcome (ok, error).",
		}, []string{"outcome"}),
	}
	since := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "countersign_heal_last_success_age_seconds",
		Help: "Seconds since the last successful heal pass (by any replica); before the first, since the process started; -1 while healing is off.",
	}, func() float64 {
		t := lastHeal()
		if t.IsZero() {
			return -1
		}
		return time.Since(t).Seconds()
	})
	reg.MustRegister(m.Redelivered, m.Missed, m.Refused, m.Passes, since)
	m.Passes.WithLabelValues("ok")
	m.Passes.WithLabelValues("error") // from the start: an alert sees the first failure
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
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Healer{store: st, api: api, log: log, cfg: cfg, m: m, now: now}
}

// state is what healing remembers between passes.
type state struct {
	// Cursor: every log entry with an id up to it has been looked at.
	Cursor int64 `json:"cursor"`
	// Resume continues a walk a pass cut short (GitHub's page cursor), down
	// to Cursor; ResumeTop is the newest id of that walk.
	Resume      string    `json:"resume,omitempty"`
	ResumeTop   int64     `json:"resume_top,omitempty"`
	ResumeTopAt time.Time `json:"resume_top_at,omitzero"`
	// Pending are failed deliveries found and not yet redelivered (the
	// pass's budget ran out): guid -> the log entry to redeliver.
	Pending map[string]pending `json:"pending,omitempty"`
	// Redelivered: guid -> when GitHub was last asked to redeliver it.
	Redelivered map[string]time.Time `json:"redelivered"`
	// Tries: guid -> how often it was redelivered (missing: once).
	Tries map[string]int `json:"tries,omitempty"`
	// CursorAt is when the entry at Cursor was delivered.
	CursorAt time.Time `json:"cursor_at,omitzero"`
}

// backoff is how long after its try-th redelivery a delivery whose
// redelivery failed waits before the next.
func backoff(try int) time.Duration { return time.Minute << min(try-1, 10) }

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
		if at, again := st.Redelivered[guid]; again && now.Before(at.Add(backoff(st.tries(guid)))) {
			continue // its last redelivery failed too: wait a little longer
		}
		_, resp, err := h.api.RedeliverHookDelivery(ctx, p.ID)
		res.Requests++
		var accepted *github.AcceptedError
		if err != nil && !errors.As(err, &accepted) && !(resp != nil && resp.StatusCode == http.StatusAccepted) {
			if refused(resp) {
				// GitHub will never redeliver this one (gone, or refused as
				// such): the others must not wait behind it.
				delete(st.Pending, guid)
				h.m.Refused.Inc()
				h.log.Warn("missed delivery not redelivered: GitHub refused", "delivery", guid, "event", p.Event,
					"log_id", p.ID, "status", resp.StatusCode, "error", err)
				continue
			}
			if serr := h.save(ctx, st); serr != nil {
				err = errors.Join(err, serr)
			}
			return res, fmt.Errorf("redeliver %s (%s): %w", guid, p.Event, err)
		}
		delete(st.Pending, guid)
		if _, again := st.Redelivered[guid]; again {
			if st.Tries == nil {
				st.Tries = map[string]int{}
			}
			st.Tries[guid] = st.tries(guid) + 1
		}
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
			delete(st.Tries, guid)
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
			below := d.GetID() <= st.Cursor
			if below && (st.CursorAt.IsZero() || d.GetDeliveredAt().Time.Before(st.CursorAt.Add(-overlap))) ||
				(d.DeliveredAt != nil && d.DeliveredAt.Before(oldest)) {
				done = true
				break
			}
			if below {
				entries = append(entries, d) // read again: logged late, maybe
				continue
			}
			if top == 0 {
				top, st.ResumeTopAt = d.GetID(), d.GetDeliveredAt().Time
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
		if at, done := st.Redelivered[guid]; done {
			// Redelivered, and this attempt (ours, made since) failed as
			// well: try again later, a few times.
			// (The log's times have whole seconds.)
			if !d.GetRedelivery() || d.GetDeliveredAt().Time.Before(at.Truncate(time.Second)) || st.tries(guid) >= MaxTries {
				continue
			}
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
	if top > st.Cursor {
		st.Cursor, st.CursorAt = top, st.ResumeTopAt
	}
	st.Resume, st.ResumeTop, st.ResumeTopAt = "", 0, time.Time{}
	res.Complete = true
	return nil
}

// tries is how often guid was redelivered.
func (st *state) tries(guid string) int {
	if n := st.Tries[guid]; n > 0 {
		return n
	}
	return 1
}

// refused reports whether GitHub answered a redelivery request in a way that
// asking again will not change (the delivery is gone or not redeliverable);
// rate limits and server errors are GitHub being away, not refusals.
func refused(resp *github.Response) bool {
	if resp == nil {
		return false
	}
	switch c := resp.StatusCode; {
	case c == http.StatusTooManyRequests, c == http.StatusForbidden && resp.Header.Get("Retry-After") != "",
		c == http.StatusForbidden && resp.Header.Get("X-RateLimit-Remaining") == "0":
		return false
	case c >= 400 && c < 500:
		return true
	}
	return false
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
