package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/app/store/redistest"
	"github.com/countersign/countersign/internal/githubtest"
	"github.com/countersign/countersign/templates"
)

const (
	// cpuRate is the rate, in deliveries a second, at which
	// BenchmarkServeCPU posts its deliveries.
	cpuRate = 500
	// cpuIssues is how many issues.opened deliveries one round posts.
	cpuIssues = 1000
	// cpuSenders is how many goroutines post the deliveries as they fall due.
	cpuSenders = 16
	cpuRepo    = "acme/widgets"
)

// BenchmarkServeCPU measures what one issues.opened delivery costs the real
// `countersign serve` process: its CPU from intake to the state label and the
// task card on GitHub, and the time to the 202 while its workers process the
// deliveries accepted before. The bot runs as its own process (production
// settings: 8 workers, Info logs; writes not paced, since the fake GitHub
// has no secondary limits), so its CPU is measured apart from the fake GitHub
// and the senders in this process, all on the same machine.
//
// Each round opens cpuIssues issues on the fake GitHub with its webhooks
// dropped, then posts their signed issues.opened deliveries to the bot at
// cpuRate a second (open loop: the i-th falls due i/cpuRate s after the
// first) and waits until every issue carries state:pending and a card. In
// the bolt and redis cases the bot's own label and comment events are not
// fed back: one delivery per issue. In the -echoes cases they are, as GitHub
// sends them (about two per issue), and the round ends once every one was
// answered and the bot's queue is empty. Reported:
//
//	cpu-µs/delivery  the serve process's CPU (user + system, from
//	                 /proc/PID/stat) from the first post until every issue is
//	                 done, per issues.opened delivery (its echoes included)
//	p50-µs, p99-µs   time from posting a delivery to its 202
//	processed/s      deliveries processed a second over the round
//
// Run it with
//
//	go test -run '^$' -bench ServeCPU -benchtime 3x ./cmd/countersign/
//
// and profile the serve process with
//
//	COUNTERSIGN_TEST_SERVE_CPUPROFILE=/tmp/serve.prof go test -run '^$' -bench 'ServeCPU/bolt$' -benchtime 2x -o /tmp/cs.test ./cmd/countersign/
//	go tool pprof -top /tmp/cs.test /tmp/serve.prof
//
// (each case writes the file again: profile one case at a time).
func BenchmarkServeCPU(b *testing.B) {
	b.Run("bolt", func(b *testing.B) { serveCPU(b, false) })
	b.Run("redis", func(b *testing.B) { serveCPU(b, false, "REDIS_URL="+redistest.Start(b)) })
	b.Run("bolt-echoes", func(b *testing.B) { serveCPU(b, true) })
	b.Run("redis-echoes", func(b *testing.B) { serveCPU(b, true, "REDIS_URL="+redistest.Start(b)) })
}

func serveCPU(b *testing.B, echoes bool, env ...string) {
	gh := newGitHub(githubtest.Options{})
	b.Cleanup(gh.Close)
	gh.AddRepo(cpuRepo, 7)
	dir := b.TempDir()
	addr := freeAddr(b)
	if p := os.Getenv(serveProfileEnv); p != "" {
		env = append(env, serveProfileEnv+"="+p)
	}
	bot := startBot(b, gh, filepath.Join(dir, "countersign.db"), addr, filepath.Join(dir, "bot.log"),
		append([]string{"COUNTERSIGN_WORKERS=8", "COUNTERSIGN_WRITES_PER_MINUTE=0", "COUNTERSIGN_WRITES_PER_HOUR=0"}, env...)...)
	b.Cleanup(func() {
		// Stopped gracefully, serve writes its profile (when asked to).
		_ = bot.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = bot.cmd.Wait(); close(done) }()
		select {
		case <-done:
			bot.logs.Close()
		case <-time.After(30 * time.Second):
			bot.kill()
		}
	})
	url := "http://" + addr + "/webhook"
	gh.SetWebhook(url, []byte(crashSecret))
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 2 * cpuSenders, MaxIdleConnsPerHost: 2 * cpuSenders}}
	b.Cleanup(client.CloseIdleConnections)

	// Warm up: installation token, the App's login, the repository's labels.
	var warm []int
	for i := range 8 {
		warm = append(warm, gh.OpenIssue(cpuRepo, "alice", fmt.Sprintf("warm-up %d", i), "Warm-up task."))
	}
	cpuWaitDone(b, gh, warm)

	var lat []time.Duration
	var cpu, elapsed time.Duration
	total := 0
	b.ResetTimer()
	for round := range b.N {
		b.StopTimer()
		before := len(gh.Deliveries())
		gh.DropWebhooks(true)
		var issues []int
		for i := range cpuIssues {
			issues = append(issues, gh.OpenIssue(cpuRepo, "alice", fmt.Sprintf("round %d: task %d", round, i),
				"Benchmark task. The form validates email."))
		}
		var payloads [][]byte
		for _, d := range gh.Deliveries()[before:] {
			if d.Dropped && d.Event == "issues" && d.Action == "opened" {
				payloads = append(payloads, d.Payload)
			}
		}
		if len(payloads) != cpuIssues {
			b.Fatalf("recorded %d issues.opened deliveries, want %d", len(payloads), cpuIssues)
		}
		if echoes {
			gh.DropWebhooks(false)
		}
		b.StartTimer()
		start, cpu0 := time.Now(), procCPU(b, bot.cmd.Process.Pid)
		l, err := cpuPostPaced(client, url, payloads, fmt.Sprintf("cpu-%d-%d", time.Now().UnixNano(), round))
		if err != nil {
			b.Fatal(err)
		}
		cpuWaitDone(b, gh, issues)
		if echoes {
			cpuWaitEchoes(b, gh, "http://"+addr+"/metrics")
		}
		cpu += procCPU(b, bot.cmd.Process.Pid) - cpu0
		elapsed += time.Since(start)
		b.StopTimer()
		gh.DropWebhooks(false)
		lat = append(lat, l...)
		total += len(payloads)
		b.StartTimer()
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(cpu.Microseconds())/float64(total), "cpu-µs/delivery")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(total)/elapsed.Seconds(), "processed/s")
}

// cpuPostPaced posts the issues.opened deliveries at cpuRate a second, the
// i-th due i/cpuRate s after the first whether or not earlier ones were
// answered, and returns each one's time from being posted to its 202.
func cpuPostPaced(client *http.Client, url string, payloads [][]byte, nonce string) ([]time.Duration, error) {
	due := make(chan int)
	lat := make([]time.Duration, len(payloads))
	errs := make(chan error, len(payloads))
	var wg sync.WaitGroup
	for range cpuSenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range due {
				mac := hmac.New(sha256.New, []byte(crashSecret))
				mac.Write(payloads[i])
				req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(payloads[i]))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-GitHub-Event", "issues")
				req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("%s-%d", nonce, i))
				req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
				start := time.Now()
				resp, err := client.Do(req)
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusAccepted {
						err = fmt.Errorf("delivery %d: status %d", i, resp.StatusCode)
					}
				}
				lat[i] = time.Since(start)
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	start := time.Now()
	for i := range payloads {
		time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / cpuRate)))
		due <- i
	}
	close(due)
	wg.Wait()
	close(errs)
	return lat, <-errs
}

// cpuWaitDone waits (up to 2 minutes, polling every 10 ms) until every issue
// carries state:pending and exactly one task card of the bot.
func cpuWaitDone(tb testing.TB, gh *githubtest.Server, issues []int) {
	tb.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for len(issues) > 0 {
		n := issues[0]
		if v, ok := gh.Issue(cpuRepo, n); ok && containsString(v.Labels, "state:pending") {
			cards := 0
			for _, c := range v.Comments {
				if c.User == gh.BotLogin() && templates.IsCard(c.Body) {
					cards++
				}
			}
			if cards > 1 {
				tb.Fatalf("issue #%d has %d task cards", n, cards)
			}
			if cards == 1 {
				issues = issues[1:]
				continue
			}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%d issues not done after 2 minutes, #%d first", len(issues), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// cpuWaitEchoes waits until the fake GitHub has sent every webhook (the
// bot's echoes) and the bot's queue is empty.
func cpuWaitEchoes(tb testing.TB, gh *githubtest.Server, metricsURL string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := gh.WaitWebhooks(ctx); err != nil {
		tb.Fatalf("echoes not sent: %v", err)
	}
	for {
		resp, err := http.Get(metricsURL)
		if err != nil {
			tb.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			tb.Fatal(err)
		}
		if strings.Contains(string(body), "\ncountersign_queue_depth 0\n") {
			return
		}
		if ctx.Err() != nil {
			tb.Fatal("the bot's queue did not empty in 2 minutes")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// procCPU is the CPU time (user + system, all threads) process pid has used,
// from /proc/PID/stat, in clock ticks of 10 ms.
func procCPU(tb testing.TB, pid int) time.Duration {
	tb.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatalf("CPU of the bot: %v", err)
	}
	// The command name (field 2) may hold spaces: fields count from its ")".
	_, rest, ok := strings.Cut(string(raw), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		tb.Fatalf("CPU of the bot: unexpected /proc/%d/stat: %q", pid, raw)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		tb.Fatalf("CPU of the bot: unexpected /proc/%d/stat: %q", pid, raw)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
