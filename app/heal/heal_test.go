package heal_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/countersign/countersign/app/heal"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/app/store/bolt"
	"github.com/countersign/countersign/internal/githubtest"
	"github.com/google/go-github/v60/github"
	"github.com/prometheus/client_golang/prometheus"
)

const repo = "acme/web"

// rig is a fake GitHub whose webhooks go to a receiver that takes them into a
// store, as the bot's intake does (de-duplicated by delivery id).
type rig struct {
	t     testing.TB
	gh    *githubtest.Server
	store store.Store
	app   *github.Client

	mu       sync.Mutex
	received map[string]int // guid -> deliveries taken in (duplicates included)
}

func newRig(t *testing.T) *rig { return newBenchRig(t) }

func newBenchRig(t testing.TB) *rig {
	t.Helper()
	gh := githubtest.New(githubtest.Options{})
	t.Cleanup(gh.Close)
	gh.AddRepo(repo, 7)
	st, err := bolt.Open(filepath.Join(t.TempDir(), "heal.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r := &rig{t: t, gh: gh, store: st, received: map[string]int{}}
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		id := req.Header.Get("X-GitHub-Delivery")
		if _, err := st.Accept(req.Context(), store.Delivery{ID: id, Event: req.Header.Get("X-GitHub-Event"), Key: "k", Payload: body}); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		r.mu.Lock()
		r.received[id]++
		r.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(recv.Close)
	gh.SetWebhook(recv.URL, []byte("s"))
	atr, err := ghinstallation.NewAppsTransport(http.DefaultTransport, gh.AppID(), gh.PrivateKeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	if r.app, err = github.NewClient(&http.Client{Transport: atr}).WithEnterpriseURLs(gh.URL(), gh.URL()); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *rig) healer(cfg heal.Config) *heal.Healer {
	m := heal.NewMetrics(prometheus.NewRegistry(), func() time.Time { return heal.LastSuccess(context.Background(), r.store) })
	return heal.New(r.store, r.app.Apps, slog.New(slog.NewTextHandler(io.Discard, nil)), m, cfg)
}

func (r *rig) wait() {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := r.gh.WaitWebhooks(ctx); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) pass(h *heal.Healer) heal.Result {
	r.t.Helper()
	res, err := h.Pass(context.Background())
	if err != nil {
		r.t.Fatal(err)
	}
	r.wait()
	return res
}

// comments makes n comments on one issue (n webhooks after the issue's).
func (r *rig) comments(n int) {
	is := r.gh.OpenIssue(repo, "alice", "Task", "")
	for i := 0; i < n; i++ {
		r.gh.Comment(repo, is, "alice", fmt.Sprintf("comment %d", i))
	}
	r.wait()
}

func (r *rig) receivedCounts() (guids, total int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range r.received {
		guids++
		total += n
	}
	return guids, total
}

func TestPassRedeliversEachFailureOnce(t *testing.T) {
	r := newRig(t)
	r.gh.OpenIssue(repo, "alice", "Before", "") // 1 OK
	r.gh.SetWebhookFault(2, githubtest.HookUnavailable, func(event, _ string) bool { return event == "issue_comment" })
	r.comments(3) // issue OK, two comments 503'd, one OK
	r.gh.SetWebhookFault(1, githubtest.HookTimeout, nil)
	r.comments(0) // lost on the way
	r.wait()
	r.gh.SetBotDown(true)
	r.comments(1) // two failed to connect
	r.gh.SetBotDown(false)
	if g, _ := r.receivedCounts(); g != 3 {
		t.Fatalf("before healing %d deliveries taken in; want 3", g)
	}

	h := r.healer(heal.Config{})
	res := r.pass(h)
	if res.Missed != 5 || res.Redelivered != 5 || !res.Complete || res.Requests != 1+5 {
		t.Fatalf("first pass %+v; want 5 missed, 5 redelivered in 6 requests", res)
	}
	if g, total := r.receivedCounts(); g != 8 || total != 8 {
		t.Fatalf("after healing %d deliveries (%d with repeats); want 8, each once", g, total)
	}
	for _, d := range r.gh.Deliveries() {
		if d.Redelivery && d.Status != http.StatusAccepted {
			t.Errorf("redelivery %s answered %d", d.ID, d.Status)
		}
	}

	// Nothing new (but the 5 redeliveries, which succeeded, and the entries
	// of the last two minutes, read again): one request, nothing
	// redelivered; nor by a new process.
	for i, hh := range []*heal.Healer{h, r.healer(heal.Config{})} {
		if res := r.pass(hh); res.Redelivered != 0 || res.Requests != 1 {
			t.Fatalf("pass %d with nothing new %+v; want 1 request, nothing redelivered", i, res)
		}
	}

	// A redelivery that fails too (the bot was not reachable yet) is asked
	// for again once its backoff has passed, and then taken in; never more.
	clock := time.Now()
	hc := r.healer(heal.Config{Now: func() time.Time { return clock }})
	r.gh.SetBotDown(true)
	r.comments(0)
	r.gh.SetBotDown(false)
	r.gh.SetWebhookFault(1, githubtest.HookUnavailable, nil)
	if res := r.pass(hc); res.Redelivered != 1 {
		t.Fatalf("pass %+v; want 1 redelivered", res)
	}
	r.wait()
	if res := r.pass(hc); res.Redelivered != 0 {
		t.Fatalf("pass right after a failed redelivery %+v; want it to wait its backoff", res)
	}
	clock = clock.Add(61 * time.Second)
	if res := r.pass(hc); res.Redelivered != 1 {
		t.Fatalf("pass after the backoff %+v; want the failed redelivery tried again", res)
	}
	r.wait()
	if g, total := r.receivedCounts(); g != 9 || total != 9 {
		t.Fatalf("after healing again %d deliveries (%d with repeats); want 9, each once", g, total)
	}
	clock = clock.Add(time.Hour)
	if res := r.pass(hc); res.Redelivered != 0 {
		t.Fatalf("pass after a successful redelivery %+v; want nothing redelivered", res)
	}
	if last := heal.LastSuccess(context.Background(), r.store); time.Since(last) > time.Minute {
		t.Fatalf("last success %v", last)
	}
}

func TestPassSkipsWhatTheStoreTookIn(t *testing.T) {
	r := newRig(t)
	r.gh.SetWebhookFault(1, githubtest.HookTimeout, nil)
	r.comments(0)
	// The bot had taken it in (GitHub timed out waiting for the answer).
	d := r.gh.Deliveries()[0]
	if _, err := r.store.Accept(context.Background(), store.Delivery{ID: d.ID, Event: d.Event, Key: "k", Payload: d.Payload}); err != nil {
		t.Fatal(err)
	}
	if res := r.pass(r.healer(heal.Config{})); res.Missed != 0 || res.Redelivered != 0 {
		t.Fatalf("pass %+v; want nothing missed", res)
	}
}

func TestPassHorizonAndBudget(t *testing.T) {
	r := newRig(t)
	r.gh.SetBotDown(true)
	r.comments(149) // 150 failed deliveries: 2 pages
	r.gh.SetBotDown(false)

	// A budget of 3 requests: a page of the walk and two redeliveries a
	// pass; the walk resumes where it was cut; nothing twice.
	h := r.healer(heal.Config{MaxRequests: 3})
	total := 0
	for i := 0; i < 200 && total < 150; i++ {
		res := r.pass(h)
		if res.Requests > 3 {
			t.Fatalf("pass %d made %d requests; budget 3", i, res.Requests)
		}
		total += res.Redelivered
	}
	if g, n := r.receivedCounts(); total != 150 || g != 150 || n != 150 {
		t.Fatalf("redelivered %d, taken in %d (%d with repeats); want 150 each once", total, g, n)
	}
	if res := r.pass(h); res.Redelivered != 0 || res.Pending != 0 {
		t.Fatalf("pass after all %+v", res)
	}

	// A horizon in the past: nothing is looked at.
	r2 := newRig(t)
	r2.gh.SetBotDown(true)
	r2.comments(1)
	r2.gh.SetBotDown(false)
	h2 := r2.healer(heal.Config{Horizon: time.Nanosecond})
	time.Sleep(1100 * time.Millisecond) // delivered_at has a resolution of a second
	if res := r2.pass(h2); res.Scanned != 0 || res.Redelivered != 0 {
		t.Fatalf("pass beyond the horizon %+v", res)
	}
}

func TestPassLeaseLostStops(t *testing.T) {
	r := newRig(t)
	r.gh.SetBotDown(true)
	r.comments(2)
	r.gh.SetBotDown(false)
	h := r.healer(heal.Config{Lease: func(context.Context) bool { return false }})
	if res := r.pass(h); res.Redelivered != 0 || res.Missed == 0 {
		t.Fatalf("pass without the lease %+v; want nothing redelivered", res)
	}
	if res := r.pass(r.healer(heal.Config{})); res.Redelivered != 3 {
		t.Fatalf("pass after %+v; want the 3 redelivered", res)
	}
}

func TestPassGitHubDown(t *testing.T) {
	r := newRig(t)
	r.gh.SetBotDown(true)
	r.comments(1)
	r.gh.SetBotDown(false)
	r.gh.SetOutage(http.StatusServiceUnavailable, nil)
	h := r.healer(heal.Config{})
	if _, err := h.Pass(context.Background()); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("pass during an outage: %v; want the 503", err)
	}
	r.gh.SetOutage(0, nil)
	if res := r.pass(h); res.Redelivered != 2 {
		t.Fatalf("pass after the outage %+v; want 2 redelivered", res)
	}
}

// A redelivery GitHub refuses for good (a 4xx other than a rate limit) is
// given up, logged and counted; the deliveries behind it are still healed.
func TestPassSkipsARefusedRedelivery(t *testing.T) {
	r := newRig(t)
	r.gh.SetBotDown(true)
	r.comments(1) // an issue and a comment, both failed
	r.gh.SetBotDown(false)
	r.gh.FailNextFor(1, http.StatusUnprocessableEntity, nil, func(method, path string) bool {
		return method == http.MethodPost && strings.HasSuffix(path, "/attempts")
	})
	h := r.healer(heal.Config{})
	if res := r.pass(h); res.Redelivered != 1 || res.Missed != 2 || res.Pending != 0 {
		t.Fatalf("pass %+v; want 2 missed: 1 refused for good, 1 redelivered", res)
	}
	r.wait()
	if g, _ := r.receivedCounts(); g != 1 {
		t.Fatalf("%d deliveries taken in; want the one GitHub redelivered", g)
	}
}
