package app_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/githubtest"
)

// TestBulkCardsWaitWhileSaturated: an import of 200 issues, every tenth
// assigned by a person right away, against writes paced at 90 a (scaled)
// minute. While the installation's writes are saturated the cards of tasks
// still pending wait; an assigned task's card is written, with its
// contract, before its assigned label; the waiting cards are all written
// once the burst has drained; and the cards cost fewer writes than one
// creation per task plus one edit per assignment.
func TestBulkCardsWaitWhileSaturated(t *testing.T) {
	h := burstHarness(t, githubtest.WriteLimit{Writes: 100, Window: time.Second}, 90)
	const tasks = 200
	var issues []int
	assigned := map[int]bool{}
	for i := range tasks {
		n := h.gh.OpenIssue(testRepo, "carol", fmt.Sprintf("Task %d", i), "The form validates email.")
		if i%10 == 0 {
			h.gh.Assign(testRepo, n, "carol", "alice")
			assigned[n] = true
		}
		issues = append(issues, n)
	}
	h.settleWithin(3 * time.Minute)

	reqs := h.gh.Requests()
	if refused := h.gh.WritesRefused(); refused != 0 {
		t.Fatalf("GitHub refused %d writes", refused)
	}
	labelsOf := regexp.MustCompile(`^/repos/` + testRepo + `/issues/(\d+)/labels$`)
	commentsOf := regexp.MustCompile(`^/repos/` + testRepo + `/issues/(\d+)/comments$`)
	firstCard, lastLabels := map[string]int{}, map[string]int{}
	cardWrites := 0
	for i, r := range reqs {
		switch {
		case r.Method == "POST" && commentsOf.MatchString(r.Path):
			n := commentsOf.FindStringSubmatch(r.Path)[1]
			if _, ok := firstCard[n]; !ok {
				firstCard[n] = i
			}
			cardWrites++
		case r.Method == "PATCH" && strings.HasPrefix(r.Path, "/repos/"+testRepo+"/issues/comments/"):
			cardWrites++
		case r.Method == "POST" && labelsOf.MatchString(r.Path):
			lastLabels[labelsOf.FindStringSubmatch(r.Path)[1]] = i
		}
	}
	for _, n := range issues {
		want := "pending"
		if assigned[n] {
			want = "assigned"
			k := fmt.Sprint(n)
			if c, ok := firstCard[k]; !ok || c > lastLabels[k] {
				t.Errorf("#%d: its card (request %d) came after its assigned label (request %d)", n, c, lastLabels[k])
			}
		}
		wantState(t, h, n, want)
		wantContains(t, fmt.Sprintf("#%d's card", n), card(t, h, n), "**Contract:**")
	}
	t.Logf("%d tasks, %d assigned: %d card writes (creations and edits), %d writes in all", tasks, len(assigned), cardWrites, len(writes(reqs)))
	if cardWrites >= tasks+len(assigned) {
		t.Errorf("%d card writes: no card waited while the writes were saturated", cardWrites)
	}
}
