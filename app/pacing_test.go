package app_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/app/store/bolt"
	"github.com/countersign/countersign/internal/githubtest"
)

// burstHarness is a bot whose fake GitHub enforces a secondary limit of
// limit writes per window, paced at perWindow writes a window (0: not paced).
func burstHarness(t *testing.T, limit githubtest.WriteLimit, perWindow int) *harness {
	t.Helper()
	gh := newGitHub(githubtest.Options{WriteLimit: limit})
	t.Cleanup(gh.Close)
	gh.AddRepo(testRepo, testInstallation)
	s, err := bolt.Open(filepath.Join(t.TempDir(), "countersign.db"))
	if err != nil {
		t.Fatal(err)
	}
	return startHarness(t, gh, s, func(st *app.Settings) {
		st.Workers = 8
		st.WritesPerMinute = perWindow
		st.PaceMinute = time.Second
		st.GitHubWaitMax = time.Second
	})
}

// mostWritesIn is the most writes GitHub received from the installation in
// any window of length w.
func mostWritesIn(reqs []githubtest.Request, w time.Duration) int {
	var times []time.Time
	for _, r := range reqs {
		if isWrite(r) && r.Installation == testInstallation {
			times = append(times, r.Time)
		}
	}
	most, j := 0, 0
	for i := range times {
		for times[i].Sub(times[j]) >= w {
			j++
		}
		most = max(most, i-j+1)
	}
	return most
}

// TestBurstOfIssuesIsPaced opens 200 issues at once (20 of them assigned
// right after), through the webhook endpoint, against a fake GitHub that
// refuses writes beyond a secondary limit as GitHub does. Time is scaled: a
// pacing "minute" is a second, the fake allows 100 writes a second, and the
// bot is paced at 90 (a tenth kept back for the jitter between a write's
// turn and its arrival on a loaded test machine; GitHub's window is a minute,
// where the bucket's slack of a second covers it). Unpaced, the same burst
// runs into the limit (hundreds of writes a second); paced, GitHub refuses
// nothing, and every task ends where its own deliveries, in order, take it.
func TestBurstOfIssuesIsPaced(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit githubtest.WriteLimit
		paced int
	}{
		// Unpaced, the limit is 100 writes in any 5 s: the burst's 400-odd
		// writes run into it however slow a loaded test machine is.
		{"unpaced", githubtest.WriteLimit{Writes: 100, Window: 5 * time.Second}, 0},
		{"paced", githubtest.WriteLimit{Writes: 100, Window: time.Second}, 90},
	} {
		t.Run(tc.name, func(t *testing.T) {
			limit := tc.limit
			h := burstHarness(t, limit, tc.paced)
			var issues []int
			for i := range 200 {
				n := h.gh.OpenIssue(testRepo, "carol", fmt.Sprintf("Task %d", i), "")
				if i%10 == 0 {
					h.gh.Assign(testRepo, n, "carol", "alice")
				}
				issues = append(issues, n)
			}
			h.settleWithin(4 * time.Minute) // a bound, not a measure: a loaded machine is slow
			reqs := h.gh.Requests()
			refused := h.gh.WritesRefused()
			t.Logf("%d requests, %d writes, %d refused; most writes in a second: %d",
				len(reqs), len(writes(reqs)), refused, mostWritesIn(reqs, time.Second))
			// Each task has one card, whose history is its own deliveries in order.
			for i, n := range issues {
				want, history := "pending", `"history":[{"to":"pending","actor":"carol",`
				tail := `"why":"issue opened"}]}`
				if i%10 == 0 {
					want, tail = "assigned", `"why":"issue opened"},{"from":"pending","to":"assigned","actor":"carol",`
				}
				wantState(t, h, n, want)
				wantContains(t, fmt.Sprintf("#%d's card", n), card(t, h, n), history, tail)
			}
			if dead, _ := h.store.DeadLetters(context.Background()); len(dead) != 0 {
				t.Fatalf("dead letters: %+v", dead)
			}
			if tc.paced == 0 {
				if refused == 0 {
					t.Fatal("the unpaced burst was never refused: the fake's limit is not tested")
				}
				return
			}
			if refused != 0 {
				t.Fatalf("GitHub refused %d paced writes", refused)
			}
			for _, r := range reqs {
				if r.Status == 403 || r.Status == 429 {
					t.Fatalf("%s %s answered %d", r.Method, r.Path, r.Status)
				}
			}
			if most := mostWritesIn(reqs, time.Second); most > limit.Writes {
				t.Fatalf("%d writes in a second, limit %d", most, limit.Writes)
			}
			_, metrics := h.get("/metrics")
			for _, want := range []string{"countersign_github_write_wait_seconds_count ", `countersign_github_write_tokens{class="background",installation="7"} `, "countersign_github_write_headroom_ratio "} {
				if !strings.Contains(metrics, want) {
					t.Errorf("/metrics has no %s", want)
				}
			}
		})
	}
}

// Found by review: one installation's burst does not hold every worker while
// another installation, its own budget untouched, waits behind it: a write
// waits for its turn inside a delivery for a second at most, then its key
// waits and the worker is free.
func TestOneInstallationsBurstDoesNotStarveAnother(t *testing.T) {
	gh := newGitHub(githubtest.Options{})
	t.Cleanup(gh.Close)
	gh.AddRepo(testRepo, testInstallation)
	const other = "other/gizmos"
	gh.AddRepo(other, testInstallation+1)
	s, err := bolt.Open(filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	h := startHarness(t, gh, s, func(st *app.Settings) {
		st.Workers = 4
		st.WritesPerMinute = 20
		st.PaceMinute = 10 * time.Second // 20 writes in 10 s per installation: a burst of 60 issues takes a minute
	})
	team(h)
	h.gh.SetPermission(other, "carol", "admin")
	var as []int
	for i := range 60 {
		as = append(as, h.gh.OpenIssue(testRepo, "carol", fmt.Sprintf("A%d", i), ""))
	}
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	b := h.gh.OpenIssue(other, "carol", "B", "")
	for len(h.gh.Labels(other, b)) == 0 {
		if time.Since(start) > 40*time.Second {
			t.Fatal("B's issue was never labelled")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A's burst needs a minute at its pace; B, its own budget untouched,
	// must not wait for it to end. (The time is logged, not asserted.)
	done := 0
	for _, a := range as {
		if len(h.gh.Labels(testRepo, a)) > 0 {
			done++
		}
	}
	t.Logf("B's issue labelled %v after it was opened, with %d of A's %d issues labelled", time.Since(start).Round(time.Millisecond), done, len(as))
	if done == len(as) {
		t.Errorf("B's issue (its own budget untouched) was labelled only after all of A's burst")
	}
}
