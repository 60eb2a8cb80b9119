package app_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/app/store/redistest"
	"github.com/countersign/countersign/internal/githubtest"
)

const (
	// cpuRate is the rate, in deliveries a second, at which
	// BenchmarkProcessOpened posts its deliveries.
	cpuRate = 500
	// cpuIssues is how many issues.opened deliveries one round posts.
	cpuIssues = 1000
)

// BenchmarkProcessOpened measures the CPU one issues.opened delivery costs
// (intake, queueing, processing: the state label and the task card) and the
// time to the 202 while the workers process what was accepted.
//
// Each round opens cpuIssues issues on the fake GitHub with its webhooks
// dropped, then posts their signed issues.opened deliveries to the bot at
// cpuRate a second (open loop, from 16 senders) while the bot's workers
// process them, and waits until the queue is empty. The fake's webhooks stay
// dropped meanwhile, so the bot's own label and comment events are not fed
// back: one delivery per issue. Reported:
//
//	cpu-µs/delivery   CPU of this whole process (bot, fake GitHub and the
//	                  senders) from the first post until the queue is empty,
//	                  per delivery
//	p50-µs, p99-µs    time from posting a delivery to its 202
//	processed/s       deliveries processed a second over the round
//
// Run it with
//
//	go test -run '^$' -bench ProcessOpened -benchtime 1x ./app/
func BenchmarkProcessOpened(b *testing.B) {
	b.Run("bolt", func(b *testing.B) { cpuProcessOpened(b, tpOpenBolt(b)) })
	b.Run("redis", func(b *testing.B) { cpuProcessOpened(b, tpOpenRedis(b, redistest.Start(b))) })
}

func cpuProcessOpened(b *testing.B, s store.Store) {
	gh := newGitHub(githubtest.Options{})
	b.Cleanup(gh.Close)
	gh.AddRepo(testRepo, testInstallation)
	h := tpStartBot(b, gh, s, tpWithWorkers(8))
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 2 * tpSenders, MaxIdleConnsPerHost: 2 * tpSenders}}
	b.Cleanup(client.CloseIdleConnections)

	// Warm up: installation token, the App's login, the repository's labels.
	tpWaitIssues(b, gh, tpOpenIssues(gh, 8, 1, "warm-up"), time.Minute)
	tpSettle(b, gh, h)

	var lat []time.Duration
	var cpu, elapsed time.Duration
	var total int
	b.ResetTimer()
	for round := range b.N {
		b.StopTimer()
		issues, payloads := tpOpenIssuesSilently(b, gh, cpuIssues, fmt.Sprintf("round %d", round))
		gh.DropWebhooks(true)
		b.StartTimer()
		start, cpu0 := time.Now(), tpCPU()
		l, err := cpuPostPaced(client, h.url, payloads, fmt.Sprintf("%s-%d", tpNonce(), round))
		if err != nil {
			b.Fatal(err)
		}
		cpuWaitEmpty(b, h)
		cpu += tpCPU() - cpu0
		elapsed += time.Since(start)
		b.StopTimer()
		gh.DropWebhooks(false)
		for _, is := range issues {
			if !tpDone(gh, is.number) {
				b.Fatalf("issue #%d not done: no state label or no card", is.number)
			}
		}
		lat = append(lat, l...)
		total += len(payloads)
		b.StartTimer()
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(cpu.Microseconds())/float64(total), "cpu-µs/delivery")
	b.ReportMetric(float64(tpPercentile(lat, 50).Microseconds()), "p50-µs")
	b.ReportMetric(float64(tpPercentile(lat, 99).Microseconds()), "p99-µs")
	b.ReportMetric(float64(total)/elapsed.Seconds(), "processed/s")
}

// cpuPostPaced posts the issues.opened deliveries at cpuRate a second: the
// i-th is due i/cpuRate seconds after the first, whether or not earlier ones
// were answered (16 senders take them as they fall due). It returns each
// delivery's time from being posted to its 202.
func cpuPostPaced(client *http.Client, url string, payloads [][]byte, nonce string) ([]time.Duration, error) {
	due := make(chan int)
	lat := make([]time.Duration, len(payloads))
	errs := make(chan error, len(payloads))
	var wg sync.WaitGroup
	for range tpSenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range due {
				req, _ := http.NewRequest(http.MethodPost, url+"/webhook", bytes.NewReader(payloads[i]))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-GitHub-Event", "issues")
				req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("cpu-%s-%d", nonce, i))
				req.Header.Set("X-Hub-Signature-256", signature(payloads[i], testSecret))
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

// cpuWaitEmpty waits (up to 2 minutes) until the bot has nothing queued,
// nothing in its outbox and nothing under way, polling every 10 ms.
func cpuWaitEmpty(tb testing.TB, h *harness) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for {
		st, err := h.store.Stats(ctx)
		if err != nil {
			tb.Fatal(err)
		}
		if st.Queued == 0 && st.Keys == 0 && h.srv.Worker().Busy() == 0 {
			return
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("the bot did not empty its queue: %+v", st)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
