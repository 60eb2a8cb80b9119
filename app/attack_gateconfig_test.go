package app_test

import (
	"testing"

	"github.com/countersign/countersign/internal/githubtest"
	"github.com/countersign/countersign/rules"
)

// gate.untracked tightened from allow to require: an open pull request that
// closes no task no longer passes (a configuration that says require must
// not leave a passing gate on work without a task).
func TestAttackGateTightenedConfigReanswers(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetFile(testRepo, rules.ConfigPath, "gate:\n  untracked: allow\n")
	_, sha := h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "Bump x", Body: "Bumps x."})
	h.settle()
	wantCheck(t, h, sha, "success")
	h.gh.PushDefault(testRepo, "carol", map[string]string{rules.ConfigPath: "gate:\n  untracked: require\n"})
	h.settle()
	wantCheck(t, h, sha, "failure")

	// An exemption added for its author answers it again too.
	h.gh.PushDefault(testRepo, "carol", map[string]string{rules.ConfigPath: "gate:\n  untracked: require\n  exempt: [alice]\n"})
	h.settle()
	wantCheck(t, h, sha, "success")
	// A change elsewhere in the file writes nothing on it.
	before := len(h.gh.CheckRuns(testRepo, sha))
	h.gh.ResetRequests()
	h.gh.PushDefault(testRepo, "carol", map[string]string{rules.ConfigPath: "gate:\n  untracked: require\n  exempt: [alice]\nseparation: triple\n"})
	h.settle()
	if after := len(h.gh.CheckRuns(testRepo, sha)); after != before {
		t.Errorf("a configuration change outside gate: wrote a check on the pull request (%d runs, then %d)", before, after)
	}
}
