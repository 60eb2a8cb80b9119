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

// gate.exempt names a login; an account that takes that login after its
// holder renamed theirs is not the account exempted. As for leads and
// verifiers, the login is pinned to the account that held it when the
// configuration first named it (DESIGN §1: people are user ids).
func TestAttackGateExemptLoginTakenOver(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetPermission(testRepo, "dave", "write")
	h.gh.SetFile(testRepo, rules.ConfigPath, "gate:\n  exempt: [dave]\n")
	_, sha := h.gh.OpenPR(testRepo, "dave", githubtest.PROptions{Title: "Bump x", Body: "Bumps x."})
	h.settle()
	wantCheck(t, h, sha, "success")

	h.gh.RenameUser("dave", "dave-renamed")
	h.gh.ClaimLogin("dave")
	_, sha2 := h.gh.OpenPR(testRepo, "dave", githubtest.PROptions{Title: "Bump y", Body: "Bumps y."})
	h.settle()
	r := wantCheck(t, h, sha2, "failure")
	wantContains(t, "the newcomer's check", r.Title, "Closes no task: does not pass")
}
