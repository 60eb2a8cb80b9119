package app_test

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/githubtest"
	"github.com/countersign/countersign/rules"
)

// Attacks of the second issue-27 review. Each plays GitHub as it really
// behaves through the webhook endpoint, fails on the code it was written
// against, and is skipped (knownGap) until defended.

// GitHub Actions names a job's check run by the job alone: two workflows
// with a job `test` (ci.yml and e2e.yml, say) give a head two check runs
// named `test` in two suites. The whole CI counts the latest run of each
// name across suites (so that a workflow run again counts), so a workflow
// run "E2E" whose only job `test` failed is hidden by the `test` of "CI"
// that started after it and passed; E2E's suite is completed with
// conclusion failure, and nothing reads that. /verify must be refused and the
// gate must not pass while a workflow run on the head has failed.
func TestReview2WholeCISameJobNameInTwoWorkflowsHidesAFailure(t *testing.T) {
	h := newHarness(t)
	team(h)
	n, pr, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login", Files: []string{"internal/login/login.go"}})
	e2e := h.gh.StartWorkflow(testRepo, sha, "E2E", githubtest.Job{Name: "test"})
	h.gh.FinishJob(testRepo, e2e, "test", "failure")
	ci := h.gh.StartWorkflow(testRepo, sha, "CI", githubtest.Job{Name: "test"})
	h.gh.FinishJob(testRepo, ci, "test", "success")
	h.gh.Review(testRepo, pr, "carol", "APPROVED", "")
	h.settle()
	h.gh.Comment(testRepo, n, "bob", "/verify")
	h.settle()
	if s := stateOf(h, n); s == "verified" {
		t.Fatalf("#%d verified while the workflow run E2E failed; card:\n%s", n, card(t, h, n))
	}
	if r, ok := verification(h, sha); ok && r.Status == "completed" && r.Conclusion == "success" {
		t.Fatalf("the gate passed while the workflow run E2E failed; card:\n%s", card(t, h, n))
	}
}

// GitHub Actions does not run the workflows of a pull request from a fork
// by a first-time contributor (or any outside collaborator, as the
// repository sets it) until a maintainer approves them: each workflow run
// is completed with conclusion action_required and has no job, and its
// check suite is completed, action_required, with no check run. The whole
// CI takes a completed suite with no run as concluded and not failing, so
// the check run of another App (a DCO or licence bot, which runs without
// approval) is all that counts: the gate passes on CI that never ran.
// (Same shape on the task's own pull request here: what countersign sees
// of the suite is the same.)
func TestReview2WholeCIWorkflowAwaitingApprovalIsNoPass(t *testing.T) {
	h := newHarness(t)
	team(h)
	n, pr, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login", Files: []string{"internal/login/login.go"}})
	h.gh.AwaitApproval(testRepo, pr, "CI", githubtest.Job{Name: "build"}, githubtest.Job{Name: "test", Needs: []string{"build"}})
	h.gh.CheckRun(testRepo, sha, "DCO", "", "success", "dco")
	h.gh.Review(testRepo, pr, "carol", "APPROVED", "")
	h.settle()
	h.gh.Comment(testRepo, n, "bob", "/verify")
	h.settle()
	if s := stateOf(h, n); s == "verified" {
		t.Fatalf("#%d verified while its workflow run CI awaits approval and never ran; card:\n%s", n, card(t, h, n))
	}
	if r, ok := verification(h, sha); ok && r.Status == "completed" && r.Conclusion == "success" {
		t.Fatalf("the gate passed while the workflow run CI never ran; card:\n%s", card(t, h, n))
	}
	// Held for approval is pending, not failed: the card says what it waits for.
	_, shown, _ := strings.Cut(card(t, h, n), "-->") // what people read, not the record
	wantContains(t, "the card", shown, "⏳ **ci**", "workflow run", "awaiting approval")
}

// A fork pull request on the task's head whose workflow run is held for
// approval is another head's (DESIGN §2: anyone else's pull request blocks
// nothing): its suite, completed action_required with no run, is read for
// whose it is and blocks nothing.
func TestWholeCIForkWorkflowAwaitingApprovalOnTheHeadBlocksNothing(t *testing.T) {
	h := newHarness(t)
	team(h)
	n, pr, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login", Files: []string{"internal/login/login.go"}})
	run := ciWorkflow(h, sha)
	h.gh.FinishJob(testRepo, run, "build", "success")
	h.gh.QueueJobs(testRepo, run)
	h.gh.FinishJob(testRepo, run, "test", "success")
	h.settle()
	fork := h.gh.OpenPRAt(testRepo, "mallory", sha, githubtest.SharedPROptions{Fork: true, Title: "Same"})
	h.settle()
	h.gh.AwaitApproval(testRepo, fork, "CI", githubtest.Job{Name: "build"}, githubtest.Job{Name: "test", Needs: []string{"build"}})
	h.gh.Review(testRepo, pr, "carol", "APPROVED", "")
	h.settle()
	h.gh.Comment(testRepo, n, "bob", "/verify")
	h.settle()
	if s := stateOf(h, n); s != "verified" {
		t.Fatalf("#%d is %s: a fork's workflow run held for approval on its head blocked it; card:\n%s", n, s, card(t, h, n))
	}
}

// The pull request's own workflow run held for approval, once the workflow
// runs and passes (a run of the same workflow after it), no longer blocks.
func TestWholeCIWorkflowApprovedAndRunPasses(t *testing.T) {
	h := newHarness(t)
	team(h)
	n, pr, _ := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login", Files: []string{"internal/login/login.go"}})
	h.gh.AwaitApproval(testRepo, pr, "CI", githubtest.Job{Name: "build"})
	h.gh.Review(testRepo, pr, "carol", "APPROVED", "")
	h.settle()
	run := h.gh.StartPRWorkflow(testRepo, pr, "CI", githubtest.Job{Name: "build"})
	h.gh.FinishJob(testRepo, run, "build", "success")
	h.settle()
	h.gh.Comment(testRepo, n, "bob", "/verify")
	h.settle()
	if s := stateOf(h, n); s != "verified" {
		t.Fatalf("#%d is %s after its workflow ran and passed; card:\n%s", n, s, card(t, h, n))
	}
}

// A workflow file that does not parse gives a workflow run that fails to
// start: completed startup_failure, no job, its suite completed with no
// check run. The whole CI fails on it, though another App's check passed.
func TestWholeCIWorkflowThatFailedToStartFails(t *testing.T) {
	h := newHarness(t)
	team(h)
	n, pr, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login", Files: []string{"internal/login/login.go"}})
	h.gh.FailToStart(testRepo, sha, "CI", githubtest.Job{Name: "build"})
	h.gh.CheckRun(testRepo, sha, "DCO", "", "success", "dco")
	h.gh.Review(testRepo, pr, "carol", "APPROVED", "")
	h.settle()
	h.gh.Comment(testRepo, n, "bob", "/verify")
	h.settle()
	if s := stateOf(h, n); s == "verified" {
		t.Fatalf("#%d verified while its workflow run failed to start; card:\n%s", n, card(t, h, n))
	}
	if r, ok := verification(h, sha); ok && r.Status == "completed" && r.Conclusion == "success" {
		t.Fatalf("the gate passed while the workflow run failed to start; card:\n%s", card(t, h, n))
	}
	_, shown, _ := strings.Cut(card(t, h, n), "-->")
	wantContains(t, "the card", shown, "❌ **ci**", "startup_failure")
}

// Whoever pushed the commits a pull request carries is a builder (DESIGN
// §1). bob writes the work on branch "login" of his fork, under alice's git
// identity (any email can be an author's), and alice, the task's assignee,
// opens the pull request from bob's fork (GitHub lets anyone open a pull
// request from any fork's branch). The fork's pushes send no webhook to the
// repository and its activity is not the installation's to read. The
// fork's owner (head.repo.owner, by id) can push to it and is a builder
// whoever opened the pull request: bob's /verify is refused.
func TestReview2ForkOwnerWhoIsNotTheAuthorIsBuilder(t *testing.T) {
	h := newHarness(t)
	team(h)
	n := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	h.gh.Assign(testRepo, n, "carol", "alice")
	h.settle()
	pr, sha := h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "Login", HeadRef: "login", ForkOf: "bob",
		Body: "Fixes #1", Commits: []githubtest.Commit{{Author: "alice", Message: "the login form"}}})
	ciPasses(h, sha)
	h.settle()
	h.gh.Review(testRepo, pr, "carol", "APPROVED", "")
	h.settle()
	wantState(t, h, n, "completed")
	h.gh.Comment(testRepo, n, "bob", "/verify")
	h.settle()
	if s := stateOf(h, n); s == "verified" {
		t.Fatalf("#%d verified by bob, whose fork holds the branch and who pushed every commit; card:\n%s", n, card(t, h, n))
	}
	wantState(t, h, n, "completed")
	h.gh.SetPermission(testRepo, "dave", "write")
	h.gh.Comment(testRepo, n, "dave", "/verify")
	h.settle()
	wantState(t, h, n, "verified")
}

// The same from a fork that belongs to an organization: it has no one owner
// (its members push to it), and its activity cannot be read, so who pushed
// its commits is not known. Only a lead may verify, and the refusal says
// why; carol, a lead, may.
func TestReview2ForkOfAnOrganizationOnlyALeadMayVerify(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetPermission(testRepo, "dave", "write")
	h.gh.AddTeam("forks-inc", "devs", "bob")
	n := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	h.gh.Assign(testRepo, n, "carol", "alice")
	h.settle()
	pr, sha := h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "Login", HeadRef: "login", ForkOf: "forks-inc",
		Body: "Fixes #1", Commits: []githubtest.Commit{{Author: "alice", Message: "the login form"}}})
	ciPasses(h, sha)
	h.settle()
	h.gh.Review(testRepo, pr, "dave", "APPROVED", "")
	h.settle()
	wantState(t, h, n, "completed")
	h.gh.Comment(testRepo, n, "bob", "/verify")
	h.settle()
	wantState(t, h, n, "completed")
	r := replies(h, n)
	if len(r) == 0 {
		t.Fatalf("bob's /verify refused with no reply; card:\n%s", card(t, h, n))
	}
	wantContains(t, "the refusal", r[len(r)-1], "not everyone who pushed to #2 is known", "forks-inc/widgets", "belongs to an organization", "only a lead may /verify")
	wantContains(t, "the card", card(t, h, n), "who pushed to #2", "forks-inc/widgets", "Only a lead may `/verify` this attempt")
	h.gh.Comment(testRepo, n, "carol", "/verify")
	h.settle()
	wantState(t, h, n, "verified")
}

// Anyone who can push a branch can have GitHub Actions create check runs:
// a workflow with `permissions: checks: write` calls POST
// /repos/{owner}/{repo}/check-runs with its GITHUB_TOKEN, and the run is
// created by the App github-actions, on any commit of the repository, with
// any name and conclusion (GitHub attaches it to a github-actions suite on
// that commit). alice pushes such a workflow to a branch of her own, not in
// her pull request, so no reviewer sees it; her job `test` fails, and her
// workflow creates a `test` that succeeds on her head. contracts.apps pins
// `test` to github-actions, the only pin there is: the later `test` counts,
// as a re-run would, and /verify is accepted on a failing test.
func TestReview2CheckRunMadeByABuildersWorkflowTokenPassesANamedCriterion(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetFile(testRepo, rules.ConfigPath, "contracts:\n  checks: {typecheck: [build], lint: [build], unit-test: [test]}\n  apps: {build: github-actions, test: github-actions}\n")
	n, pr, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login", Files: []string{"internal/login/login.go"}})
	run := ciWorkflow(h, sha)
	h.gh.FinishJob(testRepo, run, "build", "success")
	h.gh.QueueJobs(testRepo, run)
	h.gh.FinishJob(testRepo, run, "test", "failure")
	h.gh.Review(testRepo, pr, "carol", "APPROVED", "")
	h.settle()
	// alice's workflow on her branch "tools" (on: push) creates the run.
	h.gh.CheckRun(testRepo, sha, "test", "", "success", "github-actions")
	h.settle()
	h.gh.Comment(testRepo, n, "bob", "/verify")
	h.settle()
	if s := stateOf(h, n); s == "verified" {
		t.Fatalf("#%d verified while its job `test` failed; card:\n%s", n, card(t, h, n))
	}
}

// The same with a commit status: a workflow's GITHUB_TOKEN (statuses:
// write) posts statuses as github-actions[bot], who is no builder. The CI
// service's `ci/build` fails on alice's head; her workflow on another branch
// posts `ci/build` = success on it. The latest status of a context counts,
// whoever posted it (no contracts.status_creators set): the failure is gone
// and /verify is accepted. A status github-actions[bot] posted was posted by
// whoever's workflow ran: it tells no builder apart.
func TestReview2StatusMadeByABuildersWorkflowTokenHidesAFailure(t *testing.T) {
	h := newHarness(t)
	team(h)
	n, pr, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login", Files: []string{"internal/login/login.go"}})
	h.gh.SetStatus(testRepo, sha, "ci/build", "failure", "")
	h.gh.Review(testRepo, pr, "carol", "APPROVED", "")
	h.settle()
	h.gh.SetStatusBy(testRepo, sha, "github-actions[bot]", "ci/build", "success", "")
	h.settle()
	h.gh.Comment(testRepo, n, "bob", "/verify")
	h.settle()
	if s := stateOf(h, n); s == "verified" {
		t.Fatalf("#%d verified while the CI service's ci/build failed; card:\n%s", n, card(t, h, n))
	}
}

// The same attack where GitHub attaches the forged check run to the pull
// request's own workflow run's suite (it picks one of github-actions'
// suites on the commit): the suite says nothing, only the workflow run's
// jobs do. alice's workflow creates `test` = success while the real job
// `test` (needs: build) has no check run yet, and again once it failed.
// Named criteria and the whole CI alike refuse /verify, the card naming the
// forged run as ignored; a re-run of the job that passes is then a pass.
func TestReview2CheckRunMadeByAWorkflowTokenInTheOwnWorkflowRunsSuite(t *testing.T) {
	for _, tc := range []struct {
		name, config string
	}{
		{"named criteria", "contracts:\n  checks: {typecheck: [build], lint: [build], unit-test: [test]}\n  apps: {build: github-actions, test: github-actions}\n"},
		{"whole CI", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			team(h)
			if tc.config != "" {
				h.gh.SetFile(testRepo, rules.ConfigPath, tc.config)
			}
			n, pr, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login", Files: []string{"internal/login/login.go"}})
			run := ciWorkflow(h, sha)
			h.gh.FinishJob(testRepo, run, "build", "success")
			h.gh.Review(testRepo, pr, "carol", "APPROVED", "")
			h.settle()
			h.gh.WorkflowTokenCheckRun(testRepo, sha, "test", "success")
			h.settle()
			h.gh.Comment(testRepo, n, "bob", "/verify")
			h.settle()
			if s := stateOf(h, n); s == "verified" {
				t.Fatalf("#%d verified while its job `test` has not run; card:\n%s", n, card(t, h, n))
			}
			if c := card(t, h, n); !strings.Contains(c, "`test` (success) ignored") {
				t.Errorf("the card does not name the forged `test` as ignored:\n%s", c)
			}
			h.gh.QueueJobs(testRepo, run)
			h.gh.FinishJob(testRepo, run, "test", "failure")
			h.gh.WorkflowTokenCheckRun(testRepo, sha, "test", "success")
			h.settle()
			h.gh.Comment(testRepo, n, "bob", "/verify")
			h.settle()
			if s := stateOf(h, n); s == "verified" {
				t.Fatalf("#%d verified while its job `test` failed; card:\n%s", n, card(t, h, n))
			}
			h.gh.RerunFailedJobs(testRepo, run)
			h.gh.FinishJob(testRepo, run, "test", "success")
			h.settle()
			h.gh.Comment(testRepo, n, "bob", "/verify")
			h.settle()
			if s := stateOf(h, n); s != "verified" {
				t.Fatalf("#%d is %s after its job `test` was re-run and passed; card:\n%s", n, s, card(t, h, n))
			}
		})
	}
}
