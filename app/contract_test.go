package app_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/githubtest"
	"github.com/countersign/countersign/rules"
	"github.com/countersign/countersign/templates"
)

// These tests play DESIGN §3 through the webhook endpoint against the fake
// GitHub: the contract on the card, CI check runs and commit statuses as the
// verify commands' exit codes, failed attempts with their feedback, and the
// contradiction check.

// replies are the bot's comments on issue or pull request n other than the
// task card, oldest first.
func replies(h *harness, n int) []string {
	var out []string
	for _, c := range h.gh.Comments(testRepo, n) {
		if c.User == h.gh.BotLogin() && !templates.IsCard(c.Body) {
			out = append(out, c.Body)
		}
	}
	return out
}

func card(t *testing.T, h *harness, n int) string {
	t.Helper()
	cards := cardsOn(t, h, n)
	if len(cards) != 1 {
		t.Fatalf("#%d has %d cards", n, len(cards))
	}
	return cards[0]
}

func wantContains(t *testing.T, what, text string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(text, p) {
			t.Fatalf("%s does not contain %q:\n%s", what, p, text)
		}
	}
}

// Seed 001's dark-mode task end to end: the contract is on the card before
// work starts; a failing test run sends the submitted work back with the
// failure quoted; the fix is pushed; CI is green; /verify is refused while a
// criterion is pending and accepted once all pass.
//
// The repository maps its CI's runs to activities (contracts.checks), so the
// card names typecheck, lint, unit-test and e2e as it always did.
func TestFailingCheckFeedbackFixGreenVerify(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetFile(testRepo, rules.ConfigPath, namedChecksConfig)
	n := h.gh.OpenIssue(testRepo, "carol", "Add dark mode toggle to settings page",
		"The toggle lives in `src/components/DarkModeToggle.tsx`; the page is src/pages/settings.tsx.")
	h.gh.Assign(testRepo, n, "carol", "alice")
	h.settle()
	wantContains(t, "the card", card(t, h, n), "**Contract:** `verifiable`", "**typecheck**", "**lint**", "**unit-test**",
		"**e2e:immediate**", "**critic:frontend-critic**", "`src/pages/settings.tsx`")

	pr, sha := h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "Dark mode", Body: fmt.Sprintf("Fixes #%d", n),
		Files: []string{"src/components/DarkModeToggle.tsx", "src/pages/settings.tsx"}})
	h.settle()
	wantState(t, h, n, "review")

	h.gh.CheckRun(testRepo, sha, "typecheck", "", "success", "")
	h.gh.CheckRun(testRepo, sha, "lint", "", "success", "")
	h.gh.CheckRun(testRepo, sha, "e2e", "", "success", "")
	h.gh.CheckRun(testRepo, sha, "test", "", "failure", "")
	h.settle()
	wantState(t, h, n, "in-progress")
	wantCheck(t, h, sha, "failure")
	got := replies(h, n)
	if len(got) != 1 {
		t.Fatalf("replies on #%d: %q", n, got)
	}
	wantContains(t, "the failure notice", got[0], "failed its contract", "**unit-test**", "`test`: failure", "@alice")
	wantContains(t, "the card", card(t, h, n), "❌ **unit-test**", "✅ **typecheck**", "failed attempt")

	// The fix: new commits submit the next attempt; CI starts over on them.
	fixed := h.gh.Push(testRepo, pr, githubtest.Commit{Files: []string{"src/components/DarkModeToggle.test.tsx"}})
	h.settle()
	wantState(t, h, n, "review")
	wantCheck(t, h, fixed, "in_progress")
	h.gh.Review(testRepo, pr, "carol", "APPROVED", "")
	h.settle()
	wantState(t, h, n, "completed")

	h.gh.Comment(testRepo, n, "bob", "/verify works in both themes")
	h.settle()
	wantState(t, h, n, "completed")
	got = replies(h, n)
	wantContains(t, "the refusal", got[len(got)-1], "> /verify works in both themes", "contract is not met", "unit-test pending")

	for _, name := range []string{"typecheck", "lint", "test", "e2e"} {
		h.gh.CheckRun(testRepo, fixed, name, "", "success", "")
	}
	h.settle()
	wantState(t, h, n, "completed")
	h.gh.Comment(testRepo, n, "bob", "/verify works in both themes")
	h.settle()
	wantState(t, h, n, "verified")
	wantCheck(t, h, fixed, "success")
	wantContains(t, "the card", card(t, h, n), "✅ **unit-test**", "✅ **critic:frontend-critic**", "approved by @carol")
}

// A flaky run re-run green on the same commits sends the task back to
// review, and on to completed when the approval of those commits stands.
func TestRerunTurnsAFailureGreen(t *testing.T) {
	h := newHarness(t)
	team(h)
	n, pr, sha := taskWithPR(h, "Fix the login redirect", githubtest.PROptions{Title: "Redirect", Files: []string{"auth/redirect.go"}})
	h.gh.CheckRun(testRepo, sha, "typecheck", "", "success", "")
	h.gh.CheckRun(testRepo, sha, "lint", "", "success", "")
	h.gh.CheckRun(testRepo, sha, "test", "", "success", "")
	h.settle()
	h.gh.Review(testRepo, pr, "carol", "APPROVED", "")
	h.settle()
	wantState(t, h, n, "completed")

	h.gh.CheckRun(testRepo, sha, "test", "", "failure", "") // re-run: a new run of the same name
	h.settle()
	wantState(t, h, n, "in-progress")
	wantCheck(t, h, sha, "failure")

	h.gh.CheckRun(testRepo, sha, "test", "in_progress", "", "")
	h.settle()
	wantState(t, h, n, "in-progress")
	h.gh.CheckRun(testRepo, sha, "test", "", "success", "")
	h.settle()
	wantState(t, h, n, "completed")
	wantContains(t, "the card", card(t, h, n), "CI passed again on the same commits")
	h.gh.Comment(testRepo, n, "bob", "/verify")
	h.settle()
	wantState(t, h, n, "verified")
}

// Commit statuses count as check runs do (contracts.checks names a status's
// context), and both must pass when an activity maps to both.
func TestStatusesAndCheckRunsTogether(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.PushDefault(testRepo, "carol", map[string]string{".github/countersign.yml": `
contracts:
  checks: {typecheck: [build], lint: [build], unit-test: [test, "ci/jenkins*"]}
`})
	n, pr, sha := taskWithPR(h, "Cache the session lookup", githubtest.PROptions{Title: "Cache", Files: []string{"server/session.go"}})
	h.settle()
	h.gh.Review(testRepo, pr, "carol", "APPROVED", "")
	h.gh.CheckRun(testRepo, sha, "build", "", "success", "")
	h.gh.CheckRun(testRepo, sha, "test", "", "success", "")
	h.gh.SetStatus(testRepo, sha, "ci/jenkins: pr-merge", "pending", "https://jenkins.example.com/job/1")
	h.settle()
	wantState(t, h, n, "completed")
	h.gh.Comment(testRepo, n, "bob", "/verify")
	h.settle()
	wantState(t, h, n, "completed")
	got := replies(h, n)
	wantContains(t, "the refusal", got[len(got)-1], "unit-test pending", "`ci/jenkins: pr-merge` pending")

	h.gh.SetStatus(testRepo, sha, "ci/jenkins: pr-merge", "error", "https://jenkins.example.com/job/1")
	h.settle()
	wantState(t, h, n, "in-progress")
	got = replies(h, n)
	wantContains(t, "the failure notice", got[len(got)-1], "`ci/jenkins: pr-merge`: error", "[the run](https://jenkins.example.com/job/1)")

	h.gh.SetStatus(testRepo, sha, "ci/jenkins: pr-merge", "success", "https://jenkins.example.com/job/2")
	h.settle()
	wantState(t, h, n, "completed") // the same commits, green again, still approved
	h.gh.Comment(testRepo, n, "bob", "/verify")
	h.settle()
	wantState(t, h, n, "verified")
}

// A claim of completion that also says the work is not done is refused.
func TestContradictionKeepsTheTaskInProgress(t *testing.T) {
	h := newHarness(t)
	team(h)
	n := h.gh.OpenIssue(testRepo, "carol", "Migrate the users table", "")
	h.gh.Assign(testRepo, n, "carol", "alice")
	body := fmt.Sprintf("Fixes #%d\n\nThe backfill requires manual steps on production.", n)
	pr, _ := h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "Migration", Body: body})
	h.settle()
	wantState(t, h, n, "in-progress")
	got := replies(h, pr)
	if len(got) != 1 {
		t.Fatalf("replies on #%d: %q", pr, got)
	}
	wantContains(t, "the refusal", got[0], "requires manual", "> The backfill requires manual steps on production.")

	h.gh.EditPR(testRepo, pr, "alice", "", fmt.Sprintf("Fixes #%d\n\nThe backfill runs in the migration.", n))
	h.settle()
	wantState(t, h, n, "review")

	// /submit on a task without a pull request is checked the same way.
	m := h.gh.OpenIssue(testRepo, "carol", "Rotate the staging keys", "")
	h.gh.Assign(testRepo, m, "carol", "alice")
	h.gh.Comment(testRepo, m, "alice", "/start")
	h.gh.Comment(testRepo, m, "alice", "/submit done, but the last key needs human approval in the vault")
	h.settle()
	wantState(t, h, m, "in-progress")
	got = replies(h, m)
	wantContains(t, "the refusal", got[len(got)-1], "needs human")
}

// An advisory task (seed 001: "investigate ...") has no automated criteria;
// only a lead's /verify completes it. A lead may reclassify with /contract.
func TestAdvisoryTaskNeedsALead(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetPermission(testRepo, "dave", "maintain") // a second lead
	n := h.gh.OpenIssue(testRepo, "carol", "Investigate why checkout is slow", "")
	h.settle()
	wantContains(t, "the card", card(t, h, n), "**Contract:** `advisory`", `"investigate" in the title`, "only a lead's `/verify`")
	h.gh.Assign(testRepo, n, "carol", "alice")
	h.gh.Comment(testRepo, n, "alice", "/start")
	h.gh.Comment(testRepo, n, "alice", "/submit findings in the wiki")
	h.gh.Comment(testRepo, n, "carol", "/approve")
	h.settle()
	wantState(t, h, n, "completed")
	h.gh.Comment(testRepo, n, "bob", "/verify read it")
	h.settle()
	wantState(t, h, n, "completed")
	got := replies(h, n)
	wantContains(t, "the refusal", got[len(got)-1], "advisory", "only a lead's /verify")
	h.gh.Comment(testRepo, n, "dave", "/verify the analysis holds")
	h.settle()
	wantState(t, h, n, "verified")

	m := h.gh.OpenIssue(testRepo, "carol", "Investigate and fix the flaky login test", "")
	h.gh.Comment(testRepo, m, "bob", "/contract verifiable")
	h.settle()
	got = replies(h, m)
	wantContains(t, "the refusal", got[len(got)-1], "only a lead")
	h.gh.Comment(testRepo, m, "carol", "/contract verifiable")
	h.settle()
	wantContains(t, "the card", card(t, h, m), "**Contract:** `verifiable`", "a lead's `/contract`", "**ci**", "contract type advisory → verifiable by lead @carol")
}
