package app_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/githubtest"
)

// Attacks on the second round of integrity defences (issue 21). Each test
// here shows a way around "someone else confirms" that still works.

// A verifier rejected head h1; a second attempt (h2) is approved and
// verified. The builder then force-pushes the branch back to h1, the very
// commits that were rejected and that no approval of this attempt covers.
// Moving to a rejected head is taken as "no new attempt", so nothing goes
// stale: the task stays verified and the gate turns green on the rejected
// code, with no one else confirming anything.
func TestAttackForcePushBackToRejectedHeadStaysVerified(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetPermission(testRepo, "dave", "write")
	n, pr, h1, _ := approvedPR(t, h, "Login form", "bob", githubtest.PROptions{Title: "Login"})
	h.gh.Comment(testRepo, n, "dave", "/reject the password is logged in clear")
	h.settle()
	wantState(t, h, n, "in-progress")

	h2 := h.gh.Push(testRepo, pr, githubtest.Commit{Message: "stop logging the password"})
	ciPasses(h, h2)
	h.gh.Review(testRepo, pr, "bob", "APPROVED", "")
	h.settle()
	wantState(t, h, n, "completed")
	h.gh.Comment(testRepo, n, "dave", "/verify")
	h.settle()
	wantState(t, h, n, "verified")

	h.gh.ForcePush(testRepo, pr, "alice", h1)
	h.settle()
	if got := stateOf(h, n); got == "verified" || got == "completed" {
		t.Errorf("after a force-push back to the rejected head %s the task is %q: the rejected commits, approved by no one in this attempt, count as done", h1, got)
	}
	if r, ok := verification(h, h1); ok && r.Status == "completed" && r.Conclusion == "success" {
		t.Errorf("the gate passes on the rejected head %s: %s", h1, r.Title)
	}
}

// bob (write permission, not involved) closes dave's pull request, pushes
// his own code to dave's branch under a git identity GitHub links to no
// account, and reopens it. A closed pull request does not follow its branch,
// so no synchronize is sent: the new head arrives in pull_request.reopened,
// whose sender is not counted as a pusher. erin approves; bob verifies his
// own code.
func TestAttackPushWhileClosedThenReopenHidesThePusher(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetPermission(testRepo, "dave", "write")
	h.gh.SetPermission(testRepo, "erin", "write")
	n := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	h.gh.Assign(testRepo, n, "carol", "dave")
	pr, _ := h.gh.OpenPR(testRepo, "dave", githubtest.PROptions{Title: "Login", Body: fmt.Sprintf("Fixes #%d", n)})
	h.settle()
	wantState(t, h, n, "review")

	h.gh.ClosePR(testRepo, pr, "bob")
	h.settle()
	sha := h.gh.PushWhileClosed(testRepo, pr, githubtest.Commit{Author: "Bob", AuthorEmail: "bob@laptop.local",
		Committer: "Bob", CommitterEmail: "bob@laptop.local", Message: "the real work"})
	h.gh.ReopenPR(testRepo, pr, "bob")
	h.settle()
	ciPasses(h, sha)
	h.gh.Review(testRepo, pr, "erin", "APPROVED", "")
	h.settle()
	wantState(t, h, n, "completed")

	h.gh.Comment(testRepo, n, "bob", "/verify")
	h.settle()
	if got := stateOf(h, n); got == "verified" {
		t.Errorf("bob pushed %s while the pull request was closed and reopened it; his own /verify was accepted", sha)
	}
}

// bob launders his code through a bot: a workflow he dispatches pushes his
// commits (git identity "Bob <bob@laptop.local>", linked to no account) to
// alice's pull request as github-actions[bot]. The pusher is a bot with no
// pilot configured, so its default pilot (the person who opened the task)
// becomes a builder, not bob. dave approves; bob verifies his own code. The
// card lists the unlinked identity, but nothing stops its owner from being
// the verifier.
func TestAttackBotPusherLaundersTheRealPusher(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetPermission(testRepo, "dave", "write")
	n, pr, _ := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login"})
	h.settle()
	sha := h.gh.PushAs(testRepo, pr, "github-actions[bot]", githubtest.Commit{Author: "Bob", AuthorEmail: "bob@laptop.local",
		Committer: "Bob", CommitterEmail: "bob@laptop.local", Message: "bob's work, pushed by his workflow"})
	ciPasses(h, sha)
	h.gh.Review(testRepo, pr, "dave", "APPROVED", "")
	h.settle()
	wantState(t, h, n, "completed")

	h.gh.Comment(testRepo, n, "bob", "/verify")
	h.settle()
	if got := stateOf(h, n); got == "verified" {
		t.Errorf("bob's code came in as github-actions[bot] under an identity linked to no account; bob's own /verify was accepted")
	}
}

// The verified task's own pull request is unlinked (its body no longer says
// "Fixes #n"), new commits are pushed to it, it is merged unreviewed, and
// "Fixes #n" is put back. The head that comes back is new and no one
// approved it, and it is merged: the task must not stay verified. A merged
// pull request linked (again) is handled before any head comparison, so
// nothing goes stale.
func TestAttackMergedNewHeadRelinkedKeepsVerified(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetPermission(testRepo, "dave", "write")
	n, pr, h1 := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login"})
	ciPasses(h, h1)
	h.gh.Review(testRepo, pr, "bob", "APPROVED", "")
	h.settle()
	h.gh.Comment(testRepo, n, "dave", "/verify")
	h.settle()
	wantState(t, h, n, "verified")

	h.gh.EditPR(testRepo, pr, "alice", "", "Login")
	h.settle()
	h2 := h.gh.Push(testRepo, pr, githubtest.Commit{Message: "something no one reviewed"})
	ciPasses(h, h2)
	h.gh.MergePR(testRepo, pr, "alice")
	h.settle()
	h.gh.EditPR(testRepo, pr, "alice", "", fmt.Sprintf("Login\nFixes #%d", n))
	h.settle()
	if got := stateOf(h, n); got == "verified" || got == "completed" {
		t.Errorf("the task is %q with #%d linked again, merged at %s, a head no one approved:\n%s", got, pr, h2, card(t, h, n))
	}
}

// The store is lost; before anything else names the task, eve (write
// permission) deletes its card. The card is countersign's and must come back
// "with its record and its whole history" (DESIGN §5), and the deletion's
// webhook carries the deleted text, signed record included. countersign
// rebuilds the task from GitHub without the card instead: the verification
// bob gave is gone and the task drops to in-progress, so a bystander voids
// a verification without touching any code.
func TestAttackCardDeletedWhileStoreLostVoidsVerification(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetPermission(testRepo, "eve", "write")
	n := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	doneTask(t, h, n)
	id := oneCardID(t, h, n)

	h2 := freshStore(t, h)
	h2.settle()
	h2.gh.DeleteComment(testRepo, id, "eve")
	h2.settle()
	if got := stateOf(h2, n); got != "verified" {
		t.Errorf("eve deleted the card of a verified task while the store was lost: the task is now %q", got)
	}
	if c := cardsOn(t, h2, n); len(c) != 1 || !strings.Contains(c[0], "@bob") {
		t.Errorf("the card posted again does not name the verifier bob: %q", c)
	}
}

// eve (write permission, not involved) closes and reopens a verified task's
// pull request over and over. Each close and each reopen is recorded in the
// history, which the card carries twice (record and table), with no bound
// but the one on card repairs: after about a hundred rounds the card passes
// GitHub's 65,536 characters and can no longer be written. From then on the
// card is frozen: a real push sends the task back to review, the label says
// so, and the card (and its signed record) still says verified.
func TestAttackCloseReopenLoopFreezesTheCard(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetPermission(testRepo, "dave", "write")
	h.gh.SetPermission(testRepo, "eve", "write")
	n, pr, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login"})
	ciPasses(h, sha)
	h.gh.Review(testRepo, pr, "bob", "APPROVED", "")
	h.settle()
	h.gh.Comment(testRepo, n, "dave", "/verify")
	h.settle()
	wantState(t, h, n, "verified")
	for i := 0; i < 120; i++ {
		h.gh.ClosePR(testRepo, pr, "eve")
		h.gh.ReopenPR(testRepo, pr, "eve")
		if i%20 == 19 {
			h.settleWithin(time.Minute)
		}
	}
	h.settleWithin(time.Minute)
	wantState(t, h, n, "verified")

	h.gh.Push(testRepo, pr, githubtest.Commit{Message: "real new work"})
	h.settle()
	wantState(t, h, n, "review")
	if c := card(t, h, n); !strings.Contains(c, "**State:** `review`") {
		t.Errorf("the card no longer follows the task (%d characters): the label says review, the card says:\n%s", len(c), c[:min(len(c), 1500)])
	}
}
