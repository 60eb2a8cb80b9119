package app_test

import (
	"slices"
	"strings"
	"testing"
)

// countersign trusts what it wrote (DESIGN §9) and still ends up right when
// GitHub changed under it.

// A person's label change whose webhook never came: the next transition's
// label addition answers with every label the issue carries, and the
// stray state label is taken off.
func TestStrayStateLabelWithoutItsWebhookIsTakenOff(t *testing.T) {
	h := newHarness(t)
	team(h)
	n := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	h.gh.Assign(testRepo, n, "carol", "alice")
	h.settle()
	h.gh.DropWebhooks(true)
	h.gh.AddLabels(testRepo, n, "mallory", "state:verified")
	h.gh.DropWebhooks(false)
	h.gh.Comment(testRepo, n, "alice", "/start")
	h.settle()
	if got := h.gh.Labels(testRepo, n); !slices.Equal(got, []string{"state:in-progress"}) {
		t.Fatalf("labels %v, want exactly state:in-progress", got)
	}
}

// A person's label change that countersign hears of makes it read the
// labels again: a state label taken off by hand is put back, even when the
// state does not change.
func TestStateLabelTakenOffByHandIsPutBack(t *testing.T) {
	h := newHarness(t)
	team(h)
	n := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	h.gh.Assign(testRepo, n, "carol", "alice")
	h.settle()
	h.gh.RemoveLabel(testRepo, n, "mallory", "state:assigned")
	h.settle()
	wantState(t, h, n, "assigned")
	h.gh.AddLabels(testRepo, n, "mallory", "state:review")
	h.settle()
	wantState(t, h, n, "assigned")
	h.gh.Comment(testRepo, n, "alice", "/start")
	h.settle()
	wantState(t, h, n, "in-progress")
}

// The card is edited without being read back; deleted, it is posted again
// (once), and a person's edit of it is overwritten by the next change.
func TestCardDeletedOrEditedIsWrittenAgain(t *testing.T) {
	h := newHarness(t)
	team(h)
	n := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	h.settle()
	id, _ := cardID(t, h, n)
	h.gh.DeleteComment(testRepo, id, "carol")
	h.gh.Assign(testRepo, n, "carol", "alice")
	h.settle()
	cards := cardsOn(t, h, n)
	if len(cards) != 1 || !strings.Contains(cards[0], "@alice") {
		t.Fatalf("cards after the deletion: %q", cards)
	}
	id, _ = cardID(t, h, n)
	h.gh.EditComment(testRepo, id, "carol", "nothing to see")
	h.gh.Comment(testRepo, n, "alice", "/start")
	h.settle()
	cards = cardsOn(t, h, n)
	if len(cards) != 1 || !strings.Contains(cards[0], "in-progress") {
		t.Fatalf("cards after an edit by hand: %q", cards)
	}
}

// A goal issue edited by hand is written again at the goal's next change;
// closed by hand, it is reopened.
func TestGoalIssueEditedByHandIsWrittenAgain(t *testing.T) {
	h := newHarness(t)
	team(h)
	m := h.gh.CreateMilestone(testRepo, "carol", "Login page")
	n := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	h.gh.SetMilestone(testRepo, n, "carol", m)
	h.settle()
	g := wantGoal(t, h, m, "open")
	is, _ := h.gh.Issue(testRepo, g)
	h.gh.EditIssue(testRepo, g, "carol", is.Title, "scribbled over")
	h.settle()
	h.gh.Assign(testRepo, n, "carol", "alice")
	h.settle()
	_, body := goalIssueOf(t, h, m)
	wantContains(t, "the rewritten dashboard", body, "Login form")
	h.gh.CloseIssue(testRepo, g, "carol", "completed")
	h.settle()
	if is, _ := h.gh.Issue(testRepo, g); is.State != "open" {
		t.Fatalf("goal issue #%d closed by hand stayed %s", g, is.State)
	}
	wantGoal(t, h, m, "open")
}
