package app_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/githubtest"
	"github.com/countersign/countersign/rules"
)

// These tests play a team installing countersign on a repository with its
// own CI and its own .github/countersign.yml, and someone trying to get
// around the whole-CI criterion (DESIGN §3) and the configuration's
// handling (DESIGN §7).

// GitHub keeps the latest check run per App and name: two CI systems may
// both call a job `build`, and the repository's CI passes only when both
// do. A later passing `build` from one App does not hide the other's
// failure.
func TestWholeCIRunsOfOneNameFromTwoAppsBothCount(t *testing.T) {
	h := newHarness(t)
	team(h)
	n, pr, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login", Files: []string{"internal/login/login.go"}})
	h.gh.CheckRun(testRepo, sha, "build", "", "failure", "github-actions")
	h.settle()
	h.gh.CheckRun(testRepo, sha, "build", "", "success", "buildkite")
	h.gh.Review(testRepo, pr, "carol", "APPROVED", "")
	h.settle()
	h.gh.Comment(testRepo, n, "bob", "/verify")
	h.settle()
	if s := stateOf(h, n); s == "verified" {
		t.Fatalf("#%d verified while github-actions' `build` fails; card:\n%s", n, card(t, h, n))
	}
	wantContains(t, "the card", card(t, h, n), "❌ **ci**", "`build`: failure")
}

// countersign's own check runs are not the repository's CI: a failing
// countersign/config on a pull request that changes the file neither blocks
// its task nor passes it, and countersign/verification in progress does not
// keep the CI pending.
func TestCountersignsOwnRunsAreNotCI(t *testing.T) {
	h := newHarness(t)
	team(h)
	n := h.gh.OpenIssue(testRepo, "carol", "Tune the gate", "")
	h.gh.Assign(testRepo, n, "carol", "alice")
	pr, sha := h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "Config", Body: fmt.Sprintf("Fixes #%d", n), Commits: []githubtest.Commit{{
		Contents: map[string]string{rules.ConfigPath: "separaton: triple\n"}}}})
	h.settle()
	if r := configCheck(h, sha); r.Conclusion != "failure" {
		t.Fatalf("config check %+v, want failure", r)
	}
	c := card(t, h, n)
	wantContains(t, "the card", c, "no CI run has reported")
	if strings.Contains(c, "countersign/") {
		t.Fatalf("the card counts countersign's own runs:\n%s", c)
	}
	h.gh.CheckRun(testRepo, sha, "build", "", "success", "")
	h.gh.Review(testRepo, pr, "carol", "APPROVED", "")
	h.settle()
	h.gh.Comment(testRepo, n, "bob", "/verify")
	h.settle()
	wantState(t, h, n, "verified")
}
