// Package ghhealth knows, per installation, whether GitHub is away, and finds
// out when it is back with one probe instead of a storm of requests.
//
// When a request for an installation (its scope) finds GitHub away
// (unreachable, answering 5xx, or rate limiting, the installation-token
// request included), the scope is marked away. While it is away its requests
// fail fast with an *AwayError without being sent, and one prober per away
// scope asks GitHub, with backoff (or after the wait GitHub asked for:
// Retry-After, X-RateLimit-Reset), whether it is back. When it is, the keys
// that parked on the scope (work waiting for GitHub) are woken in the order
// they started waiting.
package ghhealth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/countersign/countersign/app/clock"
)

// Scope is what GitHub can be away for: one installation (its id), or App,
// the App's own requests (its JWT).
type Scope int64

// App is the scope of the App's own requests (installation ids are positive).
const App Scope = 0

func (s Scope) String() string {
	if s == App {
		return "app"
	}
	return strconv.FormatInt(int64(s), 10)
}

// AwayError is a request not sent because GitHub is away for its scope.
type AwayError struct {
	Scope Scope
	Since time.Time
	Cause string // what found it away
}

func (e *AwayError) Error() string {
	return fmt.Sprintf("GitHub is away for installation %s since %s (%s); not sent, waiting for the probe",
		e.Scope, e.Since.UTC().Format(time.RFC3339), e.Cause)
}

// IsAway reports whether err is (or wraps) an *AwayError.
func IsAway(err error) bool {
	var a *AwayError
	return errors.As(err, &a)
}

// Config configures a Health.
type Config struct {
	// Probe asks GitHub once whether it is back for scope (for an
	// installation, GET /rate_limit with its token; for App, GET /app). A nil
	// error means back; an error that Waiting classifies as a wait means
	// still away (with GitHub's hint, if any); any other error means GitHub
	// answered, so it is back.
	Probe func(ctx context.Context, s Scope) error
	// Waiting classifies a probe's error.
	Waiting func(err error, now time.Time) (hint time.Duration, away bool)
	// Wake makes the parked keys claimable now, in order.
	Wake func(ctx context.Context, keys ...string) error
	// MinBackoff and MaxBackoff bound the wait between two probes without a
	// hint (defaults 1 s and 4 s: GitHub back is noticed within 4 s).
	MinBackoff, MaxBackoff time.Duration
	// ProbeTimeout bounds one probe (default 10 s).
	ProbeTimeout time.Duration
	Clock        clock.Clock
	Log          *slog.Logger
}

// Health is the away state of every scope. Its methods are safe for
// concurrent use.
type Health struct {
	cfg    Config
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	scopes map[Scope]*scope
	probes int
}

// scope is one away scope's state.
type scope struct {
	since     time.Time
	cause     string
	notBefore time.Time // GitHub asked not to be asked again before
	nextProbe time.Time
	parked    []string // keys waiting, in the order they started
	isParked  map[string]bool
}

// New returns a Health; Close stops its probers.
func New(cfg Config) *Health {
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = time.Second
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = max(4*time.Second, cfg.MinBackoff)
	}
	if cfg.ProbeTimeout <= 0 {
		cfg.ProbeTimeout = 10 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Health{cfg: cfg, ctx: ctx, cancel: cancel, scopes: map[Scope]*scope{}}
}

// Close stops the probers and waits for them.
func (h *Health) Close() {
	h.cancel()
	h.wg.Wait()
}

// Gate returns an *AwayError while GitHub is away for s, else nil.
func (h *Health) Gate(s Scope) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if st, ok := h.scopes[s]; ok {
		return &AwayError{Scope: s, Since: st.since, Cause: st.cause}
	}
	return nil
}

// Away reports whether GitHub is away for s.
func (h *Health) Away(s Scope) bool { return h.Gate(s) != nil }

// MarkAway records that a request for s found GitHub away (cause says how),
// GitHub having asked to wait hint (0: no hint). The first time, a prober
// starts: its first probe comes after hint, or after MinBackoff.
func (h *Health) MarkAway(s Scope, hint time.Duration, cause string) {
	now := h.cfg.Clock.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	if st, ok := h.scopes[s]; ok {
		if nb := now.Add(hint); hint > 0 && nb.After(st.notBefore) {
			st.notBefore = nb
		}
		return
	}
	if h.ctx.Err() != nil {
		return // closed: nothing would probe
	}
	first := max(hint, h.cfg.MinBackoff)
	st := &scope{since: now, cause: cause, notBefore: now.Add(hint), nextProbe: now.Add(first), isParked: map[string]bool{}}
	h.scopes[s] = st
	h.cfg.Log.Warn("GitHub is away; requests wait for the probe", "installation", s.String(), "cause", cause, "retry_in", first)
	h.wg.Add(1)
	go h.probe(s, first)
}

// Park makes key wait for s to be back: its claim was just put off (Nack)
// because GitHub was away for s. If s is back already, key is woken now.
func (h *Health) Park(ctx context.Context, s Scope, key string) error {
	h.mu.Lock()
	if st, ok := h.scopes[s]; ok {
		if !st.isParked[key] {
			st.isParked[key] = true
			st.parked = append(st.parked, key)
		}
		h.mu.Unlock()
		return nil
	}
	h.mu.Unlock()
	return h.cfg.Wake(ctx, key)
}

// probe runs while s is away: it probes with backoff until GitHub is back,
// then wakes the keys parked on s.
func (h *Health) probe(s Scope, delay time.Duration) {
	defer h.wg.Done()
	backoff := h.cfg.MinBackoff
	log := h.cfg.Log.With("installation", s.String())
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-h.cfg.Clock.After(delay):
		}
		now := h.cfg.Clock.Now()
		h.mu.Lock()
		nb := h.scopes[s].notBefore
		h.mu.Unlock()
		if now.Before(nb) { // GitHub asked for longer meanwhile
			delay = nb.Sub(now)
			h.setNext(s, nb)
			continue
		}
		ctx, cancel := context.WithTimeout(WithProbe(h.ctx), h.cfg.ProbeTimeout)
		err := h.cfg.Probe(ctx, s)
		cancel()
		h.mu.Lock()
		h.probes++
		h.mu.Unlock()
		if h.ctx.Err() != nil {
			return
		}
		if err != nil {
			if hint, away := h.cfg.Waiting(err, h.cfg.Clock.Now()); away {
				delay = backoff
				if hint > 0 {
					delay = hint
				}
				backoff = min(2*backoff, h.cfg.MaxBackoff)
				h.setNext(s, h.cfg.Clock.Now().Add(delay))
				log.Debug("GitHub still away", "error", err, "retry_in", delay)
				continue
			}
		}
		h.back(s, log, err)
		return
	}
}

func (h *Health) setNext(s Scope, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if st, ok := h.scopes[s]; ok {
		st.nextProbe = at
	}
}

// back marks s back and wakes its parked keys, in turn, trying again while
// the store cannot be reached.
func (h *Health) back(s Scope, log *slog.Logger, probeErr error) {
	h.mu.Lock()
	st := h.scopes[s]
	delete(h.scopes, s)
	h.mu.Unlock()
	awayFor := h.cfg.Clock.Now().Sub(st.since)
	if probeErr != nil {
		log.Info("GitHub is back (the probe was answered)", "answer", probeErr.Error(), "away_for", awayFor, "waking", len(st.parked))
	} else {
		log.Info("GitHub is back", "away_for", awayFor, "waking", len(st.parked))
	}
	if len(st.parked) == 0 {
		return
	}
	delay := h.cfg.MinBackoff
	for {
		err := h.cfg.Wake(h.ctx, st.parked...)
		if err == nil || h.ctx.Err() != nil {
			return
		}
		log.Error("store error: could not wake the keys waiting for GitHub; trying again", "error", err, "keys", len(st.parked), "retry_in", delay)
		select {
		case <-h.ctx.Done():
			return
		case <-h.cfg.Clock.After(delay):
		}
		delay = min(2*delay, h.cfg.MaxBackoff)
	}
}

// ScopeState is one away scope, for metrics.
type ScopeState struct {
	Scope     Scope
	Since     time.Time
	Parked    int       // keys waiting for it
	NextProbe time.Time // when it is probed next
}

// State lists the scopes GitHub is away for, by scope.
func (h *Health) State() []ScopeState {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]ScopeState, 0, len(h.scopes))
	for s, st := range h.scopes {
		out = append(out, ScopeState{Scope: s, Since: st.since, Parked: len(st.parked), NextProbe: st.nextProbe})
	}
	slices.SortFunc(out, func(a, b ScopeState) int { return int(a.Scope - b.Scope) })
	return out
}

// Probes is how many probes were sent so far.
func (h *Health) Probes() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.probes
}
