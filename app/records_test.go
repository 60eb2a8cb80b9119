package app_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/app/store/bolt"
	"github.com/countersign/countersign/internal/githubtest"
	"github.com/countersign/countersign/templates"
)

// cardID is the id of the bot's task card on issue n.
func cardID(t *testing.T, h *harness, n int) (int64, string) {
	t.Helper()
	for _, c := range h.gh.Comments(testRepo, n) {
		if c.User == h.gh.BotLogin() && templates.IsCard(c.Body) {
			return c.ID, c.Body
		}
	}
	t.Fatalf("no card on #%d", n)
	return 0, ""
}

// freshStore restarts the bot on an empty store: the store is lost.
func freshStore(t *testing.T, h *harness) *harness {
	t.Helper()
	h.shutdown()
	s, err := bolt.Open(filepath.Join(t.TempDir(), "fresh.db"))
	if err != nil {
		t.Fatal(err)
	}
	return startHarness(t, h.gh, s)
}

// Issue 11 item 9: someone with write access edits the hidden record in the
// task card to say "verified"; the store is then lost. The forged record is
// never trusted: the unreviewed merge that closes the task is undone, the task
// is not verified, and the gate does not pass.
func TestForgedCardRecordIsNotTrustedAfterStoreLoss(t *testing.T) {
	h := newHarness(t)
	team(h)
	n, pr, sha := taskWithPR(h, "Task", githubtest.PROptions{Title: "Work"})
	ciPasses(h, sha)
	h.settle()
	wantState(t, h, n, "review")

	id, body := cardID(t, h, n)
	forged := strings.Replace(body, `"state":"review"`, `"state":"verified","verifier":"bob"`, 1)
	if forged == body {
		t.Fatalf("card record has no review state:\n%s", body)
	}
	// The edit's delivery is lost (else the card is written back at once):
	// the forged card is what is left when the store is lost too.
	h.gh.DropWebhooks(true)
	h.gh.EditComment(testRepo, id, "alice", forged)
	h.gh.DropWebhooks(false)
	h.settle()

	h2 := freshStore(t, h)
	h2.gh.MergePR(testRepo, pr, "alice")
	h2.settle()
	is, _ := h2.gh.Issue(testRepo, n)
	if is.State != "open" {
		t.Fatalf("the unverified task stayed closed after the merge (labels %v)", h2.gh.Labels(testRepo, n))
	}
	if got := stateOf(h2, n); got == "verified" || got == "completed" {
		t.Fatalf("a forged record put the task in %q", got)
	}
	if r, ok := verification(h2, sha); ok && r.Conclusion == "success" {
		t.Fatalf("the gate passed on a forged record")
	}
	if !strings.Contains(h2.logs.String(), "not trusted") {
		t.Errorf("the distrusted record was not logged")
	}
	// The rebuilt card is the bot's own again, signed.
	_, rebuilt := cardID(t, h2, n)
	if strings.Contains(rebuilt, `"verifier":"bob"`) {
		t.Fatalf("the card still carries the forged record:\n%s", rebuilt)
	}
}

// A genuine older record replayed into the card (its signature is the bot's)
// is not trusted either when GitHub's history shows the bot moved the task on
// since: here the task was verified, then new commits sent it back to review.
func TestReplayedCardRecordIsNotTrustedAfterStoreLoss(t *testing.T) {
	h := newHarness(t)
	team(h)
	n, pr, sha := taskWithPR(h, "Task", githubtest.PROptions{Title: "Work"})
	ciPasses(h, sha)
	h.settle()
	h.gh.Review(testRepo, pr, "carol", "APPROVED", "")
	h.settle()
	h.gh.Comment(testRepo, n, "bob", "/verify checked")
	h.settle()
	wantState(t, h, n, "verified")
	id, verifiedCard := cardID(t, h, n)

	sha2 := h.gh.Push(testRepo, pr, githubtest.Commit{Author: "alice", Message: "sneak in a change", Files: []string{"x.go"}})
	h.settle()
	wantState(t, h, n, "review")
	h.gh.DropWebhooks(true)                               // its delivery lost: the replayed card stays
	h.gh.EditComment(testRepo, id, "alice", verifiedCard) // the old, genuinely signed record
	h.gh.DropWebhooks(false)
	h.settle()

	h2 := freshStore(t, h)
	h2.gh.MergePR(testRepo, pr, "alice")
	h2.settle()
	if is, _ := h2.gh.Issue(testRepo, n); is.State != "open" {
		t.Fatalf("a replayed record let an unverified merge close the task")
	}
	if got := stateOf(h2, n); got == "verified" {
		t.Fatalf("a replayed record put the task in %q", got)
	}
	if r, ok := verification(h2, sha2); ok && r.Conclusion == "success" {
		t.Fatalf("the gate passed on a replayed record")
	}
}

// After a store loss the rebuilt task keeps its gate in step: a /verify that
// verifies it turns the linked pull request's check green.
func TestRebuiltTaskKeepsItsGateInStep(t *testing.T) {
	h := newHarness(t)
	team(h)
	n, pr, sha := taskWithPR(h, "Task", githubtest.PROptions{Title: "Work"})
	ciPasses(h, sha)
	h.settle()
	h.gh.Review(testRepo, pr, "carol", "APPROVED", "")
	h.settle()
	wantState(t, h, n, "completed")
	wantCheck(t, h, sha, "in_progress")

	h2 := freshStore(t, h)
	h2.gh.ResetRequests()
	h2.gh.Comment(testRepo, n, "bob", "/verify checked")
	h2.settle()
	wantState(t, h2, n, "verified")
	wantCheck(t, h2, sha, "success")
	// What the rebuild costs, once per task and pull request after a store
	// loss: the card and the issue's events (the task), the pull request, its
	// commits, authors, files and CI results (its gate).
	var events int
	for _, r := range h2.gh.Requests() {
		if strings.HasSuffix(r.Path, "/events") {
			events++
		}
	}
	t.Logf("/verify after a store loss: %d requests, %d writes\n%s", len(h2.gh.Requests()), len(writes(h2.gh.Requests())), describe(h2.gh.Requests()))
	if events != 1 {
		t.Errorf("%d reads of the issue's events, want 1", events)
	}
}

// The same for a goal issue's hidden record: forged to say every task is
// verified, then the store is lost; a lead's close of the milestone does not
// confirm the goal, since its tasks are not proven verified.
func TestForgedGoalRecordIsNotTrustedAfterStoreLoss(t *testing.T) {
	h := newHarness(t)
	team(h)
	m := h.gh.CreateMilestone(testRepo, "carol", "Search")
	n := h.gh.OpenIssue(testRepo, "carol", "Search box", "")
	h.gh.SetMilestone(testRepo, n, "carol", m)
	h.gh.Assign(testRepo, n, "carol", "alice")
	h.gh.Comment(testRepo, n, "alice", "/start")
	h.settle()
	g := wantGoal(t, h, m, "active")
	_, body := goalIssueOf(t, h, m)
	forged := strings.ReplaceAll(body, `"in-progress"`, `"verified"`)
	forged = strings.Replace(forged, `"state":"active"`, `"state":"pending-verify"`, 1)
	if forged == body || !strings.Contains(forged, `"pending-verify"`) {
		t.Fatalf("goal record not as expected:\n%s", body)
	}
	h.gh.EditIssue(testRepo, g, "alice", "", forged)
	h.settle()

	h2 := freshStore(t, h)
	h2.gh.CloseMilestone(testRepo, m, "carol")
	h2.settle()
	milestoneOpen(t, h2, m, true)
	if is, _ := h2.gh.Issue(testRepo, g); is.State != "open" {
		t.Fatalf("the goal issue was closed as confirmed")
	}
	labels := h2.gh.Labels(testRepo, g)
	if slices.Contains(labels, "goal:verified") || slices.Contains(labels, "goal:pending-verify") {
		t.Fatalf("a forged goal record was believed: labels %v", labels)
	}
	if !strings.Contains(h2.logs.String(), "goal issue's record not trusted") {
		t.Errorf("the distrusted goal record was not logged")
	}
}

// Rotating the record key: a bot with a new key and the old one as previous
// still believes the cards signed with the old key; without it, it does not.
func TestRecordKeyRotation(t *testing.T) {
	t.Parallel() // its subtests' harnesses, each its own, leave it serial otherwise
	for _, tc := range []struct {
		name     string
		previous string
		trusted  bool
	}{
		{"old key kept as previous", testSecret, true}, // no record key was set: the webhook secret was the material
		{"old key dropped", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			team(h)
			n := h.gh.OpenIssue(testRepo, "carol", "Task", "")
			h.gh.Assign(testRepo, n, "carol", "alice")
			h.gh.Comment(testRepo, n, "alice", "/start")
			h.gh.Comment(testRepo, n, "alice", "/submit")
			h.gh.Comment(testRepo, n, "carol", "/approve")
			h.settle()
			wantState(t, h, n, "completed")
			h.shutdown()

			s, err := bolt.Open(filepath.Join(t.TempDir(), "fresh.db"))
			if err != nil {
				t.Fatal(err)
			}
			h2 := startHarness(t, h.gh, s, func(st *app.Settings) {
				st.RecordKey = []byte("a-brand-new-record-key")
				st.RecordKeyPrevious = []byte(tc.previous)
			})
			h2.gh.Comment(testRepo, n, "bob", "/verify checked")
			h2.settle()
			if tc.trusted {
				wantState(t, h2, n, "verified")
				return
			}
			wantState(t, h2, n, "in-progress")
			if !strings.Contains(h2.logs.String(), "not signed by this server") {
				t.Errorf("the refusal was not logged")
			}
		})
	}
}

// A goal record genuinely signed but older than the goal (put back after the
// goal moved on) is not believed either: here the goal was pending-verify,
// then a new task sent it back to active.
func TestReplayedGoalRecordIsNotTrustedAfterStoreLoss(t *testing.T) {
	h := newHarness(t)
	team(h)
	m := h.gh.CreateMilestone(testRepo, "carol", "Search")
	n := h.gh.OpenIssue(testRepo, "carol", "Search box", "")
	h.gh.SetMilestone(testRepo, n, "carol", m)
	h.settle()
	doneTask(t, h, n)
	g := wantGoal(t, h, m, "pending-verify")
	_, pending := goalIssueOf(t, h, m)

	two := h.gh.OpenIssue(testRepo, "carol", "Search results", "")
	h.gh.SetMilestone(testRepo, two, "carol", m)
	h.gh.Assign(testRepo, two, "carol", "alice")
	h.gh.Comment(testRepo, two, "alice", "/start")
	h.settle()
	wantGoal(t, h, m, "active")
	h.gh.EditIssue(testRepo, g, "alice", "", pending) // the old, genuinely signed record
	h.settle()

	h2 := freshStore(t, h)
	h2.gh.CloseMilestone(testRepo, m, "carol")
	h2.settle()
	milestoneOpen(t, h2, m, true)
	if slices.Contains(h2.gh.Labels(testRepo, g), "goal:verified") {
		t.Fatalf("a replayed goal record was believed: labels %v", h2.gh.Labels(testRepo, g))
	}
	if !strings.Contains(h2.logs.String(), "countersign labeled the goal otherwise since") {
		t.Errorf("the replayed goal record was not logged")
	}
}
