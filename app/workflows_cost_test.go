package app_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/githubtest"
)

// What reading check suites costs (docs/cost.md): a workflow run with a
// job behind `needs:` on a pull request's head, played to its end. The
// suites are read (one request) only by a decision on the head where every
// check run has concluded with none failing, and on the suite's completion:
// here after `build` passes, after `test` passes, and on
// check_suite.completed, with the check runs and statuses read once then as
// before.
func TestWorkflowSuitesCost(t *testing.T) {
	h := newHarness(t)
	team(h)
	_, _, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login", Files: []string{"internal/login/login.go"}})
	h.settle()
	h.gh.ResetRequests()
	run := ciWorkflow(h, sha)
	h.settle()
	h.gh.FinishJob(testRepo, run, "build", "success")
	h.settle()
	h.gh.QueueJobs(testRepo, run)
	h.settle()
	h.gh.FinishJob(testRepo, run, "test", "success")
	h.settle()
	reads := map[string]int{}
	for _, r := range h.gh.Requests() {
		if r.Method == http.MethodGet && strings.HasPrefix(r.Path, "/repos/"+testRepo+"/commits/"+sha+"/") {
			reads[strings.TrimPrefix(r.Path, "/repos/"+testRepo+"/commits/"+sha+"/")]++
		}
	}
	t.Logf("a workflow run of two jobs (test needs build): %v, %d of the workflow runs, %d of jobs\n%s", reads, workflowRunReads(h), jobReads(h), describe(h.gh.Requests()))
	// Whose the workflow run is and its jobs are read once, when it has
	// completed: only they tell its jobs' check runs from those a workflow's
	// token created.
	if reads["check-suites"] != 3 || reads["check-runs"] != 1 || reads["statuses"] != 1 || workflowRunReads(h) != 1 || jobReads(h) != 1 {
		t.Errorf("reads %v, %d of the workflow runs and %d of jobs, want check-suites 3 (build passed, test passed, the suite completed), check-runs 1, statuses 1, the workflow runs and the jobs once each (test passed, the suite completed)",
			reads, workflowRunReads(h), jobReads(h))
	}

	// A workflow run waiting in its concurrency group looks like
	// github-actions' empty suite: each read of the suites then reads the
	// workflow runs too (one request more), and nothing else.
	t.Run("a workflow run waiting to start", func(t *testing.T) {
		h := newHarness(t)
		team(h)
		_, _, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login", Files: []string{"internal/login/login.go"}})
		h.settle()
		h.gh.ResetRequests()
		lint := h.gh.StartWorkflow(testRepo, sha, "Lint", githubtest.Job{Name: "lint"})
		h.gh.QueueWorkflow(testRepo, sha, "CI", githubtest.Job{Name: "test"})
		h.settle()
		h.gh.FinishJob(testRepo, lint, "lint", "success")
		h.settle()
		suites, runs := suiteReads(h, sha), workflowRunReads(h)
		t.Logf("a workflow run done, another waiting: %d suite reads, %d workflow run reads\n%s", suites, runs, describe(h.gh.Requests()))
		if runs != suites || runs == 0 {
			t.Errorf("%d workflow run reads for %d suite reads: want one with each", runs, suites)
		}
	})

	// A fork pull request on the same head runs the same workflow: the
	// first of its runs that outdates the pull request's own `test` has the
	// workflow runs read once; its later runs read nothing more.
	t.Run("a fork pull request's workflow run on the head", func(t *testing.T) {
		h := newHarness(t)
		team(h)
		_, _, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login", Files: []string{"internal/login/login.go"}})
		mine := h.gh.StartWorkflow(testRepo, sha, "CI", githubtest.Job{Name: "test"})
		h.gh.FinishJob(testRepo, mine, "test", "success")
		h.settle()
		fork := h.gh.OpenPRAt(testRepo, "mallory", sha, githubtest.SharedPROptions{Fork: true, Title: "Same"})
		h.settle()
		h.gh.ResetRequests()
		theirs := h.gh.StartPRWorkflow(testRepo, fork, "CI", githubtest.Job{Name: "test"})
		h.settle()
		h.gh.FinishJob(testRepo, theirs, "test", "failure")
		h.settle()
		suites, runs := suiteReads(h, sha), workflowRunReads(h)
		t.Logf("a fork's workflow run started and failed on the head: %d suite reads, %d workflow run reads\n%s", suites, runs, describe(h.gh.Requests()))
		if runs != 1 {
			t.Errorf("%d workflow run reads, want 1", runs)
		}
	})

	// A workflow run held for a maintainer's approval (its suite completed
	// action_required, no job): the suite's completion reads the suites, and
	// the workflow runs once with them to learn whose the held run is; the
	// DCO check run after it reads nothing more of them.
	t.Run("a workflow run held for approval", func(t *testing.T) {
		h := newHarness(t)
		team(h)
		_, pr, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login", Files: []string{"internal/login/login.go"}})
		h.settle()
		h.gh.ResetRequests()
		h.gh.AwaitApproval(testRepo, pr, "CI", githubtest.Job{Name: "build"})
		h.settle()
		h.gh.CheckRun(testRepo, sha, "DCO", "", "success", "dco")
		h.settle()
		suites, runs := suiteReads(h, sha), workflowRunReads(h)
		t.Logf("a workflow run held for approval, then another App's run: %d suite reads, %d workflow run reads\n%s", suites, runs, describe(h.gh.Requests()))
		if runs != 1 || suites > 2 {
			t.Errorf("%d suite reads, %d workflow run reads: want at most 2 and 1", suites, runs)
		}
	})
}

// workflowRunReads counts the reads of workflow runs h's GitHub served.
func workflowRunReads(h *harness) int {
	n := 0
	for _, r := range h.gh.Requests() {
		if r.Method == http.MethodGet && r.Path == "/repos/"+testRepo+"/actions/runs" {
			n++
		}
	}
	return n
}

// jobReads counts the reads of the jobs of a workflow run.
func jobReads(h *harness) int {
	n := 0
	for _, r := range h.gh.Requests() {
		if r.Method == http.MethodGet && strings.HasPrefix(r.Path, "/repos/"+testRepo+"/actions/runs/") && strings.HasSuffix(r.Path, "/jobs") {
			n++
		}
	}
	return n
}

// suiteReads counts the reads of the check suites on sha.
func suiteReads(h *harness, sha string) int {
	n := 0
	for _, r := range h.gh.Requests() {
		if r.Method == http.MethodGet && r.Path == "/repos/"+testRepo+"/commits/"+sha+"/check-suites" {
			n++
		}
	}
	return n
}
