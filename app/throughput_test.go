package app_test

// Throughput benchmarks: intake latency on Redis, sustained intake under
// concurrent senders, and end-to-end processing of opened issues with one or
// two replicas over a fake GitHub with and without API latency. Everything
// heavy here is a Benchmark, so `go test ./...` does not run it. Run e.g.
//
//	go test -run '^$' -bench 'WebhookTo202' ./app/
//	go test -run '^$' -bench 'AcceptSustained' ./app/
//	go test -run '^$' -bench 'EndToEnd' -benchtime 1x ./app/
//
// All servers (bots, fake GitHub, proxy, load generator) share this process
// and its GOMAXPROCS; redis-server is a separate process on the same machine.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/app/store/bolt"
	"github.com/countersign/countersign/app/store/redisstore"
	"github.com/countersign/countersign/app/store/redistest"
	"github.com/countersign/countersign/internal/githubtest"
	"github.com/countersign/countersign/templates"
	"github.com/redis/go-redis/v9"
)

const (
	// tpWorkers is Settings.Workers for the end-to-end and memory benchmarks
	// (the harness default is 4, the production default 8). With 50 ms per
	// GitHub call a task costs >= 4 sequential calls, so the worker count
	// bounds throughput at about tpWorkers/(4*latency) per replica.
	tpWorkers = 16
	// tpSenders is how many goroutines post deliveries at once in
	// BenchmarkAcceptSustained.
	tpSenders = 16
	// tpE2EIssues is how many issues one round of BenchmarkEndToEnd opens: at
	// latency 0 a round of 200 takes only ~0.3 s, so more make the figure stable.
	tpE2EIssues     = 1000
	tpE2EIssuesSlow = 200 // at latency 50ms
)

func tpWithWorkers(n int) harnessOpt { return func(s *app.Settings) { s.Workers = n } }

// tpStartBot is startHarness with production-like logging: the bot logs at
// Info level (the harness logs every delivery at Debug level into an in-memory
// buffer that grows with every delivery, which would be measured as the bot's
// CPU and memory). Warnings and errors still land in h.logs.
func tpStartBot(tb testing.TB, gh *githubtest.Server, s store.Store, opts ...harnessOpt) *harness {
	tb.Helper()
	info := func(st *app.Settings) { st.LogLevel = slog.LevelInfo }
	return startHarness(tb, gh, s, append([]harnessOpt{info}, opts...)...)
}

func tpOpenBolt(tb testing.TB) store.Store {
	tb.Helper()
	s, err := bolt.Open(filepath.Join(tb.TempDir(), "countersign.db"))
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func tpOpenRedis(tb testing.TB, url string) store.Store {
	tb.Helper()
	s, err := redisstore.Open(context.Background(), url)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// tpOpenRedisCounted opens a Redis store as redisstore.Open does (its own
// client on url, pinged first), with a hook that counts the client's round
// trips to Redis (a pipeline counts once) in *n.
func tpOpenRedisCounted(tb testing.TB, url string, n *atomic.Int64) store.Store {
	tb.Helper()
	opt, err := redis.ParseURL(url)
	if err != nil {
		tb.Fatal(err)
	}
	c := redis.NewClient(opt)
	c.AddHook(tpCountHook{n})
	if err := c.Ping(context.Background()).Err(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return redisstore.New(c, "")
}

type tpCountHook struct{ n *atomic.Int64 }

func (h tpCountHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h tpCountHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}
func (h tpCountHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmds)
	}
}

func tpNonce() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// percentile returns the p-th percentile (0..100) of sorted durations.
func tpPercentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := len(sorted) * p / 100
	if i >= len(sorted) {
		i = len(sorted) - 1
	}
	return sorted[i]
}

// ---- 1. sequential intake latency, Redis store ----

// BenchmarkWebhookTo202Redis is BenchmarkWebhookTo202/bolt (app/bench_test.go)
// with a Redis store: sequential signed issue_comment deliveries over real
// HTTP, p50 and p99 time to the 202. (It cannot be a sub-benchmark of
// BenchmarkWebhookTo202 without editing that file.)
func BenchmarkWebhookTo202Redis(b *testing.B) {
	benchIntake(b, func(b *testing.B) store.Store { return tpOpenRedis(b, redistest.Start(b)) })
}

// ---- 2. sustained intake under concurrent senders ----

// BenchmarkAcceptSustained posts b.N signed issue_comment deliveries (unique
// delivery ids, all accepted and durably queued) from tpSenders concurrent
// senders and reports the deliveries accepted per second and the p50/p99 time
// to the 202 under that load. The bot's 4 workers process the queue
// meanwhile (the fixture names one issue, so all deliveries share one ordering
// key and are processed one at a time); backlog is what was still queued when
// the last 202 arrived, and processed/s how fast the workers got through the
// queue meanwhile.
func BenchmarkAcceptSustained(b *testing.B) {
	b.Run("bolt", func(b *testing.B) { tpAcceptSustained(b, tpOpenBolt(b)) })
	b.Run("redis", func(b *testing.B) { tpAcceptSustained(b, tpOpenRedis(b, redistest.Start(b))) })
}

func tpAcceptSustained(b *testing.B, s store.Store) {
	gh := newGitHub(githubtest.Options{})
	b.Cleanup(gh.Close)
	h := tpStartBot(b, gh, s)
	payload := fixture(b, "issue_comment/created.payload.json")
	sig := signature(payload, testSecret)
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 2 * tpSenders, MaxIdleConnsPerHost: 2 * tpSenders}}
	b.Cleanup(client.CloseIdleConnections)
	nonce := tpNonce()

	post := func(id string) (time.Duration, error) {
		req, _ := http.NewRequest(http.MethodPost, h.url+"/webhook", bytes.NewReader(payload))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", "issue_comment")
		req.Header.Set("X-GitHub-Delivery", id)
		req.Header.Set("X-Hub-Signature-256", sig)
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		took := time.Since(start)
		if resp.StatusCode != http.StatusAccepted {
			return took, fmt.Errorf("delivery %s: status %d", id, resp.StatusCode)
		}
		return took, nil
	}
	run := func(n int, prefix string) ([]time.Duration, time.Duration, error) {
		var next atomic.Int64
		var firstErr atomic.Pointer[error]
		lats := make([][]time.Duration, tpSenders)
		var wg sync.WaitGroup
		start := time.Now()
		for g := 0; g < tpSenders; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := next.Add(1) - 1
					if i >= int64(n) || firstErr.Load() != nil {
						return
					}
					d, err := post(fmt.Sprintf("%s-%s-%d", prefix, nonce, i))
					if err != nil {
						firstErr.CompareAndSwap(nil, &err)
						return
					}
					lats[g] = append(lats[g], d)
				}
			}()
		}
		wg.Wait()
		elapsed := time.Since(start)
		if p := firstErr.Load(); p != nil {
			return nil, elapsed, *p
		}
		var all []time.Duration
		for _, l := range lats {
			all = append(all, l...)
		}
		sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
		return all, elapsed, nil
	}

	// Open the senders' connections and warm the store first.
	if _, _, err := run(4*tpSenders, fmt.Sprintf("warm-%d", b.N)); err != nil {
		b.Fatal(err)
	}
	st0, err := s.Stats(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	lat, elapsed, err := run(b.N, fmt.Sprintf("sustained-%d", b.N))
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	st, err := s.Stats(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(float64(tpPercentile(lat, 50).Microseconds()), "p50-µs")
	b.ReportMetric(float64(tpPercentile(lat, 99).Microseconds()), "p99-µs")
	b.ReportMetric(float64(st.Queued), "backlog")
	b.ReportMetric(float64(st0.Queued+b.N-st.Queued)/elapsed.Seconds(), "processed/s")
}

// ---- 3. end to end ----

// BenchmarkEndToEnd opens tpE2EIssues issues per round (tpE2EIssuesSlow with
// latency) on the fake GitHub and waits until every one carries state:pending
// and a task card, with a Redis store, one or two replicas and 0 or 50 ms
// added to every GitHub API call. Two replicas are two app.Server instances,
// each with its own Redis client on the same server (opened as
// redisstore.Open does, plus a hook counting round trips), behind a
// round-robin reverse proxy that the fake sends its webhooks to. Each replica
// runs tpWorkers (16) workers.
//
// hooks=fake: the issues are opened with gh.OpenIssue (from 4 goroutines) and
// the fake sends the issues.opened webhooks itself. The fake posts webhooks one
// at a time, in order (GitHub does not), so at latency 0 its sender is the
// bottleneck (see hook-busy-%).
//
// hooks=parallel: the issues are opened with the fake's webhooks dropped, and
// the recorded issues.opened deliveries are then posted by tpSenders
// concurrent senders, alternating between the replicas, like GitHub's
// concurrent deliveries. (The bot's own label and comment events still come
// back through the fake's sender.)
//
// Before the timed rounds a few issues warm the replicas up (installation
// token, the App's login, the repository label); the API call count covers
// the timed rounds only. Reported besides issues/s:
//
//	api-calls/issue    GitHub API calls per issue (4 when warm)
//	p50-ms, p99-ms     from the issue opened (its delivery posted) to observed
//	                   done (polled every 5 ms; a round's issues arrive at once)
//	cpu-ms/issue       CPU of this process (bots, fake GitHub, proxy, poller)
//	redis-cpu-ms/issue CPU of redis-server (INFO cpu)
//	redis-calls/issue  round trips from the bots to Redis
//	                   (these three, and tcp-conns, count until everything settled,
//	                   so they include the bot's own label and comment events)
//	hook-busy-%        share of the time the fake's single webhook sender was busy
//	tcp-conns/issue    TCP connections to the fake opened (and closed) per issue,
//	                   counted as TIME_WAIT sockets on its port
//	r0-issues-%        (2 replicas) share of "issues" deliveries processed by replica 0
func BenchmarkEndToEnd(b *testing.B) {
	for _, replicas := range []int{1, 2} {
		b.Run(fmt.Sprintf("replicas=%d", replicas), func(b *testing.B) {
			for _, lat := range []time.Duration{0, 50 * time.Millisecond} {
				name := "latency=0"
				if lat > 0 {
					name = "latency=" + lat.String()
				}
				n := tpE2EIssues
				if lat > 0 {
					n = tpE2EIssuesSlow
				}
				b.Run(name, func(b *testing.B) {
					b.Run("hooks=fake", func(b *testing.B) { tpEndToEnd(b, replicas, lat, n, false) })
					b.Run("hooks=parallel", func(b *testing.B) { tpEndToEnd(b, replicas, lat, n, true) })
				})
			}
		})
	}
}

func tpEndToEnd(b *testing.B, replicas int, latency time.Duration, n int, parallel bool) {
	redisURL := redistest.Start(b)
	gh := newGitHub(githubtest.Options{Latency: latency})
	b.Cleanup(gh.Close)
	gh.AddRepo(testRepo, testInstallation)
	var redisCalls atomic.Int64
	bots := make([]*harness, replicas)
	for i := range bots {
		bots[i] = tpStartBot(b, gh, tpOpenRedisCounted(b, redisURL, &redisCalls), tpWithWorkers(tpWorkers))
	}
	hook := bots[0].url + "/webhook"
	if replicas > 1 {
		hook = tpRoundRobin(b, bots) + "/webhook"
	}
	gh.SetWebhook(hook, []byte(testSecret))
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 2 * tpSenders, MaxIdleConnsPerHost: 2 * tpSenders}}
	b.Cleanup(client.CloseIdleConnections)

	settle := func() { tpSettle(b, gh, bots...) }
	tpWaitIssues(b, gh, tpOpenIssues(gh, 4*replicas, 4, "warm-up"), 60*time.Second)
	settle()
	gh.ResetRequests()
	tw0 := tpTimeWait(b, gh)
	cpu0, rcpu0, calls0 := tpCPU(), tpRedisCPU(b, redisURL), redisCalls.Load()

	var lat []time.Duration
	var elapsed time.Duration
	var first time.Time
	b.ResetTimer()
	for round := 0; round < b.N; round++ {
		what := fmt.Sprintf("round %d", round)
		var issues []*tpIssue
		var start time.Time
		if !parallel {
			start = time.Now()
			issues = tpOpenIssues(gh, n, 4, what)
			tpWaitIssues(b, gh, issues, 2*time.Minute)
		} else {
			b.StopTimer()
			var payloads [][]byte
			issues, payloads = tpOpenIssuesSilently(b, gh, n, what)
			b.StartTimer()
			start = time.Now()
			posted := make(chan error, 1)
			go func() { posted <- tpPostOpened(client, bots, issues, payloads) }()
			tpWaitIssues(b, gh, issues, 2*time.Minute)
			if err := <-posted; err != nil {
				b.Fatal(err)
			}
		}
		elapsed += time.Since(start)
		if round == 0 {
			first = start
		}
		for _, is := range issues {
			lat = append(lat, is.done.Sub(is.opened))
		}
	}
	b.StopTimer()
	// Busy share of the sender over the timed rounds (for b.N > 1 in parallel
	// mode this window also holds the untimed opening of later rounds).
	last := time.Now()
	hookBusy, hookWindow := tpHookBusy(gh, first, last), last.Sub(first)
	// The costs per issue include the bot's own label and comment events,
	// which the fake's sender may still be delivering when the last issue is
	// done: they are counted once everything has settled.
	settle()
	cpu, rcpu, calls := tpCPU()-cpu0, tpRedisCPU(b, redisURL)-rcpu0, redisCalls.Load()-calls0
	tw := tpTimeWait(b, gh) - tw0

	reqs := gh.Requests()
	total := b.N * n
	for _, num := range gh.IssueNumbers(testRepo) {
		if cards := tpCards(gh, num); cards != 1 {
			b.Fatalf("issue #%d has %d task cards, want 1", num, cards)
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(total)/elapsed.Seconds(), "issues/s")
	b.ReportMetric(float64(len(reqs))/float64(total), "api-calls/issue")
	b.ReportMetric(float64(tpPercentile(lat, 50).Milliseconds()), "p50-ms")
	b.ReportMetric(float64(tpPercentile(lat, 99).Milliseconds()), "p99-ms")
	b.ReportMetric(float64(cpu.Milliseconds())/float64(total), "cpu-ms/issue")
	b.ReportMetric(float64(rcpu.Milliseconds())/float64(total), "redis-cpu-ms/issue")
	b.ReportMetric(float64(calls)/float64(total), "redis-calls/issue")
	b.ReportMetric(100*hookBusy.Seconds()/hookWindow.Seconds(), "hook-busy-%")
	b.ReportMetric(float64(tw)/float64(total), "tcp-conns/issue")
	if replicas > 1 {
		var done []float64
		for _, h := range bots {
			done = append(done, tpProcessed(b, h, "issues"))
		}
		if sum := done[0] + done[1]; sum > 0 {
			b.ReportMetric(100*done[0]/sum, "r0-issues-%")
		}
	}
	// The timed API calls per issue beyond the 4 of a warm task, for the log.
	if extra := len(reqs) - 4*total; extra != 0 {
		b.Logf("%d API calls beyond 4 per issue:\n%s", extra, tpSummarize(reqs))
	}
}

// tpOpenIssuesSilently opens n issues with the fake's webhooks dropped and
// returns them with their issues.opened payloads, to be posted by the caller.
func tpOpenIssuesSilently(tb testing.TB, gh *githubtest.Server, n int, what string) ([]*tpIssue, [][]byte) {
	tb.Helper()
	before := len(gh.Deliveries())
	gh.DropWebhooks(true)
	issues := tpOpenIssues(gh, n, 1, what)
	gh.DropWebhooks(false)
	var payloads [][]byte
	for _, d := range gh.Deliveries()[before:] {
		if d.Dropped && d.Event == "issues" && d.Action == "opened" {
			payloads = append(payloads, d.Payload)
		}
	}
	if len(payloads) != n {
		tb.Fatalf("recorded %d issues.opened deliveries, want %d", len(payloads), n)
	}
	return issues, payloads
}

// tpPostOpened posts the issues.opened deliveries from tpSenders goroutines,
// delivery i to bot i mod len(bots), setting each issue's opened time.
func tpPostOpened(client *http.Client, bots []*harness, issues []*tpIssue, payloads [][]byte) error {
	nonce := tpNonce()
	var next atomic.Int64
	var firstErr atomic.Pointer[error]
	var wg sync.WaitGroup
	for g := 0; g < tpSenders; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for firstErr.Load() == nil {
				i := int(next.Add(1) - 1)
				if i >= len(payloads) {
					return
				}
				req, _ := http.NewRequest(http.MethodPost, bots[i%len(bots)].url+"/webhook", bytes.NewReader(payloads[i]))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-GitHub-Event", "issues")
				req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("opened-%s-%d", nonce, i))
				req.Header.Set("X-Hub-Signature-256", signature(payloads[i], testSecret))
				issues[i].opened = time.Now()
				resp, err := client.Do(req)
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusAccepted {
						err = fmt.Errorf("issues.opened delivery %d: status %d", i, resp.StatusCode)
					}
				}
				if err != nil {
					firstErr.CompareAndSwap(nil, &err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if p := firstErr.Load(); p != nil {
		return *p
	}
	return nil
}

// tpSettle waits (up to 10 minutes) until the fake has sent every webhook
// queued (the bot's own label and comment events lag behind the tasks: the
// fake sends one at a time), then settles each bot.
func tpSettle(tb testing.TB, gh *githubtest.Server, bots ...*harness) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := gh.WaitWebhooks(ctx); err != nil {
		tb.Fatalf("webhooks not delivered: %v", err)
	}
	for _, h := range bots {
		h.settle()
	}
}

// tpRoundRobin starts a reverse proxy that sends each request to the next bot
// in turn, and returns its base URL.
func tpRoundRobin(tb testing.TB, bots []*harness) string {
	tb.Helper()
	proxies := make([]*httputil.ReverseProxy, len(bots))
	for i, h := range bots {
		u, err := url.Parse(h.url)
		if err != nil {
			tb.Fatal(err)
		}
		p := httputil.NewSingleHostReverseProxy(u)
		p.Transport = &http.Transport{MaxIdleConnsPerHost: 16}
		proxies[i] = p
	}
	var next atomic.Uint64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxies[(next.Add(1)-1)%uint64(len(proxies))].ServeHTTP(w, r)
	}))
	tb.Cleanup(srv.Close)
	return srv.URL
}

// tpIssue is one issue opened by a benchmark: when (or when its delivery was
// posted) and when it was observed done.
type tpIssue struct {
	number int
	opened time.Time // set by whoever opens or delivers it
	done   time.Time // set by tpWaitIssues
}

// tpOpenIssues opens n issues on the fake from g goroutines; the slice is in
// the order they were opened in.
func tpOpenIssues(gh *githubtest.Server, n, g int, what string) []*tpIssue {
	var mu sync.Mutex
	out := make([]*tpIssue, 0, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < g; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				mu.Lock() // keeps out in opening order (OpenIssue serialises anyway)
				num := gh.OpenIssue(testRepo, "alice", fmt.Sprintf("%s: task %d", what, i),
					"Benchmark task. The form validates email.")
				out = append(out, &tpIssue{number: num, opened: time.Now()})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return out
}

// tpDone reports whether issue num carries state:pending and a task card.
func tpDone(gh *githubtest.Server, num int) bool {
	v, ok := gh.Issue(testRepo, num)
	if !ok {
		return false
	}
	labelled := false
	for _, l := range v.Labels {
		labelled = labelled || l == "state:pending"
	}
	if !labelled {
		return false
	}
	for _, c := range v.Comments {
		if c.User == gh.BotLogin() && templates.IsCard(c.Body) {
			return true
		}
	}
	return false
}

func tpCards(gh *githubtest.Server, num int) int {
	cards := 0
	for _, c := range gh.Comments(testRepo, num) {
		if c.User == gh.BotLogin() && templates.IsCard(c.Body) {
			cards++
		}
	}
	return cards
}

// tpWaitIssues polls the fake every 5 ms until every issue is done, setting
// each one's done time. Issues are looked at oldest first, at most 256
// not-yet-done ones per poll, which keeps polling cheap with thousands pending
// (they are processed roughly in order). It reads only number and writes only
// done, so others may set opened meanwhile.
func tpWaitIssues(tb testing.TB, gh *githubtest.Server, issues []*tpIssue, timeout time.Duration) {
	tb.Helper()
	pending := append([]*tpIssue(nil), issues...)
	deadline := time.Now().Add(timeout)
	for len(pending) > 0 {
		now := time.Now()
		keep := pending[:0]
		looked := 0
		for i, is := range pending {
			if looked >= 256 {
				keep = append(keep, pending[i:]...)
				break
			}
			if tpDone(gh, is.number) {
				is.done = now
				continue
			}
			looked++
			keep = append(keep, is)
		}
		pending = keep
		if len(pending) == 0 {
			return
		}
		if now.After(deadline) {
			v, _ := gh.Issue(testRepo, pending[0].number)
			tb.Fatalf("%d of %d issues not done after %s; #%d: labels %v, %d comments",
				len(pending), len(issues), timeout, pending[0].number, v.Labels, len(v.Comments))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// tpHookBusy is how long the fake's webhook sender spent posting deliveries
// within [from, to]. A delivery's posting starts when it was queued or when
// the one before it was answered, whichever is later.
func tpHookBusy(gh *githubtest.Server, from, to time.Time) time.Duration {
	var busy time.Duration
	var prev time.Time
	for _, d := range gh.Deliveries() {
		if d.Sent.IsZero() {
			continue
		}
		start := d.Queued
		if prev.After(start) {
			start = prev
		}
		prev = d.Sent
		end := d.Sent
		if start.Before(from) {
			start = from
		}
		if end.After(to) {
			end = to
		}
		if end.After(start) {
			busy += end.Sub(start)
		}
	}
	return busy
}

// tpCPU is the CPU time (user + system) this process has used.
func tpCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// tpRedisInfo reads numeric fields of one INFO section of the Redis server.
func tpRedisInfo(tb testing.TB, redisURL, section string) map[string]float64 {
	tb.Helper()
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		tb.Fatal(err)
	}
	c := redis.NewClient(opt)
	defer c.Close()
	txt, err := c.Info(context.Background(), section).Result()
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(txt))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if !ok {
			continue
		}
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			out[k] = f
		}
	}
	return out
}

// tpRedisCPU is the CPU time redis-server has used (main thread and children).
func tpRedisCPU(tb testing.TB, redisURL string) time.Duration {
	m := tpRedisInfo(tb, redisURL, "cpu")
	return time.Duration((m["used_cpu_sys"] + m["used_cpu_user"]) * float64(time.Second))
}

// tpTimeWait counts the TCP sockets in TIME_WAIT to or from the fake's port:
// one per connection to the fake that was closed instead of reused.
func tpTimeWait(tb testing.TB, gh *githubtest.Server) int {
	tb.Helper()
	u, err := url.Parse(gh.URL())
	if err != nil {
		tb.Fatal(err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		tb.Fatal(err)
	}
	hexPort := fmt.Sprintf(":%04X", port)
	n := 0
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fs := strings.Fields(line)
			if len(fs) < 4 || fs[3] != "06" { // 06: TIME_WAIT
				continue
			}
			if strings.HasSuffix(fs[1], hexPort) || strings.HasSuffix(fs[2], hexPort) {
				n++
			}
		}
	}
	return n
}

// tpProcessed is the bot's countersign_deliveries_processed_total for event,
// outcome done, read from its /metrics.
func tpProcessed(tb testing.TB, h *harness, event string) float64 {
	tb.Helper()
	code, body := h.get("/metrics")
	if code != http.StatusOK {
		tb.Fatalf("/metrics: %d", code)
	}
	want := fmt.Sprintf(`countersign_deliveries_processed_total{event=%q,outcome="done"} `, event)
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, want); ok {
			f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f
		}
	}
	return 0
}

// tpSummarize counts requests by method and path shape (numbers elided).
func tpSummarize(reqs []githubtest.Request) string {
	counts := map[string]int{}
	for _, r := range reqs {
		parts := strings.Split(r.Path, "/")
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
