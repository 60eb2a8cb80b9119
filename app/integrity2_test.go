package app_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/githubtest"
	"github.com/countersign/countersign/templates"
)

// Integrity, round two: four more ways around "someone else confirms"
// (DESIGN §1, §2, §5), each closed end to end.

// The person who pushes is a builder, whatever git identity the commits carry:
// bob pushes his work to dave's pull request as "Bob <bob@laptop.local>", an
// email GitHub links to no account. erin approves; bob's /verify is refused
// (he pushed the code), and the card shows the identity GitHub could not
// resolve, so a verifier sees it.
func TestPusherWithUnlinkedIdentityCannotVerify(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetPermission(testRepo, "dave", "write")
	h.gh.SetPermission(testRepo, "erin", "write")
	n := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	h.gh.Assign(testRepo, n, "carol", "dave")
	pr, _ := h.gh.OpenPR(testRepo, "dave", githubtest.PROptions{Title: "Login", Body: fmt.Sprintf("Fixes #%d", n)})
	h.settle()
	sha := h.gh.PushAs(testRepo, pr, "bob", githubtest.Commit{Author: "Bob", AuthorEmail: "bob@laptop.local",
		Committer: "Bob", CommitterEmail: "bob@laptop.local", Message: "the real work"})
	ciPasses(h, sha)
	h.gh.Review(testRepo, pr, "erin", "APPROVED", "")
	h.settle()
	wantState(t, h, n, "completed")

	h.gh.Comment(testRepo, n, "bob", "/verify")
	h.settle()
	wantState(t, h, n, "completed")
	wantCheck(t, h, sha, "in_progress")
	if !anyCommentContains(h, n, "built this task") {
		t.Fatalf("the pusher's /verify got no refusal: %v", replies(h, n))
	}
	wantContains(t, "the card", card(t, h, n), fmt.Sprintf("@bob (pushed to #%d)", pr),
		"Bob \\<bob@\u200blaptop.local\\>", "could not link to an account")

	h.gh.Comment(testRepo, n, "alice", "/verify")
	h.settle()
	wantState(t, h, n, "verified")
}

// A merged pull request needs its own approval: alice's first pull request
// is approved, her second one (ready, "Fixes #n") she merges herself with no
// review. The task stays in review and the card says which pull request
// waits for an approval; an approval of the merged head completes it.
func TestMergedUnreviewedPullRequestDoesNotRideOnAnother(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetPermission(testRepo, "dave", "write")
	n, _, _, _ := approvedPR(t, h, "Login form", "dave", githubtest.PROptions{Title: "Login"})

	b, shaB := h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "Login, more", Body: fmt.Sprintf("Fixes #%d", n)})
	ciPasses(h, shaB)
	h.settle()
	wantState(t, h, n, "review")
	h.gh.MergePR(testRepo, b, "alice")
	h.settle()
	wantState(t, h, n, "review")
	wantOpen(t, h, n)
	wantContains(t, "the card", card(t, h, n), fmt.Sprintf("#%d (merged) has no approval", b))

	h.gh.Comment(testRepo, n, "bob", "/approve")
	h.settle()
	wantState(t, h, n, "review")

	h.gh.Review(testRepo, b, "dave", "APPROVED", "")
	h.settle()
	wantState(t, h, n, "completed")
	h.gh.Comment(testRepo, n, "bob", "/verify")
	h.settle()
	wantState(t, h, n, "verified")
}

// Only a new head voids: eve, who has write permission and no part in the
// task, closes its verified pull request and reopens it, then edits its
// description not to close the task and back. Nothing changed in the code:
// the task stays verified, its gate stays green, and the history says what
// eve did. A real push still voids it all.
func TestBystanderCloseReopenVoidsNothing(t *testing.T) {
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
	wantCheck(t, h, sha, "success")

	h.gh.ClosePR(testRepo, pr, "eve")
	h.settle()
	h.gh.ReopenPR(testRepo, pr, "eve")
	h.settle()
	wantState(t, h, n, "verified")
	wantCheck(t, h, sha, "success")

	h.gh.EditPR(testRepo, pr, "eve", "", "Nothing to see")
	h.settle()
	h.gh.EditPR(testRepo, pr, "eve", "", fmt.Sprintf("Fixes #%d", n))
	h.settle()
	wantState(t, h, n, "verified")
	wantCheck(t, h, sha, "success")
	c := card(t, h, n)
	wantContains(t, "the card", c, "@dave", fmt.Sprintf("#%d closes this task again", pr), "stands")

	next := h.gh.Push(testRepo, pr, githubtest.Commit{Message: "more"})
	h.settle()
	wantState(t, h, n, "review")
	wantCheck(t, h, next, "in_progress")
}

// The card is countersign's: eve deletes a verified task's card; it is
// posted again at once with its signed record and its whole history, and the
// deletion is recorded. She then edits the new card; it is written back.
// countersign's own writes come back as webhooks and loop on nothing.
func TestDeletedOrEditedCardComesBack(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetPermission(testRepo, "eve", "write")
	n := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	doneTask(t, h, n)
	before := card(t, h, n)

	h.gh.DeleteComment(testRepo, oneCardID(t, h, n), "eve")
	h.settle()
	wantState(t, h, n, "verified")
	again := card(t, h, n)
	if _, ok := templates.RecordSignature(again); !ok {
		t.Fatalf("the card posted again carries no signed record:\n%s", again)
	}
	wantContains(t, "the card posted again", again, "card deleted by @eve", "/verify", "@bob")
	if got, want := strings.Count(again, "\n| 20"), strings.Count(before, "\n| 20")+1; got != want {
		t.Fatalf("the card posted again has %d history lines, want %d (the whole history and the deletion):\n%s", got, want, again)
	}

	id := oneCardID(t, h, n)
	h.gh.EditComment(testRepo, id, "eve", "Nothing to see here.")
	h.settle()
	if oneCardID(t, h, n) != id {
		t.Fatalf("an edited card was posted anew instead of written back")
	}
	wantContains(t, "the card written back", card(t, h, n), "card edited by @eve", "card deleted by @eve")

	// Later changes go to the card posted again.
	h.gh.AddLabels(testRepo, n, "eve", "state:review")
	h.settle()
	if oneCardID(t, h, n) != id {
		t.Fatalf("a later change posted another card")
	}
	wantContains(t, "the card", card(t, h, n), "label state:review added by @eve")

	// A comment that imitates the card is eve's: deleting or editing it is
	// nothing to countersign.
	before = card(t, h, n)
	forged := h.gh.Comment(testRepo, n, "eve", before)
	h.gh.EditComment(testRepo, forged, "eve", before+" ")
	h.gh.DeleteComment(testRepo, forged, "eve")
	h.settle()
	if after := card(t, h, n); after != before || oneCardID(t, h, n) != id {
		t.Fatalf("a forged card's edit or deletion changed the card:\n%s", after)
	}
}

// oneCardID is the comment id of task n's one card.
func oneCardID(t *testing.T, h *harness, n int) int64 {
	t.Helper()
	card(t, h, n) // exactly one
	id, _ := cardID(t, h, n)
	return id
}

// What the defences cost, in GitHub requests per event (run with -v for the
// requests themselves). A push by another account is the cost of any push
// (the pusher is the webhook's sender; unlinked identities come from the
// commits already listed); a card deleted or edited by someone costs the
// card's write and no more.
func TestIntegrityDefencesCost(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetPermission(testRepo, "dave", "write")
	h.gh.SetPermission(testRepo, "eve", "write")
	n, pr, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login"})
	ciPasses(h, sha)
	h.settle()
	var b int
	rows, _ := runCosts(t, h, "integrity defences", []costStep{
		{"push by the author", func() { sha = h.gh.Push(testRepo, pr, githubtest.Commit{Message: "more"}) }},
		{"push by bob as Bob <bob@laptop.local>", func() {
			sha = h.gh.PushAs(testRepo, pr, "bob", githubtest.Commit{Author: "Bob", AuthorEmail: "bob@laptop.local", Message: "his"})
		}},
		{"CI passes, dave approves", func() { ciPasses(h, sha); h.gh.Review(testRepo, pr, "dave", "APPROVED", "") }},
		{"second pull request opened", func() {
			b, _ = h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "More", Body: fmt.Sprintf("Fixes #%d", n)})
		}},
		{"it is merged unapproved", func() { h.gh.MergePR(testRepo, b, "alice") }},
		{"dave approves it after the merge", func() { h.gh.Review(testRepo, b, "dave", "APPROVED", "") }},
		{"carol verifies", func() { h.gh.Comment(testRepo, n, "carol", "/verify") }},
		{"eve closes the pull request", func() { h.gh.ClosePR(testRepo, pr, "eve") }},
		{"eve reopens it", func() { h.gh.ReopenPR(testRepo, pr, "eve") }},
		{"eve deletes the card", func() { h.gh.DeleteComment(testRepo, oneCardID(t, h, n), "eve") }},
		{"eve edits the card", func() { h.gh.EditComment(testRepo, oneCardID(t, h, n), "eve", "gone") }},
	})
	wantState(t, h, n, "verified")
	byStep := map[string]cost{}
	for _, r := range rows {
		byStep[r.step] = r
	}
	if a, o := byStep["push by the author"], byStep["push by bob as Bob <bob@laptop.local>"]; o.requests != a.requests {
		t.Errorf("a push by another account under an unlinked identity costs %d requests, a push by the author %d", o.requests, a.requests)
	}
	if c := byStep["eve deletes the card"]; c.writes != 1 || c.requests > 2 {
		t.Errorf("a deleted card costs %d requests (%d writes), want the card posted again after one look for it:\n%v", c.requests, c.writes, c.detail)
	}
	if c := byStep["eve edits the card"]; c.writes != 1 || c.requests != 1 {
		t.Errorf("an edited card costs %d requests (%d writes), want one write:\n%v", c.requests, c.writes, c.detail)
	}
}
