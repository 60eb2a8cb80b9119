package app_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/githubtest"
)

// GitHub's merge queue builds each entry's group on the group of the entry
// ahead of it (its base_sha is that group's head), and GitHub delivers the
// groups' merge_group webhooks in no promised order. A group passes only if
// its base_sha is the head of the base branch or the head of a group that
// passes (DESIGN §2); otherwise it waits, and it is decided again when the
// group ahead is answered, whichever delivery comes first.

// queuedChain opens one pull request per entry of verified, each closing a
// task of its own, verified or left in review, and queues them in that
// order with their merge_group webhooks held back (dropped, to be sent in
// an order the test picks). It returns the pull requests, their groups'
// commits and their checks_requested deliveries, first in line first.
func queuedChain(t *testing.T, h *harness, verified []bool) (prs []int, groups []string, requested []githubtest.SentWebhook) {
	t.Helper()
	for i, v := range verified {
		title := fmt.Sprintf("Form %c", 'A'+i)
		if v {
			_, pr, _ := verifiedPR(t, h, title)
			prs = append(prs, pr)
			continue
		}
		n, pr, sha := taskWithPR(h, title, githubtest.PROptions{Title: title})
		ciPasses(h, sha)
		h.settle()
		wantState(t, h, n, "review")
		prs = append(prs, pr)
	}
	h.gh.DropWebhooks(true)
	for _, pr := range prs {
		groups = append(groups, h.gh.EnqueuePR(testRepo, pr, "alice"))
	}
	h.gh.DropWebhooks(false)
	requested = h.gh.DroppedWebhooks("merge_group", "checks_requested")
	q := h.gh.MergeQueue(testRepo)
	if len(requested) != len(prs) || len(q) != len(prs) {
		t.Fatalf("%d merge_group deliveries held, queue %+v; want %d", len(requested), q, len(prs))
	}
	for i := 1; i < len(q); i++ {
		if q[i].BaseSHA != q[i-1].HeadSHA {
			t.Fatalf("queue %+v: each group must be built on the one ahead of it", q)
		}
	}
	return prs, groups, requested
}

// send delivers the held webhooks ws, in this order, and waits for the bot.
func send(t *testing.T, h *harness, ws ...githubtest.SentWebhook) {
	t.Helper()
	ids := make([]string, len(ws))
	for i, w := range ws {
		ids[i] = w.ID
	}
	if err := h.gh.SendDropped(ids...); err != nil {
		t.Fatal(err)
	}
	h.settle()
}

// groupAnswer is countersign's latest check on a group's commit: none,
// in_progress, success or failure.
func groupAnswer(h *harness, sha string) string {
	r, ok := verification(h, sha)
	switch {
	case !ok:
		return "none"
	case r.Status == "completed":
		return r.Conclusion
	}
	return r.Status
}

// wantNoPassBehindNotPassing fails when a group passes while a group ahead
// of it (groups are first in line first) does not.
func wantNoPassBehindNotPassing(t *testing.T, h *harness, groups []string, when string) {
	t.Helper()
	for i := 1; i < len(groups); i++ {
		if groupAnswer(h, groups[i]) != "success" {
			continue
		}
		for j := 0; j < i; j++ {
			if a := groupAnswer(h, groups[j]); a != "success" {
				t.Fatalf("%s: group %d passes while group %d ahead of it is %s", when, i+1, j+1, a)
			}
		}
	}
}

// B's group is built on A's; A's pull request is not verified. B's
// checks_requested arrives first: B must not pass on its own (GitHub would
// merge A's unverified change with it); it waits for A's group, saying so,
// and fails once A's group fails.
func TestMergeQueueGroupBehindArrivesFirst(t *testing.T) {
	h := newHarness(t)
	team(h)
	prs, groups, requested := queuedChain(t, h, []bool{false, true})

	send(t, h, requested[1]) // B's checks_requested alone
	r := wantCheck(t, h, groups[1], "in_progress")
	wantContains(t, "B's group's check", r.Title+"\n"+r.Summary, fmt.Sprintf("#%d", prs[0]), "waits")

	send(t, h, requested[0])
	wantCheck(t, h, groups[0], "failure")
	r = wantCheck(t, h, groups[1], "failure")
	wantContains(t, "B's group's check", r.Title, fmt.Sprintf("the group of #%d ahead of it does not pass", prs[0]))
}

// Every order of the checks_requested deliveries of two and three groups,
// each first-in-line group verified or not: after each delivery no group
// passes while a group ahead of it does not, and at the end each group
// passes exactly when it and every group ahead of it are verified.
func TestMergeQueueDeliveryOrders(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		verified []bool
		orders   [][]int
	}{
		{[]bool{true, true}, [][]int{{0, 1}, {1, 0}}},
		{[]bool{false, true}, [][]int{{0, 1}, {1, 0}}},
		{[]bool{true, true, true}, permutations(3)},
		{[]bool{false, true, true}, permutations(3)},
		{[]bool{true, false, true}, permutations(3)},
	} {
		for _, order := range tc.orders {
			name := fmt.Sprintf("verified %v, order %v", tc.verified, order)
			t.Run(strings.NewReplacer(" ", "_", ",", "").Replace(name), func(t *testing.T) {
				t.Parallel()
				h := newHarness(t)
				team(h)
				_, groups, requested := queuedChain(t, h, tc.verified)
				for k, i := range order {
					send(t, h, requested[i])
					wantNoPassBehindNotPassing(t, h, groups, fmt.Sprintf("after delivery %d (group %d)", k+1, i+1))
				}
				ok := true
				for i, g := range groups {
					ok = ok && tc.verified[i]
					want := "failure"
					if ok {
						want = "success"
					}
					if got := groupAnswer(h, g); got != want {
						t.Errorf("group %d: %s, want %s", i+1, got, want)
					}
				}
			})
		}
	}
}

// The group ahead leaves the queue (dequeued) while the group behind it
// waits for its answer: the group behind is decided again at once and does
// not pass (it carries a change that left the queue, and GitHub builds it
// again without it); its rebuilt group, on the base branch, passes.
func TestMergeQueueGroupAheadDequeuedWhileBehindWaits(t *testing.T) {
	h := newHarness(t)
	team(h)
	prs, groups, requested := queuedChain(t, h, []bool{false, true})
	send(t, h, requested[1])
	wantCheck(t, h, groups[1], "in_progress")

	h.gh.DropWebhooks(true)
	h.gh.DequeuePR(testRepo, prs[0], "carol")
	h.gh.DropWebhooks(false)
	destroyed := h.gh.DroppedWebhooks("merge_group", "destroyed")
	rebuilt := h.gh.DroppedWebhooks("merge_group", "checks_requested")[1:] // A's own never arrives
	if len(destroyed) != 2 || len(rebuilt) != 1 {
		t.Fatalf("dequeuing A: %d destroyed, %d checks_requested; want 2, 1", len(destroyed), len(rebuilt))
	}
	send(t, h, destroyed[0]) // A's group destroyed (dequeued) first
	r := wantCheck(t, h, groups[1], "failure")
	wantContains(t, "B's old group's check", r.Summary, fmt.Sprintf("#%d", prs[0]), "left the queue")

	send(t, h, rebuilt[0], destroyed[1])
	q := h.gh.MergeQueue(testRepo)
	if len(q) != 1 || q[0].PR != prs[1] {
		t.Fatalf("queue %+v: B alone", q)
	}
	wantCheck(t, h, q[0].HeadSHA, "success")
	if g := trackedGroups(t, h, prs[1]); strings.Contains(g, groups[1]) {
		t.Fatalf("B's destroyed group is still tracked: %s", g)
	}
}

// GitHub merges A's and B's groups together (B's group passed, carrying A):
// the base branch moves to B's group's commit. B's group, decided again when
// A's destroyed (merged) arrives, stays as it was: no new check run on it.
func TestMergeQueueGroupsMergedTogether(t *testing.T) {
	h := newHarness(t)
	team(h)
	prs, groups, requested := queuedChain(t, h, []bool{true, true})
	send(t, h, requested[1], requested[0])
	wantCheck(t, h, groups[0], "success")
	wantCheck(t, h, groups[1], "success")
	runs := len(h.gh.CheckRuns(testRepo, groups[1]))

	if !h.gh.MergeQueueThrough(testRepo, prs[1], "carol") {
		t.Fatal("B was not queued")
	}
	h.settle()
	if h.gh.HeadSHA(testRepo) != groups[1] {
		t.Fatalf("the base branch is at %s, want B's group %s", h.gh.HeadSHA(testRepo), groups[1])
	}
	wantCheck(t, h, groups[1], "success")
	if got := len(h.gh.CheckRuns(testRepo, groups[1])); got != runs {
		t.Fatalf("%d check runs on B's merged group, then %d: a merged group was written again", runs, got)
	}
	for _, pr := range prs {
		if g := trackedGroups(t, h, pr); g != "" {
			t.Fatalf("#%d's merged group is still tracked: %s", pr, g)
		}
	}
}

// What the order of deliveries costs: B's group asked about before A's
// reads the base branch's head and the queue's branches once, and is
// written twice (waiting, then its answer).
func TestMergeQueueCostOutOfOrder(t *testing.T) {
	h := newHarness(t)
	team(h)
	_, groups, requested := queuedChain(t, h, []bool{true, true})

	h.gh.ResetRequests()
	send(t, h, requested[1])
	b := measure("B's group first", h.gh.Requests())
	wantCheck(t, h, groups[1], "in_progress")
	h.gh.ResetRequests()
	send(t, h, requested[0])
	a := measure("then A's", h.gh.Requests())
	wantCheck(t, h, groups[0], "success")
	wantCheck(t, h, groups[1], "success")
	for _, c := range []cost{b, a} {
		t.Logf("%s: %d requests (%d writes): %s", c.step, c.requests, c.writes, strings.Join(c.detail, ", "))
	}
	// B: the pull request's head, the branch's head, the queue's branches,
	// the check; A: the pull request's head, the branch's head, A's check,
	// B's check again.
	if b.requests > 4 || b.writes > 1 || a.requests > 4 || a.writes > 2 {
		t.Errorf("B first costs %d requests (%d writes), then A %d (%d); want at most 4 (1), 4 (2)", b.requests, b.writes, a.requests, a.writes)
	}
}

// The base branch moves (an admin pushes to it) after GitHub built the first
// group on its old head and before countersign is asked about that group:
// its base_sha is neither the branch's head nor a group countersign knows.
// It waits, saying why and that GitHub times it out, and never passes.
func TestMergeQueueGroupOnMovedBranchWaits(t *testing.T) {
	h := newHarness(t)
	team(h)
	prs, groups, requested := queuedChain(t, h, []bool{true})
	h.gh.PushDefault(testRepo, "carol", map[string]string{"NOTES.md": "pushed past the queue\n"})
	h.settle()
	send(t, h, requested[0])
	r := wantCheck(t, h, groups[0], "in_progress")
	wantContains(t, "the group's check", r.Title+"\n"+r.Summary, fmt.Sprintf("waiting for the group it is built on (%.12s)", h.gh.MergeQueue(testRepo)[0].BaseSHA),
		"neither the head of `main`", "GitHub times this group out", fmt.Sprintf("takes #%d out of the queue", prs[0]))

	// GitHub gives up on the group: destroyed; it is no longer tracked.
	h.gh.DequeuePR(testRepo, prs[0], "carol")
	h.settle()
	if g := trackedGroups(t, h, prs[0]); g != "" {
		t.Fatalf("a destroyed group is still tracked: %s", g)
	}
	wantCheck(t, h, groups[0], "in_progress")
}
