package app_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/app/store/bolt"
	"github.com/countersign/countersign/internal/githubtest"
	"github.com/countersign/countersign/rules"
	"github.com/countersign/countersign/templates"
)

// peopleScale is how much faster than real time TestPeopleFirstUnderBulk
// runs: its pacing minute, and the fake GitHub's, last 60 s / peopleScale.
const peopleScale = 20

// peopleHeavyEnv runs TestPeopleFirstUnderBulk's heavy cases (B = 150, and
// B = 250 with the hour's background share spent: a few minutes).
const peopleHeavyEnv = "COUNTERSIGN_PEOPLE_FIRST_HEAVY"

// TestPeopleFirstUnderBulk reproduces issue 22's measurement with a scaled
// clock: one installation, two completed tasks in repository A, and B issues
// opened at once in repository B (an import); five (scaled) seconds later a
// verifier comments /verify on the first task in A. The fake GitHub enforces
// GitHub's secondary limits (80 writes a minute, 500 an hour per
// installation) on the same scaled clock, and countersign runs with its
// default pacing (90% of the limits, a fifth of each window kept for
// people). In the last case the second task's /verify is sent only once
// bulk work has spent the hour's background share (360 writes). It logs the
// latency from each /verify to the task's label and to the green check (real
// and scaled), GitHub's refusals, the deferrals and the reads, and, where
// the hour is not spent, how long the import took to drain (every issue
// labelled and carded) and its writes per scaled minute; it asserts only
// that GitHub refused nothing, that each /verify was answered and that the
// import drained. In the two-installation case the 500 issues go to
// repository B in another installation, whose backlog and spent hour must
// not delay the first's /verify. By default it runs B = 0 and 30; set
// COUNTERSIGN_PEOPLE_FIRST_HEAVY=1 for B = 150, 250 and 500 (another
// installation) too.
func TestPeopleFirstUnderBulk(t *testing.T) {
	if testing.Short() {
		t.Skip("a measurement")
	}
	heavy := os.Getenv(peopleHeavyEnv) != ""
	for _, tc := range []struct {
		bulk      int
		spentHour bool
		heavy     bool
		elsewhere bool // the bulk goes to another installation
	}{{0, false, false, false}, {30, false, false, false}, {150, false, true, false}, {250, true, true, false}, {500, true, true, true}} {
		name := fmt.Sprintf("B=%d", tc.bulk)
		if tc.elsewhere {
			name += "/another-installation"
		}
		t.Run(name, func(t *testing.T) {
			if tc.heavy && !heavy {
				t.Skipf("a measurement of minutes: set %s=1", peopleHeavyEnv)
			}
			peopleFirst(t, tc.bulk, tc.spentHour, tc.elsewhere)
		})
	}
}

// peopleTask is a completed task in repository A: its number and its pull
// request's head.
type peopleTask struct {
	n   int
	sha string
}

func peopleFirst(t *testing.T, bulk int, spentHour, elsewhere bool) {
	const repoA, repoB = "acme/a", "acme/b"
	minute := time.Minute / peopleScale
	gh := newGitHub(githubtest.Options{WriteLimits: githubtest.SecondaryLimits(minute)})
	t.Cleanup(gh.Close)
	gh.AddRepo(repoA, testInstallation)
	bulkInstallation := int64(testInstallation)
	if elsewhere {
		bulkInstallation++
	}
	gh.AddRepo(repoB, bulkInstallation)
	for _, u := range []string{"alice", "bob"} {
		gh.SetPermission(repoA, u, "write")
	}
	gh.SetPermission(repoA, "carol", "admin")
	s, err := bolt.Open(filepath.Join(t.TempDir(), "countersign.db"))
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

	// Two tasks in A, completed: assigned, a pull request approved, CI green.
	var tasks []peopleTask
	for i := range 2 {
		n := gh.OpenIssue(repoA, "carol", fmt.Sprintf("Login form %d", i), "")
		gh.Assign(repoA, n, "carol", "alice")
		pr, sha := gh.OpenPR(repoA, "alice", githubtest.PROptions{Title: fmt.Sprintf("Login form %d", i), Body: fmt.Sprintf("Fixes #%d", n)})
		gh.Review(repoA, pr, "carol", "APPROVED", "")
		for _, name := range []string{"typecheck", "lint", "test"} {
			gh.CheckRun(repoA, sha, name, "", "success", "")
		}
		tasks = append(tasks, peopleTask{n, sha})
	}
	h.settleWithin(time.Minute)
	for _, tk := range tasks {
		if got := peopleState(gh, repoA, tk.n); got != "completed" {
			t.Fatalf("task #%d in A is %q, want completed", tk.n, got)
		}
	}
	gh.ResetRequests()
	deferredBefore := peopleMetric(t, h, "countersign_github_writes_deferred_total")
	scaled := func(d time.Duration) string {
		if d == 0 {
			return "not answered"
		}
		return fmt.Sprintf("%v (scaled %.1fs)", d.Round(time.Millisecond), (d * peopleScale).Seconds())
	}
	where := ""
	if elsewhere {
		where = " in another installation"
	}
	verify := func(what string, tk peopleTask) {
		bWrites := peopleWrites(gh.Requests(), repoB)
		verifyAt := time.Now()
		gh.Comment(repoA, tk.n, "bob", "/verify works")
		var toLabel, toCheck time.Duration
		for deadline := time.Now().Add(2 * time.Minute); (toLabel == 0 || toCheck == 0) && time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
			if toLabel == 0 && peopleState(gh, repoA, tk.n) == "verified" {
				toLabel = time.Since(verifyAt)
			}
			if toCheck == 0 {
				for _, r := range gh.CheckRuns(repoA, tk.sha) {
					if r.Name == rules.CheckName && r.Status == "completed" && r.Conclusion == "success" {
						toCheck = time.Since(verifyAt)
					}
				}
			}
		}
		// The fake GitHub sends its webhooks one at a time, in order: the
		// /verify's waits behind those queued before it (the burst's and the
		// echoes of countersign's writes), which real GitHub sends at once.
		var toWebhook time.Duration
		for _, d := range gh.Deliveries() {
			if d.Event == "issue_comment" && d.Sender == "bob" && d.Queued.After(verifyAt.Add(-time.Millisecond)) && !d.Sent.IsZero() {
				toWebhook = d.Sent.Sub(verifyAt)
			}
		}
		var toAnswered string
		if toLabel != 0 && toCheck != 0 && toWebhook != 0 {
			toAnswered = scaled(max(toLabel, toCheck) - toWebhook)
		}
		t.Logf("B=%d%s: %s, %d writes to B by then:\n    /verify → state:verified: %s\n    /verify → check green:    %s\n    (of which the fake GitHub took %s to deliver the /verify's webhook; webhook → answered: %s)",
			bulk, where, what, bWrites, scaled(toLabel), scaled(toCheck), scaled(toWebhook), toAnswered)
		if toLabel == 0 || toCheck == 0 {
			t.Errorf("%s: /verify not answered within 2 minutes (label %v, check %v)", what, toLabel, toCheck)
		}
	}

	start := time.Now()
	var imported []int
	for i := range bulk {
		imported = append(imported, gh.OpenIssue(repoB, "dave", fmt.Sprintf("Imported %d", i), ""))
	}
	time.Sleep(5 * time.Second / peopleScale)
	verify(fmt.Sprintf("/verify sent %v after the burst", time.Since(start).Round(time.Millisecond)), tasks[0])
	if spentHour {
		// Wait until bulk work has spent the hour's background share (360 of
		// 450): most of that many writes to B, then none for two (scaled)
		// minutes. (Turns handed back unused after later ones were given
		// out leave it short: 324 in one run.)
		last, since := 0, time.Now()
		for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			w := peopleWrites(gh.Requests(), repoB)
			if w != last {
				last, since = w, time.Now()
				continue
			}
			if w >= 300 && time.Since(since) > 2*minute {
				break
			}
		}
		if w := peopleWrites(gh.Requests(), repoB); w < 300 {
			t.Fatalf("bulk work wrote %d times to B, short of the hour's background share (360)", w)
		}
		t.Logf("B=%d: writes to %s per scaled minute until then: %v", bulk, repoB, peoplePerMinute(gh, repoB, start))
		verify(fmt.Sprintf("second /verify sent %v after the burst, the hour's background share spent", time.Since(start).Round(time.Millisecond)), tasks[1])
	}
	if !spentHour && bulk > 0 {
		peopleDrain(t, gh, repoB, imported, start)
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
	t.Logf("B=%d issues at once (minute = %v): refused by GitHub: %d; deferrals: %.0f; requests since the burst: %d reads (%d of them comment lists), writes to A %d, to B %d",
		bulk, minute, gh.WritesRefused(), deferred, reads, commentReads, writesA, writesB)
	if refused := gh.WritesRefused(); refused != 0 {
		t.Errorf("GitHub refused %d writes", refused)
	}
	h.shutdown()
	if dead, _ := h.store.DeadLetters(context.Background()); len(dead) != 0 {
		t.Errorf("dead letters: %d", len(dead))
	}
}

// peopleDrain waits until every imported issue in repo is labelled and
// carded, and logs how long the drain took from the burst (scaled) and the
// writes to repo in each scaled minute.
func peopleDrain(t *testing.T, gh *githubtest.Server, repo string, imported []int, start time.Time) {
	t.Helper()
	done := func() int {
		n := 0
		for _, num := range imported {
			v, ok := gh.Issue(repo, num)
			if !ok || !slices.Contains(v.Labels, "state:pending") {
				continue
			}
			if slices.ContainsFunc(v.Comments, func(c githubtest.CommentView) bool {
				return c.User == gh.BotLogin() && templates.IsCard(c.Body)
			}) {
				n++
			}
		}
		return n
	}
	var drained time.Duration
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if done() == len(imported) {
			drained = time.Since(start)
			break
		}
	}
	perMinute := peoplePerMinute(gh, repo, start)
	if drained == 0 {
		t.Errorf("B=%d: only %d of the imported issues labelled and carded after 3 minutes (scaled 60); writes to %s per scaled minute: %v",
			len(imported), done(), repo, perMinute)
		return
	}
	t.Logf("B=%d: all imported issues labelled and carded %v after the burst (scaled %.0fs); writes to %s per scaled minute: %v",
		len(imported), drained.Round(time.Millisecond), (drained * peopleScale).Seconds(), repo, perMinute)
}

// peoplePerMinute is the writes to repo in each scaled minute from start.
func peoplePerMinute(gh *githubtest.Server, repo string, start time.Time) []int {
	minute := time.Minute / peopleScale
	var perMinute []int
	for _, r := range gh.Requests() {
		if !isWrite(r) || r.Status >= 400 || !strings.HasPrefix(r.Path, "/repos/"+repo+"/") || r.Time.Before(start) {
			continue
		}
		i := int(r.Time.Sub(start) / minute)
		for len(perMinute) <= i {
			perMinute = append(perMinute, 0)
		}
		perMinute[i]++
	}
	return perMinute
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
