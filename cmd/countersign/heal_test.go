package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/app/store/redistest"
	"github.com/countersign/countersign/internal/githubtest"
	"github.com/redis/go-redis/v9"
)

// Healing and reconciliation, end to end through `countersign serve`
// (docs/design.md, What countersign guarantees, invariants 4 and 6): GitHub never retries a failed delivery.

const healRepo = "acme/widgets"

// healBound is how soon after the bot is healthy again (or after the failed
// delivery) a missed delivery must be healed.
const healBound = 90 * time.Second

func healGitHub(t *testing.T) *githubtest.Server {
	t.Helper()
	gh := newGitHub(githubtest.Options{Latency: time.Millisecond})
	t.Cleanup(gh.Close)
	gh.AddRepo(healRepo, 3)
	gh.SetPermission(healRepo, "carol", "admin")
	gh.SetPermission(healRepo, "alice", "write")
	gh.SetPermission(healRepo, "bob", "write")
	return gh
}

// waitUntil polls cond until it holds or within passes; it returns how long it took.
func waitUntil(t *testing.T, within time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > within {
			dumpLogs(t)
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

func waitWebhooks(t *testing.T, gh *githubtest.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := gh.WaitWebhooks(ctx); err != nil {
		t.Fatal(err)
	}
}

func hasLabels(gh *githubtest.Server, n int, want ...string) func() bool {
	return func() bool { return slices.Equal(gh.Labels(healRepo, n), want) }
}

// botComments counts the bot's comments on issue n.
func botComments(gh *githubtest.Server, n int) int {
	c := 0
	for _, cm := range gh.Comments(healRepo, n) {
		if cm.User == gh.BotLogin() {
			c++
		}
	}
	return c
}

// metric sums the samples of a metric on the bot's /metrics whose line
// starts with prefix (a name, or a name and labels).
func (b *bot) metric(t *testing.T, prefix string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + b.addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			sum += v
		}
	}
	return sum
}

func logCount(t *testing.T, path, msg string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), `"msg":"`+msg+`"`)
}

// toCompleted takes a new task to completed: alice built it, carol approved.
func toCompleted(t *testing.T, gh *githubtest.Server) int {
	t.Helper()
	n := gh.OpenIssue(healRepo, "carol", "Validate the email field", "")
	gh.Assign(healRepo, n, "carol", "alice")
	gh.Comment(healRepo, n, "alice", "/start")
	gh.Comment(healRepo, n, "alice", "/submit built it")
	gh.Comment(healRepo, n, "carol", "/approve")
	waitUntil(t, 30*time.Second, "task completed", hasLabels(gh, n, "state:completed"))
	return n
}

// redeliveries counts the redeliveries of delivery guid.
func redeliveries(gh *githubtest.Server, guid string) int {
	n := 0
	for _, d := range gh.Deliveries() {
		if d.ID == guid && d.Redelivery {
			n++
		}
	}
	return n
}

// A /verify sent while the bot was killed counts once it is back: the
// start-up heal pass has GitHub redeliver it; nothing is replayed twice over
// further passes, nor across another restart.
func TestHealsAVerifySentWhileDown(t *testing.T) {
	t.Parallel()
	gh := healGitHub(t)
	dir := t.TempDir()
	data, logPath, addr := filepath.Join(dir, "c.db"), filepath.Join(dir, "bot.log"), freeAddr(t)
	env := []string{"COUNTERSIGN_HEAL_INTERVAL=1s"}
	b := startBot(t, gh, data, addr, logPath, env...)
	gh.SetWebhook("http://"+addr+"/webhook", []byte(crashSecret))
	n := toCompleted(t, gh)
	waitUntil(t, 10*time.Second, "queue drained", func() bool { d, ok := b.queueDepth(); return ok && d == 0 })

	b.kill()
	gh.Comment(healRepo, n, "bob", "/verify checked it")
	waitWebhooks(t, gh)
	ds := gh.Deliveries()
	verify := ds[len(ds)-1]
	if verify.Event != "issue_comment" || verify.Status != 0 || verify.Error == "" {
		t.Fatalf("the /verify while down: %+v; want a failed delivery", verify)
	}

	b = startBot(t, gh, data, addr, logPath, env...)
	took := waitUntil(t, healBound, "/verify healed after the restart", hasLabels(gh, n, "state:verified"))
	t.Logf("healed %v after the restart", took.Round(time.Millisecond))
	if got := redeliveries(gh, verify.ID); got != 1 {
		t.Fatalf("the /verify was redelivered %d times; want 1", got)
	}
	comments := botComments(gh, n)
	time.Sleep(3 * time.Second) // three more heal passes
	b.kill()
	b = startBot(t, gh, data, addr, logPath, env...)
	defer b.kill()
	time.Sleep(3 * time.Second)
	if got := redeliveries(gh, verify.ID); got != 1 {
		t.Fatalf("after more passes and a restart the /verify was redelivered %d times; want 1", got)
	}
	if got := botComments(gh, n); got != comments {
		t.Fatalf("bot comments went from %d to %d after healing: something was replayed", comments, got)
	}
	if !hasLabels(gh, n, "state:verified")() {
		t.Fatalf("labels %v", gh.Labels(healRepo, n))
	}
	// The /verify's redelivery is logged once. Any other one logged is of a
	// delivery that failed too (an echo of the bot's own last write, sent
	// as it was killed), each once.
	failed := map[string]bool{}
	for _, d := range gh.Deliveries() {
		if !d.Redelivery && !d.Pending && d.Status == 0 {
			failed[d.ID] = true
		}
	}
	logged := map[string]int{}
	for _, id := range logValues(t, logPath, "missed delivery redelivered", "delivery") {
		logged[id]++
		if !failed[id] {
			t.Errorf("delivery %s redelivered, but it had not failed", id)
		}
	}
	if logged[verify.ID] != 1 {
		t.Fatalf("the /verify's redelivery logged %d times; want 1 (all logged: %v)", logged[verify.ID], logged)
	}
	for id, n := range logged {
		if n != 1 {
			t.Errorf("delivery %s's redelivery logged %d times; want 1", id, n)
		}
	}
}

// An approval the bot answered 503 (its store briefly away) is healed while
// the bot stays up, at the next heal pass.
func TestHealsA503dApprovalWhileUp(t *testing.T) {
	t.Parallel()
	gh := healGitHub(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	b := startBot(t, gh, filepath.Join(dir, "c.db"), addr, filepath.Join(dir, "bot.log"), "COUNTERSIGN_HEAL_INTERVAL=2s")
	defer b.kill()
	gh.SetWebhook("http://"+addr+"/webhook", []byte(crashSecret))
	n := gh.OpenIssue(healRepo, "carol", "Tidy the footer", "")
	gh.Assign(healRepo, n, "carol", "alice")
	gh.Comment(healRepo, n, "alice", "/start")
	gh.Comment(healRepo, n, "alice", "/submit done")
	waitUntil(t, 30*time.Second, "task in review", hasLabels(gh, n, "state:review"))

	gh.SetWebhookFault(1, githubtest.HookUnavailable, func(event, action string) bool { return event == "issue_comment" && action == "created" })
	gh.Comment(healRepo, n, "carol", "/approve")
	waitWebhooks(t, gh)
	// The approval's delivery (the card's own edits echo as issue_comment
	// too, and may come after it).
	var failed githubtest.SentWebhook
	for _, d := range gh.Deliveries() {
		if d.Event == "issue_comment" && d.Action == "created" && d.Sender == "carol" {
			failed = d
		}
	}
	if failed.Status != http.StatusServiceUnavailable {
		t.Fatalf("approval delivery %+v; want a 503", failed)
	}
	took := waitUntil(t, healBound, "503'd approval healed", hasLabels(gh, n, "state:completed"))
	t.Logf("healed %v after the 503", took.Round(time.Millisecond))
	time.Sleep(4 * time.Second) // two more passes
	if got := redeliveries(gh, failed.ID); got != 1 {
		t.Fatalf("redelivered %d times; want 1", got)
	}
	if b.metric(t, "countersign_heal_redelivered_total") != 1 || b.metric(t, "countersign_heal_missed_total") != 1 {
		t.Fatalf("heal metrics: redelivered %v, missed %v; want 1, 1",
			b.metric(t, "countersign_heal_redelivered_total"), b.metric(t, "countersign_heal_missed_total"))
	}
	if age := b.metric(t, "countersign_heal_last_success_age_seconds"); age < 0 || age > 10 {
		t.Fatalf("last heal %v s ago", age)
	}
}

// A state label someone changed while the bot was down, whose events GitHub
// lost altogether (so the delivery log cannot heal it), is repaired by the
// start-up reconciliation.
func TestReconcilesLabelsChangedWhileDown(t *testing.T) {
	t.Parallel()
	gh := healGitHub(t)
	dir := t.TempDir()
	data, logPath, addr := filepath.Join(dir, "c.db"), filepath.Join(dir, "bot.log"), freeAddr(t)
	b := startBot(t, gh, data, addr, logPath)
	gh.SetWebhook("http://"+addr+"/webhook", []byte(crashSecret))
	n := toCompleted(t, gh)
	other := gh.OpenIssue(healRepo, "carol", "Untouched", "")
	waitUntil(t, 10*time.Second, "bot idle", func() bool {
		d, ok := b.queueDepth()
		return ok && d == 0 && botComments(gh, other) == 1 && hasLabels(gh, other, "state:pending")()
	})
	waitWebhooks(t, gh)
	b.kill()

	gh.DropWebhooks(true)
	gh.RemoveLabel(healRepo, n, "mallory", "state:completed")
	gh.AddLabels(healRepo, n, "mallory", "state:verified")
	gh.DropWebhooks(false)
	gh.ResetRequests()

	b = startBot(t, gh, data, addr, logPath)
	defer b.kill()
	took := waitUntil(t, healBound, "labels reconciled", hasLabels(gh, n, "state:completed"))
	t.Logf("reconciled %v after the restart", took.Round(time.Millisecond))
	if !hasLabels(gh, other, "state:pending")() {
		t.Fatalf("untouched task's labels %v", gh.Labels(healRepo, other))
	}
	waitUntil(t, 10*time.Second, "repair counted", func() bool { return b.metric(t, "countersign_reconcile_repairs_total") == 1 })
	if got := logCount(t, logPath, "label drift repaired"); got != 1 {
		t.Fatalf("%d repairs logged; want 1", got)
	}
	var writes []string
	for _, r := range gh.Requests() {
		if r.Method != http.MethodGet && strings.HasPrefix(r.Path, "/repos/") {
			writes = append(writes, r.Method+" "+r.Path)
		}
	}
	if len(writes) != 2 { // the label added back, the one taken off
		t.Fatalf("%d writes to repair one task; want 2: %v", len(writes), writes)
	}
}

// `countersign resync owner/repo` repairs drift on demand, while the bot
// runs (Redis).
func TestResyncCommand(t *testing.T) {
	t.Parallel()
	redisURL := redistest.Start(t)
	gh := healGitHub(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	b := startBot(t, gh, filepath.Join(dir, "unused.db"), addr, filepath.Join(dir, "bot.log"),
		"REDIS_URL="+redisURL, "COUNTERSIGN_RECONCILE_INTERVAL=0")
	defer b.kill()
	gh.SetWebhook("http://"+addr+"/webhook", []byte(crashSecret))
	n := gh.OpenIssue(healRepo, "carol", "Drifts", "")
	waitUntil(t, 10*time.Second, "task pending", hasLabels(gh, n, "state:pending"))
	gh.DropWebhooks(true)
	gh.AddLabels(healRepo, n, "mallory", "escalated")
	gh.DropWebhooks(false)
	time.Sleep(500 * time.Millisecond)
	if !hasLabels(gh, n, "escalated", "state:pending")() {
		t.Fatalf("labels %v before the resync", gh.Labels(healRepo, n))
	}

	for _, bad := range [][]string{{"resync", "--redis-url", redisURL, "not-a-repo"}, {"resync", "--redis-url", redisURL, "a/b", "c/d"}} {
		if out, err := command(context.Background(), nil, bad...).CombinedOutput(); err == nil {
			t.Fatalf("%v succeeded: %s", bad, out)
		}
	}
	out, err := command(context.Background(), nil, "resync", "--redis-url", redisURL, healRepo).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "resync of acme/widgets queued") {
		t.Fatalf("resync: %v: %s", err, out)
	}
	waitUntil(t, 30*time.Second, "drift repaired by the resync command", hasLabels(gh, n, "state:pending"))

	// Every tracked repository.
	gh.DropWebhooks(true)
	gh.AddLabels(healRepo, n, "mallory", "forced")
	gh.DropWebhooks(false)
	if out, err := command(context.Background(), nil, "resync", "--redis-url", redisURL).CombinedOutput(); err != nil {
		t.Fatalf("resync: %v: %s", err, out)
	}
	waitUntil(t, 30*time.Second, "drift repaired by resync of all", hasLabels(gh, n, "state:pending"))
}

// An installation event creates the owned labels, with their colours, and
// starts tracking the repository.
func TestInstallationCreatesLabels(t *testing.T) {
	t.Parallel()
	gh := healGitHub(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	b := startBot(t, gh, filepath.Join(dir, "c.db"), addr, filepath.Join(dir, "bot.log"))
	defer b.kill()
	gh.SetWebhook("http://"+addr+"/webhook", []byte(crashSecret))
	payload := fmt.Sprintf(`{"action":"created","installation":{"id":3},"repositories":[{"id":1,"name":"widgets","full_name":%q}],"sender":{"login":"carol","type":"User"}}`, healRepo)
	if code := postSigned(t, addr, "installation", "install-1", payload); code != http.StatusAccepted {
		t.Fatalf("installation event: %d", code)
	}
	want := map[string]string{"state:pending": "ededed", "state:verified": "5319e7", "escalated": "b60205", "forced": "d93f0b"}
	waitUntil(t, 20*time.Second, "owned labels created", func() bool {
		got := map[string]string{}
		for _, l := range gh.RepoLabels(healRepo) {
			got[l.Name] = l.Color
		}
		for name, colour := range want {
			if got[name] != colour {
				return false
			}
		}
		return len(got) >= 9
	})
	waitUntil(t, 10*time.Second, "resync counted", func() bool {
		return b.metric(t, `countersign_reconcile_resyncs_total{why="installation"}`) == 1
	})
}

func postSigned(t *testing.T, addr, event, id, payload string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/webhook", strings.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", id)
	req.Header.Set("X-Hub-Signature-256", sign([]byte(payload), crashSecret))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Two replicas on Redis: one heals, each failed delivery is redelivered and
// acted on once.
func TestTwoReplicasHealOnce(t *testing.T) {
	t.Parallel()
	redisURL := redistest.Start(t)
	gh := healGitHub(t)
	dir := t.TempDir()
	var bots []*bot
	var logs []string
	for i := 0; i < 2; i++ {
		logPath := filepath.Join(dir, fmt.Sprintf("replica-%d.log", i))
		logs = append(logs, logPath)
		b := startBot(t, gh, filepath.Join(dir, "unused.db"), freeAddr(t), logPath, "REDIS_URL="+redisURL, "COUNTERSIGN_HEAL_INTERVAL=1s")
		defer b.kill()
		bots = append(bots, b)
	}
	gh.SetWebhook("http://"+bots[0].addr+"/webhook", []byte(crashSecret))
	n := gh.OpenIssue(healRepo, "carol", "Status please", "")
	waitUntil(t, 10*time.Second, "task pending, with its card", func() bool {
		return hasLabels(gh, n, "state:pending")() && botComments(gh, n) == 1
	})
	before := botComments(gh, n)
	gh.SetWebhookFault(3, githubtest.HookUnavailable, func(event, action string) bool { return event == "issue_comment" && action == "created" })
	for i := 0; i < 3; i++ {
		gh.Comment(healRepo, n, "bob", "/status")
	}
	waitWebhooks(t, gh)
	waitUntil(t, healBound, "three /status replies", func() bool { return botComments(gh, n) == before+3 })
	time.Sleep(4 * time.Second) // several more passes on each replica
	if got := botComments(gh, n); got != before+3 {
		t.Fatalf("%d replies; want 3", got-before)
	}
	total := 0
	for _, d := range gh.Deliveries() {
		if d.Redelivery {
			total++
		}
	}
	logged := logCount(t, logs[0], "missed delivery redelivered") + logCount(t, logs[1], "missed delivery redelivered")
	if total != 3 || logged != 3 {
		t.Fatalf("%d redeliveries (%d logged); want 3", total, logged)
	}
}

// GitHub down (then rate limiting) for what would have dead-lettered every
// delivery many times over, then back: nothing is dead-lettered, everything
// is processed. The wait cap is short so the test's seconds stand for an hour
// of 5-minute waits: what matters is the number of tries, far beyond
// COUNTERSIGN_MAX_ATTEMPTS.
func TestGitHubDownThenBack(t *testing.T) {
	t.Parallel()
	gh := healGitHub(t)
	dir := t.TempDir()
	addr, logPath := freeAddr(t), filepath.Join(dir, "bot.log")
	b := startBot(t, gh, filepath.Join(dir, "c.db"), addr, logPath,
		"COUNTERSIGN_MAX_ATTEMPTS=2", "COUNTERSIGN_GITHUB_WAIT_MAX=100ms", "COUNTERSIGN_HEAL_INTERVAL=1s")
	defer b.kill()
	gh.SetWebhook("http://"+addr+"/webhook", []byte(crashSecret))

	gh.SetOutage(http.StatusServiceUnavailable, nil)
	var issues []int
	for i := 0; i < 3; i++ {
		issues = append(issues, gh.OpenIssue(healRepo, "carol", fmt.Sprintf("during the outage %d", i), ""))
	}
	waitWebhooks(t, gh)
	waitUntil(t, 60*time.Second, "many tries while GitHub is down", func() bool {
		return b.metric(t, `countersign_deliveries_processed_total{event="issues",outcome="waiting"}`) >= 3*10
	})
	// Then rate limited, with a reset a few seconds ahead.
	reset := time.Now().Add(3 * time.Second).Unix()
	gh.SetOutage(http.StatusForbidden, map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": strconv.FormatInt(reset, 10)})
	time.Sleep(2 * time.Second)
	gh.SetOutage(0, nil)

	for _, n := range issues {
		waitUntil(t, 60*time.Second, fmt.Sprintf("#%d processed after the outage", n), hasLabels(gh, n, "state:pending"))
	}
	if dead := b.metric(t, "countersign_dead_letters"); dead != 0 {
		t.Fatalf("%v dead letters", dead)
	}
	if got := logCount(t, logPath, "delivery dead-lettered"); got != 0 {
		t.Fatalf("%d deliveries dead-lettered", got)
	}
	if b.metric(t, `countersign_github_rate_limit_remaining{installation="3"}`) <= 0 {
		t.Fatalf("no rate-limit figure for installation 3")
	}
}

// dumpLogs shows the bots' logs of a failed test (every *.log of its temp dirs).
func dumpLogs(t *testing.T) {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(os.TempDir(), strings.ReplaceAll(t.Name(), "/", "_")+"*", "*", "*.log"))
	for _, p := range paths {
		b, _ := os.ReadFile(p)
		t.Logf("%s:\n%s", p, b)
	}
}

// While Redis is unreachable the bot logs a few lines, not several a second,
// and go-redis's own lines are JSON through slog.
func TestRedisOutageLogsAreRateLimited(t *testing.T) {
	// Serial: it counts log lines over 3 s of wall time, which other
	// tests' load stretches.
	redisURL := redistest.Start(t)
	gh := healGitHub(t)
	dir := t.TempDir()
	logPath := filepath.Join(dir, "bot.log")
	b := startBot(t, gh, filepath.Join(dir, "unused.db"), freeAddr(t), logPath, "REDIS_URL="+redisURL)
	defer b.kill()
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	rc := redis.NewClient(opt)
	defer rc.Close()
	mark, _ := os.ReadFile(logPath)
	_ = rc.ShutdownNoSave(context.Background()).Err() // the connection drops: no answer
	for i := 0; i < 30; i++ {                         // readiness probes meanwhile
		if resp, err := http.Get("http://" + b.addr + "/readyz"); err == nil {
			resp.Body.Close()
		}
		time.Sleep(100 * time.Millisecond)
	}
	all, _ := os.ReadFile(logPath)
	lines := strings.Split(strings.TrimSpace(string(all[len(mark):])), "\n")
	errorsOrWarnings := 0
	for _, l := range lines {
		if !strings.HasPrefix(l, "{") {
			t.Fatalf("a log line that is not JSON: %s", l)
		}
		if strings.Contains(l, `"level":"ERROR"`) || strings.Contains(l, `"level":"WARN"`) {
			errorsOrWarnings++
		}
	}
	// 3 s of outage, 4 workers polling and 30 probes: before, ~8 lines a second.
	if errorsOrWarnings > 8 {
		t.Fatalf("%d ERROR/WARN lines in 3 s of Redis outage; want a few:\n%s", errorsOrWarnings, strings.Join(lines, "\n"))
	}
	t.Logf("%d ERROR/WARN lines in 3 s of Redis outage", errorsOrWarnings)
}

// The time from a restart to 100 deliveries missed while the bot was down
// healed and processed (each a new issue, labeled state:pending), through
// `countersign serve`, and the requests healing made.
//
//	go test -run '^$' -bench Heal100MissedThroughServe -benchtime 3x ./cmd/countersign/
func BenchmarkHeal100MissedThroughServe(b *testing.B) {
	var total time.Duration
	var healRequests int
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		gh := newGitHub(githubtest.Options{Latency: time.Millisecond})
		gh.AddRepo(healRepo, 3)
		dir := b.TempDir()
		data, logPath, addr := filepath.Join(dir, "c.db"), filepath.Join(dir, "bot.log"), freeAddr(b)
		gh.SetWebhook("http://"+addr+"/webhook", []byte(crashSecret))
		var issues []int
		for j := 0; j < 100; j++ { // the bot is not running: every delivery fails
			issues = append(issues, gh.OpenIssue(healRepo, "carol", fmt.Sprintf("missed %d", j), ""))
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := gh.WaitWebhooks(ctx); err != nil {
			b.Fatal(err)
		}
		cancel()
		gh.ResetRequests()
		b.StartTimer()
		start := time.Now()
		bt := startBot(b, gh, data, addr, logPath)
		for _, n := range issues {
			for !slices.Equal(gh.Labels(healRepo, n), []string{"state:pending"}) {
				if time.Since(start) > 2*time.Minute {
					b.Fatalf("#%d not healed in 2 minutes", n)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		total += time.Since(start)
		b.StopTimer()
		for _, r := range gh.Requests() {
			if strings.HasPrefix(r.Path, "/app/hook/") {
				healRequests++
			}
		}
		bt.kill()
		gh.Close()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/100-healed")
	b.ReportMetric(float64(healRequests)/float64(b.N), "heal-requests/100-healed")
}

// logValues are the string values of field in the log lines of path whose
// message is msg, in order.
func logValues(t *testing.T, path, msg, field string) []string {
	t.Helper()
	var out []string
	for _, rec := range logRecords(t, path, msg) {
		if v, ok := rec[field].(string); ok {
			out = append(out, v)
		}
	}
	return out
}

// logRecords are the JSON log lines of path whose message is msg, in order.
func logRecords(t *testing.T, path, msg string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, l := range strings.Split(string(b), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(l), &rec) == nil && rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}
