package app_test

import (
	"fmt"
	"testing"

	"github.com/countersign/countersign/internal/githubtest"
)

// A pull request's base can change (pull_request.edited with changes.base):
// by hand, or by GitHub itself when the pull request beneath it in a stack
// merges and its branch is deleted. The head stays the same, but what the
// pull request would merge may not. These tests drive base changes through
// POST /webhook against the fake GitHub.

// verifiedOn opens a task (carol opens it, assigns alice), alice's pull
// request o on branch base that closes it, CI green, dave's approval and
// bob's /verify: the task is verified and the check passes. It returns the
// task's number, the pull request's and its head.
func verifiedOn(t *testing.T, h *harness, title, base string, o githubtest.PROptions) (n, pr int, sha string) {
	t.Helper()
	n = h.gh.OpenIssue(testRepo, "carol", title, "")
	h.gh.Assign(testRepo, n, "carol", "alice")
	o.Body = fmt.Sprintf("Fixes #%d", n)
	if base == "main" {
		pr, sha = h.gh.OpenPR(testRepo, "alice", o)
	} else {
		pr, sha = h.gh.OpenPROn(testRepo, "alice", base, o)
	}
	ciPasses(h, sha)
	h.gh.Review(testRepo, pr, "dave", "APPROVED", "")
	h.settle()
	wantState(t, h, n, "completed")
	h.gh.Comment(testRepo, n, "bob", "/verify checked")
	h.settle()
	wantState(t, h, n, "verified")
	wantCheck(t, h, sha, "success")
	return n, pr, sha
}

func baseTeam(h *harness) {
	team(h)
	h.gh.SetPermission(testRepo, "dave", "write")
}

// The attack: alice stacks her task's pull request on her own branch, which
// holds commit X. Reviewers see only the task's diff; dave approves, bob
// verifies. Alice changes the base to main: the same head now also merges X.
// Approval and verification are stale, the gate is pending again, and the
// task's history says why.
func TestRetargetBringingUnreviewedCommitIsStale(t *testing.T) {
	h := newHarness(t)
	baseTeam(h)
	h.gh.CreateBranch(testRepo, "alice", "alice-base", githubtest.Commit{Message: "X", Files: []string{"backdoor.go"}})
	n, pr, sha := verifiedOn(t, h, "Login form", "alice-base", githubtest.PROptions{Title: "Login form", Files: []string{"login.go"}})

	h.gh.EditPRBase(testRepo, pr, "alice", "main")
	h.settle()
	wantState(t, h, n, "review")
	wantCheck(t, h, sha, "in_progress")
	wantContains(t, "task card", card(t, h, n), "base changed from alice-base to main", "1 change no one approved")

	// dave reviews what it now merges, bob verifies again: it passes.
	h.gh.Review(testRepo, pr, "dave", "APPROVED", "")
	h.settle()
	wantState(t, h, n, "completed")
	h.gh.Comment(testRepo, n, "bob", "/verify checked with X")
	h.settle()
	wantState(t, h, n, "verified")
	wantCheck(t, h, sha, "success")
}

// The same commit X shares a file with the task: the file list is the same,
// but what the pull request merges in that file is not.
func TestRetargetBringingChangeToSameFileIsStale(t *testing.T) {
	h := newHarness(t)
	baseTeam(h)
	h.gh.CreateBranch(testRepo, "alice", "alice-base", githubtest.Commit{Message: "X", Files: []string{"login.go"}})
	n, pr, sha := verifiedOn(t, h, "Login form", "alice-base", githubtest.PROptions{Title: "Login form", Files: []string{"login.go"}})

	h.gh.EditPRBase(testRepo, pr, "alice", "main")
	h.settle()
	wantState(t, h, n, "review")
	wantCheck(t, h, sha, "in_progress")
}

// A retarget to a base that brings nothing new (a branch at main's head)
// keeps what was approved and verified.
func TestRetargetWithNoNewChangesKeepsVerification(t *testing.T) {
	h := newHarness(t)
	baseTeam(h)
	h.gh.CreateBranch(testRepo, "carol", "release")
	n, pr, sha := verifiedOn(t, h, "Login form", "main", githubtest.PROptions{Title: "Login form", Files: []string{"login.go"}})
	before := card(t, h, n)

	h.gh.EditPRBase(testRepo, pr, "alice", "release")
	h.settle()
	wantState(t, h, n, "verified")
	wantCheck(t, h, sha, "success")
	if got := card(t, h, n); got != before {
		t.Fatalf("the card changed:\n%s\nwas:\n%s", got, before)
	}
}

// stack opens two tasks: the lower pull request on main (head branch
// "lower") and the upper one stacked on it. Both are approved by dave and
// verified by bob. It returns the upper task, its pull request and head, and
// the lower pull request.
func stack(t *testing.T, h *harness, lowerFiles, upperFiles []string) (upper, upperPR int, upperSHA string, lowerPR int) {
	t.Helper()
	_, lowerPR, _ = verifiedOn(t, h, "API", "main", githubtest.PROptions{Title: "API", HeadRef: "lower", Files: lowerFiles})
	upper, upperPR, upperSHA = verifiedOn(t, h, "UI", "lower", githubtest.PROptions{Title: "UI", HeadRef: "upper", Files: upperFiles})
	return upper, upperPR, upperSHA, lowerPR
}

// The lower pull request of a stack is squash-merged: GitHub changes the
// upper one's base to main by itself. The upper one now lists the lower
// one's commits and their files (they are not main's commits), yet merging it
// brings none of that content again: nothing changes.
func TestStackedRetargetAfterSquashMergeKeepsVerification(t *testing.T) {
	h := newHarness(t)
	baseTeam(h)
	n, pr, sha, lower := stack(t, h, []string{"api.go"}, []string{"ui.go"})
	before := card(t, h, n)

	h.gh.MergeStacked(testRepo, lower, "carol", "squash")
	h.settle()
	if got := baseOf(h, pr); got != "main" {
		t.Fatalf("upper base = %q, want main", got)
	}
	wantState(t, h, n, "verified")
	wantCheck(t, h, sha, "success")
	if got := card(t, h, n); got != before {
		t.Fatalf("the card changed:\n%s\nwas:\n%s", got, before)
	}
}

// The same with a merge commit: the lower one's commits are main's now, so
// the upper one merges what it did before.
func TestStackedRetargetAfterMergeCommitKeepsVerification(t *testing.T) {
	h := newHarness(t)
	baseTeam(h)
	n, pr, sha, lower := stack(t, h, []string{"api.go"}, []string{"ui.go"})

	h.gh.MergeStacked(testRepo, lower, "carol", "merge")
	h.settle()
	if got := baseOf(h, pr); got != "main" {
		t.Fatalf("upper base = %q, want main", got)
	}
	wantState(t, h, n, "verified")
	wantCheck(t, h, sha, "success")
}

// The lower pull request of a stack is squash-merged, and main reverts it
// (someone pushes a revert commit) before the upper one's base changes to
// main (its branch deleted by hand later, or its base edited). The upper one
// then merges the lower one's change again, which main no longer holds and
// which the upper task's reviewer never saw: approval and verification are
// stale.
func TestReviewStackedRetargetAfterSquashMergeThenRevertIsStale(t *testing.T) {
	h := newHarness(t)
	baseTeam(h)
	n, pr, sha, lower := stack(t, h, []string{"api.go"}, []string{"ui.go"})

	squash := h.gh.MergeMethod(testRepo, lower, "carol", "squash")
	h.settle()
	h.gh.RevertDefault(testRepo, "carol", squash)
	h.settle()
	wantState(t, h, n, "verified") // not retargeted yet: it merges into lower what it did
	h.gh.DeleteMergedBranch(testRepo, "carol", "lower")
	h.settle()
	if got := baseOf(h, pr); got != "main" {
		t.Fatalf("upper base = %q, want main", got)
	}
	wantState(t, h, n, "review")
	wantCheck(t, h, sha, "in_progress")
	wantContains(t, "task card", card(t, h, n), "base changed from lower to main", "1 change no one approved")
}

// The same, but main reverts the lower pull request after the upper one was
// retargeted (rightly kept verified then): the push to main makes the upper
// one merge the lower one's change again, and its approval and verification
// go stale.
func TestReviewStackedRetargetThenRevertIsStale(t *testing.T) {
	h := newHarness(t)
	baseTeam(h)
	n, pr, sha, lower := stack(t, h, []string{"api.go"}, []string{"ui.go"})

	squash := h.gh.MergeStacked(testRepo, lower, "carol", "squash")
	h.settle()
	if got := baseOf(h, pr); got != "main" {
		t.Fatalf("upper base = %q, want main", got)
	}
	wantState(t, h, n, "verified")
	h.gh.RevertDefault(testRepo, "carol", squash)
	h.settle()
	wantState(t, h, n, "review")
	wantCheck(t, h, sha, "in_progress")
	wantContains(t, "task card", card(t, h, n), "main no longer holds", "1 change no one approved")

	// dave approves what it merges now, bob verifies again: it passes.
	h.gh.Review(testRepo, pr, "dave", "APPROVED", "")
	h.settle()
	wantState(t, h, n, "completed")
	h.gh.Comment(testRepo, n, "bob", "/verify checked with the API again")
	h.settle()
	wantState(t, h, n, "verified")
	wantCheck(t, h, sha, "success")
}

// The upper pull request is closed while main reverts the lower one, then
// reopened with the same head: no push was read for it while it was closed,
// so reopening reads again whether main still holds what excused it.
func TestStackedRetargetClosedWhileRevertedIsStaleWhenReopened(t *testing.T) {
	h := newHarness(t)
	baseTeam(h)
	n, pr, sha, lower := stack(t, h, []string{"api.go"}, []string{"ui.go"})

	squash := h.gh.MergeStacked(testRepo, lower, "carol", "squash")
	h.settle()
	wantState(t, h, n, "verified")
	h.gh.ClosePR(testRepo, pr, "alice")
	h.settle()
	h.gh.RevertDefault(testRepo, "carol", squash)
	h.settle()
	h.gh.ReopenPR(testRepo, pr, "alice")
	h.settle()
	wantState(t, h, n, "review")
	wantCheck(t, h, sha, "in_progress")
}

// After the retarget that kept it verified, other pushes to main that leave
// the lower pull request's change in place keep it verified.
func TestStackedRetargetThenUnrelatedPushKeepsVerification(t *testing.T) {
	h := newHarness(t)
	baseTeam(h)
	n, _, sha, lower := stack(t, h, []string{"api.go"}, []string{"ui.go"})

	h.gh.MergeStacked(testRepo, lower, "carol", "squash")
	h.settle()
	before := card(t, h, n)
	h.gh.PushBranch(testRepo, "main", "carol", githubtest.Commit{Message: "Docs", Files: []string{"README.md"}})
	h.settle()
	wantState(t, h, n, "verified")
	wantCheck(t, h, sha, "success")
	if got := card(t, h, n); got != before {
		t.Fatalf("the card changed:\n%s\nwas:\n%s", got, before)
	}
}

// The pull request beneath never passed countersign's gate: no one approved
// or verified it, and an admin merged it all the same (squash). Its change
// is on main, but no reviewer of either task saw it: the upper pull request,
// retargeted onto main, now carries it, and its approval and verification
// are stale.
func TestStackedRetargetAfterUngatedMergeIsStale(t *testing.T) {
	h := newHarness(t)
	baseTeam(h)
	ln := h.gh.OpenIssue(testRepo, "carol", "API", "")
	h.gh.Assign(testRepo, ln, "carol", "alice")
	lower, lsha := h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "API", Body: fmt.Sprintf("Fixes #%d", ln), HeadRef: "lower", Files: []string{"api.go"}})
	ciPasses(h, lsha)
	h.settle()
	wantState(t, h, ln, "review")
	n, pr, sha := verifiedOn(t, h, "UI", "lower", githubtest.PROptions{Title: "UI", HeadRef: "upper", Files: []string{"ui.go"}})

	h.gh.MergeStacked(testRepo, lower, "carol", "squash") // an admin, past the gate
	h.settle()
	if got := baseOf(h, pr); got != "main" {
		t.Fatalf("upper base = %q, want main", got)
	}
	wantState(t, h, n, "review")
	wantCheck(t, h, sha, "in_progress")
}

// The same when the pull request beneath closed no task at all (no
// countersign record of a pass): it excuses nothing.
func TestStackedRetargetAfterUntrackedMergeIsStale(t *testing.T) {
	h := newHarness(t)
	baseTeam(h)
	lower, lsha := h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "API", HeadRef: "lower", Files: []string{"api.go"}})
	ciPasses(h, lsha)
	h.settle()
	n, pr, sha := verifiedOn(t, h, "UI", "lower", githubtest.PROptions{Title: "UI", HeadRef: "upper", Files: []string{"ui.go"}})

	h.gh.MergeStacked(testRepo, lower, "carol", "squash")
	h.settle()
	if got := baseOf(h, pr); got != "main" {
		t.Fatalf("upper base = %q, want main", got)
	}
	wantState(t, h, n, "review")
	wantCheck(t, h, sha, "in_progress")
}

// The branch beneath was used before: earlier pull requests from it were
// closed unmerged, more of them than a short read finds. The one that was
// verified and squash-merged is still found: the upper one stays verified.
func TestStackedRetargetFindsGatedMergeAmongClosedOnes(t *testing.T) {
	h := newHarness(t)
	baseTeam(h)
	_, lower, _ := verifiedOn(t, h, "API", "main", githubtest.PROptions{Title: "API", HeadRef: "lower", Files: []string{"api.go"}})
	n, pr, sha := verifiedOn(t, h, "UI", "lower", githubtest.PROptions{Title: "UI", HeadRef: "upper", Files: []string{"ui.go"}})
	h.gh.MergeMethod(testRepo, lower, "carol", "squash")
	h.settle()
	for i := 0; i < 4; i++ { // later attempts from the same branch name, closed
		o, _ := h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: fmt.Sprintf("try %d", i), HeadRef: "lower", Files: []string{"api.go"}})
		h.gh.ClosePR(testRepo, o, "alice")
	}
	h.settle()
	h.gh.DeleteMergedBranch(testRepo, "carol", "lower")
	h.settle()
	if got := baseOf(h, pr); got != "main" {
		t.Fatalf("upper base = %q, want main", got)
	}
	wantState(t, h, n, "verified")
	wantCheck(t, h, sha, "success")
}

// Alice moves the upper pull request of a stack onto main while the lower
// one is still open: it now merges the lower one's code, which the upper
// task's reviewer never saw.
func TestStackedRetargetBeforeLowerMergesIsStale(t *testing.T) {
	h := newHarness(t)
	baseTeam(h)
	n, pr, sha, _ := stack(t, h, []string{"api.go"}, []string{"ui.go"})

	h.gh.EditPRBase(testRepo, pr, "alice", "main")
	h.settle()
	wantState(t, h, n, "review")
	wantCheck(t, h, sha, "in_progress")
}

func baseOf(h *harness, pr int) string {
	v, _ := h.gh.Issue(testRepo, pr)
	return v.BaseRef
}
