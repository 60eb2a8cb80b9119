package app_test

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/githubtest"
	"github.com/countersign/countersign/rules"
)

// The countersign/config check run lists every mistake of the file, each
// with its position and key, as `countersign config check` does.
func TestConfigCheckRunListsEveryMistake(t *testing.T) {
	h := newHarness(t)
	team(h)
	_, sha := h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "Config", Commits: []githubtest.Commit{{
		Contents: map[string]string{rules.ConfigPath: "leads: alice\nseparaton: triple\ncontracts:\n  chekcs: {unit-test: [test]}\nescalation: {rejections: 99999999}\n"}}}})
	h.settle()
	r := configCheck(h, sha)
	if r.Conclusion != "failure" {
		t.Fatalf("config check %+v, want failure", r)
	}
	wantContains(t, "the config check", r.Summary,
		".github/countersign.yml:1:8: leads: expected a list, not a string",
		`.github/countersign.yml:2:1: unknown key "separaton"; did you mean "separation"?`,
		`.github/countersign.yml:4:3: contracts.chekcs: unknown key "chekcs"; did you mean "checks"?`,
		".github/countersign.yml:5:26: escalation.rejections must be at most 100, not 99999999")
}

// A push that removes the configuration file from the default branch is
// answered on its commit as what it is: the defaults apply from now on (not
// "the file is valid"), and they do.
func TestConfigRemovedFromDefaultBranch(t *testing.T) {
	h := newHarness(t)
	team(h)
	sha := h.gh.PushDefault(testRepo, "carol", map[string]string{rules.ConfigPath: "gate:\n  untracked: allow\n"})
	h.settle()
	if r := configCheck(h, sha); r.Conclusion != "success" || !strings.Contains(r.Title, "is valid") {
		t.Fatalf("config check on the added file = %+v, want success, valid", r)
	}
	_, head := h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "Bump a dependency"})
	h.settle()
	wantCheck(t, h, head, "success") // untracked: allow

	gone := h.gh.RemoveDefault(testRepo, "carol", rules.ConfigPath)
	h.settle()
	r := configCheck(h, gone)
	if r.Conclusion != "success" {
		t.Fatalf("config check on the removal = %+v, want success", r)
	}
	wantContains(t, "the removal's config check", r.Title+"\n"+r.Summary, "removed: the defaults apply",
		"This push removes "+rules.ConfigPath, "a pull request that closes no task does not pass")
	if strings.Contains(r.Title, "is valid") {
		t.Errorf("the removal's check says %q", r.Title)
	}
	wantCheck(t, h, head, "failure") // the default gate: require
}
