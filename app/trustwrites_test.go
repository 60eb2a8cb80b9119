package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/githubtest"
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

// Found by review: a label someone took off while its webhook was lost is
// put back at the next transition (GitHub's answer to the label write shows
// it missing), not trusted to be there.
func TestFlagLabelTakenOffUnheardIsPutBack(t *testing.T) {
	h := newHarness(t)
	team(h)
	n, pr, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login", Files: []string{"internal/login/login.go"}})
	h.settle()
	for attempt := 1; attempt <= 3; attempt++ {
		h.gh.CheckRun(testRepo, sha, "typecheck", "", "success", "")
		h.gh.CheckRun(testRepo, sha, "lint", "", "success", "")
		h.gh.CheckRun(testRepo, sha, "test", "", "failure", "")
		h.settle()
		if attempt < 3 {
			sha = h.gh.Push(testRepo, pr, githubtest.Commit{Message: fmt.Sprintf("fix %d", attempt)})
			h.settle()
		}
	}
	if !slices.Contains(h.gh.Labels(testRepo, n), "escalated") {
		t.Fatalf("not escalated: %v", h.gh.Labels(testRepo, n))
	}
	h.gh.DropWebhooks(true)
	h.gh.RemoveLabel(testRepo, n, "mallory", "escalated")
	h.gh.DropWebhooks(false)
	h.gh.Push(testRepo, pr, githubtest.Commit{Message: "fix 3"})
	h.settle()
	if got := h.gh.Labels(testRepo, n); !slices.Contains(got, "escalated") {
		t.Fatalf("labels %v after the next transition: escalated not put back", got)
	}
}

// Found by review: whether a check suite's results were already read is
// decided by the suites the read saw complete, not by comparing clocks (two
// replicas' clocks differ): a suite whose runs' own webhooks were lost is
// read, whatever an earlier read record says.
func TestCheckSuiteIsReadUnlessAReadSawIt(t *testing.T) {
	h := newHarness(t)
	team(h)
	n, pr, sha := taskWithPR(h, "Task", githubtest.PROptions{Title: "Work"})
	h.settle()
	// A read record as an earlier version (or a replica whose clock runs
	// ahead) left it: a time, in the future.
	ahead, _ := json.Marshal(time.Now().Add(time.Hour).UTC())
	if err := h.store.Put(context.Background(), fmt.Sprintf("ci-read/%s#%d@%s", testRepo, pr, sha), ahead); err != nil {
		t.Fatal(err)
	}
	h.gh.DropWebhooks(true) // the runs' own webhooks are lost: the suite's read catches up
	ciPasses(h, sha)
	h.gh.DropWebhooks(false)
	h.gh.CheckSuiteCompleted(testRepo, sha, "github-actions", "success")
	h.settle()
	if c := card(t, h, n); !strings.Contains(c, "`typecheck` passed") {
		t.Fatalf("CI passed, the card does not say so:\n%s", c)
	}
}
