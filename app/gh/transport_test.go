package gh

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/app/metrics"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func fastRetry(m *metrics.Metrics) *retryTransport {
	rt := newRetryTransport(&metricsTransport{next: http.DefaultTransport, m: m}, m)
	rt.baseDelay, rt.maxDelay, rt.maxWait = time.Millisecond, 5*time.Millisecond, 3*time.Second
	return rt
}

func TestRetryTransport(t *testing.T) {
	tests := []struct {
		name      string
		method    string
		fail      int // answers that fail before success
		status    int
		headers   map[string]string
		wantCalls int32
		wantCode  int
		reason    string
	}{
		{name: "GET retried after 502", method: "GET", fail: 2, status: 502, wantCalls: 3, wantCode: 200, reason: "server_error"},
		{name: "PATCH retried after 500", method: "PATCH", fail: 1, status: 500, wantCalls: 2, wantCode: 200, reason: "server_error"},
		{name: "POST not retried after 502", method: "POST", fail: 1, status: 502, wantCalls: 1, wantCode: 502},
		{name: "POST not retried after 503 even with Retry-After", method: "POST", fail: 1, status: 503, headers: map[string]string{"Retry-After": "0"}, wantCalls: 1, wantCode: 503},
		{name: "GET retried after 503 Retry-After", method: "GET", fail: 1, status: 503, headers: map[string]string{"Retry-After": "0"}, wantCalls: 2, wantCode: 200, reason: "rate_limited"},
		{name: "POST retried after 429 Retry-After", method: "POST", fail: 1, status: 429, headers: map[string]string{"Retry-After": "0"}, wantCalls: 2, wantCode: 200, reason: "rate_limited"},
		{name: "403 rate limit waits for reset", method: "GET", fail: 1, status: 403,
			headers: map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "RESET"}, wantCalls: 2, wantCode: 200, reason: "rate_limited"},
		{name: "403 forbidden is final", method: "GET", fail: 1, status: 403, wantCalls: 1, wantCode: 403},
		{name: "404 is final", method: "GET", fail: 1, status: 404, wantCalls: 1, wantCode: 404},
		{name: "gives up after max attempts", method: "GET", fail: 10, status: 503, wantCalls: 5, wantCode: 503, reason: "server_error"},
		{name: "rate-limit wait too long goes back up", method: "GET", fail: 1, status: 429,
			headers: map[string]string{"Retry-After": "3600"}, wantCalls: 1, wantCode: 429},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := calls.Add(1)
				body, _ := io.ReadAll(r.Body)
				if r.Method == "POST" && string(body) != "payload" {
					t.Errorf("attempt %d lost the body: %q", n, body)
				}
				if int(n) <= tc.fail {
					for k, v := range tc.headers {
						if v == "RESET" {
							v = strconv.FormatInt(time.Now().Unix(), 10)
						}
						w.Header().Set(k, v)
					}
					w.WriteHeader(tc.status)
					return
				}
				fmt.Fprint(w, "ok")
			}))
			defer srv.Close()
			m := metrics.New(func() (int, int) { return 0, 0 })
			c := &http.Client{Transport: fastRetry(m)}
			req, _ := http.NewRequest(tc.method, srv.URL, strings.NewReader("payload"))
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.wantCode || calls.Load() != tc.wantCalls {
				t.Fatalf("status %d after %d calls, want %d after %d", resp.StatusCode, calls.Load(), tc.wantCode, tc.wantCalls)
			}
			if tc.reason != "" && testutil.ToFloat64(m.APIRetries.WithLabelValues(tc.reason)) == 0 {
				t.Errorf("retry reason %q not counted", tc.reason)
			}
		})
	}
}

func TestETagTransport(t *testing.T) {
	var full, notModified atomic.Int32
	version := "v1"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		etag := `"` + version + `"`
		if r.Header.Get("If-None-Match") == etag {
			notModified.Add(1)
			w.WriteHeader(http.StatusNotModified)
			return
		}
		full.Add(1)
		w.Header().Set("ETag", etag)
		fmt.Fprint(w, "body-"+version)
	}))
	defer srv.Close()
	c := &http.Client{Transport: newETagTransport(http.DefaultTransport, 10)}
	get := func() string {
		resp, err := c.Get(srv.URL + "/x")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		return string(b)
	}
	if got := get(); got != "body-v1" {
		t.Fatalf("first GET = %q", got)
	}
	if got := get(); got != "body-v1" {
		t.Fatalf("cached GET = %q", got)
	}
	if full.Load() != 1 || notModified.Load() != 1 {
		t.Fatalf("full=%d notModified=%d, want 1 and 1", full.Load(), notModified.Load())
	}
	version = "v2"
	if got := get(); got != "body-v2" {
		t.Fatalf("changed resource = %q", got)
	}
}

func TestETagTransportEvicts(t *testing.T) {
	et := newETagTransport(http.DefaultTransport, 2)
	for i := 0; i < 5; i++ {
		et.cache.store(&etagEntry{url: fmt.Sprint(i), etag: "x"})
	}
	if et.cache.lru.Len() != 2 || len(et.cache.byURL) != 2 {
		t.Fatalf("cache holds %d/%d entries, want 2", et.cache.lru.Len(), len(et.cache.byURL))
	}
}

// The cache shared by every installation is bounded in bytes as well as in
// entries, and one installation's answer is never another's.
func TestETagCacheBoundedInBytesAndScoped(t *testing.T) {
	c := newETagCache(1000, 10<<10)
	body := make([]byte, 1<<10)
	for i := 0; i < 50; i++ {
		c.store(&etagEntry{url: fmt.Sprintf("7 /repos/o/r/issues/%d", i), etag: "x", body: body})
	}
	if c.bytes > 10<<10 || c.lru.Len() >= 10 || c.lru.Len() == 0 {
		t.Fatalf("cache holds %d entries, %d bytes; want fewer than 10 and at most 10 KiB", c.lru.Len(), c.bytes)
	}
	if c.get("7 /repos/o/r/issues/49") == nil {
		t.Fatal("the latest answer was evicted")
	}
	if c.get("8 /repos/o/r/issues/49") != nil {
		t.Fatal("another installation's answer was served")
	}
	c.store(&etagEntry{url: "7 /huge", etag: "x", body: make([]byte, 11<<10)})
	if c.get("7 /huge") != nil || c.bytes > 10<<10 {
		t.Fatal("an answer larger than the whole cache was kept")
	}
}

// The rate-limit gauge has no series until GitHub has answered with the
// header: a series made at start-up would read 0, "no requests left", and an
// alert near 0 would fire on every start.
func TestRateLimitSeriesOnlyAfterAnAnswer(t *testing.T) {
	m := metrics.New(func() (int, int) { return 0, 0 })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-RateLimit-Remaining", "4321")
		fmt.Fprint(w, "{}")
	}))
	defer srv.Close()
	rt := &rateTransport{next: http.DefaultTransport, series: newRateSeries(m.RateLimitRemain), label: "app"}
	if n := testutil.CollectAndCount(m.RateLimitRemain); n != 0 {
		t.Fatalf("%d series before any answer, want none", n)
	}
	req, _ := http.NewRequest("GET", srv.URL, nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := testutil.ToFloat64(m.RateLimitRemain.WithLabelValues("app")); got != 4321 {
		t.Fatalf("remaining = %v after the answer, want 4321", got)
	}
}

// The rate-limit gauge shows the App's own calls and the rateShown
// installations with the fewest requests left, however many there are.
func TestRateLimitSeriesAreTheLowest(t *testing.T) {
	m := metrics.New(func() (int, int) { return 0, 0 })
	r := newRateSeries(m.RateLimitRemain)
	r.set("app", 4000)
	for i := range 1000 {
		r.set(fmt.Sprint(i), float64(5000-i)) // installation 999 has the fewest left
	}
	if n := testutil.CollectAndCount(m.RateLimitRemain); n != rateShown+1 {
		t.Fatalf("%d series, want %d", n, rateShown+1)
	}
	if got := testutil.ToFloat64(m.RateLimitRemain.WithLabelValues("999")); got != 4001 {
		t.Fatalf("installation 999 shows %v, want 4001", got)
	}
	// A new hour for 999: it has the most left now, and 979 is shown instead.
	r.set("999", 5000)
	if n := testutil.CollectAndCount(m.RateLimitRemain); n != rateShown+1 {
		t.Fatalf("%d series after a reset, want %d", n, rateShown+1)
	}
	if !r.shown["979"] || r.shown["999"] {
		t.Fatalf("shown after 999's reset: %v", r.shown)
	}
	// An installation about to run out is shown at once.
	r.set("5", 3)
	if got := testutil.ToFloat64(m.RateLimitRemain.WithLabelValues("5")); got != 3 || !r.shown["5"] {
		t.Fatalf("installation 5 (3 left) not shown: %v", r.shown)
	}
}

// The readings kept to choose the lowest are bounded too: 10,000
// installations leave at most rateValuesMax, the lowest still shown.
func TestRateLimitReadingsAreBounded(t *testing.T) {
	m := metrics.New(func() (int, int) { return 0, 0 })
	r := newRateSeries(m.RateLimitRemain)
	for i := range 10000 {
		r.set(fmt.Sprint(i), float64(10000-i))
	}
	if n := len(r.values); n > rateValuesMax {
		t.Fatalf("%d readings kept, want at most %d", n, rateValuesMax)
	}
	if got := testutil.ToFloat64(m.RateLimitRemain.WithLabelValues("9999")); got != 1 || len(r.shown) != rateShown {
		t.Fatalf("installation 9999 shows %v (%d shown), want 1", got, len(r.shown))
	}
}

// The cache keeps of an answer what go-github reads of a cached one (its
// type, pagination, ETag) and no more; and an answer to a listing "since" a
// moment (a resync's, whose next one asks since another moment) is never
// asked for again: it is not kept.
func TestETagCacheKeepsWhatIsAskedAgain(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("If-None-Match") == `"v1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", `"v1"`)
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Link", `<https://api.github.com/x?page=2>; rel="next"`)
		for _, k := range []string{"Content-Security-Policy", "Strict-Transport-Security", "X-Frame-Options", "X-Github-Request-Id",
			"Access-Control-Expose-Headers", "Vary", "Referrer-Policy", "X-Xss-Protection", "Server", "Cache-Control"} {
			w.Header().Set(k, strings.Repeat("v", 100))
		}
		fmt.Fprint(w, "[]")
	}))
	defer srv.Close()
	et := newETagTransport(http.DefaultTransport, 10)
	c := &http.Client{Transport: et}
	get := func(path string) *http.Response {
		resp, err := c.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	get("/repos/o/r/issues/1/comments")
	resp := get("/repos/o/r/issues/1/comments") // from the cache
	if resp.Header.Get("Link") == "" || resp.Header.Get("Content-Type") == "" {
		t.Fatalf("the cached answer lost its Link or Content-Type: %v", resp.Header)
	}
	e := et.cache.get(" " + srv.URL + "/repos/o/r/issues/1/comments")
	if e == nil {
		t.Fatal("the answer was not kept")
	}
	if e.header.Get("X-Github-Request-Id") != "" || len(e.header) > 4 {
		t.Errorf("the cached answer keeps %d headers: %v", len(e.header), e.header)
	}
	get("/repos/o/r/issues?since=2025-01-02T03%3A04%3A05Z&state=all")
	if n := et.cache.lru.Len(); n != 1 {
		t.Errorf("%d answers kept, want the comments' only", n)
	}
}
