package app_test

import (
	"fmt"
	"strings"
	"testing"
)

// Attacks on goals (DESIGN §4) and the lead-only commands (§6), played
// through the webhook endpoint against the fake GitHub.

// A task issue that an admin deletes is no longer a task of its milestone:
// the goal must not wait for it forever. Before, the goal kept the deleted
// task as not verified, so it never became pending-verify and every close of
// the milestone by the lead was undone ("#N is not verified") with no way out.
func TestAttackGoalDeletedTaskLeavesTheGoal(t *testing.T) {
	h := newHarness(t)
	team(h)
	m := h.gh.CreateMilestone(testRepo, "carol", "v1")
	a := h.gh.OpenIssue(testRepo, "carol", "Export to CSV", "")
	b := h.gh.OpenIssue(testRepo, "carol", "Duplicate of export", "")
	h.gh.SetMilestone(testRepo, a, "carol", m)
	h.gh.SetMilestone(testRepo, b, "carol", m)
	h.settle()
	doneTask(t, h, a)
	wantGoal(t, h, m, "active")

	h.gh.DeleteIssue(testRepo, b, "carol")
	h.settle()
	wantGoal(t, h, m, "pending-verify")
	_, body := goalIssueOf(t, h, m)
	if strings.Contains(body, "Duplicate of export") {
		t.Fatalf("the dashboard still lists the deleted task #%d:\n%s", b, body)
	}

	h.gh.CloseMilestone(testRepo, m, "carol")
	h.settle()
	milestoneOpen(t, h, m, false)
	wantGoal(t, h, m, "verified")
}

// goals.integration_check is a gate on the lead's confirmation: a commit
// status that a builder of the goal's tasks posts for it counts no more than
// a builder's status counts for their own task (DESIGN §3: "commit statuses
// whose creator is not a builder"). Before, any status creator counted, so
// the builder of every task could turn the integration check green by hand.
func TestAttackGoalIntegrationStatusPostedByABuilderDoesNotCount(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.PushDefault(testRepo, "carol", map[string]string{".github/countersign.yml": "goals: {integration_check: integration}\n"})
	m := h.gh.CreateMilestone(testRepo, "carol", "v1")
	a := h.gh.OpenIssue(testRepo, "carol", "Export to CSV", "")
	h.gh.SetMilestone(testRepo, a, "carol", m)
	h.settle()
	doneTask(t, h, a) // alice builds it
	g := wantGoal(t, h, m, "pending-verify")

	head := h.gh.PushDefault(testRepo, "carol", map[string]string{"main.go": "package main"})
	h.gh.SetStatusBy(testRepo, head, "alice", "integration", "success", "")
	h.settle()
	h.gh.CloseMilestone(testRepo, m, "carol")
	h.settle()
	milestoneOpen(t, h, m, true)
	wantGoal(t, h, m, "pending-verify")
	got := replies(h, g)
	wantContains(t, "the refusal", strings.ToLower(got[len(got)-1]), "integration")

	// The same status from someone who built none of the goal's tasks counts.
	h.gh.SetStatusBy(testRepo, head, "bob", "integration", "success", "")
	h.settle()
	h.gh.CloseMilestone(testRepo, m, "carol")
	h.settle()
	milestoneOpen(t, h, m, false)
	wantGoal(t, h, m, "verified")
}

// A verified goal whose task a lead reopens for a regression is no longer
// confirmed: back to active, the milestone and the goal issue reopened.
func TestAttackGoalVerifiedTaskReopenedWithdrawsTheConfirmation(t *testing.T) {
	h := newHarness(t)
	team(h)
	m := h.gh.CreateMilestone(testRepo, "carol", "v1")
	a := h.gh.OpenIssue(testRepo, "carol", "Export to CSV", "")
	h.gh.SetMilestone(testRepo, a, "carol", m)
	h.settle()
	doneTask(t, h, a)
	g := wantGoal(t, h, m, "pending-verify")
	h.gh.Comment(testRepo, g, "carol", "/verify-goal")
	h.settle()
	wantGoal(t, h, m, "verified")
	milestoneOpen(t, h, m, false)

	h.gh.Comment(testRepo, a, "carol", "/reopen exports are empty since the last release")
	h.settle()
	wantState(t, h, a, "in-progress")
	wantGoal(t, h, m, "active")
	milestoneOpen(t, h, m, true)
	if is, _ := h.gh.Issue(testRepo, g); is.State != "open" {
		t.Fatalf("goal issue #%d is %s, want open", g, is.State)
	}
	got := replies(h, g)
	wantContains(t, "the goal issue's notice", got[len(got)-1], fmt.Sprintf("#%d", a))
}

// The goal issue is countersign's, like the task card (DESIGN §5): deleted
// by an admin, it is opened again at once, with the goal's labels and
// dashboard, and it is the goal issue from then on: the dashboard follows
// the goal there, and a lead's /verify-goal on it counts.
func TestAttackGoalDeletedGoalIssueIsOpenedAgain(t *testing.T) {
	h := newHarness(t)
	team(h)
	m := h.gh.CreateMilestone(testRepo, "carol", "v1")
	a := h.gh.OpenIssue(testRepo, "carol", "Export to CSV", "")
	h.gh.SetMilestone(testRepo, a, "carol", m)
	h.settle()
	old := wantGoal(t, h, m, "open")

	h.gh.DeleteIssue(testRepo, old, "carol")
	h.settle()
	g := wantGoal(t, h, m, "open")
	if g == old {
		t.Fatalf("goal issue #%d still the deleted one", g)
	}
	_, body := goalIssueOf(t, h, m)
	wantContains(t, "the new goal issue", body, "Export to CSV")

	b := h.gh.OpenIssue(testRepo, "carol", "Import from CSV", "")
	h.gh.SetMilestone(testRepo, b, "carol", m)
	h.settle()
	_, body = goalIssueOf(t, h, m)
	wantContains(t, "the new goal issue", body, "Import from CSV")
	doneTask(t, h, a)
	doneTask(t, h, b)
	wantGoal(t, h, m, "pending-verify")
	h.gh.Comment(testRepo, g, "carol", "/verify-goal")
	h.settle()
	wantGoal(t, h, m, "verified")
	milestoneOpen(t, h, m, false)
}

// lastDelivery is the id of the latest webhook of event and action.
func lastDelivery(t *testing.T, h *harness, event, action string) string {
	t.Helper()
	ds := h.gh.Deliveries()
	for i := len(ds) - 1; i >= 0; i-- {
		if ds[i].Event == event && ds[i].Action == action {
			return ds[i].ID
		}
	}
	t.Fatalf("no %s.%s delivered", event, action)
	return ""
}

// The leads are a team (@acme/leads): a member confirms the goal; someone
// with admin permission who is not in it may not (the configured leads
// replace the admins); /reject-goal without a reason is refused and changes
// nothing. Every refusal is a reply that quotes the command. A redelivered
// close by a non-lead is refused once (one reply, one reopen).
func TestAttackGoalTeamLeadsAndRefusals(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetPermission(testRepo, "dave", "write")
	h.gh.AddTeam("acme", "leads", "dave")
	h.gh.PushDefault(testRepo, "carol", map[string]string{".github/countersign.yml": "leads: [\"@acme/leads\"]\n"})
	m := h.gh.CreateMilestone(testRepo, "dave", "v1")
	a := h.gh.OpenIssue(testRepo, "dave", "Export to CSV", "")
	h.gh.SetMilestone(testRepo, a, "dave", m)
	h.settle()
	doneTask(t, h, a)
	g := wantGoal(t, h, m, "pending-verify")

	h.gh.Comment(testRepo, g, "carol", "/verify-goal looks fine to me")
	h.settle()
	wantGoal(t, h, m, "pending-verify")
	got := replies(h, g)
	wantContains(t, "carol's refusal", got[len(got)-1], "> /verify-goal looks fine to me", "lead")

	h.gh.Comment(testRepo, g, "dave", "/reject-goal")
	h.settle()
	wantGoal(t, h, m, "pending-verify")
	got = replies(h, g)
	wantContains(t, "the refusal", got[len(got)-1], "> /reject-goal", "reason")

	h.gh.CloseMilestone(testRepo, m, "carol")
	h.settle()
	milestoneOpen(t, h, m, true)
	before := len(replies(h, g))
	if err := h.gh.Redeliver(lastDelivery(t, h, "milestone", "closed")); err != nil {
		t.Fatal(err)
	}
	h.settle()
	milestoneOpen(t, h, m, true)
	if n := len(replies(h, g)); n != before {
		t.Fatalf("a redelivered close got %d more replies", n-before)
	}

	h.gh.Comment(testRepo, g, "dave", "/verify-goal exports open in a spreadsheet")
	h.settle()
	wantGoal(t, h, m, "verified")
	milestoneOpen(t, h, m, false)
}

// A verified goal's milestone reopened by hand is no longer confirmed: the
// goal is pending-verify again (its tasks are still verified), and the goal
// issue is open again with a notice to the leads.
func TestAttackGoalMilestoneReopenedByHandWithdrawsTheConfirmation(t *testing.T) {
	h := newHarness(t)
	team(h)
	m := h.gh.CreateMilestone(testRepo, "carol", "v1")
	a := h.gh.OpenIssue(testRepo, "carol", "Export to CSV", "")
	h.gh.SetMilestone(testRepo, a, "carol", m)
	h.settle()
	doneTask(t, h, a)
	h.gh.CloseMilestone(testRepo, m, "carol")
	h.settle()
	g := wantGoal(t, h, m, "verified")

	h.gh.ReopenMilestone(testRepo, m, "alice")
	h.settle()
	wantGoal(t, h, m, "pending-verify")
	milestoneOpen(t, h, m, true)
	if is, _ := h.gh.Issue(testRepo, g); is.State != "open" {
		t.Fatalf("goal issue #%d is %s, want open", g, is.State)
	}
	got := replies(h, g)
	wantContains(t, "the notice", got[len(got)-1], "@carol")
}

// A deleted milestone is no goal any more: its goal issue is closed, and
// says why, rather than stay open, labeled active, with a dashboard of a
// goal that no longer exists. Its former tasks' later changes do not bring
// it back.
func TestAttackGoalDeletedMilestoneClosesItsGoalIssue(t *testing.T) {
	h := newHarness(t)
	team(h)
	m := h.gh.CreateMilestone(testRepo, "carol", "v1")
	a := h.gh.OpenIssue(testRepo, "carol", "Export to CSV", "")
	h.gh.SetMilestone(testRepo, a, "carol", m)
	h.settle()
	h.gh.Assign(testRepo, a, "carol", "alice")
	h.gh.Comment(testRepo, a, "alice", "/start")
	h.settle()
	g := wantGoal(t, h, m, "active")

	h.gh.DeleteMilestone(testRepo, m, "carol")
	h.settle()
	is, _ := h.gh.Issue(testRepo, g)
	if is.State != "closed" {
		t.Fatalf("the goal issue #%d of a deleted milestone is %s", g, is.State)
	}
	wantContains(t, "the goal issue", is.Body, "deleted")

	h.gh.Comment(testRepo, a, "alice", "/submit")
	h.settle()
	wantState(t, h, a, "review")
	if is, _ := h.gh.Issue(testRepo, g); is.State != "closed" {
		t.Fatalf("the goal issue #%d of a deleted milestone is %s again", g, is.State)
	}
	for _, n := range h.gh.IssueNumbers(testRepo) {
		if is, _ := h.gh.Issue(testRepo, n); n != g && is.User == h.gh.BotLogin() {
			t.Fatalf("countersign opened #%d %q", n, is.Title)
		}
	}
}
