package app_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/internal/githubtest"
)

// The cost report (DESIGN §9): what each transition costs in GitHub requests,
// on a fresh repository, counted by the fake GitHub. Run it with
//
//	go test ./app -run TestCostReport -v
//
// and it prints one table per flow (requests, GET 200, GET 304, other reads,
// writes). The budgets DESIGN §9 sets are asserted: counts are deterministic.

// cost is what one step cost.
type cost struct {
	step                       string
	requests, ok, notModified  int
	otherReads, writes, tokens int
	detail                     []string
}

func measure(step string, reqs []githubtest.Request) cost {
	c := cost{step: step}
	for _, r := range reqs {
		if strings.HasSuffix(r.Path, "/access_tokens") {
			// An installation token is minted with the App's JWT: it is
			// not charged to the installation's budget. Counted apart.
			c.tokens++
			continue
		}
		c.requests++
		c.detail = append(c.detail, fmt.Sprintf("%s %s %d", r.Method, r.Path, r.Status))
		switch {
		case isWrite(r):
			c.writes++
		case r.Status == http.StatusNotModified:
			c.notModified++
		case r.Status == http.StatusOK:
			c.ok++
		default:
			c.otherReads++
		}
	}
	return c
}

// costTable runs steps one after another, each settled, and returns what each
// cost and the total.
type costStep struct {
	name string
	act  func()
}

func runCosts(t *testing.T, h *harness, title string, steps []costStep) (rows []cost, total cost) {
	t.Helper()
	total.step = "total"
	for _, s := range steps {
		h.gh.ResetRequests()
		// The step's webhooks go out together once it is done, as a burst:
		// what the bot reads then is the same from run to run.
		h.gh.SetWebhookPaused(true)
		s.act()
		h.gh.SetWebhookPaused(false)
		h.settle()
		c := measure(s.name, h.gh.Requests())
		rows = append(rows, c)
		total.requests += c.requests
		total.ok += c.ok
		total.notModified += c.notModified
		total.otherReads += c.otherReads
		total.writes += c.writes
		total.tokens += c.tokens
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%s\n| transition | requests | GET 200 | GET 304 | other reads | writes |\n|---|---|---|---|---|---|\n", title)
	for _, c := range append(rows, total) {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d |\n", c.step, c.requests, c.ok, c.notModified, c.otherReads, c.writes)
	}
	t.Log(b.String())
	if testing.Verbose() {
		for _, c := range rows {
			t.Logf("%s:\n    %s", c.step, strings.Join(c.detail, "\n    "))
		}
	}
	return rows, total
}

func TestCostReport(t *testing.T) {
	t.Parallel()
	t.Run("happy path", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		team(h)
		var n, pr int
		var sha string
		rows, total := runCosts(t, h, "happy path, fresh repository", []costStep{
			{"opened → pending", func() { n = h.gh.OpenIssue(testRepo, "carol", "Create login form component", "") }},
			{"assigned", func() { h.gh.Assign(testRepo, n, "carol", "alice") }},
			{"draft PR + CI → in-progress", func() {
				pr, sha = h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "Login form", Body: fmt.Sprintf("Fixes #%d", n), Draft: true})
				ciPasses(h, sha)
			}},
			{"ready → review", func() { h.gh.ReadyForReview(testRepo, pr, "alice") }},
			{"approved → completed", func() { h.gh.Review(testRepo, pr, "carol", "APPROVED", "") }},
			{"/verify → verified", func() { h.gh.Comment(testRepo, n, "bob", "/verify works") }},
		})
		wantState(t, h, n, "verified")
		wantCheck(t, h, sha, "success")
		if total.requests > 40 || total.writes > 28 {
			t.Errorf("the happy path costs %d requests (%d writes), DESIGN §9 allows 40 (28 writes)", total.requests, total.writes)
		}
		// What a task costs once the repository has countersign's labels
		// (they are made once per repository), and the capacity that follows.
		made := 0
		for _, r := range rows {
			for _, d := range r.detail {
				if strings.HasPrefix(d, "POST /repos/"+testRepo+"/labels ") {
					made++
				}
			}
		}
		req, wr := total.requests-made, total.writes-made
		t.Logf("a task on a repository with its labels: %d requests, %d writes; an installation sustains %d tasks/h under 5,000 requests/h, %d under 80 writes/min, %d if all %d writes count against 500 content-generating requests/h",
			req, wr, 5000/req, 80*60/wr, 500/wr, wr)
	})

	// The same with CI as GitHub Actions runs it: one workflow run whose
	// three jobs pass. Telling its jobs' check runs from those a workflow's
	// token could create costs a read of the workflow runs and one of its
	// jobs, once it has completed.
	t.Run("happy path, GitHub Actions", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		team(h)
		var n, pr int
		var sha string
		rows, total := runCosts(t, h, "happy path, fresh repository, CI on GitHub Actions", []costStep{
			{"opened → pending", func() { n = h.gh.OpenIssue(testRepo, "carol", "Create login form component", "") }},
			{"assigned", func() { h.gh.Assign(testRepo, n, "carol", "alice") }},
			{"draft PR + CI → in-progress", func() {
				pr, sha = h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "Login form", Body: fmt.Sprintf("Fixes #%d", n), Draft: true})
				run := h.gh.StartWorkflow(testRepo, sha, "CI", githubtest.Job{Name: "typecheck"}, githubtest.Job{Name: "lint"}, githubtest.Job{Name: "test"})
				for _, job := range []string{"typecheck", "lint", "test"} {
					h.gh.FinishJob(testRepo, run, job, "success")
				}
			}},
			{"ready → review", func() { h.gh.ReadyForReview(testRepo, pr, "alice") }},
			{"approved → completed", func() { h.gh.Review(testRepo, pr, "carol", "APPROVED", "") }},
			{"/verify → verified", func() { h.gh.Comment(testRepo, n, "bob", "/verify works") }},
		})
		wantState(t, h, n, "verified")
		wantCheck(t, h, sha, "success")
		jobs, wfRuns := 0, 0
		for _, r := range rows {
			for _, d := range r.detail {
				switch {
				case strings.HasPrefix(d, "GET /repos/"+testRepo+"/actions/runs/") && strings.Contains(d, "/jobs "):
					jobs++
				case strings.HasPrefix(d, "GET /repos/"+testRepo+"/actions/runs "):
					wfRuns++
				}
			}
		}
		// 43 without this defence: the workflow run's completion reads the
		// check runs, statuses and suites again (3) over the happy path's 40.
		if jobs != 1 || wfRuns != 1 || total.requests > 45 {
			t.Errorf("the happy path on GitHub Actions costs %d requests, %d reads of the workflow runs and %d of jobs; want at most 45, one each", total.requests, wfRuns, jobs)
		}
	})

	t.Run("rejection round", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		team(h)
		n := h.gh.OpenIssue(testRepo, "carol", "Create login form component", "")
		h.gh.Assign(testRepo, n, "carol", "alice")
		pr, sha := h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "Login form", Body: fmt.Sprintf("Fixes #%d", n)})
		ciPasses(h, sha)
		h.gh.Review(testRepo, pr, "carol", "APPROVED", "")
		h.settle()
		wantState(t, h, n, "completed")
		var next string
		runCosts(t, h, "a rejection round", []costStep{
			{"/reject → in-progress", func() { h.gh.Comment(testRepo, n, "bob", "/reject the form does not submit") }},
			{"new commits + CI → review", func() {
				next = h.gh.Push(testRepo, pr, githubtest.Commit{Message: "fix submit"})
				ciPasses(h, next)
			}},
			{"approved → completed", func() { h.gh.Review(testRepo, pr, "carol", "APPROVED", "") }},
			{"/verify → verified", func() { h.gh.Comment(testRepo, n, "bob", "/verify submits now") }},
		})
		wantState(t, h, n, "verified")
		wantCheck(t, h, next, "success")
	})

	t.Run("CI feedback", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		team(h)
		n := h.gh.OpenIssue(testRepo, "carol", "Create login form component", "")
		h.gh.Assign(testRepo, n, "carol", "alice")
		pr, sha := h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "Login form", Body: fmt.Sprintf("Fixes #%d", n)})
		h.settle()
		wantState(t, h, n, "review")
		var next string
		runCosts(t, h, "CI feedback on a pull request in review", []costStep{
			{"CI passes typecheck, lint", func() {
				h.gh.CheckRun(testRepo, sha, "typecheck", "", "success", "")
				h.gh.CheckRun(testRepo, sha, "lint", "", "success", "")
			}},
			{"CI fails test", func() { h.gh.CheckRun(testRepo, sha, "test", "", "failure", "") }},
			{"new commits + CI → review", func() {
				next = h.gh.Push(testRepo, pr, githubtest.Commit{Message: "fix the test"})
				ciPasses(h, next)
			}},
		})
		wantState(t, h, n, "review")
		wantCheck(t, h, next, "in_progress")
	})

	t.Run("goal", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, coalesce(time.Second))
		team(h)
		var m int
		var tasks []int
		both := func(act func(n int)) func() {
			return func() {
				for _, n := range tasks {
					act(n)
				}
			}
		}
		rows, total := runCosts(t, h, "a milestone with two tasks, to goal:verified (dashboard edits coalesced over 1s)", []costStep{
			{"milestone created → goal open", func() { m = h.gh.CreateMilestone(testRepo, "carol", "Login page") }},
			{"two tasks opened in it", func() {
				for _, title := range []string{"Login form", "Logout button"} {
					n := h.gh.OpenIssue(testRepo, "carol", title, "")
					h.gh.SetMilestone(testRepo, n, "carol", m)
					tasks = append(tasks, n)
				}
			}},
			{"both assigned", both(func(n int) { h.gh.Assign(testRepo, n, "carol", "alice") })},
			{"both started", both(func(n int) { h.gh.Comment(testRepo, n, "alice", "/start") })},
			{"both submitted", both(func(n int) { h.gh.Comment(testRepo, n, "alice", "/submit") })},
			{"both approved", both(func(n int) { h.gh.Comment(testRepo, n, "carol", "/approve") })},
			{"both verified → goal pending-verify", both(func(n int) { h.gh.Comment(testRepo, n, "bob", "/verify") })},
			{"lead closes the milestone → goal verified", func() { h.gh.CloseMilestone(testRepo, m, "carol") }},
		})
		g := wantGoal(t, h, m, "verified")
		_, body := goalIssueOf(t, h, m)
		wantContains(t, "the dashboard", body, "Login form", "Logout button")
		if total.requests > 130 {
			t.Errorf("a milestone with two tasks costs %d requests, DESIGN §9 allows 130", total.requests)
		}
		// Each burst of task changes edits the dashboard at most once.
		for _, r := range rows[2 : len(rows)-1] {
			edits := 0
			for _, d := range r.detail {
				if strings.HasPrefix(d, fmt.Sprintf("PATCH /repos/%s/issues/%d ", testRepo, g)) {
					edits++
				}
			}
			if edits > 1 {
				t.Errorf("%s: the goal issue was edited %d times in one burst", r.step, edits)
			}
		}
	})
}

// coalesce sets the window over which a goal's dashboard edits are coalesced.
func coalesce(d time.Duration) harnessOpt { return func(s *app.Settings) { s.GoalCoalesce = d } }

// A burst of check suites completing on one head is read once: a read begun
// after a suite's webhook arrived saw it. GitHub's API is down until every
// webhook has arrived and a little longer than the transport's retries of one
// call last (5 tries, at most 3.75 s of backoff): a read begun before the last
// webhook arrived has failed for good by then, so the first read that succeeds
// was begun after them all (the failed ones are not counted).
func TestCIBurstIsReadOnce(t *testing.T) {
	h := newHarness(t, func(s *app.Settings) { s.GitHubWaitMax = 100 * time.Millisecond })
	team(h)
	n, _, sha := taskWithPR(h, "Create login form component", githubtest.PROptions{Title: "Login form"})
	h.settle()
	h.gh.ResetRequests()
	h.gh.SetWebhookPaused(true)
	for _, app := range []string{"github-actions", "circleci", "buildkite"} {
		h.gh.CheckRun(testRepo, sha, "test-"+app, "", "success", app)
		h.gh.CheckSuiteCompleted(testRepo, sha, app, "success")
	}
	h.gh.SetOutage(http.StatusBadGateway, nil)
	h.gh.SetWebhookPaused(false)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := h.gh.WaitWebhooks(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4500 * time.Millisecond)
	h.gh.SetOutage(0, nil)
	h.settle()
	reads := map[string]int{}
	for _, r := range h.gh.Requests() {
		if r.Method == http.MethodGet && r.Status < 500 && strings.HasPrefix(r.Path, "/repos/"+testRepo+"/commits/"+sha+"/") {
			reads[strings.TrimPrefix(r.Path, "/repos/"+testRepo+"/commits/"+sha+"/")]++
		}
	}
	t.Logf("three suites completing: %v\n%s", reads, describe(h.gh.Requests()))
	if reads["check-runs"] != 1 || reads["statuses"] != 1 {
		t.Errorf("three suites completing on one head were read %v, want once", reads)
	}
	if is, ok := h.gh.Issue(testRepo, n); !ok || is.State != "open" {
		t.Fatalf("task #%d: %+v", n, is)
	}
}
