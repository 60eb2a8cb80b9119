package gh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/app/fault"
	"github.com/countersign/countersign/app/metrics"
	"github.com/countersign/countersign/app/pace"
	"github.com/google/go-github/v60/github"
)

type countingTransport struct{ calls atomic.Int32 }

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c.calls.Add(1)
	return &http.Response{StatusCode: 200, Body: http.NoBody, Request: req}, nil
}

type closeTracker struct {
	io.Reader
	closed bool
}

func (c *closeTracker) Close() error { c.closed = true; return nil }

// A write whose turn is too far away is not sent: it comes back as a wait
// for the key (no attempt used), with the time to its turn; reads pass.
func TestPaceTransportDefersAndPassesReads(t *testing.T) {
	b, err := pace.New(pace.Limits{PerMinute: 1, Minute: time.Hour}, nil)
	if err != nil {
		t.Fatal(err)
	}
	next := &countingTransport{}
	m := metrics.New(func() (int, int) { return 0, 0 })
	tr := &paceTransport{next: next, bucket: b, maxBlock: time.Second, m: m}
	send := func(method string) (*closeTracker, error) {
		body := &closeTracker{Reader: strings.NewReader("{}")}
		req, _ := http.NewRequest(method, "http://example.invalid/repos/o/r/issues/1/labels", body)
		_, err := tr.RoundTrip(req)
		return body, err
	}
	if _, err := send(http.MethodPost); err != nil { // the bucket's one token
		t.Fatal(err)
	}
	for _, method := range []string{http.MethodPost, http.MethodPatch, http.MethodPut, http.MethodDelete} {
		body, err := send(method)
		hint, waiting := fault.GitHubWait(err, time.Now())
		if !waiting || hint < 59*time.Minute || hint > time.Hour+time.Minute {
			t.Fatalf("%s past the limit: %v (hint %v, waiting %v), want a wait of about an hour", method, err, hint, waiting)
		}
		if !body.closed {
			t.Fatalf("%s: the body of a write not sent was not closed", method)
		}
	}
	for range 3 {
		if _, err := send(http.MethodGet); err != nil {
			t.Fatalf("a read under a spent bucket: %v", err)
		}
	}
	if got := next.calls.Load(); got != 4 {
		t.Fatalf("%d requests went out, want 4 (one write, three reads)", got)
	}
	if got := testCounter(t, m, "countersign_github_writes_deferred_total"); got != 4 {
		t.Fatalf("countersign_github_writes_deferred_total = %v, want 4", got)
	}
}

// A write waiting for its turn gives up when its context ends.
func TestPaceTransportHonoursCancellation(t *testing.T) {
	b, err := pace.New(pace.Limits{PerMinute: 1, Minute: time.Hour}, nil)
	if err != nil {
		t.Fatal(err)
	}
	next := &countingTransport{}
	tr := &paceTransport{next: next, bucket: b, maxBlock: 2 * time.Hour, m: metrics.New(func() (int, int) { return 0, 0 })}
	req, _ := http.NewRequest(http.MethodPost, "http://example.invalid/x", strings.NewReader("{}"))
	if _, err := tr.RoundTrip(req); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	req, _ = http.NewRequestWithContext(ctx, http.MethodPost, "http://example.invalid/x", strings.NewReader("{}"))
	if _, err := tr.RoundTrip(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a cancelled wait returned %v", err)
	}
	if got := next.calls.Load(); got != 1 {
		t.Fatalf("%d requests went out, want 1", got)
	}
}

func testCounter(t *testing.T, m *metrics.Metrics, name string) float64 {
	t.Helper()
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			var sum float64
			for _, mt := range mf.GetMetric() {
				sum += mt.GetCounter().GetValue()
			}
			return sum
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// A write the retry transport replays (after a 5xx) takes a turn again.
func TestRetriedWriteTakesATurn(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name      string
		perMinute int
		wantCalls int32
		wantWait  bool
	}{{"turn free", 10, 2, false}, {"turn an hour away", 1, 1, true}} {
		t.Run(tc.name, func(t *testing.T) {
			calls.Store(0)
			b, err := pace.New(pace.Limits{PerMinute: tc.perMinute, Burst: tc.perMinute, Minute: time.Hour}, nil)
			if err != nil {
				t.Fatal(err)
			}
			m := metrics.New(func() (int, int) { return 0, 0 })
			tr := &paceTransport{next: fastRetry(m), bucket: b, maxBlock: time.Second, m: m}
			req, _ := http.NewRequest(http.MethodPatch, srv.URL+"/repos/o/r/issues/comments/1", strings.NewReader("{}"))
			resp, err := tr.RoundTrip(req)
			if resp != nil {
				resp.Body.Close()
			}
			_, waiting := fault.GitHubWait(err, time.Now())
			if calls.Load() != tc.wantCalls || waiting != tc.wantWait || (!tc.wantWait && (err != nil || resp.StatusCode != 200)) {
				t.Fatalf("%d calls, error %v (waiting %v); want %d calls, waiting %v", calls.Load(), err, waiting, tc.wantCalls, tc.wantWait)
			}
			if got, want := b.Tokens(pace.Background), tc.perMinute-2; tc.perMinute > 1 && got != want {
				t.Fatalf("%d tokens left, want %d: the replay took no turn", got, want)
			}
		})
	}
}

type usersByLogin struct{ reads int }

func (u *usersByLogin) GetUser(_ context.Context, login string) (*github.User, *github.Response, error) {
	u.reads++
	return &github.User{ID: github.Int64(int64(len(login))), Login: github.String(login)}, nil, nil
}

// The accounts cache, shared by every installation, holds at most
// accountsMax logins however many people act.
func TestAccountsCacheIsBounded(t *testing.T) {
	g := &GitHub{}
	users := &usersByLogin{}
	for i := range accountsMax + 500 {
		if _, err := g.Account(context.Background(), users, fmt.Sprintf("person-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if len(g.accounts) > accountsMax {
		t.Fatalf("%d accounts cached, want at most %d", len(g.accounts), accountsMax)
	}
	reads := users.reads
	last := fmt.Sprintf("person-%d", accountsMax+499)
	if _, err := g.Account(context.Background(), users, last); err != nil || users.reads != reads {
		t.Fatalf("the latest login was read again (%d reads, err %v)", users.reads-reads, err)
	}
}
