package app_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// metricValue reads one sample (a name with its labels, as exported) from a
// /metrics text; false if absent.
func metricValue(metrics, sample string) (float64, bool) {
	for _, l := range strings.Split(metrics, "\n") {
		if rest, ok := strings.CutPrefix(l, sample+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v, err == nil
		}
	}
	return 0, false
}

// GitHub down for a while, then back: while it is down the installation's
// requests wait for its probe instead of being sent (a bounded number reach
// GitHub), the gauges count the work waiting, and when GitHub is back the
// work resumes within seconds. The figures are logged (timings are not
// asserted).
func TestGitHubOutageIsProbed(t *testing.T) {
	const workers = 4
	h := newHarness(t)
	first := h.gh.OpenIssue(testRepo, "alice", "before the outage", "")
	h.settle()
	if len(cardsOn(t, h, first)) != 1 {
		t.Fatal("no card before the outage")
	}

	const issues, outage = 20, 8 * time.Second
	h.gh.SetOutage(http.StatusServiceUnavailable, nil)
	down := time.Now()
	var opened []int
	for i := range issues {
		opened = append(opened, h.gh.OpenIssue(testRepo, "alice", fmt.Sprintf("opened during the outage %d", i), ""))
	}
	var metrics string
	waitUntil(t, "GitHub found away", func() bool {
		_, metrics = h.get("/metrics")
		v, ok := metricValue(metrics, `countersign_github_away{installation="7"}`)
		return ok && v == 1
	})
	time.Sleep(outage - time.Since(down) - time.Second)
	_, metrics = h.get("/metrics")
	pending, _ := metricValue(metrics, "countersign_work_pending")
	parked, _ := metricValue(metrics, `countersign_github_waiting_keys{installation="7"}`)
	queued, _ := metricValue(metrics, "countersign_queue_depth")
	if pending < issues {
		t.Errorf("countersign_work_pending = %v during the outage, want at least the %d deliveries waiting", pending, issues)
	}
	if parked < 1 {
		t.Errorf("countersign_github_waiting_keys = %v during the outage, want the keys waiting", parked)
	}
	time.Sleep(outage - time.Since(down))
	h.gh.SetOutage(0, nil)
	back := time.Now()

	var resumed time.Time
	waitUntil(t, "every card", func() bool {
		for _, n := range opened {
			if len(cardsOn(t, h, n)) != 1 {
				return false
			}
		}
		return true
	})
	allDone := time.Since(back)
	h.settleWithin(60 * time.Second)

	sentDown, probes := 0, 0
	for _, r := range h.gh.Requests() {
		switch {
		case r.Time.Before(down):
		case r.Time.Before(back):
			sentDown++
			if r.Path == "/rate_limit" {
				probes++
			}
		case resumed.IsZero() && r.Status < 400 && r.Path != "/rate_limit":
			resumed = r.Time
		}
	}
	t.Logf("outage of %v with %d issues opened: %d requests reached GitHub while it was down (%d probes); "+
		"gauges during the outage: work_pending=%v github_waiting_keys=%v queue_depth=%v; "+
		"first request served %v after GitHub was back, every card posted %v after",
		outage, issues, sentDown, probes, pending, parked, queued, resumed.Sub(back).Round(time.Millisecond), allDone.Round(time.Millisecond))
	// Each worker's request in flight when GitHub went down, then one probe
	// per backoff step (1 s, 2 s, 4 s, then every 4 s).
	if bound := workers + int(outage/time.Second); sentDown > bound {
		t.Errorf("%d requests reached GitHub during an outage of %v, want at most %d", sentDown, outage, bound)
	}
	if probes == 0 {
		t.Error("GitHub was never probed")
	}
}

// While the store cannot queue deliveries, each is refused (503, so that
// GitHub's log keeps it for the heal), and the error is logged as the store's,
// once for the burst rather than once a delivery.
func TestRefusedDeliveriesLogOnce(t *testing.T) {
	h := newHarness(t)
	payload := fixture(t, "issues/assigned.with-installation.payload.json")
	if err := h.store.Close(); err != nil { // the store is gone
		t.Fatal(err)
	}
	const n = 50
	for i := range n {
		if resp := h.post("issues", fmt.Sprintf("refused-%d", i), payload, true); resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("delivery %d answered %d, want 503", i, resp.StatusCode)
		}
	}
	if got := strings.Count(h.logs.String(), `"msg":"store error: delivery not queued"`); got != 1 {
		t.Fatalf("%d log lines for %d refused deliveries, want 1 (rate-limited)", got, n)
	}
}
