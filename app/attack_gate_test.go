package app_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/githubtest"
	"github.com/countersign/countersign/rules"
)

// Attacks on the gate: the countersign/verification check, GitHub's merge
// queue and pull requests that close no task (DESIGN §2, §7 gate:,
// docs/merge-queue.md).

// ownRuns are the countersign/verification check runs countersign's App
// wrote on sha.
func ownRuns(h *harness, sha string) int {
	k := 0
	slug := strings.TrimSuffix(h.gh.BotLogin(), "[bot]")
	for _, r := range h.gh.CheckRuns(testRepo, sha) {
		if r.Name == rules.CheckName && r.App == slug {
			k++
		}
	}
	return k
}

// A group is built on the group of the entry ahead of it (its base_sha), so
// it carries that entry's changes. With "Only merge non-failing pull
// requests" unselected, GitHub merges a failing entry together with a later
// one whose group passes (GitHub docs, "Managing a merge queue"). A group
// must therefore not pass while a group it is built on does not: else A's
// unverified code lands with B.
func TestAttackGateGroupBuiltOnFailingGroup(t *testing.T) {
	h := newHarness(t)
	team(h)
	nA, prA, shaA := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login form"})
	ciPasses(h, shaA)
	h.settle()
	wantState(t, h, nA, "review")
	_, prB, _ := verifiedPR(t, h, "Signup form")

	groupA := queue(t, h, prA, "alice", "failure")
	groupB := h.gh.EnqueuePR(testRepo, prB, "alice")
	h.settle()
	if q := h.gh.MergeQueue(testRepo); len(q) != 2 || q[1].BaseSHA != groupA {
		t.Fatalf("queue %+v: B's group must be built on A's", q)
	}
	r := wantCheck(t, h, groupB, "failure")
	wantContains(t, "B's group's check", r.Title+"\n"+r.Summary, fmt.Sprintf("Merge queue, #%d: the group of #%d ahead of it does not pass", prB, prA),
		fmt.Sprintf("built on the group of #%d", prA))
}

// Both entries pass; then A's task is reopened while queued. A's group fails
// at once, and so must B's, which carries A's changes.
func TestAttackGateReopenAheadFailsGroupBehind(t *testing.T) {
	h := newHarness(t)
	team(h)
	nA, prA, _ := verifiedPR(t, h, "Login form")
	_, prB, _ := verifiedPR(t, h, "Signup form")
	groupA := queue(t, h, prA, "alice", "success")
	groupB := queue(t, h, prB, "alice", "success")

	h.gh.Comment(testRepo, nA, "carol", "/reopen the form loses input on resize")
	h.settle()
	wantCheck(t, h, groupA, "failure")
	r := wantCheck(t, h, groupB, "failure")
	wantContains(t, "B's group's check", r.Summary, fmt.Sprintf("#%d", prA))

	// A leaves the queue: GitHub rebuilds B on the branch, and it passes.
	h.gh.DequeuePR(testRepo, prA, "carol")
	h.settle()
	q := h.gh.MergeQueue(testRepo)
	if len(q) != 1 || q[0].PR != prB {
		t.Fatalf("queue %+v: B alone", q)
	}
	wantCheck(t, h, q[0].HeadSHA, "success")
}

// The same merge_group delivery redelivered, and a second checks_requested
// for the same head: one check run on the group, written once.
func TestAttackGateMergeGroupRedelivered(t *testing.T) {
	h := newHarness(t)
	team(h)
	_, pr, _ := verifiedPR(t, h, "Login form")
	group := queue(t, h, pr, "alice", "success")
	var id string
	for _, d := range h.gh.Deliveries() {
		if d.Event == "merge_group" && d.Action == "checks_requested" {
			id = d.ID
		}
	}
	h.gh.ResetRequests()
	if err := h.gh.Redeliver(id); err != nil {
		t.Fatal(err)
	}
	h.settle()
	if w := writes(h.gh.Requests()); len(w) != 0 {
		t.Errorf("a redelivered merge_group wrote %v", w)
	}
	// The same payload under a new delivery id (GitHub asks again).
	var payload []byte
	for _, d := range h.gh.Deliveries() {
		if d.ID == id {
			payload = d.Payload
		}
	}
	h.gh.ResetRequests()
	if resp := h.post("merge_group", "another-id", payload, true); resp.StatusCode/100 != 2 {
		t.Fatalf("webhook: %d", resp.StatusCode)
	}
	h.settle()
	if w := writes(h.gh.Requests()); len(w) != 0 {
		t.Errorf("a second checks_requested for the same group wrote %v", w)
	}
	if k := ownRuns(h, group); k != 1 {
		t.Errorf("%d check runs on the group, want 1", k)
	}
}

// An untracked pull request under allow passes; its description edited to
// close a task, its check follows the task; edited back, it passes again.
func TestAttackGateUntrackedThenLinkedThenUnlinked(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetFile(testRepo, rules.ConfigPath, "gate:\n  untracked: allow\n")
	n := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	h.gh.Assign(testRepo, n, "carol", "alice")
	pr, sha := h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "Login form", Body: "Work."})
	h.settle()
	wantCheck(t, h, sha, "success")
	h.gh.EditPR(testRepo, pr, "alice", "", fmt.Sprintf("Fixes #%d", n))
	h.settle()
	wantCheck(t, h, sha, "in_progress")
	h.gh.EditPR(testRepo, pr, "alice", "", "Work.")
	h.settle()
	wantCheck(t, h, sha, "success")
}

// An exempt author's untracked pull request passes, and so does its next
// head after a push.
func TestAttackGateExemptAfterPush(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetFile(testRepo, rules.ConfigPath, "gate:\n  exempt: [\"dependabot[bot]\"]\n")
	pr, sha := h.gh.OpenPR(testRepo, "dependabot[bot]", githubtest.PROptions{Title: "Bump x", Body: "Bumps x."})
	h.settle()
	wantCheck(t, h, sha, "success")
	sha2 := h.gh.PushAs(testRepo, pr, "dependabot[bot]", githubtest.Commit{Message: "bump again"})
	h.settle()
	wantCheck(t, h, sha2, "success")
}

// The group behind is decided before the group it is built on (two pull
// requests' keys are decided in parallel, in any order): once the group
// ahead fails, so does the group behind.
func TestAttackGateGroupBehindDecidedFirst(t *testing.T) {
	h := newHarness(t)
	team(h)
	nA, prA, shaA := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login form"})
	ciPasses(h, shaA)
	h.settle()
	wantState(t, h, nA, "review")
	_, prB, _ := verifiedPR(t, h, "Signup form")

	h.gh.DropWebhooks(true)
	groupA := h.gh.EnqueuePR(testRepo, prA, "alice")
	groupB := h.gh.EnqueuePR(testRepo, prB, "alice")
	h.gh.DropWebhooks(false)
	h.settle()
	var sent []githubtest.SentWebhook
	for _, d := range h.gh.Deliveries() {
		if d.Event == "merge_group" {
			sent = append(sent, d)
		}
	}
	wantCheck(t, h, groupB, "none")
	if len(sent) != 2 {
		t.Fatalf("%d merge_group deliveries, want 2", len(sent))
	}
	h.post("merge_group", sent[1].ID, sent[1].Payload, true) // B's first
	h.settle()
	h.post("merge_group", sent[0].ID, sent[0].Payload, true)
	h.settle()
	wantCheck(t, h, groupA, "failure")
	r := wantCheck(t, h, groupB, "failure")
	wantContains(t, "B's group's check", r.Summary, fmt.Sprintf("#%d", prA))
}

// An outsider's pull request that says Fixes #N links nothing; under
// allow, or with the outsider exempt, it still does not pass (it is not
// work without a task), and neither does its group.
func TestAttackGateOutsiderFixesUnderAllow(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetFile(testRepo, rules.ConfigPath, "gate:\n  untracked: allow\n  exempt: [mallory]\n")
	n := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	h.settle()
	pr, sha := h.gh.OpenPR(testRepo, "mallory", githubtest.PROptions{Title: "Login form", Body: fmt.Sprintf("Fixes #%d", n)})
	h.settle()
	r := wantCheck(t, h, sha, "failure")
	wantContains(t, "the outsider's check", r.Summary, "may not build here")
	wantState(t, h, n, "pending")
	queue(t, h, pr, "carol", "failure")
}

// An exempt author's pull request that closes a task is gated on the task.
func TestAttackGateExemptAuthorClosingTaskIsGated(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetFile(testRepo, rules.ConfigPath, "gate:\n  exempt: [alice]\n")
	_, pr, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login form"})
	ciPasses(h, sha)
	h.settle()
	wantCheck(t, h, sha, "in_progress")
	queue(t, h, pr, "alice", "failure")
}

// A push to a queued pull request: GitHub takes it out of the queue (its
// group destroyed); the tracking ends and the new head waits for review.
func TestAttackGatePushWhileQueued(t *testing.T) {
	h := newHarness(t)
	team(h)
	n, pr, _ := verifiedPR(t, h, "Login form")
	group := queue(t, h, pr, "alice", "success")
	sha2 := h.gh.Push(testRepo, pr, githubtest.Commit{Message: "one more"})
	h.settle()
	if q := h.gh.MergeQueue(testRepo); len(q) != 0 {
		t.Fatalf("queue %+v: a push takes the pull request out", q)
	}
	if g := trackedGroups(t, h, pr); g != "" {
		t.Fatalf("a destroyed group is still tracked: %s", g)
	}
	wantState(t, h, n, "review")
	wantCheck(t, h, sha2, "in_progress")
	wantCheck(t, h, group, "success") // GitHub dropped it; nothing rewrites a destroyed group
}
