package app_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/githubtest"
)

// These tests play, through the webhook endpoint, a repository with no
// contracts.checks whose CI is GitHub Actions as GitHub really runs it: a
// workflow run is a check suite, a job behind `needs:` has no check run
// until the jobs it needs have finished, and the suite stays in_progress
// until its last job ends (DESIGN §3).

// ciWorkflow starts the workflow "CI" on sha: `build`, then `test`, which
// needs it. It returns the workflow run's suite.
func ciWorkflow(h *harness, sha string) int64 {
	return h.gh.StartWorkflow(testRepo, sha, "CI", githubtest.Job{Name: "build"}, githubtest.Job{Name: "test", Needs: []string{"build"}})
}

// refused reports the last reply on n, which must be a refusal of /verify.
func lastReply(t *testing.T, h *harness, n int) string {
	t.Helper()
	got := replies(h, n)
	if len(got) == 0 {
		t.Fatalf("#%d has no reply", n)
	}
	return got[len(got)-1]
}

// `build` green while `test` (needs: build) has no check run yet is not the
// whole CI: /verify is refused and the gate stays in progress; once `test`
// is queued and passes, /verify is accepted.
func TestWholeCIWaitsForAJobBehindNeeds(t *testing.T) {
	h := newHarness(t)
	team(h)
	n, pr, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login", Files: []string{"internal/login/login.go"}})
	run := ciWorkflow(h, sha)
	h.gh.Review(testRepo, pr, "carol", "APPROVED", "")
	h.settle()
	wantState(t, h, n, "completed")

	h.gh.FinishJob(testRepo, run, "build", "success")
	h.settle()
	h.gh.Comment(testRepo, n, "bob", "/verify")
	h.settle()
	if s := stateOf(h, n); s == "verified" {
		t.Fatalf("#%d verified while `test` (needs: build) has not run; card:\n%s", n, card(t, h, n))
	}
	wantCheck(t, h, sha, "in_progress")
	wantContains(t, "the refusal", lastReply(t, h, n), "contract is not met", "ci pending", "still running")

	h.gh.QueueJobs(testRepo, run)
	h.gh.FinishJob(testRepo, run, "test", "success")
	h.settle()
	h.gh.Comment(testRepo, n, "bob", "/verify")
	h.settle()
	wantState(t, h, n, "verified")
	wantCheck(t, h, sha, "success")
}

// The suite GitHub opens on every push for an App that never reports (no
// runs, queued for ever) blocks nothing.
func TestWholeCIEmptySuiteOfAnotherAppBlocksNothing(t *testing.T) {
	h := newHarness(t)
	team(h)
	n, pr, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login", Files: []string{"internal/login/login.go"}})
	h.gh.EmptySuite(testRepo, sha, "octo-linter")
	run := ciWorkflow(h, sha)
	h.gh.Review(testRepo, pr, "carol", "APPROVED", "")
	h.gh.FinishJob(testRepo, run, "build", "success")
	h.gh.QueueJobs(testRepo, run)
	h.gh.FinishJob(testRepo, run, "test", "success")
	h.settle()
	h.gh.Comment(testRepo, n, "bob", "/verify")
	h.settle()
	wantState(t, h, n, "verified")
	wantCheck(t, h, sha, "success")
	if c := card(t, h, n); strings.Contains(c, "octo-linter") {
		t.Fatalf("the card counts octo-linter's empty suite:\n%s", c)
	}
}

// A failed job that is re-run and passes is a pass, but only once its
// workflow run has finished again: the job that needs it is waited for
// until its new run passes too.
func TestWholeCIFailedJobRerunToPassIsAPass(t *testing.T) {
	h := newHarness(t)
	team(h)
	n, pr, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login", Files: []string{"internal/login/login.go"}})
	run := ciWorkflow(h, sha)
	h.gh.Review(testRepo, pr, "carol", "APPROVED", "")
	h.settle()
	h.gh.FinishJob(testRepo, run, "build", "failure")
	h.gh.QueueJobs(testRepo, run) // test: skipped
	h.settle()
	wantState(t, h, n, "in-progress")
	wantCheck(t, h, sha, "failure")

	h.gh.RerunFailedJobs(testRepo, run)
	h.gh.FinishJob(testRepo, run, "build", "success")
	h.settle()
	// `build` passed, and `test` skipped by the first attempt has not run
	// again yet: nothing has passed the whole CI.
	c := card(t, h, n)
	if strings.Contains(c, "✅ **ci**") {
		t.Fatalf("the whole CI passed with `test` not re-run:\n%s", c)
	}
	wantContains(t, "the card", c, "still running")
	if s := stateOf(h, n); s == "completed" || s == "verified" {
		t.Fatalf("#%d is %s with `test` not re-run", n, s)
	}

	h.gh.QueueJobs(testRepo, run)
	h.gh.FinishJob(testRepo, run, "test", "success")
	h.settle()
	wantContains(t, "the card", card(t, h, n), "✅ **ci**", "`build`", "`test`")
	if s := stateOf(h, n); s != "review" && s != "completed" {
		t.Fatalf("#%d is %s after CI passed again", n, s)
	}
	if stateOf(h, n) == "review" { // the approval was of this head: approve again if the failed attempt needs it
		h.gh.Review(testRepo, pr, "carol", "APPROVED", "")
		h.settle()
	}
	wantState(t, h, n, "completed")
	h.gh.Comment(testRepo, n, "bob", "/verify")
	h.settle()
	wantState(t, h, n, "verified")
}

// A job skipped because the job it needs failed is no pass, even when a job
// of the same name passed in another workflow run on the head: the `build`
// of workflow "Package" passes, CI's `build` failed and its `test` was
// skipped. Another workflow's `build` supersedes nothing of CI's: CI's
// failed `build` still counts (rules.CountedRuns), and the card says so.
func TestWholeCISkippedJobAfterAFailureIsNoPass(t *testing.T) {
	h := newHarness(t)
	team(h)
	n, pr, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login", Files: []string{"internal/login/login.go"}})
	run := ciWorkflow(h, sha)
	h.gh.FinishJob(testRepo, run, "build", "failure")
	h.gh.QueueJobs(testRepo, run) // test: skipped
	other := h.gh.StartWorkflow(testRepo, sha, "Package", githubtest.Job{Name: "build"})
	h.gh.FinishJob(testRepo, other, "build", "success")
	h.gh.Review(testRepo, pr, "carol", "APPROVED", "")
	h.settle()
	h.gh.Comment(testRepo, n, "bob", "/verify")
	h.settle()
	if s := stateOf(h, n); s == "verified" {
		t.Fatalf("#%d verified with `test` skipped after `build` failed; card:\n%s", n, card(t, h, n))
	}
	if r, ok := verification(h, sha); ok && r.Status == "completed" && r.Conclusion == "success" {
		t.Fatalf("the gate passed with `test` skipped after a failure")
	}
	wantContains(t, "the card", card(t, h, n), "`build`: failure")
}

// The card names each workflow run that counts, and says which still run.
func TestWholeCICardListsWorkflowRuns(t *testing.T) {
	h := newHarness(t)
	team(h)
	n, _, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login", Files: []string{"internal/login/login.go"}})
	run := ciWorkflow(h, sha)
	lint := h.gh.StartWorkflow(testRepo, sha, "Lint", githubtest.Job{Name: "lint"})
	h.gh.FinishJob(testRepo, lint, "lint", "success")
	h.gh.FinishJob(testRepo, run, "build", "success")
	h.settle()
	c := card(t, h, n)
	runID, lintID := strconv.FormatInt(h.gh.WorkflowRunID(testRepo, run), 10), strconv.FormatInt(h.gh.WorkflowRunID(testRepo, lint), 10)
	wantContains(t, "the card", c, "workflow run "+runID+" still running", "workflow run "+lintID+" completed")

	h.gh.QueueJobs(testRepo, run)
	h.gh.FinishJob(testRepo, run, "test", "success")
	h.settle()
	c = card(t, h, n)
	wantContains(t, "the card", c, "✅ **ci**", "workflow run "+runID+" completed", "workflow run "+lintID+" completed")
	if strings.Contains(c, "still running") {
		t.Fatalf("the card says a finished workflow run still runs:\n%s", c)
	}
}
