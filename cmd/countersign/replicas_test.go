package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/app/store/redistest"
	"github.com/countersign/countersign/internal/githubtest"
)

// Two bot processes on one Redis, fed one stream of events for many tasks
// through a round-robin load balancer: each task's events are processed one at a
// time and in the order GitHub sent them, both replicas share the work, and no
// effect is applied twice.
func TestTwoReplicasOnRedis(t *testing.T) {
	t.Parallel()
	redisURL := redistest.Start(t)
	gh := newGitHub(githubtest.Options{Latency: time.Millisecond})
	defer gh.Close()
	gh.AddRepo("acme/widgets", 3)
	dir := t.TempDir()
	var bots []*bot
	var logPaths []string
	for i := 0; i < 2; i++ {
		logPath := filepath.Join(dir, fmt.Sprintf("replica-%d.log", i))
		logPaths = append(logPaths, logPath)
		b := startBot(t, gh, filepath.Join(dir, "unused.db"), freeAddr(t), logPath,
			"REDIS_URL="+redisURL, "COUNTERSIGN_LOG_LEVEL=debug", fmt.Sprintf("COUNTERSIGN_INSTANCE=replica-%d", i))
		defer b.kill()
		bots = append(bots, b)
	}

	// The load balancer: deliveries alternate between the replicas.
	var next atomic.Int64
	lb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := bots[next.Add(1)%2]
		req, _ := http.NewRequest(r.Method, "http://"+b.addr+r.URL.Path, r.Body)
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}))
	defer lb.Close()
	gh.SetWebhook(lb.URL+"/webhook", []byte(crashSecret))

	const tasks, rounds = 20, 4
	var issues []int
	for i := 0; i < tasks; i++ {
		issues = append(issues, gh.OpenIssue("acme/widgets", fmt.Sprintf("user%d", i%5), fmt.Sprintf("task %d", i), ""))
	}
	for r := 0; r < rounds; r++ {
		for _, n := range issues {
			gh.Comment("acme/widgets", n, "reviewer", fmt.Sprintf("note %d", r))
		}
	}
	settleBot(t, gh, bots[0])
	settleBot(t, gh, bots[1])

	// What GitHub sent, per task, in order: people's events. The echoes of
	// countersign's own writes (its label and card) are answered without
	// being queued once a replica knows its bot's login, so they are left
	// out of the comparison (their order is checked with the rest, when
	// processed).
	sent := map[string][]string{}
	echoes := map[string]bool{}
	for _, d := range gh.Deliveries() {
		var p struct {
			Issue struct {
				Number int `json:"number"`
			} `json:"issue"`
		}
		json.Unmarshal(d.Payload, &p)
		if p.Issue.Number == 0 || d.Redelivery {
			continue
		}
		if d.Status != http.StatusAccepted {
			t.Fatalf("delivery %s %s.%s answered %d", d.ID, d.Event, d.Action, d.Status)
		}
		if d.Sender == gh.BotLogin() {
			echoes[d.ID] = true
			continue
		}
		key := fmt.Sprintf("acme/widgets#%d", p.Issue.Number)
		sent[key] = append(sent[key], d.ID)
	}

	// What each replica processed, from its logs.
	type span struct {
		id         string
		start, end int64
		replica    int
	}
	done := map[string][]span{}
	perReplica := make([]int, 2)
	for i, path := range logPaths {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var l struct {
				Msg      string `json:"msg"`
				Key      string `json:"key"`
				Delivery string `json:"delivery"`
				Started  int64  `json:"started_ns"`
				Ended    int64  `json:"ended_ns"`
				Outcome  string `json:"outcome"`
			}
			if json.Unmarshal(sc.Bytes(), &l) != nil || l.Msg != "delivery processed" || l.Outcome != "done" {
				continue
			}
			done[l.Key] = append(done[l.Key], span{l.Delivery, l.Started, l.Ended, i})
			perReplica[i]++
		}
		f.Close()
	}
	if perReplica[0] == 0 || perReplica[1] == 0 {
		t.Fatalf("work not shared: %v deliveries per replica", perReplica)
	}
	for key, want := range sent {
		spans := done[key]
		sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
		var got []string
		for i, s := range spans {
			if !echoes[s.id] {
				got = append(got, s.id)
			}
			if i > 0 && s.start < spans[i-1].end {
				t.Errorf("%s: %s (replica %d) started before %s (replica %d) ended", key, s.id, s.replica, spans[i-1].id, spans[i-1].replica)
			}
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s processed in order %v, GitHub sent %v", key, got, want)
		}
	}

	// No effect doubled: one label and one card per task, each written once.
	posts := map[string]int{}
	for _, r := range gh.Requests() {
		if r.Method == http.MethodPost {
			posts[r.Path]++
		}
	}
	for _, n := range issues {
		if got := gh.Labels("acme/widgets", n); len(got) != 1 || got[0] != "state:pending" {
			t.Errorf("#%d labels %v", n, got)
		}
		for _, suffix := range []string{"labels", "comments"} {
			if c := posts[fmt.Sprintf("/repos/acme/widgets/issues/%d/%s", n, suffix)]; c != 1 {
				t.Errorf("#%d: %d POSTs to %s, want 1", n, c, suffix)
			}
		}
	}
	t.Logf("%d tasks, %d deliveries processed: %v per replica", tasks, perReplica[0]+perReplica[1], perReplica)
}
