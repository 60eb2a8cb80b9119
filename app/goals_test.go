package app_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/app/store/bolt"
	"github.com/countersign/countersign/templates"
)

// These tests play DESIGN §4 (seed 000's goals) through the webhook endpoint.

// goalIssueOf is the goal issue of milestone m: the bot's issue in it whose
// body carries the goal marker.
func goalIssueOf(t *testing.T, h *harness, m int) (int, string) {
	t.Helper()
	for _, n := range h.gh.IssueNumbers(testRepo) { // deleted issues leave gaps
		is, _ := h.gh.Issue(testRepo, n)
		if is.User == h.gh.BotLogin() && is.Milestone == m && templates.IsGoal(is.Body) {
			return n, is.Body
		}
	}
	t.Fatalf("milestone %d has no goal issue", m)
	return 0, ""
}

func wantGoal(t *testing.T, h *harness, m int, state string) int {
	t.Helper()
	n, _ := goalIssueOf(t, h, m)
	labels := h.gh.Labels(testRepo, n)
	if !slices.Contains(labels, "goal") || !slices.Contains(labels, "goal:"+state) {
		t.Fatalf("goal issue #%d labels %v, want goal and goal:%s", n, labels, state)
	}
	return n
}

// doneTask takes task n (no pull request) through the lifecycle: alice builds,
// carol approves, bob verifies.
func doneTask(t *testing.T, h *harness, n int) {
	t.Helper()
	h.gh.Assign(testRepo, n, "carol", "alice")
	h.gh.Comment(testRepo, n, "alice", "/start")
	h.gh.Comment(testRepo, n, "alice", "/submit")
	h.gh.Comment(testRepo, n, "carol", "/approve")
	h.gh.Comment(testRepo, n, "bob", "/verify")
	h.settle()
	wantState(t, h, n, "verified")
}

func milestoneOpen(t *testing.T, h *harness, m int, want bool) {
	t.Helper()
	ms, ok := h.gh.Milestone(testRepo, m)
	if !ok || (ms.State == "open") != want {
		t.Fatalf("milestone %d: %+v, want open=%v", m, ms, want)
	}
}

// Seed 000's goal confirmation flow: every task verified → pending-verify; the
// lead finds an integration bug and rejects the goal; a fix task is added and
// verified; the lead confirms by closing the milestone. On the way: a close by
// someone who is not a lead is undone.
func TestGoalConfirmationFlow(t *testing.T) {
	h := newHarness(t)
	team(h)
	m := h.gh.CreateMilestone(testRepo, "carol", "Login page")
	h.settle()
	g := wantGoal(t, h, m, "open")

	var tasks []int
	for _, title := range []string{"Login form", "Session cookie", "Logout button"} {
		n := h.gh.OpenIssue(testRepo, "carol", title, "")
		h.gh.SetMilestone(testRepo, n, "carol", m)
		tasks = append(tasks, n)
	}
	h.settle()
	_, body := goalIssueOf(t, h, m)
	wantContains(t, "the dashboard", body, "Login form", "Session cookie", "Logout button")
	doneTask(t, h, tasks[0])
	wantGoal(t, h, m, "active")
	doneTask(t, h, tasks[1])
	doneTask(t, h, tasks[2])
	wantGoal(t, h, m, "pending-verify")

	// alice is no lead: her close is undone, and the goal issue says why.
	h.gh.CloseMilestone(testRepo, m, "alice")
	h.settle()
	milestoneOpen(t, h, m, true)
	wantGoal(t, h, m, "pending-verify")
	got := replies(h, g)
	wantContains(t, "the refusal", got[len(got)-1], "@alice")

	// The lead tests the integration, finds a bug, and sends the goal back.
	h.gh.Comment(testRepo, g, "carol", "/reject-goal logging in then out leaves the session cookie")
	h.settle()
	wantGoal(t, h, m, "active")
	for _, n := range tasks {
		wantState(t, h, n, "verified") // verified tasks stay verified
	}
	fix := h.gh.OpenIssue(testRepo, "carol", "Clear the session cookie on logout", "")
	h.gh.SetMilestone(testRepo, fix, "carol", m)
	h.settle()
	wantGoal(t, h, m, "active")
	doneTask(t, h, fix)
	wantGoal(t, h, m, "pending-verify")

	h.gh.CloseMilestone(testRepo, m, "carol")
	h.settle()
	milestoneOpen(t, h, m, false)
	wantGoal(t, h, m, "verified")
	is, _ := h.gh.Issue(testRepo, g)
	if is.State != "closed" {
		t.Fatalf("the goal issue of a verified goal is %s", is.State)
	}
	_, body = goalIssueOf(t, h, m)
	wantContains(t, "the dashboard", body, "verified", "Clear the session cookie on logout", "logging in then out")
}

// A lead's close is refused while a task is not verified, or while the
// integration check is not green on the default branch; a task moved to
// another milestone leaves one goal for the other.
func TestGoalCloseRefusedAndTaskMoved(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.PushDefault(testRepo, "carol", map[string]string{".github/countersign.yml": "goals: {integration_check: integration}\n"})
	one := h.gh.CreateMilestone(testRepo, "carol", "v1")
	two := h.gh.CreateMilestone(testRepo, "carol", "v2")
	a := h.gh.OpenIssue(testRepo, "carol", "Export to CSV", "")
	b := h.gh.OpenIssue(testRepo, "carol", "Import from CSV", "")
	h.gh.SetMilestone(testRepo, a, "carol", one)
	h.gh.SetMilestone(testRepo, b, "carol", one)
	h.settle()
	doneTask(t, h, a)
	g1 := wantGoal(t, h, one, "active")

	h.gh.CloseMilestone(testRepo, one, "carol")
	h.settle()
	milestoneOpen(t, h, one, true)
	got := replies(h, g1)
	wantContains(t, "the refusal", got[len(got)-1], fmt.Sprintf("#%d", b))

	// b moves to v2: v1 has only verified tasks now.
	h.gh.SetMilestone(testRepo, b, "carol", two)
	h.settle()
	wantGoal(t, h, one, "pending-verify")
	wantGoal(t, h, two, "open")
	_, body := goalIssueOf(t, h, two)
	wantContains(t, "v2's dashboard", body, "Import from CSV")

	// The integration check fails on the default branch: the close is undone.
	head := h.gh.PushDefault(testRepo, "carol", map[string]string{"main.go": "package main"})
	h.gh.CheckRun(testRepo, head, "integration", "", "failure", "")
	h.settle()
	h.gh.CloseMilestone(testRepo, one, "carol")
	h.settle()
	milestoneOpen(t, h, one, true)
	got = replies(h, g1)
	wantContains(t, "the refusal", strings.ToLower(got[len(got)-1]), "integration")

	h.gh.CheckRun(testRepo, head, "integration", "", "success", "")
	h.settle()
	h.gh.Comment(testRepo, g1, "carol", "/verify-goal exports open in a spreadsheet")
	h.settle()
	wantGoal(t, h, one, "verified")
	milestoneOpen(t, h, one, false)
}

// A goal record lost with the store is rebuilt from its goal issue's marker:
// the lead's close still confirms the pending-verify goal.
func TestGoalRebuiltFromItsIssue(t *testing.T) {
	h := newHarness(t)
	team(h)
	m := h.gh.CreateMilestone(testRepo, "carol", "Search")
	n := h.gh.OpenIssue(testRepo, "carol", "Search box", "")
	h.gh.SetMilestone(testRepo, n, "carol", m)
	h.settle()
	doneTask(t, h, n)
	g := wantGoal(t, h, m, "pending-verify")
	h.shutdown()

	fresh, err := bolt.Open(filepath.Join(t.TempDir(), "fresh.db"))
	if err != nil {
		t.Fatal(err)
	}
	h2 := startHarness(t, h.gh, fresh)
	h2.gh.CloseMilestone(testRepo, m, "carol")
	h2.settle()
	milestoneOpen(t, h2, m, false)
	if got := wantGoal(t, h2, m, "verified"); got != g {
		t.Fatalf("goal issue #%d, want the same #%d", got, g)
	}
}
