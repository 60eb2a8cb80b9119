package app_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/githubtest"
	"github.com/countersign/countersign/rules"
)

// The task lifecycle held to DESIGN §2, row by row, as a team meets it.

// A pull request opened ready for a task still pending walks it through
// every skipped state in order, each step on the card, and its author, the
// only one who worked on it, becomes the assignee.
func TestLifecyclePROpenedForPendingTaskWalksEachState(t *testing.T) {
	h := newHarness(t)
	team(h)
	n := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	h.settle()
	wantState(t, h, n, "pending")
	_, sha := h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "Login", Body: fmt.Sprintf("fixes: #%d", n)})
	h.settle()
	wantState(t, h, n, "review")
	wantCheck(t, h, sha, "in_progress")
	is, _ := h.gh.Issue(testRepo, n)
	if len(is.Assignees) != 1 || is.Assignees[0] != "alice" {
		t.Fatalf("#%d assignees = %v, want [alice], the pull request's author", n, is.Assignees)
	}
	c := card(t, h, n)
	wantContains(t, "the card", c, "`pending` → `assigned`", "`assigned` → `in-progress`", "`in-progress` → `review`")
	if i, j, k := strings.Index(c, "`pending` → `assigned`"), strings.Index(c, "`assigned` → `in-progress`"), strings.Index(c, "`in-progress` → `review`"); !(i < j && j < k) {
		t.Errorf("the card's history is not in order:\n%s", c)
	}
}

// A draft pull request puts an assigned task in progress; marking it ready
// puts it in review.
func TestLifecycleDraftThenReady(t *testing.T) {
	h := newHarness(t)
	team(h)
	n, pr, _ := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login", Draft: true})
	h.settle()
	wantState(t, h, n, "in-progress")
	h.gh.ReadyForReview(testRepo, pr, "alice")
	h.settle()
	wantState(t, h, n, "review")
}

// A pull request closed without merging carries no code: an approval of it
// approves nothing that will land. The task was completed on that approval;
// once the pull request is abandoned, completed no longer holds (completed
// means approved), and a /verify must not make the abandoned work verified.
func TestLifecycleAbandonedApprovedPRCannotBeVerified(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetPermission(testRepo, "dave", "write")
	n, pr, _, _ := approvedPR(t, h, "Login form", "bob", githubtest.PROptions{Title: "Login"})

	h.gh.ClosePR(testRepo, pr, "alice")
	h.settle()
	h.gh.Comment(testRepo, n, "dave", "/verify")
	h.settle()
	if got := stateOf(h, n); got == "verified" || got == "completed" {
		t.Fatalf("#%d is %q after its only pull request was closed without merging: the approval covers work that will never land", n, got)
	}

	// Reopened with the same head, what was approved for it stands (DESIGN §2).
	h.gh.ReopenPR(testRepo, pr, "alice")
	h.settle()
	wantState(t, h, n, "completed")
}

// A second pull request for a task already approved is new work: the task
// is in review again until the new one's head is approved too.
func TestLifecycleSecondPRForApprovedTask(t *testing.T) {
	h := newHarness(t)
	team(h)
	n, _, _, _ := approvedPR(t, h, "Login form", "bob", githubtest.PROptions{Title: "Login"})
	pr2, sha2 := h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "Login, part 2", Body: fmt.Sprintf("Closes #%d", n)})
	h.settle()
	wantState(t, h, n, "review")
	ciPasses(h, sha2)
	h.gh.Review(testRepo, pr2, "bob", "APPROVED", "")
	h.settle()
	wantState(t, h, n, "completed")
}

// One pull request for several tasks, in the keyword forms GitHub accepts.
func TestLifecycleOnePRClosingTasksInEveryForm(t *testing.T) {
	h := newHarness(t)
	team(h)
	var ns []int
	for i := 0; i < 4; i++ {
		n := h.gh.OpenIssue(testRepo, "carol", fmt.Sprintf("Task %d", i), "")
		h.gh.Assign(testRepo, n, "carol", "alice")
		ns = append(ns, n)
	}
	body := fmt.Sprintf("Fixes #%d, fixes #%d\nCloses %s#%d\nRESOLVED: #%d", ns[0], ns[1], testRepo, ns[2], ns[3])
	_, sha := h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "All of it", Body: body})
	h.settle()
	for _, n := range ns {
		wantState(t, h, n, "review")
	}
	wantCheck(t, h, sha, "in_progress")
}

// A review that requests changes sends the work back, its body the reason
// on the card.
func TestLifecycleChangesRequestedBodyIsTheReason(t *testing.T) {
	h := newHarness(t)
	team(h)
	n, pr, _ := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login"})
	h.settle()
	wantState(t, h, n, "review")
	h.gh.Review(testRepo, pr, "bob", "REQUEST_CHANGES", "the password field echoes")
	h.settle()
	wantState(t, h, n, "in-progress")
	wantContains(t, "the card", card(t, h, n), "the password field echoes")
}

// A task whose issue is closed by the merge of its verified pull request
// stays closed and verified.
func TestLifecycleVerifiedTaskClosedByMergeStaysClosed(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetPermission(testRepo, "dave", "write")
	n, pr, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login"})
	ciPasses(h, sha)
	h.gh.Review(testRepo, pr, "bob", "APPROVED", "")
	h.settle()
	h.gh.Comment(testRepo, n, "dave", "/verify")
	h.settle()
	wantState(t, h, n, "verified")
	h.gh.MergePR(testRepo, pr, "alice")
	h.settle()
	is, _ := h.gh.Issue(testRepo, n)
	if is.State != "closed" {
		t.Fatalf("#%d is %s after the merge of its verified pull request", n, is.State)
	}
	wantState(t, h, n, "verified")
	wantCheck(t, h, sha, "success")
}

// Merging the pull request of a task that is approved but not verified
// closes the issue on GitHub: countersign reopens it, saying why.
func TestLifecycleMergeBeforeVerifyReopens(t *testing.T) {
	h := newHarness(t)
	team(h)
	n, pr, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login"})
	ciPasses(h, sha)
	h.gh.Review(testRepo, pr, "bob", "APPROVED", "")
	h.settle()
	h.gh.MergePR(testRepo, pr, "alice")
	h.settle()
	is, _ := h.gh.Issue(testRepo, n)
	if is.State != "open" {
		t.Fatalf("#%d is %s after its unverified pull request was merged", n, is.State)
	}
	wantState(t, h, n, "completed")
	if r := replies(h, n); len(r) == 0 {
		t.Fatalf("#%d was reopened with no comment saying why", n)
	}
}

// /start by someone who is not assigned is refused; commands on the pull
// request apply to each task it closes.
func TestLifecycleStartByNonAssigneeAndPRCommands(t *testing.T) {
	h := newHarness(t)
	team(h)
	n := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	h.gh.Assign(testRepo, n, "carol", "alice")
	h.gh.Comment(testRepo, n, "bob", "/start")
	h.settle()
	wantState(t, h, n, "assigned")
	h.gh.Comment(testRepo, n, "alice", "/START")
	h.settle()
	wantState(t, h, n, "in-progress")
}

// A dismissed approval no longer completes the task.
func TestLifecycleDismissedApprovalWithdrawsCompletion(t *testing.T) {
	h := newHarness(t)
	team(h)
	n, pr, _, id := approvedPR(t, h, "Login form", "bob", githubtest.PROptions{Title: "Login"})
	h.gh.DismissReview(testRepo, pr, id, "carol")
	h.settle()
	wantState(t, h, n, "review")
}

// bob approved the first head; alice pushed again and bob approved the new
// head. carol tidies the pull request by dismissing bob's outdated approval
// of the old head: the approval of the head that is there still stands.
func TestLifecycleDismissingAnOutdatedApprovalKeepsTheCurrentOne(t *testing.T) {
	h := newHarness(t)
	team(h)
	n, pr, _, old := approvedPR(t, h, "Login form", "bob", githubtest.PROptions{Title: "Login"})
	h2 := h.gh.Push(testRepo, pr, githubtest.Commit{Message: "tidy"})
	ciPasses(h, h2)
	h.settle()
	wantState(t, h, n, "review")
	h.gh.Review(testRepo, pr, "bob", "APPROVED", "")
	h.settle()
	wantState(t, h, n, "completed")

	h.gh.DismissReview(testRepo, pr, old, "carol")
	h.settle()
	wantState(t, h, n, "completed")
}

// An approval by a builder does not count, and says so.
func TestLifecycleApprovalByABuilderDoesNotCount(t *testing.T) {
	h := newHarness(t)
	team(h)
	n, pr, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login",
		Commits: []githubtest.Commit{{Author: "alice"}, {Author: "bob", Message: "bob's part"}}})
	ciPasses(h, sha)
	h.gh.Review(testRepo, pr, "bob", "APPROVED", "")
	h.settle()
	wantState(t, h, n, "review")
	if len(replies(h, pr)) == 0 {
		t.Errorf("bob's approval, by a builder, was not counted and no one was told")
	}
}

// tasks.track: milestoned. A pull request that names only an issue with no
// milestone closes no task. Every pull request gets an answer (DESIGN §2):
// a completed check, not none (a required check that never comes blocks the
// merge with no word why). One that names issues to close that are not
// tasks does not pass even under gate.untracked: allow (rules.UntrackedCheck:
// it says the issues it names are not tasks).
func TestLifecyclePRForAnUntrackedIssueGetsTheUntrackedAnswer(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetFile(testRepo, rules.ConfigPath, "tasks: {track: milestoned}\ngate: {untracked: allow}\n")
	n := h.gh.OpenIssue(testRepo, "carol", "Typo on the home page", "")
	h.settle()
	if got := stateOf(h, n); got != "" {
		t.Fatalf("#%d, with no milestone, is tracked: %q", n, got)
	}
	pr, sha := h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "Fix the typo", Body: fmt.Sprintf("Fixes #%d", n)})
	h.settle()
	r := wantCheck(t, h, sha, "failure")
	wantContains(t, "the check", r.Summary+r.Text, "not open tasks")

	// Its next head is answered too.
	sha2 := h.gh.Push(testRepo, pr, githubtest.Commit{Message: "one more"})
	h.settle()
	wantCheck(t, h, sha2, "failure")
}

// Under the default gate.untracked (require), a pull request that names
// only an issue countersign does not track (tasks.track: labeled, and the
// issue lacks the label) gets a completed check that says why it does not
// pass, not none at all.
func TestLifecyclePRForAnUnlabeledIssueIsAnswered(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetFile(testRepo, rules.ConfigPath, "tasks: {track: labeled}\n")
	n := h.gh.OpenIssue(testRepo, "carol", "How do I log in?", "")
	tracked := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	h.gh.AddLabels(testRepo, tracked, "carol", "task")
	h.gh.Assign(testRepo, tracked, "carol", "alice")
	h.settle()
	_, sha := h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "Docs", Body: fmt.Sprintf("Fixes #%d", n)})
	h.settle()
	wantCheck(t, h, sha, "failure")

	// Naming a task as well, the check follows the task alone.
	pr2, sha2 := h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "Both", Body: fmt.Sprintf("Fixes #%d\nFixes #%d", n, tracked)})
	ciPasses(h, sha2)
	h.gh.Review(testRepo, pr2, "bob", "APPROVED", "")
	h.settle()
	wantState(t, h, tracked, "completed")
	h.gh.SetPermission(testRepo, "dave", "write")
	h.gh.Comment(testRepo, tracked, "dave", "/verify")
	h.settle()
	wantState(t, h, tracked, "verified")
	wantCheck(t, h, sha2, "success")
}

// An issue deleted (or converted to a discussion: GitHub deletes the issue)
// is no longer a task: a pull request that also closed it passes once the
// tasks left are verified, and its goal no longer waits for it.
func TestLifecycleDeletedIssueIsNoLongerATask(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetPermission(testRepo, "dave", "write")
	m := h.gh.CreateMilestone(testRepo, "carol", "Login page")
	h.settle()
	one := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	two := h.gh.OpenIssue(testRepo, "carol", "Should we have a login page at all?", "")
	for _, n := range []int{one, two} {
		h.gh.SetMilestone(testRepo, n, "carol", m)
		h.gh.Assign(testRepo, n, "carol", "alice")
	}
	pr, sha := h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "Login", Body: fmt.Sprintf("Fixes #%d, fixes #%d", one, two)})
	ciPasses(h, sha)
	h.gh.Review(testRepo, pr, "bob", "APPROVED", "")
	h.settle()
	h.gh.Comment(testRepo, one, "dave", "/verify")
	h.settle()
	wantState(t, h, one, "verified")
	wantCheck(t, h, sha, "in_progress")

	h.gh.DeleteIssue(testRepo, two, "carol")
	h.settle()
	wantCheck(t, h, sha, "success")
	wantGoal(t, h, m, "pending-verify")
}

// An issue transferred to another repository is no longer a task here: the
// pull request that closed it here no longer waits for it.
func TestLifecycleTransferredIssueIsNoLongerATaskHere(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetPermission(testRepo, "dave", "write")
	h.gh.AddRepo("acme/docs", testInstallation)
	one, pr, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login"})
	two := h.gh.OpenIssue(testRepo, "carol", "Document the login form", "")
	h.gh.Assign(testRepo, two, "carol", "alice")
	h.gh.EditPR(testRepo, pr, "alice", "", fmt.Sprintf("Fixes #%d\nFixes #%d", one, two))
	ciPasses(h, sha)
	h.gh.Review(testRepo, pr, "bob", "APPROVED", "")
	h.settle()
	h.gh.Comment(testRepo, one, "dave", "/verify")
	h.settle()
	wantState(t, h, one, "verified")
	wantCheck(t, h, sha, "in_progress")

	h.gh.TransferIssue(testRepo, two, "carol", "acme/docs")
	h.settle()
	wantCheck(t, h, sha, "success")
}
