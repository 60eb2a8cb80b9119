package app_test

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/internal/githubtest"
	"github.com/countersign/countersign/rules"
)

// peopleScale is how much faster than real time TestPeopleFirstUnderBulk
// runs: its pacing minute, and the fake GitHub's, last 60 s / peopleScale.
const peopleScale = 20

// TestPeopleFirstUnderBulk reproduces issue 22's measurement with a scaled
// clock: one installation, a completed task in repository A, and B issues
// opened at once in repository B (an import); five (scaled) seconds later a
// verifier comments /verify on the task in A. The fake GitHub enforces
// GitHub's secondary limits (80 writes a minute, 500 an hour per
// installation) on the same scaled clock, and countersign runs with its
// default pacing (90% of the limits, a fifth of each window kept for
// people). The last case sends /verify only once bulk work has used its share
// of the hour. It logs the latency from /verify to the task's label and to
// the green check (real and scaled), GitHub's refusals, the deferrals and the
// reads; it asserts only that GitHub refused nothing and that the /verify
// was answered.
func TestPeopleFirstUnderBulk(t *testing.T) {
	if testing.Short() {
		t.Skip("a measurement of a minute or two")
	}
	for _, tc := range []struct {
		bulk      int
		spentHour bool
	}{{0, false}, {30, false}, {150, false}, {250, true}} {
		t.Run(fmt.Sprintf("B=%d", tc.bulk), func(t *testing.T) { peopleFirst(t, tc.bulk, tc.spentHour) })
	}
}

func peopleFirst(t *testing.T, bulk int, spentHour bool) {
	const repoA, repoB = "acme/a", "acme/b"
	minute := time.Minute / peopleScale
	gh := githubtest.New(githubtest.Options{WriteLimits: githubtest.SecondaryLimits(minute)})
	t.Cleanup(gh.Close)
	gh.AddRepo(repoA, testInstallation)
	gh.AddRepo(repoB, testInstallation)
	for _, u := range []string{"alice", "bob"} {
		gh.SetPermission(repoA, u, "write")
	}
	gh.SetPermission(repoA, "carol", "admin")
	s, err := store.OpenBolt(filepath.Join(t.TempDir(), "countersign.db"))
	if err != nil {
		t.Fatal(err)
	}
	h := startHarness(t, gh, s, func(st *app.Settings) {
		st.Workers = 8
		st.WritesPerMinute, st.WritesPerHour = 80, 500
		st.WriteMargin, st.WriteHeadroom = 0.9, 0.2
		st.PaceMinute = minute
		st.LogLevel = 0 // info: debug lines for hundreds of deliveries only slow the run
	})

	// The task in A, completed: assigned, its pull request approved, CI green.
	n := gh.OpenIssue(repoA, "carol", "Login form", "")
	gh.Assign(repoA, n, "carol", "alice")
	pr, sha := gh.OpenPR(repoA, "alice", githubtest.PROptions{Title: "Login form", Body: fmt.Sprintf("Fixes #%d", n)})
	gh.Review(repoA, pr, "carol", "APPROVED", "")
	for _, name := range []string{"typecheck", "lint", "test"} {
		gh.CheckRun(repoA, sha, name, "", "success", "")
	}
	h.settleWithin(time.Minute)
	if got := peopleState(gh, repoA, n); got != "completed" {
		t.Fatalf("the task in A is %q, want completed", got)
	}
	gh.ResetRequests()
	deferredBefore := peopleMetric(t, h, "countersign_github_writes_deferred_total")

	start := time.Now()
	for i := range bulk {
		gh.OpenIssue(repoB, "dave", fmt.Sprintf("Imported %d", i), "")
	}
	time.Sleep(5 * time.Second / peopleScale)
	if spentHour { // wait until bulk work has used its share of the hour (360 of 450)
		for deadline := time.Now().Add(2 * time.Minute); peopleWrites(gh.Requests(), repoB) < 340 && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(minute) // and the rest of its share
	}
	bWritesAtVerify := peopleWrites(gh.Requests(), repoB)
	verifyAt := time.Now()
	gh.Comment(repoA, n, "bob", "/verify works")
	var toLabel, toCheck time.Duration
	for deadline := time.Now().Add(2 * time.Minute); (toLabel == 0 || toCheck == 0) && time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if toLabel == 0 && peopleState(gh, repoA, n) == "verified" {
			toLabel = time.Since(verifyAt)
		}
		if toCheck == 0 {
			for _, r := range gh.CheckRuns(repoA, sha) {
				if r.Name == rules.CheckName && r.Status == "completed" && r.Conclusion == "success" {
					toCheck = time.Since(verifyAt)
				}
			}
		}
	}
	reqs := gh.Requests()
	var reads, commentReads, writesA, writesB int
	for _, r := range reqs {
		switch {
		case isWrite(r) && strings.HasPrefix(r.Path, "/repos/"+repoA+"/"):
			writesA++
		case isWrite(r) && strings.HasPrefix(r.Path, "/repos/"+repoB+"/"):
			writesB++
		case !isWrite(r):
			reads++
			if strings.HasSuffix(r.Path, "/comments") {
				commentReads++
			}
		}
	}
	deferred := peopleMetric(t, h, "countersign_github_writes_deferred_total") - deferredBefore
	scaled := func(d time.Duration) string {
		if d == 0 {
			return "not answered"
		}
		return fmt.Sprintf("%v (scaled %.1fs)", d.Round(time.Millisecond), (d * peopleScale).Seconds())
	}
	t.Logf("B=%d issues at once (minute = %v), /verify sent %v after the burst, %d writes to B by then:\n"+
		"    /verify → state:verified: %s\n    /verify → check green:    %s\n"+
		"    refused by GitHub: %d; deferrals: %.0f; requests since the burst: %d reads (%d of them comment lists), writes to A %d, to B %d",
		bulk, minute, verifyAt.Sub(start).Round(time.Millisecond), bWritesAtVerify, scaled(toLabel), scaled(toCheck),
		gh.WritesRefused(), deferred, reads, commentReads, writesA, writesB)
	if refused := gh.WritesRefused(); refused != 0 {
		t.Errorf("GitHub refused %d writes", refused)
	}
	if toLabel == 0 || toCheck == 0 {
		t.Errorf("/verify not answered within 2 minutes (label %v, check %v)", toLabel, toCheck)
	}
	h.shutdown()
	if dead, _ := h.store.DeadLetters(context.Background()); len(dead) != 0 {
		t.Errorf("dead letters: %d", len(dead))
	}
}

func peopleState(gh *githubtest.Server, repo string, n int) string {
	for _, l := range gh.Labels(repo, n) {
		if s, ok := strings.CutPrefix(l, "state:"); ok {
			return s
		}
	}
	return ""
}

func peopleWrites(reqs []githubtest.Request, repo string) int {
	n := 0
	for _, r := range reqs {
		if isWrite(r) && r.Status < 400 && strings.HasPrefix(r.Path, "/repos/"+repo+"/") {
			n++
		}
	}
	return n
}

var metricLine = regexp.MustCompile(`(?m)^(\w+)(?:\{[^}]*\})? ([0-9.e+-]+)$`)

// peopleMetric sums a metric's series on /metrics.
func peopleMetric(t *testing.T, h *harness, name string) float64 {
	t.Helper()
	_, body := h.get("/metrics")
	var sum float64
	for _, m := range metricLine.FindAllStringSubmatch(body, -1) {
		if m[1] == name {
			v, err := strconv.ParseFloat(m[2], 64)
			if err != nil {
				t.Fatal(err)
			}
			sum += v
		}
	}
	return sum
}
