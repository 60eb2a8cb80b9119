package app_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/githubtest"
)

// The whole CI counts the pull request's own workflow runs, the latest run
// of each job name: a failed job re-run to pass ("Re-run failed jobs", the
// next attempt of the same workflow run) is a pass, and so is a workflow run
// again for the pull request on the same head (closed and reopened: a new
// workflow run) whose jobs pass after the first run's failed.
func TestWholeCIOwnWorkflowRunsLatestAttemptCounts(t *testing.T) {
	t.Parallel() // its subtests' harnesses, each its own, leave it serial otherwise
	for _, tc := range []struct {
		name  string
		again func(h *harness, pr int, run int64) int64
	}{
		{"re-run of the failed job", func(h *harness, pr int, run int64) int64 {
			h.gh.RerunFailedJobs(testRepo, run)
			return run
		}},
		{"closed and reopened: a new workflow run", func(h *harness, pr int, run int64) int64 {
			h.gh.ClosePR(testRepo, pr, "alice")
			h.gh.ReopenPR(testRepo, pr, "alice")
			return h.gh.StartPRWorkflow(testRepo, pr, "CI", githubtest.Job{Name: "build"}, githubtest.Job{Name: "test", Needs: []string{"build"}})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			team(h)
			n, pr, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login", Draft: true, Files: []string{"internal/login/login.go"}})
			run := h.gh.StartPRWorkflow(testRepo, pr, "CI", githubtest.Job{Name: "build"}, githubtest.Job{Name: "test", Needs: []string{"build"}})
			h.gh.FinishJob(testRepo, run, "build", "success")
			h.gh.QueueJobs(testRepo, run)
			h.gh.FinishJob(testRepo, run, "test", "failure")
			h.settle()
			again := tc.again(h, pr, run)
			if again != run {
				h.gh.FinishJob(testRepo, again, "build", "success")
				h.gh.QueueJobs(testRepo, again)
			}
			h.gh.FinishJob(testRepo, again, "test", "success")
			h.settle()
			h.gh.ReadyForReview(testRepo, pr, "alice")
			h.gh.Review(testRepo, pr, "carol", "APPROVED", "")
			h.settle()
			h.gh.Comment(testRepo, n, "bob", "/verify")
			h.settle()
			if s := stateOf(h, n); s != "verified" {
				t.Fatalf("#%d is %s after its own workflow's `test` passed on the latest attempt; card:\n%s", n, s, card(t, h, n))
			}
			if r, ok := verification(h, sha); !ok || r.Conclusion != "success" {
				t.Fatalf("the gate is %+v, want success", r)
			}
		})
	}
}

// An installation that has not accepted the Actions permission yet (the
// workflow runs answer 403) still works: the suites count as GitHub lists
// them, as before the workflow runs were read; github-actions' empty suite
// blocks nothing.
func TestWholeCIWithoutActionsPermission(t *testing.T) {
	h := newHarness(t)
	team(h)
	n, pr, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login", Files: []string{"internal/login/login.go"}})
	h.gh.DenyActions(testRepo)
	h.gh.EmptySuite(testRepo, sha, "github-actions")
	run := ciWorkflow(h, sha)
	h.gh.FinishJob(testRepo, run, "build", "success")
	h.gh.QueueJobs(testRepo, run)
	h.gh.FinishJob(testRepo, run, "test", "success")
	h.gh.Review(testRepo, pr, "carol", "APPROVED", "")
	h.settle()
	h.gh.Comment(testRepo, n, "bob", "/verify")
	h.settle()
	if s := stateOf(h, n); s != "verified" {
		t.Fatalf("#%d is %s: without the Actions permission the whole CI must count as the suites say; card:\n%s", n, s, card(t, h, n))
	}
	forbidden := 0
	for _, r := range h.gh.Requests() {
		if strings.Contains(r.Path, "/actions/runs") && r.Status == http.StatusForbidden {
			forbidden++
		}
	}
	if forbidden == 0 {
		t.Fatal("the workflow runs were never asked for: the test proves nothing")
	}
}
