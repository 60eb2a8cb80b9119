package gh

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/countersign/countersign/app/fault"
	"github.com/countersign/countersign/app/metrics"
	"github.com/countersign/countersign/app/pace"
	"github.com/prometheus/client_golang/prometheus"
)

// Writes are paced per installation under GitHub's secondary limits (DESIGN
// §9): every content-generating request (POST, PATCH, PUT, DELETE) of an
// installation's REST client first takes a turn from the installation's
// pace.Bucket, in order. A write waits for its turn inside the delivery (a
// worker is held) when the turn is near; when it is further than
// paceMaxBlock ahead (the hourly cap is reached, or a long queue), the
// delivery stops with a WaitError: its key waits that long and tries again,
// using no attempt, and the worker is free for other installations.
// The installation-token request and GraphQL queries are not paced (neither
// generates content); a write that the retry transport below replays (after
// a 5xx or a rate limit) takes a turn again (retryTurn).

// paceBlockDivisor sets how long a write may wait for its turn inside a
// delivery: the bucket's minute divided by it (1 s). Longer, and one
// installation's burst would hold every worker while other installations,
// with their own budgets untouched, wait behind it.
const paceBlockDivisor = 60

// paceTransport paces one installation's writes.
type paceTransport struct {
	next http.RoundTripper
	// bucket is the installation's pacing; bucketOf, when set, looks it up
	// for each write instead (an idle bucket may have been dropped and made
	// again since the client was made).
	bucket   *pace.Bucket
	bucketOf func() *pace.Bucket
	maxBlock time.Duration
	m        *metrics.Metrics
}

// current is the installation's bucket now.
func (t *paceTransport) current() *pace.Bucket {
	if t.bucketOf != nil {
		return t.bucketOf()
	}
	return t.bucket
}

func isContentWrite(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPatch, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

func (t *paceTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !isContentWrite(req.Method) {
		return t.next.RoundTrip(req)
	}
	waited, err := t.turn(req.Context(), t.maxBlock)
	if err != nil {
		if req.Body != nil {
			req.Body.Close() // a RoundTripper closes the body, even on error
		}
		return nil, err
	}
	t.m.WriteWait.Observe(waited.Seconds())
	// The retry transport below takes another turn for each write it replays.
	paced := pacedWrite{t: t, method: req.Method, url: req.URL.String()}
	return t.next.RoundTrip(req.WithContext(context.WithValue(req.Context(), bucketKey{}, paced)))
}

// turn waits for a write's turn: the next one of the group's ticket that ctx
// carries (see package process), else one of ctx's class, if it comes within
// maxWait; a turn further away is a waitError.
func (t *paceTransport) turn(ctx context.Context, maxWait time.Duration) (time.Duration, error) {
	var waited time.Duration
	var err error
	b := t.current()
	if tk := pace.TicketOf(ctx); tk != nil && tk.Bucket() == b && tk.Left() > 0 {
		waited, err = tk.Wait(ctx, maxWait)
	} else {
		waited, err = b.Wait(ctx, pace.ClassOf(ctx), maxWait)
	}
	var tl *pace.TooLongError
	if errors.As(err, &tl) {
		t.m.WritesDeferred.Inc()
		return 0, fault.WaitError{Wait: tl.Wait, Why: tl.Error()}
	}
	return waited, err
}

// bucketKey carries a pacedWrite to the retry transport.
type bucketKey struct{}

// pacedWrite is a write the pacing let through: the request that may be
// replayed (not another made under its context, such as a token request).
type pacedWrite struct {
	t           *paceTransport
	method, url string
}

// retryTurn takes a turn for the replay of a write that req's pacing let
// through (nothing to do for an unpaced request), waiting at most maxWait.
func retryTurn(req *http.Request, maxWait time.Duration) error {
	w, ok := req.Context().Value(bucketKey{}).(pacedWrite)
	if !ok || w.method != req.Method || w.url != req.URL.String() {
		return nil
	}
	waited, err := w.t.turn(req.Context(), min(maxWait, w.t.maxBlock))
	if err == nil {
		w.t.m.WriteWait.Observe(waited.Seconds())
	}
	return err
}

// PaceWrites paces every installation's writes under l (see paceTransport).
// Call it before the first Installation client is made; without it writes
// are not paced.
func (g *GitHub) PaceWrites(l pace.Limits) error {
	if _, err := pace.New(l, nil); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pace = &l
	return nil
}

// paced wraps rt in installation id's pacing, when writes are paced. Call
// with g.mu held.
func (g *GitHub) paced(id int64, rt http.RoundTripper) http.RoundTripper {
	b := g.bucketLocked(id)
	if b == nil {
		return rt
	}
	return &paceTransport{next: rt, bucketOf: func() *pace.Bucket { return g.Bucket(id) }, maxBlock: b.Limits().Minute / paceBlockDivisor, m: g.m}
}

// Bucket is installation id's write pacing (nil: writes are not paced).
func (g *GitHub) Bucket(id int64) *pace.Bucket {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.bucketLocked(id)
}

func (g *GitHub) bucketLocked(id int64) *pace.Bucket {
	if g.pace == nil {
		return nil
	}
	now := g.clock.Now()
	e, ok := g.buckets[id]
	if !ok {
		g.sweepLocked(now)
		b, _ := pace.New(*g.pace, g.clock) // the limits were checked by PaceWrites
		e = &bucketEntry{b: b}
		if g.buckets == nil {
			g.buckets = map[int64]*bucketEntry{}
		}
		g.buckets[id] = e
	}
	e.used = now
	return e.b
}

// bucketCollector exports each installation's write tokens (by class) and
// the pacing's headroom at scrape time.
type bucketCollector struct {
	g        *GitHub
	desc     *prometheus.Desc // tokens: installation, class
	headroom *prometheus.Desc
}

func newBucketCollector(g *GitHub) bucketCollector {
	return bucketCollector{g: g,
		desc: prometheus.NewDesc("countersign_github_write_tokens",
			"Writes an installation could send at once now, by class (interactive: answering a person; background: the rest); the 20 installations with the fewest background tokens only.",
			[]string{"installation", "class"}, nil),
		headroom: prometheus.NewDesc("countersign_github_write_headroom_ratio",
			"Share of each hour's paced writes that background work leaves free for interactive writes (COUNTERSIGN_WRITE_HEADROOM).",
			nil, nil)}
}

func (c bucketCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc; ch <- c.headroom }

func (c bucketCollector) Collect(ch chan<- prometheus.Metric) {
	c.g.mu.Lock()
	buckets := make(map[int64]*pace.Bucket, len(c.g.buckets))
	for id, e := range c.g.buckets {
		buckets[id] = e.b
	}
	var headroom float64
	if c.g.pace != nil {
		headroom = c.g.pace.Headroom
	}
	c.g.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(c.headroom, prometheus.GaugeValue, headroom)
	// The installations with the fewest tokens only (rateShown of them): a
	// thousand installations make no more series than twenty.
	type tokens struct {
		id                      int64
		interactive, background int
	}
	all := make([]tokens, 0, len(buckets))
	for id, b := range buckets {
		all = append(all, tokens{id, b.Tokens(pace.Interactive), b.Tokens(pace.Background)})
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].background != all[j].background {
			return all[i].background < all[j].background
		}
		return all[i].id < all[j].id
	})
	for _, t := range all[:min(len(all), rateShown)] {
		id := strconv.FormatInt(t.id, 10)
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(t.interactive), id, pace.Interactive.String())
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(t.background), id, pace.Background.String())
	}
}
