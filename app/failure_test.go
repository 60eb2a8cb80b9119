package app_test

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/app"
)

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A delivery that can never be processed is dead-lettered at once, counted in
// /metrics and logged; the task's later deliveries go on.
func TestUnprocessableDeliveryIsDeadLettered(t *testing.T) {
	h := newHarness(t)
	bad := []byte(fmt.Sprintf(`{"action":"opened","issue":{"number":1,"title":5},"repository":{"full_name":%q},"installation":{"id":%d}}`, testRepo, testInstallation))
	if resp := h.post("issues", "poison-1", bad, true); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("status %d", resp.StatusCode)
	}
	h.settle()
	dead, err := h.store.DeadLetters(context.Background())
	if err != nil || len(dead) != 1 || dead[0].ID != "poison-1" || !strings.Contains(dead[0].LastError, "parse issues payload") {
		t.Fatalf("dead letters = %+v, %v", dead, err)
	}
	_, metrics := h.get("/metrics")
	for _, want := range []string{
		`countersign_deliveries_processed_total{event="issues",outcome="dead_lettered"} 1`,
		"countersign_dead_letters 1",
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if !strings.Contains(h.logs.String(), `"msg":"delivery dead-lettered"`) {
		t.Error("dead letter not logged")
	}
	// The same issue's next event is processed.
	n := h.gh.OpenIssue(testRepo, "alice", "after the poison", "")
	h.settle()
	if got := h.gh.Labels(testRepo, n); !reflect.DeepEqual(got, []string{"state:pending"}) {
		t.Fatalf("labels = %v", got)
	}
}

// A delivery that keeps failing is retried with backoff, dead-lettered after
// COUNTERSIGN_MAX_ATTEMPTS, and processed once retried from the dead letters.
func TestFailingDeliveryIsRetriedThenDeadLetteredThenRetried(t *testing.T) {
	h := newHarness(t, func(s *app.Settings) { s.MaxAttempts = 2 })
	// A bot-sent event makes the bot ask GitHub who it is (GET /app); GitHub
	// answers 404 twice.
	h.gh.FailNextFor(2, http.StatusNotFound, nil, func(method, path string) bool { return path == "/app" })
	payload := []byte(fmt.Sprintf(`{"action":"opened","issue":{"number":3},"repository":{"full_name":%q},"installation":{"id":%d},"sender":{"login":"some-app[bot]","type":"Bot"}}`, testRepo, testInstallation))
	h.post("issues", "flaky-1", payload, true)
	waitUntil(t, "the delivery to be dead-lettered", func() bool {
		dead, _ := h.store.DeadLetters(context.Background())
		return len(dead) == 1 && dead[0].Attempts == 2
	})
	_, metrics := h.get("/metrics")
	if !strings.Contains(metrics, `countersign_deliveries_processed_total{event="issues",outcome="retried"} 1`) {
		t.Errorf("retry not counted:\n%s", grep(metrics, "processed_total"))
	}
	if err := h.store.RetryDeadLetter(context.Background(), "flaky-1"); err != nil {
		t.Fatal(err)
	}
	h.srv.Worker().Notify()
	h.settle()
	dead, _ := h.store.DeadLetters(context.Background())
	if len(dead) != 0 {
		t.Fatalf("still dead: %+v", dead)
	}
	_, metrics = h.get("/metrics")
	if !strings.Contains(metrics, `countersign_deliveries_processed_total{event="issues",outcome="done"} 1`) {
		t.Errorf("retried dead letter not processed:\n%s", grep(metrics, "processed_total"))
	}
}

// An effect GitHub refuses with a 5xx is retried later and applied once: the
// card is posted exactly once.
func TestFailedEffectIsRetriedNotDoubled(t *testing.T) {
	h := newHarness(t)
	h.gh.FailNextFor(2, http.StatusBadGateway, nil, func(method, path string) bool {
		return method == http.MethodPost && strings.HasSuffix(path, "/comments")
	})
	n := h.gh.OpenIssue(testRepo, "alice", "flaky GitHub", "")
	waitUntil(t, "the card", func() bool { return len(cardsOn(t, h, n)) == 1 })
	h.settle()
	if got := len(cardsOn(t, h, n)); got != 1 {
		t.Fatalf("%d cards, want 1", got)
	}
	var failed int
	for _, r := range h.gh.Requests() {
		if r.Method == http.MethodPost && strings.HasSuffix(r.Path, "/comments") && r.Status == http.StatusBadGateway {
			failed++
		}
	}
	if failed != 2 {
		t.Fatalf("%d failed card posts seen, want 2", failed)
	}
}

// GitHub's rate limiting (403 with X-RateLimit-Remaining: 0) is waited out:
// the installation's probe finds GitHub back after the reset.
func TestRateLimitIsWaitedOut(t *testing.T) {
	h := newHarness(t)
	reset := fmt.Sprint(time.Now().Unix())
	h.gh.FailNextFor(1, http.StatusForbidden, map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset},
		func(method, path string) bool { return strings.HasSuffix(path, "/labels") && method == http.MethodPost })
	n := h.gh.OpenIssue(testRepo, "alice", "rate limited", "")
	h.settle()
	if got := h.gh.Labels(testRepo, n); !reflect.DeepEqual(got, []string{"state:pending"}) {
		t.Fatalf("labels = %v", got)
	}
	// The installation was marked away: the key waited for its probe (one
	// GET /rate_limit, after the reset), not for a retry of its own.
	probes := 0
	for _, r := range h.gh.Requests() {
		if r.Path == "/rate_limit" {
			probes++
		}
	}
	if probes != 1 {
		t.Errorf("%d probes of /rate_limit, want 1", probes)
	}
}

func grep(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
