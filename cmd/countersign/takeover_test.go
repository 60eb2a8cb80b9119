package main

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/countersign/countersign/app/store/redistest"
	"github.com/countersign/countersign/internal/githubtest"
	"github.com/redis/go-redis/v9"
)

// logField reads field of the last log line of path whose message is msg.
func logField(t *testing.T, path, msg, field string) (any, bool) {
	t.Helper()
	recs := logRecords(t, path, msg)
	if len(recs) == 0 {
		return nil, false
	}
	v, ok := recs[len(recs)-1][field]
	return v, ok
}

// On Redis, a process killed while it holds claims and restarted under the
// same identity (COUNTERSIGN_INSTANCE) takes them over at once instead of
// when their leases expire, and runs its start-up heal at once: the delivery
// GitHub failed to send while it was down is redelivered. The figures are
// logged (timings are not asserted).
func TestRestartTakesOverOnRedis(t *testing.T) {
	t.Parallel()
	redisURL := redistest.Start(t)
	gh := newGitHub(githubtest.Options{Latency: 150 * time.Millisecond}) // slow: claims are held long
	defer gh.Close()
	gh.AddRepo("acme/widgets", 3)
	dir := t.TempDir()
	addr, logPath := freeAddr(t), filepath.Join(dir, "bot.log")
	env := []string{"REDIS_URL=" + redisURL, "COUNTERSIGN_INSTANCE=countersign-0", "COUNTERSIGN_LOG_LEVEL=debug"}
	b := startBot(t, gh, filepath.Join(dir, "unused.db"), addr, logPath, env...)
	gh.SetWebhook("http://"+addr+"/webhook", []byte(crashSecret))

	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	rc := redis.NewClient(opt)
	defer rc.Close()
	ctx := context.Background()
	leases := func() []string {
		ks, err := rc.Keys(ctx, "countersign:lease:*").Result()
		if err != nil {
			t.Fatal(err)
		}
		return ks
	}

	const tasks = 6
	var issues []int
	for i := range tasks {
		issues = append(issues, gh.OpenIssue("acme/widgets", fmt.Sprintf("user%d", i), fmt.Sprintf("task %d", i), ""))
	}
	waitUntil(t, 20*time.Second, "a claim held", func() bool { return len(leases()) > 0 })
	held := leases()
	b.kill() // mid-claim
	killed := time.Now()

	// While it is down, GitHub fails to deliver events (this one, and the
	// echoes of the writes the killed process had in flight): only the heal
	// brings them.
	late := gh.OpenIssue("acme/widgets", "erin", "opened while the bot was down", "")
	waitWebhooks(t, gh)
	// A delivery the killed process took in (its id is in the store's
	// de-duplication) but did not answer before it died counts as failed in
	// GitHub's log; it is queued already, so the heal rightly leaves it.
	var missed, takenIn []string
	for _, d := range gh.Deliveries() {
		if d.Status != 0 || d.Pending {
			continue
		}
		n, err := rc.Exists(ctx, "countersign:seen:"+d.ID).Result()
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			takenIn = append(takenIn, d.ID)
			continue
		}
		missed = append(missed, d.ID)
	}
	if len(missed) == 0 {
		t.Fatal("no delivery failed while the bot was down")
	}

	restarted := time.Now()
	b = startBot(t, gh, filepath.Join(dir, "unused.db"), addr, logPath, env...)
	defer b.kill()
	took := waitUntil(t, 60*time.Second, "every task's card, the missed one's too", func() bool {
		for _, n := range append(issues, late) {
			if len(gh.Labels("acme/widgets", n)) == 0 {
				return false
			}
		}
		return true
	})
	taken, _ := logField(t, logPath, "instance identity taken", "taken_over")
	waited, _ := logField(t, logPath, "instance identity taken", "waited_ms")
	t.Logf("killed holding %d claims %v; %d deliveries failed while down (and %d taken in just before the kill); restarted %v after the kill (what GitHub sent meanwhile failed); the restart waited %v ms for the dead process's presence and took over %v claims/waits; every task done %v after the restart (the leases' TTL is 30 s)",
		len(held), held, len(missed), len(takenIn), restarted.Sub(killed).Round(time.Millisecond), waited, taken, took.Round(time.Millisecond))
	if n, ok := taken.(float64); !ok || n < 1 {
		t.Errorf("taken_over = %v, want the dead process's claims taken over", taken)
	}
	// The start-up heal asks for the missed deliveries one by one; the tasks'
	// cards can be done before the last echo's redelivery is.
	waitUntil(t, 30*time.Second, "every missed delivery redelivered", func() bool {
		for _, id := range missed {
			if redeliveries(gh, id) == 0 {
				return false
			}
		}
		return true
	})
	for _, id := range takenIn {
		if got := redeliveries(gh, id); got != 0 {
			t.Errorf("delivery %s, taken in before the kill, was redelivered %d times, want none", id, got)
		}
	}
	for _, id := range missed {
		if got := redeliveries(gh, id); got != 1 {
			t.Errorf("delivery %s missed while down was redelivered %d times, want once (by the start-up heal)", id, got)
		}
	}
	if got := logCount(t, logPath, "missed delivery redelivered"); got != len(missed) {
		t.Errorf("%d redeliveries logged, want %d", got, len(missed))
	}
	settleBot(t, gh, b)
}
