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
	t.Logf("a workflow run of two jobs (test needs build): %v\n%s", reads, describe(h.gh.Requests()))
	if reads["check-suites"] != 3 || reads["check-runs"] != 1 || reads["statuses"] != 1 {
		t.Errorf("reads %v, want check-suites 3 (build passed, test passed, the suite completed), check-runs 1, statuses 1", reads)
	}
}
