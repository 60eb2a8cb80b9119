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

// A configuration file over 1 MB is one GitHub's contents API does not serve
// (encoding "none", no content). It is an invalid file like any other: the
// bot keeps its configuration and goes on, and the countersign/config check
// on the pushed commit says what is wrong.
func TestConfigurationOverOneMegabyteIsReportedNotFatal(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetPermission(testRepo, "dave", "write")
	good := h.gh.PushDefault(testRepo, "carol", map[string]string{rules.ConfigPath: "leads: [dave]\n"})
	h.settle()
	if r := configCheck(h, good); r.Conclusion != "success" {
		t.Fatalf("valid configuration reported %+v", r)
	}
	big := "leads: [dave]\n" + strings.Repeat("# padding\n", 110_000)
	bad := h.gh.PushDefault(testRepo, "carol", map[string]string{rules.ConfigPath: big})
	h.settle()
	r := configCheck(h, bad)
	if r.Conclusion != "failure" || !strings.Contains(r.Summary, "larger than") {
		t.Fatalf("a configuration of %d bytes reported %+v", len(big), r)
	}
	// The bot goes on, with dave still the lead.
	n := h.gh.OpenIssue(testRepo, "alice", "Task", "")
	h.gh.Assign(testRepo, n, "alice", "alice")
	h.gh.Comment(testRepo, n, "alice", "/start")
	h.gh.Comment(testRepo, n, "alice", "/submit done")
	h.gh.Comment(testRepo, n, "carol", "/approve")
	h.settle()
	wantState(t, h, n, "completed")
	h.gh.Comment(testRepo, n, "dave", "/skip-verify trivial")
	h.settle()
	wantState(t, h, n, "verified")
}

// The same on a fresh installation, where no configuration was ever read:
// the defaults stand, and a pull request proposing such a file is told why
// it would be refused, in words.
func TestConfigurationOverOneMegabyteOnAFreshInstallation(t *testing.T) {
	h := newHarness(t)
	team(h)
	big := "leads: [dave]\n" + strings.Repeat("# padding\n", 110_000)
	h.gh.SetFile(testRepo, rules.ConfigPath, big)
	n, pr, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login", Files: []string{"internal/login/login.go"}})
	h.gh.CheckRun(testRepo, sha, "build", "", "success", "")
	h.gh.Review(testRepo, pr, "carol", "APPROVED", "")
	h.settle()
	wantState(t, h, n, "completed")

	_, cfgSHA := h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "Config", Commits: []githubtest.Commit{{
		Contents: map[string]string{rules.ConfigPath: big}}}})
	h.settle()
	r := configCheck(h, cfgSHA)
	if r.Conclusion != "failure" || !strings.Contains(r.Summary, "larger than") {
		t.Fatalf("a proposed configuration of %d bytes reported %+v", len(big), r)
	}
}

// agents: names an agent's pilot, who then stands in for the default pilots
// (whoever assigned or opened the agent's work) as a builder. A misspelt
// pilot, an account GitHub does not know, would make no one the pilot: the
// person driving the agent could approve and verify its work. That typo
// switches a gate off, so the file is refused, on the default branch and on
// the pull request that proposes it, naming the login.
func TestConfigurationNamingAnUnknownPilotIsRefused(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetPermission(testRepo, "dave", "write")
	good := h.gh.PushDefault(testRepo, "carol", map[string]string{rules.ConfigPath: "leads: [dave]\n"})
	h.settle()
	if r := configCheck(h, good); r.Conclusion != "success" {
		t.Fatalf("valid configuration reported %+v", r)
	}
	typo := "leads: [dave]\nagents:\n  \"copilot[bot]\": alcie\n"
	_, prSHA := h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "Config", Commits: []githubtest.Commit{{
		Contents: map[string]string{rules.ConfigPath: typo}}}})
	h.settle()
	if r := configCheck(h, prSHA); r.Conclusion != "failure" || !strings.Contains(r.Summary, `"alcie"`) || !strings.Contains(r.Summary, ":3") {
		t.Fatalf("a pull request naming an unknown pilot reported %+v", r)
	}
	bad := h.gh.PushDefault(testRepo, "carol", map[string]string{rules.ConfigPath: typo})
	h.settle()
	if r := configCheck(h, bad); r.Conclusion != "failure" || !strings.Contains(r.Summary, `"alcie"`) {
		t.Fatalf("a pushed configuration naming an unknown pilot reported %+v", r)
	}
	// The last good configuration stands: dave is the lead.
	n := h.gh.OpenIssue(testRepo, "alice", "Task", "")
	h.gh.Assign(testRepo, n, "alice", "alice")
	h.gh.Comment(testRepo, n, "alice", "/start")
	h.gh.Comment(testRepo, n, "alice", "/submit done")
	h.gh.Comment(testRepo, n, "carol", "/approve")
	h.gh.Comment(testRepo, n, "dave", "/skip-verify trivial")
	h.settle()
	wantState(t, h, n, "verified")
}
