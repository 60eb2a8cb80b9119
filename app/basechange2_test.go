package app_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/countersign/countersign/app/store/bolt"
	"github.com/countersign/countersign/internal/githubtest"
)

// Base changes seen in every order: then back, twice in a row, while
// countersign missed the delivery, after a store loss, and on a pull request
// that closed no task at the time.

// To main (X comes in: stale), then back onto alice's branch: the pull
// request merges what dave approved again, so his approval counts again
// (completed); the verification does not come back.
func TestRetargetThenBack(t *testing.T) {
	h := newHarness(t)
	baseTeam(h)
	h.gh.CreateBranch(testRepo, "alice", "alice-base", githubtest.Commit{Message: "X", Files: []string{"backdoor.go"}})
	n, pr, sha := verifiedOn(t, h, "Login form", "alice-base", githubtest.PROptions{Title: "Login form", Files: []string{"login.go"}})

	h.gh.EditPRBase(testRepo, pr, "alice", "main")
	h.settle()
	wantState(t, h, n, "review")
	h.gh.EditPRBase(testRepo, pr, "alice", "alice-base")
	h.settle()
	wantState(t, h, n, "completed")
	wantCheck(t, h, sha, "in_progress")
}

// Two base changes in a row: to a branch holding nothing new (kept), then to
// main, which brings X (stale).
func TestRetargetTwice(t *testing.T) {
	h := newHarness(t)
	baseTeam(h)
	h.gh.CreateBranch(testRepo, "alice", "alice-base", githubtest.Commit{Message: "X", Files: []string{"backdoor.go"}})
	n, pr, sha := verifiedOn(t, h, "Login form", "alice-base", githubtest.PROptions{Title: "Login form", Files: []string{"login.go"}})

	h.gh.CreateBranch(testRepo, "carol", "release")
	h.gh.EditPRBase(testRepo, pr, "alice", "main")
	h.gh.EditPRBase(testRepo, pr, "alice", "release")
	h.settle()
	wantState(t, h, n, "review")
	wantCheck(t, h, sha, "in_progress")
}

// The base change's delivery is lost: the next event of the pull request
// (its description edited) shows another base than the one recorded, and
// what it merges is read again.
func TestRetargetDeliveryMissed(t *testing.T) {
	h := newHarness(t)
	baseTeam(h)
	h.gh.CreateBranch(testRepo, "alice", "alice-base", githubtest.Commit{Message: "X", Files: []string{"backdoor.go"}})
	n, pr, sha := verifiedOn(t, h, "Login form", "alice-base", githubtest.PROptions{Title: "Login form", Files: []string{"login.go"}})

	h.gh.DropWebhooks(true)
	h.gh.EditPRBase(testRepo, pr, "alice", "main")
	h.gh.DropWebhooks(false)
	h.gh.EditPR(testRepo, pr, "alice", "", fmt.Sprintf("Fixes #%d\n\nNow on main.", n))
	h.settle()
	wantState(t, h, n, "review")
	wantCheck(t, h, sha, "in_progress")
}

// The store is lost, and the pull request's base changes while countersign
// is away: the task record comes back from its card (what the approval was
// of), the pull request's from GitHub (what it merges now); they differ.
func TestRetargetAfterStoreLoss(t *testing.T) {
	h := newHarness(t)
	baseTeam(h)
	h.gh.CreateBranch(testRepo, "alice", "alice-base", githubtest.Commit{Message: "X", Files: []string{"backdoor.go"}})
	n, pr, sha := verifiedOn(t, h, "Login form", "alice-base", githubtest.PROptions{Title: "Login form", Files: []string{"login.go"}})
	h.shutdown()

	fresh, err := bolt.Open(filepath.Join(t.TempDir(), "fresh.db"))
	if err != nil {
		t.Fatal(err)
	}
	h2 := startHarness(t, h.gh, fresh)
	h2.gh.EditPRBase(testRepo, pr, "alice", "main")
	h2.settle()
	wantState(t, h2, n, "review")
	wantCheck(t, h2, sha, "in_progress")
}

// The pull request closes no task while its base changes (alice took
// "Fixes" out of its description, then moves it onto main): when it closes
// the task again, with the same head, it merges X, which no one approved.
func TestRetargetWhileUnlinked(t *testing.T) {
	h := newHarness(t)
	baseTeam(h)
	h.gh.CreateBranch(testRepo, "alice", "alice-base", githubtest.Commit{Message: "X", Files: []string{"backdoor.go"}})
	n, pr, sha := verifiedOn(t, h, "Login form", "alice-base", githubtest.PROptions{Title: "Login form", Files: []string{"login.go"}})

	h.gh.EditPR(testRepo, pr, "alice", "", "Login form")
	h.settle()
	h.gh.EditPRBase(testRepo, pr, "alice", "main")
	h.settle()
	h.gh.EditPR(testRepo, pr, "alice", "", fmt.Sprintf("Fixes #%d", n))
	h.settle()
	wantState(t, h, n, "review")
	wantCheck(t, h, sha, "in_progress")
}

// A task whose only pull request is the one retargeted, and a task with a
// second pull request: the base change of one stales the task all the same.
func TestRetargetOfOneOfTwoPullRequests(t *testing.T) {
	h := newHarness(t)
	baseTeam(h)
	h.gh.CreateBranch(testRepo, "alice", "alice-base", githubtest.Commit{Message: "X", Files: []string{"backdoor.go"}})
	n := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	h.gh.Assign(testRepo, n, "carol", "alice")
	one, sha1 := h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "Server side", Body: fmt.Sprintf("Fixes #%d", n), Files: []string{"server.go"}})
	two, sha2 := h.gh.OpenPROn(testRepo, "alice", "alice-base", githubtest.PROptions{Title: "Client side", Body: fmt.Sprintf("Fixes #%d", n), Files: []string{"client.go"}})
	ciPasses(h, sha1)
	ciPasses(h, sha2)
	h.gh.Review(testRepo, one, "dave", "APPROVED", "")
	h.gh.Review(testRepo, two, "dave", "APPROVED", "")
	h.settle()
	h.gh.Comment(testRepo, n, "bob", "/verify both")
	h.settle()
	wantState(t, h, n, "verified")

	h.gh.EditPRBase(testRepo, two, "alice", "main")
	h.settle()
	wantState(t, h, n, "review")
	wantCheck(t, h, sha1, "in_progress")
	wantCheck(t, h, sha2, "in_progress")
}

// dave approves the pull request stacked on alice's branch, but his review's
// delivery comes after the base change (to main, bringing X): his review saw
// the task's change alone, so it does not approve what the pull request
// merges now. He is told to approve again.
func TestApprovalDeliveredAfterRetargetNotCounted(t *testing.T) {
	h := newHarness(t)
	baseTeam(h)
	h.gh.CreateBranch(testRepo, "alice", "alice-base", githubtest.Commit{Message: "X", Files: []string{"backdoor.go"}})
	n := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	h.gh.Assign(testRepo, n, "carol", "alice")
	pr, sha := h.gh.OpenPROn(testRepo, "alice", "alice-base", githubtest.PROptions{Title: "Login form", Body: fmt.Sprintf("Fixes #%d", n), Files: []string{"login.go"}})
	ciPasses(h, sha)
	h.settle()
	wantState(t, h, n, "review")

	h.gh.DropWebhooks(true)
	h.gh.Review(testRepo, pr, "dave", "APPROVED", "")
	h.gh.DropWebhooks(false)
	var review string
	for _, d := range h.gh.Deliveries() {
		if d.Event == "pull_request_review" {
			review = d.ID
		}
	}
	h.gh.EditPRBase(testRepo, pr, "alice", "main")
	h.settle()
	if err := h.gh.Redeliver(review); err != nil {
		t.Fatal(err)
	}
	h.settle()
	wantState(t, h, n, "review")
	wantContains(t, "task card", card(t, h, n), "approval by @dave on #2 not counted")
}
