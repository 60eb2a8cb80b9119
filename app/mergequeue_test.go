package app_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/internal/githubtest"
	"github.com/countersign/countersign/rules"
)

// The merge queue and the gate's other answers (DESIGN §2), end to end:
// GitHub's merge_group deliveries, shaped like the real payload, reach the
// bot's webhook from the fake GitHub, and the checks it posts on the groups'
// commits are read back from the fake.

// verifiedPR opens a task and alice's ready pull request that closes it, and
// takes the task to verified (carol approves, bob verifies).
func verifiedPR(t *testing.T, h *harness, title string) (n, pr int, sha string) {
	t.Helper()
	n, pr, sha, _ = approvedPR(t, h, title, "carol", githubtest.PROptions{Title: title})
	h.gh.Comment(testRepo, n, "bob", "/verify works")
	h.settle()
	wantState(t, h, n, "verified")
	wantCheck(t, h, sha, "success")
	return n, pr, sha
}

// queue adds pull request pr to the merge queue (by who) and wants its
// group's check to be want; it returns the group's commit.
func queue(t *testing.T, h *harness, pr int, who, want string) string {
	t.Helper()
	group := h.gh.EnqueuePR(testRepo, pr, who)
	h.settle()
	wantCheck(t, h, group, want)
	return group
}

// trackedGroups are the merge groups the bot tracks for pull request pr.
func trackedGroups(t *testing.T, h *harness, pr int) string {
	t.Helper()
	b, err := h.store.Get(context.Background(), records.MergeGroupsKey(testRepo, pr))
	if errors.Is(err, store.ErrNotFound) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestMergeQueueVerifiedPullRequest(t *testing.T) {
	h := newHarness(t)
	team(h)
	_, pr, sha := verifiedPR(t, h, "Login form")

	h.gh.ResetRequests()
	h.gh.SetWebhookPaused(true)
	group := h.gh.EnqueuePR(testRepo, pr, "alice")
	h.gh.SetWebhookPaused(false)
	h.settle()
	c := measure("queued", h.gh.Requests())
	r := wantCheck(t, h, group, "success")
	wantContains(t, "the group's check", r.Title+"\n"+r.Summary, fmt.Sprintf("Merge queue, #%d", pr),
		fmt.Sprintf("pr-%d-", pr), fmt.Sprintf("(%.12s)", sha))
	if !strings.Contains(trackedGroups(t, h, pr), group) {
		t.Fatalf("group %s not tracked: %s", group, trackedGroups(t, h, pr))
	}
	t.Logf("one queued pull request costs %d requests (%d writes): %s", c.requests, c.writes, strings.Join(c.detail, ", "))
	if c.requests > 3 || c.writes > 1 {
		t.Errorf("a queued pull request costs %d requests (%d writes), want at most 3 (1): read the pull request's head, read the base branch's head (the group is built on it), write the check\n%s",
			c.requests, c.writes, strings.Join(c.detail, "\n"))
	}

	// GitHub merges the group: destroyed (merged) ends the tracking.
	if got := h.gh.MergeQueueHead(testRepo, "carol"); got != pr {
		t.Fatalf("merged #%d from the queue, want #%d", got, pr)
	}
	h.settle()
	if g := trackedGroups(t, h, pr); g != "" {
		t.Fatalf("a merged group is still tracked: %s", g)
	}
	if _, err := h.store.Get(context.Background(), records.MergeGroupKey(testRepo, group)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the group's commit is still indexed: %v", err)
	}
}

func TestMergeQueueUnverifiedPullRequest(t *testing.T) {
	h := newHarness(t)
	team(h)
	n, pr, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login form"})
	ciPasses(h, sha)
	h.settle()
	wantState(t, h, n, "review")
	group := h.gh.EnqueuePR(testRepo, pr, "alice")
	h.settle()
	r := wantCheck(t, h, group, "failure")
	wantContains(t, "the group's check", r.Summary, fmt.Sprintf("#%d is `review`", n), "takes #", "out of the queue")
	wantCheck(t, h, sha, "in_progress") // the pull request's own check is untouched
}

// A lead reopens a verified task while its pull request is queued: the
// group's check fails at once, and the task's history says why.
func TestMergeQueueTaskReopenedWhileQueued(t *testing.T) {
	h := newHarness(t)
	team(h)
	n, pr, _ := verifiedPR(t, h, "Login form")
	group := queue(t, h, pr, "alice", "success")

	h.gh.Comment(testRepo, n, "carol", "/reopen the form loses input on resize")
	h.settle()
	wantState(t, h, n, "in-progress")
	r := wantCheck(t, h, group, "failure")
	wantContains(t, "the group's check", r.Summary, fmt.Sprintf("#%d is `in-progress`", n))
	wantContains(t, "the card", card(t, h, n), fmt.Sprintf("the group of #%d", pr), "no longer passes countersign/verification")

	// destroyed (GitHub drops the failed entry) ends the tracking; a task
	// change then writes no group check.
	h.gh.DequeuePR(testRepo, pr, "carol")
	h.settle()
	if g := trackedGroups(t, h, pr); g != "" {
		t.Fatalf("a destroyed group is still tracked: %s", g)
	}
	before := len(h.gh.CheckRuns(testRepo, group))
	h.gh.Comment(testRepo, n, "alice", "/submit fixed")
	h.settle()
	if after := len(h.gh.CheckRuns(testRepo, group)); after != before {
		t.Fatalf("a check was written on a destroyed group (%d runs, then %d)", before, after)
	}
}

// A task newly linked to a queued pull request, not verified, fails the group.
func TestMergeQueueNewlyLinkedTask(t *testing.T) {
	h := newHarness(t)
	team(h)
	n, pr, _ := verifiedPR(t, h, "Login form")
	group := queue(t, h, pr, "alice", "success")
	m := h.gh.OpenIssue(testRepo, "carol", "Password reset", "")
	h.gh.Assign(testRepo, m, "carol", "alice")
	h.settle()
	h.gh.EditPR(testRepo, pr, "alice", "", fmt.Sprintf("Fixes #%d\nFixes #%d", n, m))
	h.settle()
	r := wantCheck(t, h, group, "failure")
	wantContains(t, "the group's check", r.Summary, fmt.Sprintf("#%d is `", m))
}

// Two pull requests queued one behind the other: each group answers for its
// own pull request, the second built on the first; taking the first out
// rebuilds the second, whose new group is checked and tracked.
func TestMergeQueueTwoEntries(t *testing.T) {
	h := newHarness(t)
	team(h)
	_, prA, _ := verifiedPR(t, h, "Login form")
	nB, prB, shaB := taskWithPR(h, "Signup form", githubtest.PROptions{Title: "Signup form"})
	ciPasses(h, shaB)
	h.settle()

	groupA := h.gh.EnqueuePR(testRepo, prA, "alice")
	groupB := h.gh.EnqueuePR(testRepo, prB, "alice")
	h.settle()
	q := h.gh.MergeQueue(testRepo)
	if len(q) != 2 || q[1].BaseSHA != groupA {
		t.Fatalf("queue %+v: the second group must be built on the first", q)
	}
	wantCheck(t, h, groupA, "success")
	wantCheck(t, h, groupB, "failure") // #B's task is in review

	// #B's task gets verified and B is queued again behind A.
	h.gh.DequeuePR(testRepo, prB, "alice")
	h.gh.Review(testRepo, prB, "carol", "APPROVED", "")
	h.settle()
	h.gh.Comment(testRepo, nB, "bob", "/verify works")
	h.settle()
	groupB = queue(t, h, prB, "alice", "success")

	// A leaves the queue: B's group is invalidated and rebuilt on the branch.
	h.gh.DequeuePR(testRepo, prA, "carol")
	h.settle()
	q = h.gh.MergeQueue(testRepo)
	if len(q) != 1 || q[0].PR != prB || q[0].HeadSHA == groupB {
		t.Fatalf("queue %+v: B alone, in a new group", q)
	}
	wantCheck(t, h, q[0].HeadSHA, "success")
	if g := trackedGroups(t, h, prA); g != "" {
		t.Fatalf("A's group is still tracked: %s", g)
	}
	if g := trackedGroups(t, h, prB); strings.Contains(g, groupB) || !strings.Contains(g, q[0].HeadSHA) {
		t.Fatalf("B's tracked groups %s: want only the rebuilt %s", g, q[0].HeadSHA)
	}
}

// Every pull request gets an answer: one that closes no task gets a
// completed run, per gate.untracked and gate.exempt; queued, so does its group.
func TestUntrackedPullRequest(t *testing.T) {
	t.Parallel() // its subtests' harnesses, each its own, leave it serial otherwise
	for _, tc := range []struct {
		name, config, author, want, says string
	}{
		{"require (default)", "", "alice", "failure", "`Fixes #N`"},
		{"allow", "gate:\n  untracked: allow\n", "alice", "success", "closes no task"},
		{"an exempt author", "gate:\n  exempt: [\"dependabot[bot]\"]\n", "dependabot[bot]", "success", "`gate.exempt`"},
		{"exempt, another author", "gate:\n  exempt: [\"dependabot[bot]\"]\n", "alice", "failure", "`gate.exempt`"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			team(h)
			if tc.config != "" {
				h.gh.SetFile(testRepo, rules.ConfigPath, tc.config)
			}
			pr, sha := h.gh.OpenPR(testRepo, tc.author, githubtest.PROptions{Title: "Bump a dependency", Body: "Routine."})
			h.settle()
			r := wantCheck(t, h, sha, tc.want)
			wantContains(t, "the check", r.Title+"\n"+r.Summary, "Closes no task", tc.says)
			if tc.want == "failure" {
				wantContains(t, "the check", r.Summary, "Whoever may change that file may exempt it")
			}
			queue(t, h, pr, tc.author, tc.want)
		})
	}
}

// A commit status named countersign/verification, or another App's check
// run of that name, changes nothing: it is counted, and shown on the card of
// each task the pull request closes.
func TestForgedGate(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetPermission(testRepo, "mallory", "write")
	n, pr, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login form"})
	ciPasses(h, sha)
	h.settle()
	group := queue(t, h, pr, "alice", "failure")

	h.gh.SetStatusBy(testRepo, sha, "mallory", rules.CheckName, "success", "")
	h.gh.SetStatusBy(testRepo, sha, "mallory", rules.CheckName, "success", "") // once on the card
	h.gh.CheckRun(testRepo, sha, rules.CheckName, "", "success", "evil-app")
	h.gh.SetStatusBy(testRepo, group, "mallory", rules.CheckName, "success", "")
	h.settle()
	wantState(t, h, n, "review")
	wantCheck(t, h, sha, "in_progress")
	wantCheck(t, h, group, "failure")
	c := card(t, h, n)
	wantContains(t, "the card", c, "a commit status named countersign/verification by @mallory", "a check run named countersign/verification by the App evil-app",
		fmt.Sprintf("the merge-queue group of #%d", pr), "was ignored")
	_, shown, _ := strings.Cut(c, "### countersign") // what people see, past the hidden record
	if k := strings.Count(shown, "a commit status named countersign/verification by @mallory on the head"); k != 1 {
		t.Errorf("the forged status on the head is shown %d times, want once:\n%s", k, c)
	}
	_, metrics := h.get("/metrics")
	for _, want := range []string{`countersign_forged_gate_total{kind="status"} 3`, `countersign_forged_gate_total{kind="check_run"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s:\n%s", want, grep(metrics, "forged"))
		}
	}
}

// The store is lost while a pull request is queued: a task then rebuilt from
// GitHub and reopened finds the group again from GitHub's queue branches,
// and fails it.
func TestMergeQueueAfterStoreLoss(t *testing.T) {
	h := newHarness(t)
	team(h)
	n, pr, _ := verifiedPR(t, h, "Login form")
	group := queue(t, h, pr, "alice", "success")

	h = freshStore(t, h)
	h.gh.Comment(testRepo, n, "carol", "/reopen the form loses input on resize")
	h.settle()
	wantState(t, h, n, "in-progress")
	r := wantCheck(t, h, group, "failure")
	wantContains(t, "the group's check", r.Summary, fmt.Sprintf("#%d is `in-progress`", n))
	if !strings.Contains(trackedGroups(t, h, pr), group) {
		t.Fatalf("the group is not tracked again: %q", trackedGroups(t, h, pr))
	}
	// What it is built on is read again: its commit's first parent.
	if q := h.gh.MergeQueue(testRepo); len(q) != 1 || !strings.Contains(trackedGroups(t, h, pr), `"base_sha":"`+q[0].BaseSHA+`"`) {
		t.Fatalf("the group found again does not know its base %+v: %q", q, trackedGroups(t, h, pr))
	}
}
