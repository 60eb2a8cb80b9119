package app_test

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/githubtest"
	"github.com/countersign/countersign/rules"
)

// These tests play, through the webhook endpoint, a repository that does not
// configure contracts.checks: its CI counts as it is, whatever it calls its
// runs (DESIGN §3).

// namedChecksConfig maps each activity to the run of its name (unit-test to
// test): a repository whose CI names its jobs after what they check.
const namedChecksConfig = "contracts:\n  checks: {unit-test: [test], typecheck: [typecheck], lint: [lint], e2e: [e2e]}\n"

// An unconfigured repository whose only CI run is `build` verifies: /verify
// waits for it (naming the key that maps named runs), and once it passed the
// card names it as the run that counted.
func TestUnconfiguredRepositoryVerifiesWithItsOwnCI(t *testing.T) {
	h := newHarness(t)
	team(h)
	n, pr, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login", Files: []string{"internal/login/login.go"}})
	h.settle()
	wantState(t, h, n, "review")
	c := card(t, h, n)
	wantContains(t, "the card", c, "**ci** — The repository's CI passes on the head", "no CI run has reported on #")
	for _, named := range []string{"**typecheck**", "**lint**", "**unit-test**"} {
		if strings.Contains(c, named) {
			t.Fatalf("the card of an unconfigured repository waits for %s:\n%s", named, c)
		}
	}

	h.gh.Review(testRepo, pr, "carol", "APPROVED", "")
	h.settle()
	wantState(t, h, n, "completed")
	h.gh.Comment(testRepo, n, "bob", "/verify")
	h.settle()
	wantState(t, h, n, "completed")
	got := replies(h, n)
	wantContains(t, "the refusal", got[len(got)-1], "contract is not met", "ci pending (no CI run has reported on #",
		"to require named runs, map them in `contracts.checks` in .github/countersign.yml")

	h.gh.CheckRun(testRepo, sha, "build", "in_progress", "", "")
	h.settle()
	h.gh.Comment(testRepo, n, "bob", "/verify")
	h.settle()
	wantState(t, h, n, "completed")
	got = replies(h, n)
	wantContains(t, "the refusal", got[len(got)-1], "ci pending (`build` in_progress")

	h.gh.CheckRun(testRepo, sha, "build", "", "success", "")
	h.settle()
	wantContains(t, "the card", card(t, h, n), "✅ **ci**", "`build` passed on #")
	h.gh.Comment(testRepo, n, "bob", "/verify ran it")
	h.settle()
	wantState(t, h, n, "verified")
	wantCheck(t, h, sha, "success")
	wantContains(t, "the card", card(t, h, n), "✅ **ci**", "`build` passed on #")
}

// A failing `build` blocks verification: submitted work goes back to its
// builder as a failed attempt, with the run quoted.
func TestUnconfiguredRepositoryFailingBuildBlocks(t *testing.T) {
	h := newHarness(t)
	team(h)
	n, pr, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login", Files: []string{"internal/login/login.go"}})
	h.gh.Review(testRepo, pr, "carol", "APPROVED", "")
	h.settle()
	wantState(t, h, n, "completed")

	h.gh.CheckRun(testRepo, sha, "build", "", "failure", "")
	h.settle()
	wantState(t, h, n, "in-progress")
	wantCheck(t, h, sha, "failure")
	got := replies(h, n)
	wantContains(t, "the failure notice", got[len(got)-1], "failed its contract", "**ci**", "`build`: failure")
	wantContains(t, "the card", card(t, h, n), "❌ **ci**", "failed attempt")

	h.gh.Comment(testRepo, n, "bob", "/verify")
	h.settle()
	wantState(t, h, n, "in-progress")
}

// A run countersign ignores in an unconfigured repository: a builder's own
// commit status neither passes nor fails the task, and the card says why.
func TestUnconfiguredRepositoryIgnoresABuildersStatus(t *testing.T) {
	h := newHarness(t)
	team(h)
	n, pr, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login", Files: []string{"internal/login/login.go"}})
	h.gh.Review(testRepo, pr, "carol", "APPROVED", "")
	h.gh.SetStatusBy(testRepo, sha, "alice", "build", "success", "")
	h.settle()
	wantContains(t, "the card", card(t, h, n), "no CI run has reported", "`build` (success) ignored: posted by @alice, who built this task")
	h.gh.Comment(testRepo, n, "bob", "/verify")
	h.settle()
	wantState(t, h, n, "completed")
}

// A repository that maps its runs (contracts.checks) is held to those names:
// a passing `build` alone verifies nothing there.
func TestConfiguredChecksAreStillRequired(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetFile(testRepo, rules.ConfigPath, namedChecksConfig)
	n, pr, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login", Files: []string{"internal/login/login.go"}})
	h.gh.Review(testRepo, pr, "carol", "APPROVED", "")
	h.gh.CheckRun(testRepo, sha, "build", "", "success", "")
	h.settle()
	wantState(t, h, n, "completed")
	wantContains(t, "the card", card(t, h, n), "**typecheck**", "**lint**", "**unit-test**", "no `test` run yet")
	h.gh.Comment(testRepo, n, "bob", "/verify")
	h.settle()
	wantState(t, h, n, "completed")
	got := replies(h, n)
	wantContains(t, "the refusal", got[len(got)-1], "unit-test pending (no `test` run yet", "named in `contracts.checks`")

	ciPasses(h, sha)
	h.settle()
	h.gh.Comment(testRepo, n, "bob", "/verify")
	h.settle()
	wantState(t, h, n, "verified")
	wantContains(t, "the card", card(t, h, n), "✅ **unit-test**", "`test` passed")
}
