package app_test

import (
	"fmt"
	"testing"

	"github.com/countersign/countersign/internal/githubtest"
)

// Whoever pushed the commits a pull request carries is a builder, whatever
// branch they pushed them to (DESIGN §1). bob pushes the work to branch
// "wip" under dave's git identity; dave copies it to the branch the pull
// request comes from (`git push origin wip:login`) and opens the pull
// request. These are the variants of
// TestReviewPusherOfTheCommitsToAnotherBranchIsBuilder (review27_test.go):
// bob's push delivery missed (GitHub's repository activity, read for every
// branch, still names him), the store lost after the pushes, bob's push
// carrying more commits than the pull request (or fewer), and bob renamed.

// elsewhere has bob push commits to branch "wip" (his push delivery missed
// when hidden), dave build branch "login" from it with build, h2 (if set)
// take over after that (the store lost), then dave open the pull request for
// a task assigned to him; CI passes and erin approves. It returns the
// harness in use, the task and the pull request's head.
func elsewhere(t *testing.T, h *harness, hidden bool, commits []githubtest.Commit, build func(h *harness), after func(*harness) *harness) (*harness, int, string) {
	t.Helper()
	team(h)
	h.gh.SetPermission(testRepo, "dave", "write")
	h.gh.SetPermission(testRepo, "erin", "write")
	n := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	h.gh.Assign(testRepo, n, "carol", "dave")
	h.settle()
	h.gh.DropWebhooks(hidden)
	h.gh.PushBranch(testRepo, "wip", "bob", commits...)
	h.gh.DropWebhooks(false)
	h.settle()
	build(h)
	h.settle()
	if after != nil {
		h = after(h)
	}
	pr, sha := h.gh.OpenPRFrom(testRepo, "dave", "login", githubtest.PROptions{Title: "Login", Body: fmt.Sprintf("Fixes #%d", n)})
	ciPasses(h, sha)
	h.settle()
	h.gh.Review(testRepo, pr, "erin", "APPROVED", "")
	h.settle()
	wantState(t, h, n, "completed")
	return h, n, sha
}

// loginForm is the work bob pushes, under dave's git identity.
var loginForm = []githubtest.Commit{{Author: "dave", Message: "the login form", Files: []string{"login.go"}}}

// copyWip is dave's `git push origin wip:login`.
func copyWip(h *harness) { h.gh.CopyBranch(testRepo, "dave", "wip", "login") }

func TestPusherToAnotherBranchIsBuilderPushMissed(t *testing.T) {
	h, n, sha := elsewhere(t, newHarness(t), true, loginForm, copyWip, nil)
	bobRefused(t, h, n, sha)
}

func TestPusherToAnotherBranchIsBuilderAfterStoreLoss(t *testing.T) {
	h, n, sha := elsewhere(t, newHarness(t), false, loginForm, copyWip, func(h *harness) *harness { return freshStore(t, h) })
	bobRefused(t, h, n, sha)
}

// bob pushes A and B; dave builds C on B. The pull request carries bob's
// commits as ancestors of its head, and his push's tip (B) among them:
// known from bob's push delivery, and from the activity when it was missed.
func TestPusherOfAncestorsOnAnotherBranchIsBuilder(t *testing.T) {
	t.Parallel() // its subtests' harnesses, each its own, leave it serial otherwise
	for _, hidden := range []bool{false, true} {
		t.Run(fmt.Sprintf("push missed %v", hidden), func(t *testing.T) {
			ab := []githubtest.Commit{{Author: "dave", Message: "A", Files: []string{"a.go"}}, {Author: "dave", Message: "B", Files: []string{"b.go"}}}
			h, n, sha := elsewhere(t, newHarness(t), hidden, ab, func(h *harness) {
				copyWip(h)
				h.gh.PushBranch(testRepo, "login", "dave", githubtest.Commit{Message: "C", Files: []string{"c.go"}})
			}, nil)
			bobRefused(t, h, n, sha)
		})
	}
}

// bob pushes A and B; dave pushes only A to a branch of his own (`git push
// origin A:login`) and builds C on it. The pull request carries A, which bob
// pushed, but not his push's tip: his push delivery names A.
func TestPusherOfPartOfAPushIsBuilder(t *testing.T) {
	ab := []githubtest.Commit{{Author: "dave", Message: "A", Files: []string{"a.go"}}, {Author: "dave", Message: "B", Files: []string{"b.go"}}}
	h, n, sha := elsewhere(t, newHarness(t), false, ab, func(h *harness) {
		a := h.gh.BranchCommits(testRepo, "wip")[0]
		h.gh.CopyBranchAt(testRepo, "dave", "wip", "login", a)
		h.gh.PushBranch(testRepo, "login", "dave", githubtest.Commit{Message: "C", Files: []string{"c.go"}})
	}, nil)
	bobRefused(t, h, n, sha)
}

// A pusher is held by account, not login: bob renames himself robert after
// pushing; robert's /verify is refused.
func TestPusherToAnotherBranchRenamedIsBuilder(t *testing.T) {
	h, n, sha := elsewhere(t, newHarness(t), false, loginForm, func(h *harness) {
		copyWip(h)
		h.gh.RenameUser("bob", "robert")
	}, nil)
	h.gh.Comment(testRepo, n, "robert", "/verify")
	h.settle()
	wantState(t, h, n, "completed")
	wantCheck(t, h, sha, "in_progress")
	if !anyCommentContains(h, n, "built this task") {
		t.Fatalf("the /verify of robert (bob renamed), who pushed the commits, got no refusal: %v", replies(h, n))
	}
}

// Pushing other commits elsewhere makes no one a builder: bob pushed his own
// work to branch "docs"; dave's pull request carries none of it, and bob may
// verify it.
func TestPusherOfOtherCommitsIsNoBuilder(t *testing.T) {
	h, n, sha := elsewhere(t, newHarness(t), false, []githubtest.Commit{{Message: "the docs", Files: []string{"docs.md"}}}, func(h *harness) {
		h.gh.PushBranch(testRepo, "login", "dave", githubtest.Commit{Message: "the login form", Files: []string{"login.go"}})
	}, nil)
	h.gh.Comment(testRepo, n, "bob", "/verify")
	h.settle()
	wantState(t, h, n, "verified")
	wantCheck(t, h, sha, "success")
}

// bob's trace of the push removed: after dave copied the work, bob force
// pushes wip back to the default branch (his push delivery missed, too).
// GitHub's activity still lists his push: he is a builder.
func TestPusherToAnotherBranchForcePushedAwayIsBuilder(t *testing.T) {
	h, n, sha := elsewhere(t, newHarness(t), true, loginForm, func(h *harness) {
		copyWip(h)
		h.gh.ForcePushBranch(testRepo, "wip", "bob", "")
	}, nil)
	bobRefused(t, h, n, sha)
}
