package gh

import (
	"bytes"
	"container/list"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
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
	g    prometheus.Gauge
}

func (t *rateTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if resp != nil {
		if v, err := strconv.Atoi(resp.Header.Get("X-RateLimit-Remaining")); err == nil {
			t.g.Set(float64(v))
		}
	}
	return resp, err
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
// One is used per installation, so cached answers never cross permissions.
type etagTransport struct {
	next http.RoundTripper
	max  int

	mu    sync.Mutex
	lru   *list.List // of *etagEntry, most recent first
	byURL map[string]*list.Element
}

type etagEntry struct {
	url    string
	etag   string
	header http.Header
	body   []byte
}

const etagMaxBody = 1 << 20

func newETagTransport(next http.RoundTripper, max int) *etagTransport {
	return &etagTransport{next: next, max: max, lru: list.New(), byURL: map[string]*list.Element{}}
}

func (t *etagTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || req.Header.Get("If-None-Match") != "" {
		return t.next.RoundTrip(req)
	}
	key := req.URL.String()
	t.mu.Lock()
	var cached *etagEntry
	if el, ok := t.byURL[key]; ok {
		cached = el.Value.(*etagEntry)
		t.lru.MoveToFront(el)
	}
	t.mu.Unlock()

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
		for _, k := range []string{"X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset", "Date"} {
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
	t.store(&etagEntry{url: key, etag: etag, header: resp.Header.Clone(), body: body})
	return resp, nil
}

func (t *etagTransport) store(e *etagEntry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if el, ok := t.byURL[e.url]; ok {
		el.Value = e
		t.lru.MoveToFront(el)
		return
	}
	t.byURL[e.url] = t.lru.PushFront(e)
	for t.lru.Len() > t.max {
		old := t.lru.Back()
		t.lru.Remove(old)
		delete(t.byURL, old.Value.(*etagEntry).url)
	}
}
