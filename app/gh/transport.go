package gh

import (
	"bytes"
	"container/list"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/countersign/countersign/app/metrics"
	"github.com/prometheus/client_golang/prometheus"
)

// metricsTransport counts GitHub API calls by method and status code.
type metricsTransport struct {
	next http.RoundTripper
	m    *metrics.Metrics
}

func (t *metricsTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	code := "0"
	if resp != nil {
		code = strconv.Itoa(resp.StatusCode)
	}
	t.m.APICalls.WithLabelValues(req.Method, code).Inc()
	return resp, err
}

// rateTransport keeps one installation's (or the App's) latest rate-limit
// figure. It sits above the token transport, so it knows whose limit it is.
type rateTransport struct {
	next http.RoundTripper
	// series and label name the gauge, which is made at the first answer
	// that carries the header: before GitHub has answered there is no
	// series (a gauge made at start-up would read 0, "no requests left").
	series *rateSeries
	label  string
}

func (t *rateTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if resp != nil {
		if v, err := strconv.Atoi(resp.Header.Get("X-RateLimit-Remaining")); err == nil {
			t.series.set(t.label, float64(v))
		}
	}
	return resp, err
}

// rateShown is how many installations the rate-limit gauge shows: those
// with the fewest requests left (an alert near 0 needs no more), so that a
// thousand installations do not make a thousand series.
const rateShown = 20

// rateValuesMax bounds the installations whose last rate-limit reading is
// kept to choose the rateShown among them.
const rateValuesMax = 4096

// rateSeries keeps the rate-limit gauge's series: "app" (the App's own
// calls) and the rateShown installations with the fewest requests left.
type rateSeries struct {
	vec *prometheus.GaugeVec

	mu     sync.Mutex
	values map[string]float64 // installation -> remaining, as last answered
	shown  map[string]bool
}

func newRateSeries(vec *prometheus.GaugeVec) *rateSeries {
	return &rateSeries{vec: vec, values: map[string]float64{}, shown: map[string]bool{}}
}

func (r *rateSeries) set(label string, v float64) {
	if label == "app" {
		r.vec.WithLabelValues(label).Set(v)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old, known := r.values[label]
	if !known && len(r.values) >= rateValuesMax {
		// Forget a quarter of the readings not shown (any): the next answer
		// to one of those installations reads its rate limit again.
		forget := rateValuesMax / 4
		for l := range r.values {
			if forget == 0 {
				break
			}
			if !r.shown[l] {
				delete(r.values, l)
				forget--
			}
		}
	}
	r.values[label] = v
	switch {
	case r.shown[label] && (!known || v <= old):
		r.vec.WithLabelValues(label).Set(v) // fewer left: still among the lowest
	case r.shown[label]:
		r.reshow() // more left (a new hour): another may have fewer
	case len(r.shown) < rateShown:
		r.shown[label] = true
		r.vec.WithLabelValues(label).Set(v)
	default:
		hi, hiV := r.highestShown()
		if v < hiV {
			delete(r.shown, hi)
			r.vec.DeleteLabelValues(hi)
			r.shown[label] = true
			r.vec.WithLabelValues(label).Set(v)
		}
	}
}

// highestShown is the shown installation with the most left.
func (r *rateSeries) highestShown() (string, float64) {
	hi, hiV := "", -1.0
	for l := range r.shown {
		if v := r.values[l]; v > hiV {
			hi, hiV = l, v
		}
	}
	return hi, hiV
}

// reshow shows the rateShown installations with the fewest left again.
func (r *rateSeries) reshow() {
	labels := make([]string, 0, len(r.values))
	for l := range r.values {
		labels = append(labels, l)
	}
	sort.Slice(labels, func(i, j int) bool {
		if r.values[labels[i]] != r.values[labels[j]] {
			return r.values[labels[i]] < r.values[labels[j]]
		}
		return labels[i] < labels[j]
	})
	if len(labels) > rateShown {
		labels = labels[:rateShown]
	}
	want := map[string]bool{}
	for _, l := range labels {
		want[l] = true
		r.vec.WithLabelValues(l).Set(r.values[l])
	}
	for l := range r.shown {
		if !want[l] {
			r.vec.DeleteLabelValues(l)
		}
	}
	r.shown = want
}

// retryTransport retries GitHub API calls that failed for a passing reason:
// rate limiting (403 with X-RateLimit-Remaining: 0, or 429, or any answer with
// Retry-After), honouring Retry-After and X-RateLimit-Reset; 5xx answers and
// network errors of idempotent requests, with capped exponential backoff and
// full jitter. A POST that got a 5xx is not retried here: GitHub may have done
// it, so the caller's idempotent effect decides (it looks before it writes).
// A write's replay takes another turn from its installation's write pacing
// (retryTurn).
type retryTransport struct {
	next        http.RoundTripper
	m           *metrics.Metrics
	maxAttempts int
	baseDelay   time.Duration
	maxDelay    time.Duration // the longest backoff between two attempts
	maxWait     time.Duration // a longer rate-limit wait is not slept here: the answer goes back up
	now         func() time.Time
	// stop says not to retry a request: GitHub is away for its installation
	// (its probe says when to try again), or it is the probe.
	stop func(*http.Request) bool
}

func newRetryTransport(next http.RoundTripper, m *metrics.Metrics) *retryTransport {
	return &retryTransport{next: next, m: m, maxAttempts: 5, baseDelay: 250 * time.Millisecond,
		maxDelay: 8 * time.Second, maxWait: 60 * time.Second, now: time.Now}
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	for attempt := 1; ; attempt++ {
		r := req
		if attempt > 1 && req.Body != nil && req.Body != http.NoBody {
			if req.GetBody == nil {
				return t.next.RoundTrip(req) // cannot replay the body
			}
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			r = req.Clone(req.Context())
			r.Body = body
		}
		resp, err := t.next.RoundTrip(r)
		wait, reason := t.retryAfter(req, resp, err, attempt)
		if reason == "" || attempt >= t.maxAttempts || wait > t.maxWait || (t.stop != nil && t.stop(req)) {
			return resp, err
		}
		if resp != nil {
			io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
		}
		t.m.APIRetries.WithLabelValues(reason).Inc()
		timer := time.NewTimer(wait)
		select {
		case <-req.Context().Done():
			timer.Stop()
			return nil, req.Context().Err()
		case <-timer.C:
		}
		if err := retryTurn(req, t.maxWait); err != nil { // a paced write's replay is a write too
			return nil, err
		}
	}
}

// retryAfter says whether (and after how long) to retry, and why.
func (t *retryTransport) retryAfter(req *http.Request, resp *http.Response, err error, attempt int) (time.Duration, string) {
	backoff := t.baseDelay << (attempt - 1)
	if backoff > t.maxDelay || backoff <= 0 {
		backoff = t.maxDelay
	}
	backoff = time.Duration(rand.Int64N(int64(backoff)) + 1) // full jitter
	idempotent := req.Method != http.MethodPost

	if err != nil {
		if errors.Is(err, req.Context().Err()) || !idempotent {
			return 0, ""
		}
		return backoff, "network"
	}
	h := resp.Header
	if s := h.Get("Retry-After"); s != "" && (resp.StatusCode == 429 || resp.StatusCode == 403 || (resp.StatusCode >= 500 && idempotent)) {
		if secs, err := strconv.Atoi(s); err == nil && secs >= 0 {
			return time.Duration(secs) * time.Second, "rate_limited"
		}
		if at, err := http.ParseTime(s); err == nil {
			return max(at.Sub(t.now()), 0), "rate_limited"
		}
	}
	if resp.StatusCode == 429 || (resp.StatusCode == 403 && h.Get("X-RateLimit-Remaining") == "0") {
		if reset, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64); err == nil {
			return max(time.Unix(reset, 0).Sub(t.now()), 0) + time.Second, "rate_limited"
		}
		return backoff, "rate_limited"
	}
	if resp.StatusCode >= 500 && idempotent {
		return backoff, "server_error"
	}
	return 0, ""
}

// etagTransport makes GETs conditional: it remembers each URL's ETag and body,
// sends If-None-Match, and answers a 304 (which costs no rate limit) from memory.
// Its entries are kept under its scope (an installation), so cached answers
// never cross permissions; the cache itself is shared by every installation
// and bounded in entries and bytes, so a thousand installations hold no more
// than one does.
type etagTransport struct {
	next  http.RoundTripper
	cache *etagCache
	scope string
}

// etagCache is the least recently used cache of conditional GETs' answers
// shared by the installations' etagTransports: at most max entries and
// maxBytes of bodies and headers.
type etagCache struct {
	max      int
	maxBytes int

	mu    sync.Mutex
	lru   *list.List // of *etagEntry, most recent first
	byURL map[string]*list.Element
	bytes int
}

type etagEntry struct {
	url    string // the scope and the URL
	etag   string
	header http.Header
	body   []byte
	size   int
}

const etagMaxBody = 1 << 20

// The shared cache's bounds: 8,192 answers, at most 8 MiB, overheads
// counted (measured with 1,000 installations, a 64 MiB bound was filled by
// the start-up pass's issue lists alone, a third of the process's memory:
// lists since a moment, never asked again, which are no longer kept; with
// 16 MiB, the cache was two thirds of the live heap).
const (
	etagCacheEntries = 8192
	etagCacheBytes   = 8 << 20
)

func newETagCache(max, maxBytes int) *etagCache {
	return &etagCache{max: max, maxBytes: maxBytes, lru: list.New(), byURL: map[string]*list.Element{}}
}

// newETagTransport is a transport with a cache of its own of at most max
// entries (tests).
func newETagTransport(next http.RoundTripper, max int) *etagTransport {
	return &etagTransport{next: next, cache: newETagCache(max, etagCacheBytes)}
}

func (t *etagTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || req.Header.Get("If-None-Match") != "" {
		return t.next.RoundTrip(req)
	}
	key := t.scope + " " + req.URL.String()
	cached := t.cache.get(key)

	r := req
	if cached != nil {
		r = req.Clone(req.Context())
		r.Header.Set("If-None-Match", cached.etag)
	}
	resp, err := t.next.RoundTrip(r)
	if err != nil {
		return resp, err
	}
	if resp.StatusCode == http.StatusNotModified && cached != nil {
		resp.Body.Close()
		h := cached.header.Clone()
		// The page links are the 304's when it has them: a list's page can
		// be unchanged while pages are added behind it.
		for _, k := range []string{"Link", "X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset", "X-Ratelimit-Used", "X-Ratelimit-Resource", "Date"} {
			if v := resp.Header.Get(k); v != "" {
				h.Set(k, v)
			}
		}
		return &http.Response{Status: "200 OK", StatusCode: http.StatusOK, Proto: resp.Proto, ProtoMajor: resp.ProtoMajor,
			ProtoMinor: resp.ProtoMinor, Header: h, Body: io.NopCloser(bytes.NewReader(cached.body)),
			ContentLength: int64(len(cached.body)), Request: req}, nil
	}
	etag := resp.Header.Get("ETag")
	if resp.StatusCode != http.StatusOK || etag == "" || resp.ContentLength > etagMaxBody {
		return resp, nil
	}
	orig := resp.Body
	body, err := io.ReadAll(io.LimitReader(orig, etagMaxBody+1))
	if err != nil {
		orig.Close()
		return nil, err
	}
	if len(body) > etagMaxBody { // too large to keep: hand the whole body on
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(body), orig), orig}
		return resp, nil
	}
	orig.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if !req.URL.Query().Has("since") { // asked again only with another moment
		t.cache.store(&etagEntry{url: key, etag: etag, header: cachedHeader(resp.Header), body: body})
	}
	return resp, nil
}

// cachedHeaders are the headers of an answer that a cached copy keeps: what
// go-github reads of an answer (its rate limit's are the 304's), and the
// ETag. The rest (security policies, request ids...) is most of an
// answer's headers and never read.
var cachedHeaders = []string{"Content-Type", "Link", "Etag", "Last-Modified", "X-Github-Media-Type", "Github-Authentication-Token-Expiration"}

func cachedHeader(h http.Header) http.Header {
	out := make(http.Header, len(cachedHeaders))
	for _, k := range cachedHeaders {
		if v := h.Values(k); len(v) > 0 {
			out[k] = slices.Clone(v)
		}
	}
	return out
}

func (c *etagCache) get(key string) *etagEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byURL[key]
	if !ok {
		return nil
	}
	c.lru.MoveToFront(el)
	return el.Value.(*etagEntry)
}

// etagEntryOverhead and etagHeaderOverhead are what an entry and each of
// its headers cost besides their bytes (the entry, its list element and map
// slot; a header's map slot and slice): counted, the bound is the memory's.
const (
	etagEntryOverhead  = 256
	etagHeaderOverhead = 64
)

func (c *etagCache) store(e *etagEntry) {
	e.size = etagEntryOverhead + len(e.url) + len(e.etag) + len(e.body)
	for k, vs := range e.header {
		e.size += etagHeaderOverhead + len(k)
		for _, v := range vs {
			e.size += len(v)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.size > c.maxBytes {
		return
	}
	if el, ok := c.byURL[e.url]; ok {
		c.bytes -= el.Value.(*etagEntry).size
		el.Value = e
		c.lru.MoveToFront(el)
	} else {
		c.byURL[e.url] = c.lru.PushFront(e)
	}
	c.bytes += e.size
	for c.lru.Len() > c.max || c.bytes > c.maxBytes {
		old := c.lru.Back()
		c.lru.Remove(old)
		oe := old.Value.(*etagEntry)
		delete(c.byURL, oe.url)
		c.bytes -= oe.size
	}
}
