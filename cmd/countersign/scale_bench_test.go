package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/app/store/redistest"
	"github.com/countersign/countersign/internal/githubtest"
	"github.com/countersign/countersign/templates"
	"github.com/redis/go-redis/v9"
	bbolt "go.etcd.io/bbolt"
)

// scaleEnv switches BenchmarkThousandInstallations on: "1" for the full
// size (1,000 installations × 5 repositories, 20,000 tracked tasks), or
// "INSTALLATIONSxREPOSxTASKS" (e.g. "50x5x1000") for a smaller one.
const scaleEnv = "COUNTERSIGN_SCALE_BENCH"

// scaleRound is how many issues.opened deliveries one CPU round posts: a
// single installation's round (3 requests an issue) stays under GitHub's
// 5,000 requests an hour and the tenth of it a resync leaves alone.
const scaleRound = 1200

type scaleSize struct{ installations, repos, tasks int }

func scaleSizeFromEnv(b *testing.B) scaleSize {
	spec := os.Getenv(scaleEnv)
	if spec == "" {
		b.Skipf("on demand only: set %s=1 (1,000 installations × 5 repositories, 20,000 tasks) or %s=50x5x1000", scaleEnv, scaleEnv)
	}
	if spec == "1" {
		return scaleSize{1000, 5, 20000}
	}
	var s scaleSize
	if n, err := fmt.Sscanf(spec, "%dx%dx%d", &s.installations, &s.repos, &s.tasks); n != 3 || err != nil ||
		s.installations < 1 || s.repos < 1 || s.tasks < s.installations*s.repos {
		b.Fatalf("%s=%q: want 1 or INSTALLATIONSxREPOSxTASKS with TASKS >= INSTALLATIONS*REPOS", scaleEnv, spec)
	}
	return s
}

// BenchmarkThousandInstallations runs one `countersign serve` process (its
// own process: production settings, 8 workers, Info logs; writes not paced,
// as the fake GitHub has no secondary limits) for many installations at
// once: 1,000 installations of 5 repositories each, with 20,000 tracked
// tasks (4 a repository), on the embedded store and on Redis. It runs only
// on demand (it takes minutes):
//
//	COUNTERSIGN_SCALE_BENCH=1 go test -run '^$' -bench ThousandInstallations -benchtime 1x -timeout 60m ./cmd/countersign/
//
// In order, it measures:
//
//  1. single-cpu-µs: CPU of serve per issues.opened delivery (state label
//     and card, echoes not fed back), 1,200 issues in one repository of an
//     installation of its own, before anything else exists: the
//     single-installation figure.
//  2. It then tracks the 20,000 tasks (every repository's first issues,
//     posted as fast as they are taken in).
//  3. spread-cpu-µs: the same as 1 with the 1,200 issues spread over every
//     installation (one or two each, rotating over their repositories),
//     with the 20,000 tasks tracked; spread-vs-single-% is its excess over
//     the single figure. loaded-single-cpu-µs: the single round again (in
//     another installation of its own, warmed up), with everything tracked.
//  4. rss-MB, hwm-MB: serve's resident memory (VmRSS) and its peak (VmHWM)
//     with everything tracked; metrics-lines: the lines of its /metrics.
//  5. A round like 3 with GitHub's echoes fed back, so the App's delivery
//     log holds what a busy App's does.
//  6. serve is stopped (SIGTERM) and started again with healing every 10 s:
//     ready-ms is the time from starting the process to /readyz answering
//     200; startup-requests the requests to GitHub from the start until its
//     reconciliation pass resynced every repository and the queue is empty
//     (by kind in the log), startup-heal-requests healing's meanwhile;
//     startup-drain-ms how long that pass took.
//  7. heal-requests/pass: the requests of the heal passes in the next 30 s
//     (no deliveries meanwhile), per pass; heal-requests/h what that
//     makes at the default interval (a minute).
//  8. db-MB (bolt: the file), redis-MB (Redis: used_memory).
func BenchmarkThousandInstallations(b *testing.B) {
	size := scaleSizeFromEnv(b)
	b.Run("bolt", func(b *testing.B) { scaleRun(b, size, "") })
	b.Run("redis", func(b *testing.B) { scaleRun(b, size, redistest.Start(b)) })
}

func scaleRepo(inst, r int) string { return fmt.Sprintf("org%04d/repo%d", inst, r) }

// scaleIssue is one issue of a repository.
type scaleIssue struct {
	repo   string
	number int
}

func scaleRun(b *testing.B, size scaleSize, redisURL string) {
	gh := newGitHub(githubtest.Options{})
	b.Cleanup(gh.Close)
	for i := range size.installations {
		for r := range size.repos {
			gh.AddRepo(scaleRepo(i+1, r+1), int64(1000+i+1))
		}
	}
	// The single-installation rounds, each in an installation of its own
	// (each spends most of its hour's requests).
	solo, loadedSolo := "solo/widgets", "solo2/widgets"
	gh.AddRepo(solo, 1)
	gh.AddRepo(loadedSolo, 2)
	dir := b.TempDir()
	dbPath := filepath.Join(dir, "countersign.db")
	addr := freeAddr(b)
	env := []string{"COUNTERSIGN_WORKERS=8", "COUNTERSIGN_WRITES_PER_MINUTE=0", "COUNTERSIGN_WRITES_PER_HOUR=0",
		"COUNTERSIGN_LOG_LEVEL=info", "COUNTERSIGN_HEAL_INTERVAL=0"}
	if redisURL != "" {
		env = append(env, "REDIS_URL="+redisURL)
	}
	// GOMEMLIMIT, when set, is serve's too.
	if v := os.Getenv("GOMEMLIMIT"); v != "" {
		env = append(env, "GOMEMLIMIT="+v)
	}
	// COUNTERSIGN_SCALE_HEAP=DIR: serve's heap profile when its memory is
	// read, to DIR/heap-bolt.pprof (or -redis).
	heapProfile := ""
	if d := os.Getenv("COUNTERSIGN_SCALE_HEAP"); d != "" {
		heapProfile = filepath.Join(d, "heap-"+map[bool]string{true: "redis", false: "bolt"}[redisURL != ""]+".pprof")
		env = append(env, serveHeapProfileEnv+"="+heapProfile)
	}
	bot := startBot(b, gh, dbPath, addr, filepath.Join(dir, "bot.log"), env...)
	b.Cleanup(bot.kill)
	url := "http://" + addr + "/webhook"
	gh.SetWebhook(url, []byte(crashSecret))
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 2 * cpuSenders, MaxIdleConnsPerHost: 2 * cpuSenders}}
	b.Cleanup(client.CloseIdleConnections)
	pid := func() int { return bot.cmd.Process.Pid }

	// round opens the issues where says, posts their issues.opened
	// deliveries at cpuRate a second (echoes fed back if echoes), waits
	// until each has its label and card, and returns serve's CPU per
	// delivery.
	round := func(what string, where func(i int) string, n int, echoes bool) time.Duration {
		before := len(gh.Deliveries())
		gh.DropWebhooks(true)
		issues := make([]scaleIssue, n)
		for i := range n {
			repo := where(i)
			issues[i] = scaleIssue{repo, gh.OpenIssue(repo, "alice", fmt.Sprintf("%s: task %d", what, i), "Benchmark task. The form validates email.")}
		}
		var payloads [][]byte
		for _, d := range gh.Deliveries()[before:] {
			if d.Dropped && d.Event == "issues" && d.Action == "opened" {
				payloads = append(payloads, d.Payload)
			}
		}
		if len(payloads) != n {
			b.Fatalf("%s: recorded %d issues.opened deliveries, want %d", what, len(payloads), n)
		}
		if echoes {
			gh.DropWebhooks(false)
		}
		cpu0 := procCPU(b, pid())
		if _, err := cpuPostPaced(client, url, payloads, fmt.Sprintf("%s-%d", strings.ReplaceAll(what, " ", "-"), time.Now().UnixNano())); err != nil {
			b.Fatal(err)
		}
		scaleWaitDone(b, gh, issues, 30*time.Minute)
		if echoes {
			cpuWaitEchoes(b, gh, "http://"+addr+"/metrics")
		}
		cpu := procCPU(b, pid()) - cpu0
		gh.DropWebhooks(false)
		return cpu / time.Duration(n)
	}
	spread := func(i int) string {
		inst := i%size.installations + 1
		return scaleRepo(inst, (i/size.installations)%size.repos+1)
	}
	load := func() string { raw, _ := os.ReadFile("/proc/loadavg"); return strings.TrimSpace(string(raw)) }

	// Warm up: the App's login, the first installation's token and labels.
	round("warm-up", func(int) string { return solo }, 8, false)

	b.Logf("load average before single: %s", load())
	single := round("single", func(int) string { return solo }, scaleRound, false)

	// Track the tasks: every repository's first issues, all posted at once
	// at cpuRate a second.
	perRepo := size.tasks / (size.installations * size.repos)
	seedStart := time.Now()
	seeded := round("seed", func(i int) string {
		k := i / perRepo
		return scaleRepo(k/size.repos+1, k%size.repos+1)
	}, perRepo*size.installations*size.repos, false)
	b.Logf("tracked %d tasks in %s (%.0f µs of CPU each, first touch of every installation and repository included)",
		perRepo*size.installations*size.repos, time.Since(seedStart).Round(time.Second), float64(seeded.Microseconds()))

	round("warm-up", func(int) string { return loadedSolo }, 8, false)
	b.Logf("load average before spread: %s", load())
	spreadCPU := round("spread", spread, scaleRound, false)
	loadedSingle := round("loaded single", func(int) string { return loadedSolo }, scaleRound, false)
	rss, hwm := procMem(b, pid())
	status := procStatus(b, pid())
	dbResident := procMappedRSS(b, pid(), dbPath)
	if heapProfile != "" {
		_ = bot.cmd.Process.Signal(syscall.SIGUSR1)
		time.Sleep(2 * time.Second)
	}
	heapInuse := scaleGauge(b, "http://"+addr+"/metrics", "go_memstats_heap_inuse_bytes")
	heapLive := scaleGauge(b, "http://"+addr+"/metrics", "go_memstats_heap_alloc_bytes")
	metricsLines := scaleMetricsLines(b, "http://"+addr+"/metrics")
	echoCPU := round("spread echoes", spread, scaleRound, true)
	b.Logf("load average after the rounds: %s", load())

	// Restart, healing every 10 s.
	if err := bot.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		b.Fatal(err)
	}
	_ = bot.cmd.Wait()
	bot.logs.Close()
	if redisURL == "" {
		b.Logf("the store's file before the restart:\n%s", scaleBoltStats(b, dbPath))
	}
	gh.ResetRequests()
	start := time.Now()
	env2 := []string{"COUNTERSIGN_HEAL_INTERVAL=10s"}
	for _, e := range env {
		if !strings.HasPrefix(e, "COUNTERSIGN_HEAL_INTERVAL=") {
			env2 = append(env2, e)
		}
	}
	bot = startBot(b, gh, dbPath, addr, filepath.Join(dir, "bot2.log"), env2...)
	ready := time.Since(start)
	b.Cleanup(bot.kill)
	b.Logf("ready %s after the start; RSS before the restart %.1f MB (peak %.1f), /metrics %d lines; CPU per delivery: single %s, spread %s, loaded single %s, spread with echoes %s",
		ready.Round(time.Millisecond), float64(rss)/(1<<20), float64(hwm)/(1<<20), metricsLines, single, spreadCPU, loadedSingle, echoCPU)
	repos := size.installations*size.repos + 2
	scaleWaitStartupPass(b, gh, "http://"+addr+"/metrics", repos, 30*time.Minute)
	drained := time.Since(start)
	var startup, healAtStart []githubtest.Request
	for _, r := range gh.Requests() {
		if strings.HasPrefix(r.Path, "/app/hook/deliveries") {
			healAtStart = append(healAtStart, r)
		} else {
			startup = append(startup, r)
		}
	}
	rss2, hwm2 := procMem(b, pid())
	b.Logf("start-up pass: %d resyncs done %s after the start, %d requests besides healing's %d", repos, drained.Round(time.Millisecond), len(startup), len(healAtStart))

	// Heal passes with nothing new: 30 s at 10 s.
	gh.ResetRequests()
	time.Sleep(30 * time.Second)
	var healReqs, passes int
	var lastPass time.Time
	for _, r := range gh.Requests() {
		if strings.HasPrefix(r.Path, "/app/hook/deliveries") {
			healReqs++
			if r.Time.Sub(lastPass) > 5*time.Second {
				passes++
			}
			lastPass = r.Time
		}
	}

	b.ReportMetric(float64(single.Microseconds()), "single-cpu-µs")
	b.ReportMetric(float64(spreadCPU.Microseconds()), "spread-cpu-µs")
	b.ReportMetric(float64(loadedSingle.Microseconds()), "loaded-single-cpu-µs")
	b.ReportMetric(100*(float64(spreadCPU)/float64(single)-1), "spread-vs-single-%")
	b.ReportMetric(float64(echoCPU.Microseconds()), "spread-echoes-cpu-µs")
	b.ReportMetric(float64(rss)/(1<<20), "rss-MB")
	b.ReportMetric(float64(hwm)/(1<<20), "hwm-MB")
	b.ReportMetric(float64(status["RssAnon"])/(1<<20), "rss-anon-MB")
	b.ReportMetric(float64(status["RssFile"])/(1<<20), "rss-file-MB")
	if redisURL == "" {
		b.ReportMetric(float64(dbResident)/(1<<20), "rss-db-MB")
	}
	b.ReportMetric(heapInuse/(1<<20), "heap-inuse-MB")
	b.ReportMetric(heapLive/(1<<20), "heap-alloc-MB")
	b.ReportMetric(float64(rss2)/(1<<20), "restarted-rss-MB")
	b.ReportMetric(float64(hwm2)/(1<<20), "restarted-hwm-MB")
	b.ReportMetric(float64(metricsLines), "metrics-lines")
	b.ReportMetric(float64(ready.Milliseconds()), "ready-ms")
	b.ReportMetric(float64(drained.Milliseconds()), "startup-drain-ms")
	b.ReportMetric(float64(len(startup)), "startup-requests")
	b.ReportMetric(float64(len(healAtStart)), "startup-heal-requests")
	if passes > 0 {
		b.ReportMetric(float64(healReqs)/float64(passes), "heal-requests/pass")
		b.ReportMetric(60*float64(healReqs)/float64(passes), "heal-requests/h")
	}
	if redisURL == "" {
		if fi, err := os.Stat(dbPath); err == nil {
			b.ReportMetric(float64(fi.Size())/(1<<20), "db-MB")
		}
	} else {
		b.ReportMetric(scaleRedisUsed(b, redisURL)/(1<<20), "redis-MB")
	}
	b.Logf("start-up requests besides healing (%d, ready in %s, the pass done after %s):\n%s", len(startup), ready.Round(time.Millisecond),
		drained.Round(time.Millisecond), scaleSummarize(startup))
	b.Logf("heal: %d requests in %d passes over 30 s", healReqs, passes)
}

// scaleWaitDone waits until every issue carries state:pending and exactly
// one task card of the bot, looking at up to 256 not yet done a poll.
func scaleWaitDone(tb testing.TB, gh *githubtest.Server, issues []scaleIssue, timeout time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	pending := append([]scaleIssue(nil), issues...)
	for len(pending) > 0 {
		keep := pending[:0]
		looked := 0
		for i, is := range pending {
			if looked >= 256 {
				keep = append(keep, pending[i:]...)
				break
			}
			looked++
			v, ok := gh.Issue(is.repo, is.number)
			if ok && containsString(v.Labels, "state:pending") {
				cards := 0
				for _, c := range v.Comments {
					if c.User == gh.BotLogin() && templates.IsCard(c.Body) {
						cards++
					}
				}
				if cards > 1 {
					tb.Fatalf("%s#%d has %d task cards", is.repo, is.number, cards)
				}
				if cards == 1 {
					continue
				}
			}
			keep = append(keep, is)
		}
		pending = keep
		if len(pending) == 0 {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%d of %d issues not done after %s, %s#%d first", len(pending), len(issues), timeout, pending[0].repo, pending[0].number)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// scaleWaitStartupPass waits until the start-up pass resynced every one of
// repos repositories and the bot's queue is empty.
func scaleWaitStartupPass(tb testing.TB, gh *githubtest.Server, metricsURL string, repos int, timeout time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		done := scaleGauge(tb, metricsURL, `countersign_reconcile_resyncs_total{why="start-up"}`)
		if done >= float64(repos) && scaleGauge(tb, metricsURL, "countersign_queue_depth") == 0 {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("the start-up pass did %v of %d resyncs in %s", done, repos, timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// scaleGauge reads one unlabelled metric from /metrics (-1 if absent).
func scaleGauge(tb testing.TB, metricsURL, name string) float64 {
	tb.Helper()
	resp, err := http.Get(metricsURL)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err == nil {
				return f
			}
		}
	}
	return -1
}

// scaleMetricsLines counts the sample lines of /metrics: what its label
// cardinality costs each scrape.
func scaleMetricsLines(tb testing.TB, metricsURL string) int {
	tb.Helper()
	resp, err := http.Get(metricsURL)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n := 0
	for sc.Scan() {
		if !strings.HasPrefix(sc.Text(), "#") {
			n++
		}
	}
	return n
}

// procMem is VmRSS and VmHWM of process pid, in bytes.
func procMem(tb testing.TB, pid int) (rss, hwm uint64) {
	m := procStatus(tb, pid)
	return m["VmRSS"], m["VmHWM"]
}

// procMappedRSS is how much of the file at path is resident in process
// pid through its mappings (/proc/pid/smaps), in bytes.
func procMappedRSS(tb testing.TB, pid int, path string) uint64 {
	tb.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		tb.Fatal(err)
	}
	var kb uint64
	in := false
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if strings.Contains(f[0], "-") && len(f) >= 5 { // a mapping's header
			in = f[len(f)-1] == path
			continue
		}
		if in && f[0] == "Rss:" {
			n, _ := strconv.ParseUint(f[1], 10, 64)
			kb += n
		}
	}
	return kb << 10
}

// procStatus is the sizes (in bytes) of /proc/pid/status: VmRSS and its
// parts RssAnon (the heap, stacks) and RssFile (files mapped in memory,
// such as bbolt's), VmHWM...
func procStatus(tb testing.TB, pid int) map[string]uint64 {
	tb.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]uint64{}
	for _, line := range strings.Split(string(raw), "\n") {
		k, v, ok := strings.Cut(line, ":")
		f := strings.Fields(v)
		if !ok || len(f) != 2 || f[1] != "kB" {
			continue
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			continue
		}
		out[k] = kb << 10
	}
	return out
}

func scaleRedisUsed(tb testing.TB, redisURL string) float64 {
	tb.Helper()
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		tb.Fatal(err)
	}
	c := redis.NewClient(opt)
	defer c.Close()
	txt, err := c.Info(context.Background(), "memory").Result()
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(txt, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

// scaleBoltStats describes the bbolt file at path: each bucket's keys and
// bytes in use, and the pages free.
func scaleBoltStats(tb testing.TB, path string) string {
	tb.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
	if err != nil {
		return fmt.Sprintf("open %s: %v", path, err)
	}
	defer db.Close()
	var sb strings.Builder
	err = db.View(func(tx *bbolt.Tx) error {
		fmt.Fprintf(&sb, "  file %.1f MB, %d pages of %d bytes\n", float64(tx.Size())/(1<<20), tx.Size()/int64(db.Info().PageSize), db.Info().PageSize)
		return tx.ForEach(func(name []byte, bk *bbolt.Bucket) error {
			st := bk.Stats()
			fmt.Fprintf(&sb, "  %-10s %7d keys, %6.1f MB in use (leaves %.1f of %.1f MB allocated)\n", name, st.KeyN,
				float64(st.LeafInuse+st.BranchInuse)/(1<<20), float64(st.LeafInuse)/(1<<20), float64(st.LeafAlloc+st.BranchAlloc)/(1<<20))
			return nil
		})
	})
	if err != nil {
		return err.Error()
	}
	st := db.Stats()
	fmt.Fprintf(&sb, "  free pages %d (%.1f MB), pending %d, freelist %d bytes\n", st.FreePageN, float64(st.FreePageN*db.Info().PageSize)/(1<<20), st.PendingPageN, st.FreelistInuse)
	return sb.String()
}

// scaleSummarize counts requests by method, path shape (names and numbers
// elided) and status.
func scaleSummarize(reqs []githubtest.Request) string {
	counts := map[string]int{}
	for _, r := range reqs {
		parts := strings.Split(r.Path, "/")
		if len(parts) > 3 && parts[1] == "repos" {
			parts[2], parts[3] = "O", "R"
		}
		for i, p := range parts {
			if _, err := strconv.Atoi(p); err == nil {
				parts[i] = "N"
			}
		}
		counts[fmt.Sprintf("%s %s -> %d", r.Method, strings.Join(parts, "/"), r.Status)]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&sb, "  %6d  %s\n", counts[k], k)
	}
	return sb.String()
}
