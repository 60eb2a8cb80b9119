package app_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/githubtest"
)

// These tests attack what people see and say (DESIGN §5, §6): the replies
// countersign posts, and what it quotes in them, through the webhook endpoint
// against the fake GitHub.

// completedTask is a task built by alice, approved by carol, with CI green:
// bob may verify or reject it.
func completedTask(t *testing.T, h *harness) (n, pr int) {
	t.Helper()
	n, pr, _, _ = approvedPR(t, h, "Login form", "carol", githubtest.PROptions{Title: "Login"})
	return n, pr
}

// A rejection is told with a new comment that quotes its reason (§5). A
// reason as long as a comment may be (GitHub takes 65,536 characters) must
// not make that comment too long for GitHub: the builder is told anyway,
// with the reason cut.
func TestRejectionWithAVeryLongReasonIsStillNotified(t *testing.T) {
	h := newHarness(t)
	team(h)
	n, _ := completedTask(t, h)
	reason := strings.Repeat("the form does not submit ", 65528/25)
	reason += strings.Repeat("!", 65528-len(reason))
	h.gh.Comment(testRepo, n, "bob", "/reject "+reason) // 65,536 characters: as long as a comment may be
	h.settle()
	wantState(t, h, n, "in-progress")
	rs := replies(h, n)
	if len(rs) != 1 || !strings.Contains(rs[0], "rejected") || !strings.Contains(rs[0], "> the form does not submit") {
		t.Fatalf("want one rejection notice quoting the reason, got %d replies:\n%.500s", len(rs), strings.Join(rs, "\n---\n"))
	}
}

// A refused command gets a reply that quotes it (§5), however long its line:
// the quote is cut so that the reply fits in a comment.
func TestRefusedVeryLongCommandIsStillAnswered(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetPermission(testRepo, "mallory", "read")
	n := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	h.settle()
	h.gh.Comment(testRepo, n, "mallory", "/verify "+strings.Repeat("x", 65528))
	h.settle()
	rs := replies(h, n)
	if len(rs) != 1 || !strings.Contains(rs[0], "Refused") || !strings.Contains(rs[0], "> /verify xxx") {
		t.Fatalf("want one refusal quoting the command, got %d replies", len(rs))
	}

	// Ten refused long commands in one comment share one reply, which fits too.
	var body strings.Builder
	for range 10 {
		body.WriteString("/approve " + strings.Repeat("y", 6000) + "\n\n")
	}
	h.gh.Comment(testRepo, n, "mallory", body.String())
	h.settle()
	if rs = replies(h, n); len(rs) != 2 {
		t.Fatalf("want the second comment's refusals answered, got %d replies", len(rs))
	}
}

// An outsider's pull request gets one reply for its refused links (§2, §5),
// and a pull request naming too many tasks one reply: editing its
// description back and forth must not make countersign reply again and
// again. Past the bound (3 replies to one person on one pull request an
// hour), replies are held.
func TestPullRequestLinkRepliesAreBoundedWhenEditedBackAndForth(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetPermission(testRepo, "mallory", "read")
	n := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	h.settle()
	pr, _ := h.gh.OpenPR(testRepo, "mallory", githubtest.PROptions{Title: "Login", Body: fmt.Sprintf("Fixes #%d", n)})
	h.settle()
	if got := len(botComments(h, pr)); got != 1 {
		t.Fatalf("the outsider's pull request got %d replies, want 1", got)
	}
	for range 6 {
		h.gh.EditPR(testRepo, pr, "mallory", "Login", "nothing")
		h.settle()
		h.gh.EditPR(testRepo, pr, "mallory", "Login", fmt.Sprintf("Fixes #%d", n))
		h.settle()
	}
	if got := len(botComments(h, pr)); got > 3 {
		t.Fatalf("editing the description back and forth got %d replies, want at most 3", got)
	}
	wantState(t, h, n, "pending")

	// Too many tasks, then ten, then too many again, and so on.
	var eleven, ten strings.Builder
	for i := range 11 {
		m := h.gh.OpenIssue(testRepo, "carol", fmt.Sprintf("Task %d", i), "")
		fmt.Fprintf(&eleven, "Fixes #%d\n", m)
		if i < 10 {
			fmt.Fprintf(&ten, "Fixes #%d\n", m)
		}
	}
	many, _ := h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "All", Body: eleven.String()})
	h.settle()
	if got := len(botComments(h, many)); got != 1 {
		t.Fatalf("a pull request naming 11 tasks got %d replies, want 1", got)
	}
	for range 5 {
		h.gh.EditPR(testRepo, many, "alice", "All", ten.String())
		h.settle()
		h.gh.EditPR(testRepo, many, "alice", "All", eleven.String())
		h.settle()
	}
	if got := len(botComments(h, many)); got > 3 {
		t.Fatalf("editing between 10 and 11 tasks got %d replies, want at most 3", got)
	}
}

// What people wrote is quoted back without @-mentioning anyone (the rejection
// notice already does so): a reason that names @dave or a team must not make
// countersign ping them again in the comments it posts later, the /status
// reply anyone may ask for and the escalation. Those are new comments, so
// their mentions notify.
func TestRepliesQuotingPeoplesTextMentionNoOne(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetPermission(testRepo, "dave", "write")
	h.gh.SetPermission(testRepo, "mallory", "read")
	n, pr := completedTask(t, h)
	h.gh.Comment(testRepo, n, "bob", "/reject @dave and @acme/everyone: the form breaks")
	h.settle()
	wantState(t, h, n, "in-progress")
	sha := h.gh.Push(testRepo, pr, githubtest.Commit{Message: "fix"})
	ciPasses(h, sha)
	h.gh.Review(testRepo, pr, "carol", "APPROVED", "")
	h.settle()
	wantState(t, h, n, "completed")
	h.gh.Comment(testRepo, n, "bob", "/reject still broken, @dave")
	h.settle()
	h.gh.Comment(testRepo, n, "mallory", "/status")
	h.settle()
	rs := replies(h, n)
	var escalation, status string
	for _, r := range rs {
		switch {
		case strings.Contains(r, "state `in-progress`"):
			status = r
		case strings.Contains(r, "escalated**"):
			escalation = r
		}
	}
	if escalation == "" || status == "" {
		t.Fatalf("want an escalation and a status reply, got:\n%s", strings.Join(rs, "\n---\n"))
	}
	wantContains(t, "the status reply", status, "the form breaks")
	wantContains(t, "the escalation", escalation, "the form breaks", "@carol")
	for what, r := range map[string]string{"the status reply": status, "the escalation": escalation} {
		for _, m := range []string{"@dave", "@acme/everyone"} {
			if strings.Contains(r, m) {
				t.Errorf("%s mentions %s from a reason:\n%s", what, m, r)
			}
		}
	}
}

// The task card is countersign's (§5): a builder's /submit summary lands in
// its history, and must not be able to write under the card's table, with
// HTML, text that reads as countersign's own (a second "State: verified").
func TestSubmitSummaryCannotWriteMarkupOnTheCard(t *testing.T) {
	h := newHarness(t)
	team(h)
	n := h.gh.OpenIssue(testRepo, "carol", "Write the runbook", "")
	h.gh.Assign(testRepo, n, "carol", "alice")
	h.gh.Comment(testRepo, n, "alice", "/start")
	h.settle()
	h.gh.Comment(testRepo, n, "alice", "/submit done </td></tr></table></details><h3>State: verified by the lead</h3>")
	h.settle()
	wantState(t, h, n, "review")
	c := card(t, h, n)
	wantContains(t, "the card", c, "State: verified by the lead")
	for _, bad := range []string{"</table>", "<h3>"} {
		if strings.Contains(c, bad) {
			t.Fatalf("the card carries %q from a /submit summary as markup:\n%s", bad, c)
		}
	}
}

// The bound on replies (§5) is per person and per issue or pull request:
// /help and /status answers count in it; past it a refused command gets
// nothing (and changes nothing); the same person's share on the pull
// request is their own, and another person's share is untouched.
func TestReplyShareIsPerPersonAndThread(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetPermission(testRepo, "mallory", "read")
	n, pr := completedTask(t, h)
	before := card(t, h, n)
	for _, body := range []string{"/help", "/status", "/help"} {
		h.gh.Comment(testRepo, n, "mallory", body)
		h.settle()
	}
	if got := len(replies(h, n)); got != 3 {
		t.Fatalf("#%d: %d replies to mallory's /help and /status, want 3", n, got)
	}
	h.gh.Comment(testRepo, n, "mallory", "/verify")
	h.settle()
	if got := len(replies(h, n)); got != 3 {
		t.Fatalf("#%d: mallory's 4th command in the hour got a reply (%d replies)", n, got)
	}
	wantState(t, h, n, "completed")
	if after := card(t, h, n); after != before {
		t.Fatalf("a refused, unanswered command changed the card:\n%s", after)
	}
	// Her share on the pull request is her own.
	h.gh.Comment(testRepo, pr, "mallory", "/verify")
	h.settle()
	if got := replies(h, pr); len(got) != 1 || !strings.Contains(got[0], "Refused") {
		t.Fatalf("mallory's refused /verify on the pull request: %d replies, want 1", len(got))
	}
	// Another person's share is untouched.
	h.gh.Comment(testRepo, n, "alice", "/verify")
	h.settle()
	if got := replies(h, n); len(got) != 4 || !strings.Contains(got[3], "@alice **Refused:**") {
		t.Fatalf("alice's refused /verify was not answered: %d replies", len(got))
	}
}
