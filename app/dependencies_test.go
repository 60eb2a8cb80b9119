package app_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/countersign/countersign/templates"
)

// These tests play tasks blocked by tasks (docs/design.md, Dependencies)
// through the webhook endpoint: GitHub's "blocked by" links and sub-issues.

// approvedTask takes task n (no pull request) to completed: alice builds,
// carol approves.
func approvedTask(t *testing.T, h *harness, repo string, n int) {
	t.Helper()
	h.gh.Assign(repo, n, "carol", "alice")
	h.gh.Comment(repo, n, "alice", "/start")
	h.gh.Comment(repo, n, "alice", "/submit")
	h.gh.Comment(repo, n, "carol", "/approve")
	h.settle()
}

// newestReply is the bot's newest comment on n other than the card.
func newestReply(t *testing.T, h *harness, n int) string {
	t.Helper()
	r := replies(h, n)
	if len(r) == 0 {
		t.Fatalf("#%d has no reply", n)
	}
	return r[len(r)-1]
}

func countReplies(h *harness, n int, part string) int {
	return len(slices.DeleteFunc(replies(h, n), func(s string) bool { return !strings.Contains(s, part) }))
}

// A blocked task may be worked on and approved, but /verify is refused
// naming its blocker and the blocker's state; the card says what it waits
// for. When the blocker is verified, the card says the task is unblocked and
// bob, refused, is told once; his /verify then passes.
func TestDependBlockedVerifyAndUnblocking(t *testing.T) {
	h := newHarness(t)
	team(h)
	api := h.gh.OpenIssue(testRepo, "carol", "Token endpoint", "")
	form := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	h.gh.AddBlockedBy(testRepo, form, "carol", testRepo, api)
	h.settle()
	wantContains(t, "the blocked task's card", card(t, h, form), "**Waiting for:** #1 (`pending`)", "| #1 Token endpoint | blocked by | `pending` | blocks |")

	approvedTask(t, h, testRepo, form)
	wantState(t, h, form, "completed")
	h.gh.Comment(testRepo, form, "bob", "/verify works for me")
	h.settle()
	wantState(t, h, form, "completed")
	wantContains(t, "the refusal", newestReply(t, h, form), "/verify works for me", "#2 is blocked by #1 (`pending`)")

	// The blocker moves: its dependents' cards are not written for each of
	// its transitions (the next /verify reads its state again).
	h.gh.ResetRequests()
	h.gh.Assign(testRepo, api, "carol", "alice")
	h.settle()
	for _, r := range h.gh.Requests() {
		if isWrite(r) && strings.Contains(r.Path, "/issues/"+strconv.Itoa(form)) {
			t.Fatalf("a transition of the blocker wrote to the dependent: %s %s", r.Method, r.Path)
		}
	}
	h.gh.Comment(testRepo, form, "bob", "/verify")
	h.settle()
	wantContains(t, "the refusal", newestReply(t, h, form), "#2 is blocked by #1 (`assigned`)")
	wantContains(t, "the card", card(t, h, form), "**Waiting for:** #1 (`assigned`)")

	doneTask(t, h, api)
	wantContains(t, "the unblocked card", card(t, h, form), "**Unblocked:** no blocker is left", "unblocked: no blocker is left")
	if n := countReplies(h, form, "is unblocked"); n != 1 {
		t.Fatalf("%d unblocked notices, want 1: %q", n, replies(h, form))
	}
	wantContains(t, "the unblocked notice", newestReply(t, h, form), "@bob")

	// Told once: another change of the blocker tells no one again.
	h.gh.Comment(testRepo, api, "carol", "/status")
	h.settle()
	if n := countReplies(h, form, "is unblocked"); n != 1 {
		t.Fatalf("%d unblocked notices after more news, want 1", n)
	}
	h.gh.Comment(testRepo, form, "bob", "/verify")
	h.settle()
	wantState(t, h, form, "verified")
}

// Two tasks blocking each other: both cards show the cycle and /verify is
// refused saying so; a lead breaks it by removing a link, and both cards say
// it is broken.
func TestDependCycle(t *testing.T) {
	h := newHarness(t)
	team(h)
	a := h.gh.OpenIssue(testRepo, "carol", "Schema", "")
	b := h.gh.OpenIssue(testRepo, "carol", "Migration", "")
	h.gh.AddBlockedBy(testRepo, a, "carol", testRepo, b)
	h.gh.AddBlockedBy(testRepo, b, "carol", testRepo, a)
	h.settle()
	wantContains(t, "#1's card", card(t, h, a), "**Dependency cycle:** #1 → #2 → #1")
	wantContains(t, "#2's card", card(t, h, b), "**Dependency cycle:** #2 → #1 → #2")

	approvedTask(t, h, testRepo, a)
	h.gh.Comment(testRepo, a, "bob", "/verify")
	h.settle()
	wantState(t, h, a, "completed")
	wantContains(t, "the refusal", newestReply(t, h, a), "#1 is blocked by #2 (`pending`)", "dependency cycle (#1 → #2 → #1)")

	h.gh.RemoveBlockedBy(testRepo, b, "carol", testRepo, a)
	h.settle()
	for _, n := range []int{a, b} {
		c := card(t, h, n)
		if strings.Contains(c, "**Dependency cycle:**") || !strings.Contains(c, "broken") {
			t.Fatalf("#%d's card after the cycle was broken:\n%s", n, c)
		}
	}
	wantContains(t, "#1's card", card(t, h, a), "**Waiting for:** #2 (`pending`)")
}

// A blocker in another repository of the installation blocks as one of the
// same repository does, is named by its full reference, and unblocks the
// task when it is verified there.
func TestDependCrossRepositoryBlocker(t *testing.T) {
	h := newHarness(t)
	team(h)
	const other = "acme/api"
	h.gh.AddRepo(other, testInstallation)
	for _, p := range []struct{ who, perm string }{{"carol", "admin"}, {"alice", "write"}, {"bob", "write"}} {
		h.gh.SetPermission(other, p.who, p.perm)
	}
	remote := h.gh.OpenIssue(other, "carol", "Token endpoint", "")
	form := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	h.gh.AddBlockedBy(testRepo, form, "carol", other, remote)
	h.settle()
	wantContains(t, "the card", card(t, h, form), "**Waiting for:** acme/api#1 (`pending`)")

	approvedTask(t, h, testRepo, form)
	h.gh.Comment(testRepo, form, "bob", "/verify")
	h.settle()
	wantState(t, h, form, "completed")
	wantContains(t, "the refusal", newestReply(t, h, form), "blocked by acme/api#1 (`pending`)")

	approvedTask(t, h, other, remote)
	h.gh.Comment(other, remote, "bob", "/verify")
	h.settle()
	wantContains(t, "the card", card(t, h, form), "**Unblocked:**", "acme/api#1 no longer blocks it: `verified`")
	h.gh.Comment(testRepo, form, "bob", "/verify")
	h.settle()
	wantState(t, h, form, "verified")
}

// A task's sub-issue blocks it as "blocked by" does, and the card says that
// countersign counts it as a dependency; a sub-issue that is no task (an
// ignored question) blocks until it is closed as completed; one closed as
// not planned stops blocking.
func TestDependSubIssue(t *testing.T) {
	h := newHarness(t)
	team(h)
	parent := h.gh.OpenIssue(testRepo, "carol", "Checkout", "")
	sub := h.gh.OpenIssue(testRepo, "carol", "Payment form", "")
	h.gh.AddSubIssue(testRepo, parent, "carol", testRepo, sub)
	h.settle()
	wantContains(t, "the parent's card", card(t, h, parent), "**Waiting for:** #2 (`pending`, a sub-issue)",
		"sub-issue (countersign counts a sub-issue as a dependency: tasks do not nest)")

	approvedTask(t, h, testRepo, parent)
	h.gh.Comment(testRepo, parent, "bob", "/verify")
	h.settle()
	wantState(t, h, parent, "completed")
	wantContains(t, "the refusal", newestReply(t, h, parent), "#2 (`pending`, a sub-issue)")

	// The lead drops the sub-issue: closed as not planned, it stops blocking.
	h.gh.CloseIssue(testRepo, sub, "carol", "not_planned")
	h.settle()
	wantContains(t, "the parent's card", card(t, h, parent), "#2 no longer blocks it: closed as not planned: it stops blocking")
	wantContains(t, "the unblocked notice", newestReply(t, h, parent), "is unblocked", "@bob")
	h.gh.Comment(testRepo, parent, "bob", "/verify")
	h.settle()
	wantState(t, h, parent, "verified")
}

// A blocker that is no task (an issue countersign does not track) blocks
// until it is closed as completed.
func TestDependBlockerThatIsNoTask(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.PushDefault(testRepo, "carol", map[string]string{".github/countersign.yml": "tasks: {track: milestoned}\n"})
	m := h.gh.CreateMilestone(testRepo, "carol", "v1")
	q := h.gh.OpenIssue(testRepo, "carol", "Which OAuth provider?", "")
	form := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	h.gh.SetMilestone(testRepo, form, "carol", m)
	h.settle()
	h.gh.AddBlockedBy(testRepo, form, "carol", testRepo, q)
	h.settle()
	approvedTask(t, h, testRepo, form)
	h.gh.Comment(testRepo, form, "bob", "/verify")
	h.settle()
	wantContains(t, "the refusal", newestReply(t, h, form), "#1 (open (no task))")
	h.gh.CloseIssue(testRepo, q, "carol", "completed")
	h.settle()
	wantContains(t, "the card", card(t, h, form), "#1 no longer blocks it: closed as completed (no task)")
	h.gh.Comment(testRepo, form, "bob", "/verify")
	h.settle()
	wantState(t, h, form, "verified")
}

// A dependency added while its delivery was lost is found all the same: the
// next delivery about the task carries GitHub's count of its blockers, which
// differs from the record, so countersign reads them, and /verify is refused.
func TestDependMissedDeliveryHealed(t *testing.T) {
	h := newHarness(t)
	team(h)
	api := h.gh.OpenIssue(testRepo, "carol", "Token endpoint", "")
	form := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	approvedTask(t, h, testRepo, form)
	h.gh.DropWebhooks(true)
	h.gh.AddBlockedBy(testRepo, form, "carol", testRepo, api)
	h.gh.DropWebhooks(false)
	h.gh.ResetRequests()
	h.gh.Comment(testRepo, form, "bob", "/verify")
	h.settle()
	wantState(t, h, form, "completed")
	wantContains(t, "the refusal", newestReply(t, h, form), "#2 is blocked by #1 (`pending`)")
	wantContains(t, "the card", card(t, h, form), "**Waiting for:** #1 (`pending`)")
	reads := 0
	for _, r := range h.gh.Requests() {
		if strings.Contains(r.Path, "/dependencies/blocked_by") || strings.HasSuffix(r.Path, "/sub_issues") {
			reads++
		}
	}
	if reads != 2 {
		t.Fatalf("the links were read %d times, want 2 (blocked by, sub-issues)", reads)
	}
}

// The links cost nothing when nothing is linked: a task's whole life reads
// no dependency or sub-issue list.
func TestDependNoLinksNoReads(t *testing.T) {
	h := newHarness(t)
	team(h)
	n := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	doneTask(t, h, n)
	for _, r := range h.gh.Requests() {
		if strings.Contains(r.Path, "/dependencies/") || strings.HasSuffix(r.Path, "/sub_issues") {
			t.Fatalf("a task with no links read %s", r.Path)
		}
	}
}

// A lead's override of a blocked task stays possible, and the history says
// which blockers it overrode.
func TestDependLeadOverride(t *testing.T) {
	h := newHarness(t)
	team(h)
	api := h.gh.OpenIssue(testRepo, "carol", "Token endpoint", "")
	form := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	h.gh.AddBlockedBy(testRepo, form, "carol", testRepo, api)
	approvedTask(t, h, testRepo, form)
	h.gh.Comment(testRepo, form, "carol", "/skip-verify the token endpoint is mocked for the demo")
	h.settle()
	wantState(t, h, form, "verified")
	wantContains(t, "the card", card(t, h, form), "overriding blockers: #1 (`pending`)")
}

// The goal drawn: the goal's dashboard shows a progress bar and a Mermaid
// diagram of its tasks, coloured by state, with the blocking link between
// them, and the task table says what each waits for.
func TestGoalDrawnWithBlockers(t *testing.T) {
	h := newHarness(t)
	team(h)
	m := h.gh.CreateMilestone(testRepo, "carol", "Login")
	h.settle()
	api := h.gh.OpenIssue(testRepo, "carol", "Token endpoint", "")
	form := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	h.gh.SetMilestone(testRepo, api, "carol", m)
	h.gh.SetMilestone(testRepo, form, "carol", m)
	h.gh.AddBlockedBy(testRepo, form, "carol", testRepo, api)
	h.settle()
	_, body := goalIssueOf(t, h, m)
	wantContains(t, "the dashboard", body, "```mermaid", "flowchart LR", ":::pending",
		fmtEdge(api, form, "-->"), "`░░░░░░░░░░░░░░░░░░░░` **0 of 2** tasks verified (0%)", "| #2 |")
	doneTask(t, h, api)
	h.settle()
	_, body = goalIssueOf(t, h, m)
	wantContains(t, "the dashboard", body, fmtEdge(api, form, "-.->"), "**1 of 2** tasks verified (50%)")
}

func fmtEdge(from, to int, arrow string) string {
	return "t" + strconv.Itoa(from) + " " + arrow + " t" + strconv.Itoa(to)
}

// What dependencies cost (docs/cost.md): a link added costs the waiting
// task one card edit; the blocker's transitions cost its dependents nothing
// until it stops blocking; then each dependent's card is edited once, and a
// verifier who was refused is told in one comment. Nothing is read from
// GitHub for it: the blockers' states are in the store.
func TestDependCost(t *testing.T) {
	h := newHarness(t)
	team(h)
	api := h.gh.OpenIssue(testRepo, "carol", "Token endpoint", "")
	form := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	approvedTask(t, h, testRepo, form)
	count := func(what string, act func()) (reads, writes int) {
		t.Helper()
		h.gh.ResetRequests()
		act()
		h.settle()
		for _, r := range h.gh.Requests() {
			if isWrite(r) {
				writes++
			} else {
				reads++
			}
		}
		t.Logf("%s: %d reads, %d writes\n%s", what, reads, writes, describe(h.gh.Requests()))
		return reads, writes
	}
	if r, w := count("a dependency added", func() { h.gh.AddBlockedBy(testRepo, form, "carol", testRepo, api) }); r > 1 || w != 1 {
		t.Errorf("a dependency added costs %d reads and %d writes, want at most 1 read (the comment list the card edit may need) and 1 write (the card)", r, w)
	}
	h.gh.Comment(testRepo, form, "bob", "/verify")
	h.settle()
	h.gh.Assign(testRepo, api, "carol", "alice")
	h.gh.Comment(testRepo, api, "alice", "/start")
	h.gh.Comment(testRepo, api, "alice", "/submit")
	h.gh.Comment(testRepo, api, "carol", "/approve")
	h.settle()
	var cardID int64
	for _, c := range h.gh.Comments(testRepo, form) {
		if c.User == h.gh.BotLogin() && templates.IsCard(c.Body) {
			cardID = c.ID
		}
	}
	_, _ = count("the blocker verified", func() { h.gh.Comment(testRepo, api, "bob", "/verify") })
	var cardEdits, notices int
	for _, r := range h.gh.Requests() {
		switch {
		case r.Method == "PATCH" && strings.HasSuffix(r.Path, "/issues/comments/"+strconv.FormatInt(cardID, 10)):
			cardEdits++
		case r.Method == "POST" && strings.HasSuffix(r.Path, "/issues/"+strconv.Itoa(form)+"/comments"):
			notices++
		}
	}
	if cardEdits != 1 || notices != 1 {
		t.Errorf("the blocker verified cost its dependent %d card edits and %d comments, want 1 and 1 (the card says unblocked; bob is told)", cardEdits, notices)
	}
}
