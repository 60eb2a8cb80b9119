package main

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/githubtest"
	"github.com/countersign/countersign/templates"
)

// bot is one `countersign serve` process.
type bot struct {
	t    testing.TB
	cmd  *exec.Cmd
	addr string
	logs *os.File
}

func startBot(t testing.TB, gh *githubtest.Server, dataPath, addr, logPath string, extraEnv ...string) *bot {
	t.Helper()
	logs, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	env := append([]string{
		"GITHUB_APP_ID=1", "GITHUB_PRIVATE_KEY=" + string(gh.PrivateKeyPEM()), "GITHUB_WEBHOOK_SECRET=" + crashSecret,
		"GITHUB_API_URL=" + gh.URL(), "COUNTERSIGN_DATA=" + dataPath, "COUNTERSIGN_LISTEN=" + addr,
		"COUNTERSIGN_WORKERS=4",
		// At test speed: GitHub's 80 writes a minute would make a lifecycle take
		// minutes. Pacing is tested in app (TestBurstOfIssuesIsPaced) and app/pace.
		"COUNTERSIGN_WRITES_PER_MINUTE=6000", "COUNTERSIGN_WRITES_PER_HOUR=0",
	}, extraEnv...)
	cmd := command(context.Background(), env, "serve")
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	b := &bot{t: t, cmd: cmd, addr: addr, logs: logs}
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return b
			}
		}
		if time.Now().After(deadline) {
			b.kill()
			t.Fatalf("bot not ready; logs in %s", logPath)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (b *bot) kill() {
	b.cmd.Process.Signal(syscall.SIGKILL)
	b.cmd.Wait()
	b.logs.Close()
}

// queueDepth reads countersign_queue_depth from the bot's /metrics.
func (b *bot) queueDepth() (float64, bool) {
	resp, err := http.Get("http://" + b.addr + "/metrics")
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var v float64
		if n, _ := fmt.Sscanf(sc.Text(), "countersign_queue_depth %g", &v); n == 1 {
			return v, true
		}
	}
	return 0, false
}

const crashSecret = "crash-secret-for-tests"

// crashScenario is what users do: four people open issues, at once.
func crashScenario(gh *githubtest.Server) {
	for i, user := range []string{"alice", "bob", "carol", "dave"} {
		gh.OpenIssue("acme/widgets", user, fmt.Sprintf("task %d", i+1), "")
	}
}

// githubState is what the scenario leaves on GitHub, without ids and times.
func githubState(gh *githubtest.Server) string {
	var b strings.Builder
	var repoLabels []string
	for _, l := range gh.RepoLabels("acme/widgets") {
		repoLabels = append(repoLabels, l.Name+"/"+l.Color)
	}
	sort.Strings(repoLabels)
	fmt.Fprintf(&b, "repo labels %v\n", repoLabels)
	for _, n := range gh.IssueNumbers("acme/widgets") {
		var cards, others []string
		for _, c := range gh.Comments("acme/widgets", n) {
			if c.User != gh.BotLogin() {
				continue
			}
			if rec, ok := templates.CardRecord(c.Body); ok && templates.IsCard(c.Body) {
				// The record's content minus its timestamps.
				cards = append(cards, stripTimes(string(rec)))
			} else {
				others = append(others, c.Body)
			}
		}
		fmt.Fprintf(&b, "#%d labels %v cards %v other bot comments %d\n", n, gh.Labels("acme/widgets", n), cards, len(others))
	}
	return b.String()
}

// timeRE matches the timestamps a record carries (event times differ between runs).
var timeRE = regexp.MustCompile(`"\d{4}-\d\d-\d\dT[0-9:.]+(?:Z|[+-]\d\d:\d\d)"`)

func stripTimes(rec string) string { return timeRE.ReplaceAllString(rec, "T") }

// settleBot waits until every webhook was answered (redelivering those that
// failed while the bot was down, as an operator or a resync would) and the bot's
// queue is empty and GitHub's state stops changing.
func settleBot(t *testing.T, gh *githubtest.Server, b *bot) string {
	t.Helper()
	// A bound, not a measure: the package's tests run side by side, each
	// with bots of its own, on a machine perhaps loaded besides.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	done := redeliveredBy(gh)
	last, stable := "", 0
	for stable < 3 {
		if err := gh.WaitWebhooks(ctx); err != nil {
			t.Fatalf("webhooks: %v", err)
		}
		for _, d := range gh.Deliveries() {
			if (d.Status == 0 || d.Status >= 500) && !d.Pending && !d.Redelivery && !done[d.ID] {
				done[d.ID] = true
				gh.Redeliver(d.ID)
			}
		}
		depth, ok := b.queueDepth()
		state := githubState(gh)
		if ok && depth == 0 && state == last {
			stable++
		} else {
			stable = 0
		}
		last = state
		select {
		case <-ctx.Done():
			t.Fatalf("bot did not settle; state:\n%s", state)
		case <-time.After(50 * time.Millisecond):
		}
	}
	return last
}

// redelivered holds, per fake GitHub, the deliveries settleBot had it
// redeliver (a map per server: the tests that settle bots run in parallel,
// each on fake GitHubs of its own).
var redelivered sync.Map // *githubtest.Server → map[string]bool

// redeliveredBy is gh's set in redelivered; one test uses it at a time.
func redeliveredBy(gh *githubtest.Server) map[string]bool {
	m, _ := redelivered.LoadOrStore(gh, map[string]bool{})
	return m.(map[string]bool)
}

// Killed (SIGKILL) at a random point and restarted, the bot ends every trial in
// the same GitHub state as an uninterrupted run: nothing accepted is lost and no
// effect is applied twice.
func TestCrashAtRandomPointsConverges(t *testing.T) {
	t.Parallel()
	crashTrials(t, crashScenario, false, func(want string) bool {
		return strings.Contains(want, "state:pending") && strings.Count(want, "cards [{") == 4
	})
}

// lifecycleScenario takes tasks through the lifecycle with commands only (so
// one task's events all share its key and their order is GitHub's): one is
// verified, one rejected twice (a rejection notice each time, then an
// escalation), one has its state label tampered with.
func lifecycleScenario(gh *githubtest.Server) {
	const repo = "acme/widgets"
	gh.SetPermission(repo, "carol", "admin")
	gh.SetPermission(repo, "alice", "write")
	gh.SetPermission(repo, "bob", "write")
	submit := func(n int) {
		gh.Comment(repo, n, "alice", "/submit built it")
		gh.Comment(repo, n, "carol", "/approve")
	}
	for i, title := range []string{"verified", "escalated", "tampered"} {
		n := gh.OpenIssue(repo, "carol", title, "")
		gh.Assign(repo, n, "carol", "alice")
		gh.Comment(repo, n, "alice", "/start")
		submit(n)
		switch i {
		case 0:
			gh.Comment(repo, n, "alice", "/verify mine")
			gh.Comment(repo, n, "bob", "/verify checked")
		case 1:
			gh.Comment(repo, n, "bob", "/reject the form accepts 'abc' as an email")
			submit(n)
			gh.Comment(repo, n, "bob", "/reject still accepts 'a@'")
		case 2:
			gh.AddLabels(repo, n, "mallory", "state:verified")
		}
	}
}

// Killed while deciding and applying a lifecycle (derived deliveries, notices,
// escalations, reverted labels), the bot converges to the uninterrupted run's
// state, with each notice posted once. Every delivery is accepted before the
// kill, so GitHub's order is kept; intake crashes are the test above's.
func TestCrashDuringTheLifecycleConverges(t *testing.T) {
	t.Parallel()
	crashTrials(t, lifecycleScenario, true, func(want string) bool {
		return strings.Contains(want, "state:verified") && strings.Contains(want, "escalated") &&
			strings.Contains(want, "other bot comments 3") // two rejections and the escalation
	})
}

// crashTrials runs scenario once uninterrupted, then in trials killed at
// random points and restarted, and demands the same end state from each.
// acceptFirst holds the webhooks until the scenario is done, and kills only
// once every one is accepted.
//
// A kill point is a count of GitHub requests, drawn within the
// uninterrupted run's (until its last write): the bot is killed as soon as
// the fake has answered that many in the trial. It is a point in the work,
// not in time, so the trials run side by side, and beside the package's
// other tests, on a machine however loaded: drawn in time within the
// uninterrupted run's duration, as they once were, beside other tests that
// duration said nothing of the trials' (once 28 s under the load of the
// starting parallel tests, after which 23 of 25 kills came after the work
// was done), and the trials had to run one after the other, alone.
func crashTrials(t *testing.T, scenario func(*githubtest.Server), acceptFirst bool, plausible func(string) bool) {
	if testing.Short() {
		t.Skip("crash trials take a minute; run without -short")
	}
	trials := 50
	if acceptFirst {
		trials = 25
	}
	dir := t.TempDir()

	// run plays one trial, killing the bot once GitHub has answered killAt
	// requests since the scenario was played (never, if killAt < 0). It
	// returns the state settled, the requests until the last write, and the
	// state at the kill.
	run := func(t *testing.T, trial int, killAt int) (string, int, string) {
		gh := newGitHub(githubtest.Options{Latency: 2 * time.Millisecond})
		defer gh.Close()
		gh.AddRepo("acme/widgets", 3)
		data := filepath.Join(dir, fmt.Sprintf("trial-%d.db", trial))
		logPath := filepath.Join(dir, fmt.Sprintf("trial-%d.log", trial))
		addr := freeAddr(t)
		b := startBot(t, gh, data, addr, logPath)
		gh.SetWebhook("http://"+addr+"/webhook", []byte(crashSecret))
		if acceptFirst {
			gh.SetWebhookPaused(true)
		}
		scenario(gh)
		start := gh.RequestCount()
		if acceptFirst {
			gh.SetWebhookPaused(false)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			err := gh.WaitWebhooks(ctx)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
		}
		atKill := ""
		if killAt >= 0 {
			waitRequests(gh, start+killAt)
			b.kill()
			atKill = githubState(gh)
			b = startBot(t, gh, data, addr, logPath)
		}
		state := settleBot(t, gh, b)
		work := 0 // requests until the last write GitHub saw
		for i, r := range gh.Requests()[start:] {
			if r.Method != http.MethodGet {
				work = i + 1
			}
		}
		b.kill()
		if t.Failed() {
			logs, _ := os.ReadFile(logPath)
			t.Logf("trial %d logs:\n%s", trial, logs)
		}
		return state, work, atKill
	}

	want, work, _ := run(t, 0, -1)
	if !plausible(want) {
		t.Fatalf("uninterrupted run ended in an unexpected state:\n%s", want)
	}
	// Kill points spread over the uninterrupted run's work (until its last
	// write to GitHub), so crashes land while deliveries are being accepted,
	// decided, committed and applied.
	var mu sync.Mutex
	interrupted := 0
	t.Run("trials", func(t *testing.T) {
		for i := 1; i <= trials; i++ {
			kill := rand.IntN(work + 1)
			t.Run(fmt.Sprintf("%d-killed-after-%d-requests", i, kill), func(t *testing.T) {
				t.Parallel()
				got, _, atKill := run(t, i, kill)
				if got != want {
					t.Fatalf("trial %d (killed after %d requests) ended in another state:\n got:\n%s\nwant:\n%s", i, kill, got, want)
				}
				if atKill != want {
					mu.Lock()
					interrupted++
					mu.Unlock()
				}
			})
		}
	})
	if t.Failed() {
		return
	}
	t.Logf("%d trials, kill points within %d requests, %d killed mid-work, all converged", trials, work, interrupted)
	if interrupted < trials/4 {
		t.Fatalf("only %d of %d kills landed before the work was done: the trials prove little", interrupted, trials)
	}
}

// waitRequests waits until gh has answered n requests, or has answered none
// for half a second (the bot has nothing more to ask: a run may take fewer
// requests than another, a cached read for one).
func waitRequests(gh *githubtest.Server, n int) {
	last, since := gh.RequestCount(), time.Now()
	for last < n && time.Since(since) < 500*time.Millisecond {
		time.Sleep(time.Millisecond)
		if c := gh.RequestCount(); c != last {
			last, since = c, time.Now()
		}
	}
}
