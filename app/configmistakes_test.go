package app_test

import (
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
