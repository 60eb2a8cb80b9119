package app_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/internal/githubtest"
	"github.com/countersign/countersign/rules"
)

// These tests try, as an attacker would, to get around "someone else
// confirms" (DESIGN §1, §2, §5): each one names the way around it that it
// closes.

// wantLabels fails unless issue n carries exactly the owned labels want (other
// labels are not looked at).
func wantNoLabel(t *testing.T, h *harness, n int, labels ...string) {
	t.Helper()
	for _, l := range h.gh.Labels(testRepo, n) {
		if slices.ContainsFunc(labels, func(x string) bool { return strings.EqualFold(x, l) }) {
			t.Fatalf("#%d still carries %q: %v", n, l, h.gh.Labels(testRepo, n))
		}
	}
}

func wantOpen(t *testing.T, h *harness, n int) {
	t.Helper()
	is, ok := h.gh.Issue(testRepo, n)
	if !ok || is.State != "open" {
		t.Fatalf("#%d is %q, want open", n, is.State)
	}
}

// A goal label makes nothing a goal: someone with write access labels a
// milestoned task `goal`, then `state:verified`, takes its real state label
// off and closes it. The task stays a task: its labels are put back and it
// is reopened.
func TestGoalLabelMakesNothingAGoal(t *testing.T) {
	h := newHarness(t)
	team(h)
	m := h.gh.CreateMilestone(testRepo, "carol", "Login page")
	n := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	h.gh.SetMilestone(testRepo, n, "carol", m)
	h.gh.Assign(testRepo, n, "carol", "alice")
	h.settle()
	wantState(t, h, n, "assigned")

	h.gh.AddLabels(testRepo, n, "alice", "goal")
	h.gh.AddLabels(testRepo, n, "alice", "goal:verified")
	h.gh.AddLabels(testRepo, n, "alice", "state:verified")
	h.gh.RemoveLabel(testRepo, n, "alice", "state:assigned")
	h.gh.CloseIssue(testRepo, n, "alice", "completed")
	h.settle()

	wantState(t, h, n, "assigned")
	wantNoLabel(t, h, n, "goal", "goal:verified", "state:verified")
	wantOpen(t, h, n)
	g := wantGoal(t, h, m, "open")
	if g == n {
		t.Fatalf("the task #%d became the goal issue", n)
	}
}

// State labels cannot be renamed or deleted away: renaming the repository
// label state:in-progress to state:verified would make every task in progress
// look verified; renaming another label onto an owned name would put that
// state on every issue carrying it; deleting an owned label takes it off every
// task. Each is undone, and the tasks get their labels back.
func TestOwnedLabelsCannotBeRenamedOrDeleted(t *testing.T) {
	h := newHarness(t)
	team(h)
	n := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	h.gh.Assign(testRepo, n, "carol", "alice")
	h.gh.Comment(testRepo, n, "alice", "/start")
	other := h.gh.OpenIssue(testRepo, "carol", "Logout button", "")
	h.settle()
	wantState(t, h, n, "in-progress")
	wantState(t, h, other, "pending")

	h.gh.RenameLabel(testRepo, "alice", "state:in-progress", "state:verified")
	h.settle()
	wantState(t, h, n, "in-progress")
	if labelNamed(h, "state:verified") {
		t.Fatalf("the renamed label is still called state:verified: %v", repoLabelNames(h))
	}

	h.gh.AddLabel(testRepo, "bug", "d73a4a", "")
	h.gh.AddLabels(testRepo, other, "alice", "bug")
	h.gh.RenameLabel(testRepo, "alice", "bug", "state:completed")
	h.settle()
	wantState(t, h, other, "pending")
	if !slices.Contains(h.gh.Labels(testRepo, other), "bug") {
		t.Fatalf("bug was not renamed back: #%d labels %v", other, h.gh.Labels(testRepo, other))
	}

	h.gh.DeleteLabel(testRepo, "alice", "state:in-progress")
	h.gh.DeleteLabel(testRepo, "alice", "state:pending")
	h.settle()
	wantState(t, h, n, "in-progress")
	wantState(t, h, other, "pending")
	for _, l := range h.gh.RepoLabels(testRepo) {
		if l.Name == "state:in-progress" && l.Color != "1d76db" {
			t.Errorf("state:in-progress recreated with colour %s, want 1d76db", l.Color)
		}
	}
}

func labelNamed(h *harness, name string) bool { return slices.Contains(repoLabelNames(h), name) }

func repoLabelNames(h *harness) []string {
	var out []string
	for _, l := range h.gh.RepoLabels(testRepo) {
		out = append(out, l.Name)
	}
	return out
}

// A comment does not start tracking a closed issue: an outsider's /status on
// an issue closed before countersign was installed adds no label, no card and
// no reply.
func TestCommentDoesNotTrackAClosedIssue(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.DropWebhooks(true) // before the App was installed
	n := h.gh.OpenIssue(testRepo, "carol", "Old bug", "")
	h.gh.CloseIssue(testRepo, n, "carol", "completed")
	h.gh.DropWebhooks(false)

	before := len(h.gh.Requests())
	h.gh.Comment(testRepo, n, "mallory", "/status")
	h.gh.Comment(testRepo, n, "alice", "/start")
	h.gh.AddLabels(testRepo, n, "mallory", "state:verified")
	h.settle()
	if w := slices.DeleteFunc(writes(h.gh.Requests()[before:]), func(w string) bool { return strings.HasSuffix(w, "/access_tokens") }); len(w) != 0 {
		t.Fatalf("a closed, untracked issue got writes: %v", w)
	}
	if cs := h.gh.Comments(testRepo, n); len(cs) != 2 {
		t.Fatalf("#%d has %d comments, want the 2 people wrote", n, len(cs))
	}
}

// Identity is the user id: a builder who renames their account is still the
// builder, and cannot verify their own work under the new name.
func TestRenamedBuilderCannotVerify(t *testing.T) {
	h := newHarness(t)
	team(h)
	n := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	h.gh.Assign(testRepo, n, "carol", "alice")
	h.gh.Comment(testRepo, n, "alice", "/start")
	h.gh.Comment(testRepo, n, "alice", "/submit done")
	h.gh.Comment(testRepo, n, "bob", "/approve")
	h.settle()
	wantState(t, h, n, "completed")

	h.gh.RenameUser("alice", "alice-renamed")
	h.gh.Comment(testRepo, n, "alice-renamed", "/verify looks good to me")
	h.settle()
	wantState(t, h, n, "completed")
	if !anyCommentContains(h, n, "built this task") {
		t.Fatalf("the renamed builder's /verify got no refusal: %v", h.gh.Comments(testRepo, n))
	}

	// A renamed approver stays the approver: in a team of three, the one who
	// approved may not verify either.
	h.gh.SetPermission(testRepo, "erin", "write")
	h.gh.RenameUser("bob", "bob-renamed")
	h.gh.Comment(testRepo, n, "bob-renamed", "/verify")
	h.settle()
	wantState(t, h, n, "completed")
	h.gh.Comment(testRepo, n, "erin", "/verify")
	h.settle()
	wantState(t, h, n, "verified")
}

func anyCommentContains(h *harness, n int, s string) bool {
	return slices.ContainsFunc(h.gh.Comments(testRepo, n), func(c githubtest.CommentView) bool { return strings.Contains(c.Body, s) })
}

// An outsider's pull request moves nothing: a read-only user's "Fixes #N"
// does not send a verified (and closed) task back to review, does not jump a
// pending task to review, does not block an approved task's completion, and
// gets one reply, however often it is pushed to.
func TestOutsiderPullRequestMovesNothing(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetPermission(testRepo, "mallory", "read")
	done := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	doneTask(t, h, done)
	h.gh.CloseIssue(testRepo, done, "carol", "completed")
	pending := h.gh.OpenIssue(testRepo, "carol", "Logout button", "")
	review := h.gh.OpenIssue(testRepo, "carol", "Session cookie", "")
	h.gh.Assign(testRepo, review, "carol", "alice")
	pr, sha := h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "Cookie", Body: fmt.Sprintf("Fixes #%d", review)})
	h.settle()
	wantState(t, h, review, "review")

	evil, evilSHA := h.gh.OpenPR(testRepo, "mallory", githubtest.PROptions{Title: "All of it",
		Body: fmt.Sprintf("Fixes #%d\nFixes #%d\nFixes #%d", done, pending, review)})
	h.settle()
	wantState(t, h, done, "verified")
	if is, _ := h.gh.Issue(testRepo, done); is.State != "closed" {
		t.Fatalf("#%d was reopened by an outsider's pull request", done)
	}
	wantState(t, h, pending, "pending")
	wantState(t, h, review, "review")
	// Every pull request gets an answer: one that links no task never passes.
	wantContains(t, "the outsider's check", wantCheck(t, h, evilSHA, "failure").Summary, "may not build here")

	ciPasses(h, sha)
	h.gh.Review(testRepo, pr, "carol", "APPROVED", "")
	h.gh.Push(testRepo, evil, githubtest.Commit{Message: "more"})
	h.gh.ReadyForReview(testRepo, evil, "mallory")
	h.gh.Comment(testRepo, evil, "mallory", "/verify")
	h.settle()
	wantState(t, h, review, "completed") // the outsider's open pull request blocks nothing
	wantState(t, h, pending, "pending")
	if n := len(botComments(h, evil)); n != 2 {
		t.Fatalf("the outsider's pull request got %d replies, want 2 (the link refusal, the refused /verify): %v", n, h.gh.Comments(testRepo, evil))
	}
	if !anyCommentContains(h, evil, "does not count as work") {
		t.Fatalf("the outsider's pull request was not told why it links nothing: %v", h.gh.Comments(testRepo, evil))
	}

	// An outsider assigned to the task may build it: their pull request links.
	h.gh.Assign(testRepo, pending, "carol", "mallory")
	h.settle()
	mine, _ := h.gh.OpenPR(testRepo, "mallory", githubtest.PROptions{Title: "Logout", Body: fmt.Sprintf("Fixes #%d", pending)})
	h.settle()
	wantState(t, h, pending, "review")
	_ = mine
}

// A pull request naming more than tasks.max_per_pr tasks links none of them
// and gets one reply.
func TestPullRequestNamingTooManyTasksLinksNone(t *testing.T) {
	h := newHarness(t)
	team(h)
	var body strings.Builder
	var tasks []int
	for i := range 11 {
		n := h.gh.OpenIssue(testRepo, "carol", fmt.Sprintf("Task %d", i), "")
		tasks = append(tasks, n)
		fmt.Fprintf(&body, "Fixes #%d\n", n)
	}
	h.settle()
	pr, sha := h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "Everything", Body: body.String()})
	h.gh.EditPR(testRepo, pr, "alice", "Everything", body.String()+"\nMore words.")
	h.settle()
	for _, n := range tasks {
		wantState(t, h, n, "pending")
	}
	wantContains(t, "the check", wantCheck(t, h, sha, "failure").Summary, "more than a pull request may")
	if cs := h.gh.Comments(testRepo, pr); len(cs) != 1 || !strings.Contains(cs[0].Body, "max_per_pr") {
		t.Fatalf("want one reply naming tasks.max_per_pr, got %v", cs)
	}
}

// botComments are the comments countersign wrote on issue or PR n.
func botComments(h *harness, n int) []githubtest.CommentView {
	return slices.DeleteFunc(h.gh.Comments(testRepo, n), func(c githubtest.CommentView) bool { return c.User != h.gh.BotLogin() })
}

// No reply spam: 60 refused commands by one outsider get at most 3 replies on
// the issue within the hour, and one refused command on a pull request that
// closes 10 tasks gets at most 3 (not one per task). The rest are counted on
// /metrics.
func TestRepliesToOnePersonAreBounded(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetPermission(testRepo, "mallory", "read")
	n := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	h.settle()
	for range 60 {
		h.gh.Comment(testRepo, n, "mallory", "/verify")
	}
	h.settle()
	if got := len(botComments(h, n)); got != 1+3 { // the card and 3 replies
		t.Fatalf("#%d has %d comments by countersign, want the card and 3 replies", n, got)
	}
	// Someone else still gets their answer.
	h.gh.Comment(testRepo, n, "bob", "/status")
	h.settle()
	if got := len(botComments(h, n)); got != 1+3+1 {
		t.Fatalf("#%d has %d comments by countersign, want bob's /status answered too", n, got)
	}

	var body strings.Builder
	for i := range 10 {
		m := h.gh.OpenIssue(testRepo, "carol", fmt.Sprintf("Task %d", i), "")
		fmt.Fprintf(&body, "Fixes #%d\n", m)
	}
	pr, _ := h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "All", Body: body.String()})
	h.settle()
	h.gh.Comment(testRepo, pr, "mallory", "/verify")
	h.settle()
	if got := len(botComments(h, pr)); got > 3 {
		t.Fatalf("one refused /verify on a pull request closing 10 tasks got %d replies, want at most 3", got)
	}
	if _, metrics := h.get("/metrics"); !strings.Contains(metrics, `countersign_replies_held_total{kind="refused"}`) {
		t.Fatalf("held replies are not counted on /metrics")
	}
}

// Escalation by failed attempts does its job: the third failed CI attempt
// labels the task escalated and the comment @-mentions the leads and says
// what failed (criteria, runs, attempts), as a rejection escalation does.
func TestEscalationByFailedAttemptsNamesLeadsAndFailures(t *testing.T) {
	h := newHarness(t)
	team(h)
	n, pr, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login", Files: []string{"internal/login/login.go"}})
	h.settle()
	for attempt := 1; attempt <= 3; attempt++ {
		wantState(t, h, n, "review")
		h.gh.CheckRun(testRepo, sha, "typecheck", "", "success", "")
		h.gh.CheckRun(testRepo, sha, "lint", "", "success", "")
		h.gh.CheckRun(testRepo, sha, "test", "", "failure", "")
		h.settle()
		wantState(t, h, n, "in-progress")
		if attempt < 3 {
			sha = h.gh.Push(testRepo, pr, githubtest.Commit{Message: fmt.Sprintf("fix %d", attempt)})
			h.settle()
		}
	}
	if !slices.Contains(h.gh.Labels(testRepo, n), "escalated") {
		t.Fatalf("#%d not escalated after 3 failed attempts: %v", n, h.gh.Labels(testRepo, n))
	}
	var esc string
	for _, c := range replies(h, n) {
		if strings.Contains(c, "escalated") {
			esc = c
		}
	}
	wantContains(t, "the escalation", esc, "failed verification 3 times", "@carol", "ci (`test`: failure", "#"+fmt.Sprint(pr))
	if strings.Contains(esc, "rejected 0 times") {
		t.Fatalf("the escalation speaks of rejections:\n%s", esc)
	}
}

// A bot account whose pilot is not configured is nobody's free pass: the
// person who assigned the task to it and the person its pull request is
// assigned to (whoever set it to work) are builders of its work, and may not
// verify it.
func TestAgentsDefaultPilotsCannotVerify(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetPermission(testRepo, "dave", "write")
	h.gh.SetPermission(testRepo, "erin", "write")
	n := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	h.gh.Assign(testRepo, n, "erin", "copilot[bot]")
	h.settle()
	pr, sha := h.gh.OpenPR(testRepo, "copilot[bot]", githubtest.PROptions{Title: "Login", Body: fmt.Sprintf("Fixes #%d", n),
		Assignees: []string{"dave"}})
	ciPasses(h, sha)
	h.gh.Review(testRepo, pr, "bob", "APPROVED", "")
	h.settle()
	wantState(t, h, n, "completed")

	for _, who := range []string{"dave", "erin"} {
		h.gh.Comment(testRepo, n, who, "/verify")
		h.settle()
		wantState(t, h, n, "completed")
	}
	c := card(t, h, n)
	wantContains(t, "the card", c, "pilot of copilot[bot]", "@dave", "@erin")
	h.gh.Comment(testRepo, n, "alice", "/verify")
	h.settle()
	wantState(t, h, n, "verified")
}

// A pull request that says it fixes the goal issue does not make the goal
// issue a task (found by review: the fan-out path must know goal issues too).
func TestPullRequestClosingGoalIssueMakesNoTask(t *testing.T) {
	h := newHarness(t)
	team(h)
	m := h.gh.CreateMilestone(testRepo, "carol", "Login page")
	n := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	h.gh.SetMilestone(testRepo, n, "carol", m)
	h.settle()
	g := wantGoal(t, h, m, "open")
	h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "x", Body: fmt.Sprintf("Fixes #%d", g)})
	h.settle()
	for _, l := range h.gh.Labels(testRepo, g) {
		if strings.HasPrefix(l, "state:") {
			t.Fatalf("the goal issue #%d became a task: %v", g, h.gh.Labels(testRepo, g))
		}
	}
	wantGoal(t, h, m, "open")
}

// Found by review: assigning an outsider to a task after they opened their
// pull request makes it count at once; unassigning them takes it out again
// (it no longer blocks completion, and its pushes void nothing).
func TestOutsiderAssignedAfterTheFactThenUnassigned(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetPermission(testRepo, "mallory", "read")
	h.gh.SetPermission(testRepo, "erin", "write")
	n := h.gh.OpenIssue(testRepo, "carol", "Logout button", "")
	h.settle()
	mpr, msha := h.gh.OpenPR(testRepo, "mallory", githubtest.PROptions{Title: "Logout", Body: fmt.Sprintf("Fixes #%d", n)})
	h.settle()
	wantState(t, h, n, "pending")
	wantCheck(t, h, msha, "failure") // it links no task: its check does not pass

	h.gh.Assign(testRepo, n, "carol", "mallory")
	h.settle()
	wantState(t, h, n, "review") // her ready pull request counts now
	wantCheck(t, h, msha, "in_progress")

	h.gh.Unassign(testRepo, n, "carol", "mallory")
	h.gh.Assign(testRepo, n, "carol", "alice")
	pr, sha := h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "Logout, done right", Body: fmt.Sprintf("Fixes #%d", n)})
	ciPasses(h, sha)
	h.gh.Review(testRepo, pr, "bob", "APPROVED", "")
	h.settle()
	wantState(t, h, n, "completed") // mallory's open pull request blocks nothing any more
	h.gh.Comment(testRepo, n, "erin", "/verify")
	h.settle()
	wantState(t, h, n, "verified")
	h.gh.Push(testRepo, mpr, githubtest.Commit{Message: "more"})
	h.settle()
	wantState(t, h, n, "verified")
}

// Found by review: a bot with no agents: entry still links its own pull
// request when the pull request is assigned to someone with write permission
// (the human who set it to work); that person is then its pilot.
func TestUnconfiguredBotsPullRequestLinksThroughItsAssignee(t *testing.T) {
	h := newHarness(t)
	team(h)
	n := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	h.settle()
	_, sha := h.gh.OpenPR(testRepo, "helper[bot]", githubtest.PROptions{Title: "Login", Body: fmt.Sprintf("Fixes #%d", n),
		Assignees: []string{"alice"}})
	h.settle()
	wantState(t, h, n, "review")
	wantCheck(t, h, sha, "in_progress")
	wantContains(t, "the card", card(t, h, n), "pilot of helper[bot]", "@alice")
}

// Found by review: a GitHub outage while posting a reply does not use up its
// person's share: three failed tries at one reply still leave room for it
// and two more.
func TestRetriedReplyCountsOnce(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetPermission(testRepo, "mallory", "read")
	n := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	h.settle()
	h.gh.FailNextFor(3, 502, nil, func(method, path string) bool { return method == "POST" && strings.HasSuffix(path, "/comments") })
	h.gh.Comment(testRepo, n, "mallory", "/verify")
	h.settle()
	h.gh.Comment(testRepo, n, "mallory", "/verify again")
	h.gh.Comment(testRepo, n, "mallory", "/verify and again")
	h.settle()
	if got := len(botComments(h, n)); got != 1+3 {
		t.Fatalf("#%d has %d comments by countersign, want the card and 3 replies", n, got)
	}
}

// Found by review: renaming an owned label away and taking its name before
// countersign renames it back leaves no task without its state (the alias is
// taken off them); deleting a goal label puts it back on the goal issue.
func TestLabelRenamedAwayAndNameTaken(t *testing.T) {
	h := newHarness(t)
	team(h)
	m := h.gh.CreateMilestone(testRepo, "carol", "Login page")
	n := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	h.gh.Assign(testRepo, n, "carol", "alice")
	h.gh.Comment(testRepo, n, "alice", "/start")
	h.settle()
	wantState(t, h, n, "in-progress")
	g := wantGoal(t, h, m, "open")

	h.gh.SetWebhookPaused(true)
	h.gh.RenameLabel(testRepo, "alice", "state:in-progress", "looks-done")
	h.gh.AddLabel(testRepo, "state:in-progress", "ededed", "")
	h.gh.SetWebhookPaused(false)
	h.settle()
	wantState(t, h, n, "in-progress")
	wantNoLabel(t, h, n, "looks-done")

	h.gh.DeleteLabel(testRepo, "alice", "goal:open")
	h.settle()
	if !slices.Contains(h.gh.Labels(testRepo, g), "goal:open") {
		t.Fatalf("goal issue #%d did not get goal:open back: %v", g, h.gh.Labels(testRepo, g))
	}
}

// Identity covers the configuration too: leads: names the account that had
// the login when the configuration named it. A lead who renames is no longer
// matched by the old login, and whoever takes the freed login is not a lead.
func TestConfiguredLeadsLoginTakenOverIsNoLead(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetFile(testRepo, rules.ConfigPath, "leads: [carol]\n")
	n := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	h.gh.Comment(testRepo, n, "carol", "/status") // the configuration is read, carol pinned
	h.settle()

	h.gh.RenameUser("carol", "carol-renamed")
	h.gh.ClaimLogin("carol")
	h.gh.SetPermission(testRepo, "carol", "read")
	h.gh.Comment(testRepo, n, "carol", "/force-complete OVERRIDE ship it")
	h.settle()
	wantState(t, h, n, "pending")
	if !anyCommentContains(h, n, "only a lead") {
		t.Fatalf("the new holder of a lead's old login was not refused: %v", replies(h, n))
	}
}

// Found by review: a pull request event healed (redelivered) after later
// ones were processed is older than the record and restates nothing: the
// record and the gate stay on the pull request's real head.
func TestLateSnapshotOfAPullRequestIsSkipped(t *testing.T) {
	h := newHarness(t)
	team(h)
	_, pr, _ := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login"})
	h.settle()
	h.gh.SetWebhookFault(1, githubtest.HookUnavailable, func(event, action string) bool { return action == "synchronize" })
	h.gh.Push(testRepo, pr, githubtest.Commit{Message: "B"})
	h.settle()
	time.Sleep(1100 * time.Millisecond) // GitHub's times have whole seconds
	c := h.gh.Push(testRepo, pr, githubtest.Commit{Message: "C"})
	h.settle()
	var missed string
	for _, d := range h.gh.Deliveries() {
		if d.Action == "synchronize" && d.Status == 503 {
			missed = d.ID
		}
	}
	if missed == "" {
		t.Fatal("the push of B was not refused")
	}
	if err := h.gh.Redeliver(missed); err != nil {
		t.Fatal(err)
	}
	h.settle()
	wantCheck(t, h, c, "in_progress")
	rec, err := h.store.Get(context.Background(), "pr/"+testRepo+fmt.Sprintf("#%d", pr))
	if err != nil || !strings.Contains(string(rec), `"head":"`+c+`"`) {
		t.Fatalf("the pull request's record is not at C (%s): %s %v", c[:7], rec, err)
	}
}

// Found by review: GitHub's GraphQL API being down (co-authors are read from
// it) is waited out like the REST API, never counted against a delivery.
func TestGraphQLOutageIsWaitedOut(t *testing.T) {
	h := newHarness(t, func(s *app.Settings) { s.MaxAttempts = 1 })
	team(h)
	n := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	h.gh.Assign(testRepo, n, "carol", "alice")
	h.settle()
	h.gh.FailNextFor(2, http.StatusBadGateway, nil, func(method, path string) bool { return strings.HasSuffix(path, "/graphql") })
	h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "Login", Body: fmt.Sprintf("Fixes #%d", n)})
	h.settle()
	wantState(t, h, n, "review")
	if dl, err := h.store.DeadLetters(context.Background()); err != nil || len(dl) != 0 {
		t.Fatalf("dead letters %v, %v: a GraphQL outage used up a delivery's attempts", dl, err)
	}
}

// Found by review: a directory where the configuration file belongs is an
// invalid configuration, reported; the bot keeps working (it crashed every
// delivery that read the configuration).
func TestConfigPathThatIsADirectory(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.PushDefault(testRepo, "alice", map[string]string{".github/countersign.yml/x": "leads: [alice]\n"})
	h.settle()
	n := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	h.settle()
	wantState(t, h, n, "pending")
	if dl, err := h.store.DeadLetters(context.Background()); err != nil || len(dl) != 0 {
		t.Fatalf("dead letters %v, %v", dl, err)
	}
}

// Found by review: a pull request that weakens the gate through the
// configuration says so on its countersign/config check, item by item.
func TestPullRequestThatWeakensTheGateIsNamed(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.PushDefault(testRepo, "carol", map[string]string{rules.ConfigPath: "verifiers: [bob]\nseparation: triple\n" +
		"contracts:\n  checks: {unit-test: [test], typecheck: [typecheck], lint: [lint], e2e: [e2e]}\n"})
	h.settle()
	_, sha := h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "Simpler", Commits: []githubtest.Commit{{
		Contents: map[string]string{rules.ConfigPath: "separation: minimum\ncontracts:\n  checks: {unit-test: ['*'], typecheck: [], lint: [lint], e2e: [e2e]}\n"}}}})
	h.settle()
	r := configCheck(h, sha)
	wantContains(t, "the configuration check", r.Summary, "lowers the gate",
		"separation goes from triple to minimum", "verifiers: is emptied", "unit-test now counts * (a wildcard)",
		"typecheck no longer maps to a check")
}
