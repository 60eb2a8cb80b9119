package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/app/store/bolt"
	"github.com/countersign/countersign/internal/githubtest"
)

// fakeSmee is a webhook proxy channel as smee.io serves one: POST /chan takes
// a webhook in and sends it to every subscriber of GET /chan's event stream
// as an unnamed event (a `message` to a browser) whose data is the request's headers (lowercase keys),
// the payload under "body" (parsed and serialised again: JSON.stringify of
// JSON.parse, which for GitHub's compact JSON is json.Compact), and
// "timestamp"; a stream begins with a `ready` event. Like smee.io, it answers
// 200 to a POST whether anyone listens or not, and its events have no ids.
type fakeSmee struct {
	srv     *httptest.Server
	mu      sync.Mutex
	subs    map[chan string]chan struct{} // event stream -> its kick
	down    bool
	refused int // GETs answered 503 while down
	streams int // GETs answered with a stream
}

func newFakeSmee(t *testing.T) *fakeSmee {
	f := &fakeSmee{subs: map[chan string]chan struct{}{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() {
		f.setDown(true)
		f.srv.Close()
	})
	return f
}

func (f *fakeSmee) url() string { return f.srv.URL + "/chan" }

func (f *fakeSmee) serve(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost:
		body, _ := io.ReadAll(r.Body)
		var compact bytes.Buffer
		if err := json.Compact(&compact, body); err != nil {
			http.Error(w, "bad json", http.StatusBadRequest)
			return
		}
		var ev strings.Builder
		ev.WriteString("{")
		for k, v := range r.Header {
			kb, _ := json.Marshal(strings.ToLower(k))
			vb, _ := json.Marshal(strings.Join(v, ", "))
			fmt.Fprintf(&ev, "%s:%s,", kb, vb)
		}
		fmt.Fprintf(&ev, `"body":%s,"timestamp":%d}`, compact.Bytes(), time.Now().UnixMilli())
		f.emit(ev.String())
		w.WriteHeader(http.StatusOK)
	case http.MethodGet:
		f.mu.Lock()
		if f.down {
			f.refused++
			f.mu.Unlock()
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		f.streams++
		events, kick := make(chan string, 64), make(chan struct{})
		f.subs[events] = kick
		f.mu.Unlock()
		defer func() {
			f.mu.Lock()
			delete(f.subs, events)
			f.mu.Unlock()
		}()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, "event: ready\ndata: {}\n\n")
		w.(http.Flusher).Flush()
		for {
			select {
			case data := <-events:
				fmt.Fprintf(w, "data: %s\n\n", data) // unnamed, as smee sends them
				w.(http.Flusher).Flush()
			case <-kick:
				return
			case <-r.Context().Done():
				return
			}
		}
	}
}

// emit sends one event's data to every subscriber.
func (f *fakeSmee) emit(data string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for events := range f.subs {
		events <- data
	}
}

// setDown drops every stream and refuses new ones (true), or takes them
// again (false).
func (f *fakeSmee) setDown(down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = down
	if down {
		for events, kick := range f.subs {
			close(kick)
			delete(f.subs, events)
		}
	}
}

func (f *fakeSmee) counts() (refused, streams int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.refused, f.streams
}

// smeeEvent is smee's event for a delivery posted with these headers.
func smeeEvent(event, id, sig string, payload []byte) string {
	var compact bytes.Buffer
	json.Compact(&compact, payload)
	return fmt.Sprintf(`{"host":"smee.io","content-type":"application/json","x-github-event":%q,"x-github-delivery":%q,"x-hub-signature-256":%q,"body":%s,"timestamp":%d}`,
		event, id, sig, compact.Bytes(), time.Now().UnixMilli())
}

// waitCond polls cond until it holds, failing after a generous bound.
func waitCond(t *testing.T, h *harness, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached; logs:\n%s", what, h.logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// proxyMetric is the sum of the samples on /metrics whose line starts with prefix.
func proxyMetric(h *harness, prefix string) float64 {
	_, body := h.get("/metrics")
	sum := 0.0
	for line := range strings.SplitSeq(body, "\n") {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			sum += v
		}
	}
	return sum
}

// A server with no public URL receives GitHub's webhooks through a smee.io
// channel (COUNTERSIGN_WEBHOOK_PROXY_URL): each goes through POST /webhook's
// own checks; a forged one is refused and queues nothing, a repeated one has
// one effect, and what GitHub sent while the stream was lost is asked for
// again from the App's delivery log once it is back.
func TestWebhookProxy(t *testing.T) {
	gh := newGitHub(githubtest.Options{})
	t.Cleanup(gh.Close)
	gh.AddRepo(testRepo, testInstallation)
	s, err := bolt.Open(filepath.Join(t.TempDir(), "countersign.db"))
	if err != nil {
		t.Fatal(err)
	}
	smee := newFakeSmee(t)
	h := startHarness(t, gh, s, func(st *app.Settings) {
		st.WebhookProxyURL = smee.url()
		st.ProxyBackoff = 10 * time.Millisecond
		st.HealInterval = 0 // only the proxy's gap pass reads the delivery log
	})
	gh.SetWebhook(smee.url(), []byte(testSecret)) // GitHub posts to the channel, not to the bot
	ready := func() bool { code, _ := h.get("/readyz"); return code == http.StatusOK }
	waitCond(t, h, "ready once the stream is connected", ready)
	if got := proxyMetric(h, "countersign_webhook_proxy_connected"); got != 1 {
		t.Fatalf("countersign_webhook_proxy_connected = %v, want 1", got)
	}

	// A real delivery (GitHub's ping sample), signed: it passes the signature
	// check over smee's re-serialised body.
	ping := fixture(t, "ping/payload.json")
	var compact bytes.Buffer
	json.Compact(&compact, ping)
	smee.emit(smeeEvent("ping", "proxy-ping-1", signature(compact.Bytes(), testSecret), ping))
	waitCond(t, h, "the ping answered", func() bool {
		return proxyMetric(h, `countersign_webhook_deliveries_total{event="ping",outcome="ping"}`) == 1
	})

	// Good: an issue opened on GitHub gets its card through the channel.
	n := gh.OpenIssue(testRepo, "carol", "Validate the email field", "")
	waitCond(t, h, "the issue is pending", func() bool { return stateOf(h, n) == "pending" })
	opened := ""
	for _, d := range gh.Deliveries() {
		if d.Event == "issues" && d.Action == "opened" {
			opened = d.ID
		}
	}
	if opened == "" {
		t.Fatal("no issues.opened delivery")
	}

	// Forged: a real payload signed with another secret is refused, and
	// nothing is queued.
	forged := fixture(t, "issues/opened.payload.json")
	compact.Reset()
	json.Compact(&compact, forged)
	smee.emit(smeeEvent("issues", "proxy-forged-1", signature(compact.Bytes(), "not-the-webhook-secret"), forged))
	waitCond(t, h, "the forged delivery refused", func() bool {
		return proxyMetric(h, `countersign_webhook_deliveries_total{event="issues",outcome="bad_signature"}`) == 1
	})
	if seen, err := s.Seen(t.Context(), "proxy-forged-1"); err != nil || seen {
		t.Fatalf("forged delivery seen = %v, %v; want not queued", seen, err)
	}

	// Duplicate: GitHub redelivers the opened issue; one card still.
	if err := gh.Redeliver(opened); err != nil {
		t.Fatal(err)
	}
	waitCond(t, h, "the redelivery found a duplicate", func() bool {
		return proxyMetric(h, `countersign_webhook_deliveries_total{event="issues",outcome="duplicate"}`) == 1
	})
	cards := 0
	for _, c := range gh.Comments(testRepo, n) {
		if c.User == gh.BotLogin() {
			cards++
		}
	}
	if cards != 1 {
		t.Fatalf("bot comments on #%d = %d, want one card", n, cards)
	}

	// Dropped: the stream is lost and refused several times; /readyz and
	// the gauge say so; an issue opened meanwhile reaches smee, which
	// answers GitHub 200 and has no one to send it to.
	smee.setDown(true)
	waitCond(t, h, "not ready while the stream is lost", func() bool { return !ready() })
	if got := proxyMetric(h, "countersign_webhook_proxy_connected"); got != 0 {
		t.Fatalf("countersign_webhook_proxy_connected = %v while down, want 0", got)
	}
	lost := gh.OpenIssue(testRepo, "carol", "Reject an empty password", "")
	if err := gh.WaitWebhooks(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitCond(t, h, "several refused reconnections", func() bool { r, _ := smee.counts(); return r >= 3 })
	if stateOf(h, lost) != "" {
		t.Fatalf("#%d got a state while the stream was lost", lost)
	}
	smee.setDown(false)
	waitCond(t, h, "ready again", ready)
	waitCond(t, h, "the issue opened while the stream was lost is pending", func() bool { return stateOf(h, lost) == "pending" })

	if got := strings.Count(h.logs.String(), `"msg":"webhook proxy connection lost; connecting again with backoff"`); got != 1 {
		t.Errorf("outage logged %d times, want once", got)
	}
	if got := strings.Count(h.logs.String(), `"msg":"webhook proxy connected again"`); got != 1 {
		t.Errorf("reconnection logged %d times, want once", got)
	}
	if got := proxyMetric(h, "countersign_webhook_proxy_connected"); got != 1 {
		t.Fatalf("countersign_webhook_proxy_connected = %v after reconnecting, want 1", got)
	}
}
