package githubtest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// suitesOf lists the check suites on sha through the REST API, as
// id -> "status/conclusion/latest_check_runs_count/app".
func suitesOf(t *testing.T, e *env, sha string) map[int64]string {
	t.Helper()
	req, err := e.client.NewRequest("GET", "repos/"+repoName+"/commits/"+sha+"/check-suites", nil)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Total  int `json:"total_count"`
		Suites []struct {
			ID         int64  `json:"id"`
			Status     string `json:"status"`
			Conclusion string `json:"conclusion"`
			Count      int    `json:"latest_check_runs_count"`
			App        struct {
				Slug string `json:"slug"`
			} `json:"app"`
			HeadSHA string `json:"head_sha"`
		} `json:"check_suites"`
	}
	if _, err := e.client.Do(e.ctx, req, &out); err != nil {
		t.Fatal(err)
	}
	if out.Total != len(out.Suites) {
		t.Fatalf("total_count %d, %d suites", out.Total, len(out.Suites))
	}
	m := map[int64]string{}
	for _, s := range out.Suites {
		if s.HeadSHA != sha {
			t.Fatalf("suite %d on %s listed for %s", s.ID, s.HeadSHA, sha)
		}
		m[s.ID] = s.Status + "/" + s.Conclusion + "/" + string(rune('0'+s.Count)) + "/" + s.App.Slug
	}
	return m
}

// A workflow run is a suite of github-actions that stays in_progress while
// a job behind `needs:` has no check run yet, completes (with
// check_suite.completed) after its last job, and goes back to in_progress
// on a re-run of its failed job; an App's empty suite stays queued with no
// runs and sends nothing.
func TestWorkflowRunsAreCheckSuites(t *testing.T) {
	e := newEnv(t)
	_, sha := e.s.OpenPR(repoName, "alice", PROptions{Title: "A"})
	e.wait()
	start := e.hooks.count()
	run := e.s.StartWorkflow(repoName, sha, "CI", Job{Name: "build"}, Job{Name: "test", Needs: []string{"build"}})
	empty := e.s.EmptySuite(repoName, sha, "octo-linter")
	e.wait()
	if got := kinds(e.hooks.since(start)); !slices.Equal(got, []string{"check_run.created"}) {
		t.Fatalf("webhooks %v, want build's check_run.created alone", got)
	}
	want := map[int64]string{run: "in_progress//1/github-actions", empty: "queued//0/octo-linter"}
	if got := suitesOf(t, e, sha); !mapsEqual(got, want) {
		t.Fatalf("suites %v, want %v", got, want)
	}

	e.s.FinishJob(repoName, run, "build", "failure")
	e.wait()
	if got := kinds(e.hooks.since(start)); !slices.Equal(got, []string{"check_run.created", "check_run.completed"}) {
		t.Fatalf("webhooks %v: test must have no run until it is queued", got)
	}
	if got := suitesOf(t, e, sha); got[run] != "in_progress//1/github-actions" {
		t.Fatalf("workflow run %s while test waits", got[run])
	}
	e.s.QueueJobs(repoName, run)
	e.wait()
	hooks := e.hooks.since(start)
	if got := kinds(hooks); !slices.Equal(got, []string{"check_run.created", "check_run.completed", "check_run.created", "check_run.completed", "check_suite.completed"}) {
		t.Fatalf("webhooks %v", got)
	}
	if cr := hooks[3].Payload["check_run"].(map[string]any); cr["name"] != "test" || cr["conclusion"] != "skipped" {
		t.Fatalf("test after a failed build: %v %v, want skipped", cr["name"], cr["conclusion"])
	}
	// Shaped like GitHub's sample payload.
	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "github-webhooks", "check_suite", "completed.payload.json"))
	if err != nil {
		t.Fatal(err)
	}
	var real map[string]any
	if err := json.Unmarshal(raw, &real); err != nil {
		t.Fatal(err)
	}
	for _, k := range keysOf(t, real, "check_suite") {
		if k == "head_commit" { // not kept by the fake
			continue
		}
		if !slices.Contains(keysOf(t, hooks[4].Payload, "check_suite"), k) {
			t.Errorf("check_suite.completed's check_suite lacks %q", k)
		}
	}
	if cs := hooks[4].Payload["check_suite"].(map[string]any); cs["conclusion"] != "failure" || cs["id"] != float64(run) {
		t.Fatalf("check_suite %v %v", cs["id"], cs["conclusion"])
	}
	want[run] = "completed/failure/2/github-actions"
	if got := suitesOf(t, e, sha); !mapsEqual(got, want) {
		t.Fatalf("suites %v, want %v", got, want)
	}

	mark := e.hooks.count()
	e.s.RerunFailedJobs(repoName, run)
	e.wait()
	want[run] = "in_progress//2/github-actions"
	if got := suitesOf(t, e, sha); !mapsEqual(got, want) {
		t.Fatalf("after the re-run: suites %v, want %v", got, want)
	}
	e.s.FinishJob(repoName, run, "build", "success")
	e.s.QueueJobs(repoName, run)
	e.wait()
	want[run] = "in_progress//2/github-actions" // test queued again, not done
	if got := suitesOf(t, e, sha); !mapsEqual(got, want) {
		t.Fatalf("build re-run: suites %v, want %v", got, want)
	}
	e.s.FinishJob(repoName, run, "test", "success")
	e.wait()
	if got := kinds(e.hooks.since(mark)); !slices.Equal(got, []string{"check_run.created", "check_run.completed", "check_run.created", "check_run.completed", "check_suite.completed"}) {
		t.Fatalf("re-run webhooks %v", got)
	}
	want[run] = "completed/success/2/github-actions"
	if got := suitesOf(t, e, sha); !mapsEqual(got, want) {
		t.Fatalf("suites %v, want %v", got, want)
	}

	// A run made outside a workflow belongs to its App's one suite.
	e.s.CheckRun(repoName, sha, "lint", "in_progress", "", "buildkite")
	id := e.s.suiteID(sha, "buildkite")
	want[id] = "in_progress//1/buildkite"
	if got := suitesOf(t, e, sha); !mapsEqual(got, want) {
		t.Fatalf("suites %v, want %v", got, want)
	}
	e.s.CheckRun(repoName, sha, "lint", "", "success", "buildkite")
	want[id] = "completed/success/1/buildkite"
	if got := suitesOf(t, e, sha); !mapsEqual(got, want) {
		t.Fatalf("suites %v, want %v", got, want)
	}
	e.noErr()
}

func mapsEqual(a, b map[int64]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// workflowRunsOf lists the workflow runs on sha through the REST API, by
// check suite id, as "status/conclusion/attempt/event/head repository:head branch".
func workflowRunsOf(t *testing.T, e *env, sha string) map[int64]string {
	t.Helper()
	req, err := e.client.NewRequest("GET", "repos/"+repoName+"/actions/runs?head_sha="+sha, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Total int `json:"total_count"`
		Runs  []struct {
			Suite      int64  `json:"check_suite_id"`
			Status     string `json:"status"`
			Conclusion string `json:"conclusion"`
			Attempt    int    `json:"run_attempt"`
			Event      string `json:"event"`
			Branch     string `json:"head_branch"`
			HeadSHA    string `json:"head_sha"`
			Head       struct {
				FullName string `json:"full_name"`
			} `json:"head_repository"`
			PRs []any `json:"pull_requests"`
		} `json:"workflow_runs"`
	}
	if _, err := e.client.Do(e.ctx, req, &out); err != nil {
		t.Fatal(err)
	}
	if out.Total != len(out.Runs) {
		t.Fatalf("total_count %d, %d runs", out.Total, len(out.Runs))
	}
	m := map[int64]string{}
	for _, r := range out.Runs {
		if r.HeadSHA != sha {
			t.Fatalf("workflow run of suite %d on %s listed for %s", r.Suite, r.HeadSHA, sha)
		}
		m[r.Suite] = fmt.Sprintf("%s/%s/%d/%s/%s:%s/%d", r.Status, r.Conclusion, r.Attempt, r.Event, r.Head.FullName, r.Branch, len(r.PRs))
	}
	return m
}

// GET .../actions/runs?head_sha= lists the workflow runs on a commit: one
// waiting in its concurrency group is pending while its suite is queued
// with no run, like an App's empty suite (which has no workflow run); a
// fork pull request's run is on the fork's branch and lists no pull
// request; a re-run is the next attempt of the same run and suite.
func TestWorkflowRunsList(t *testing.T) {
	e := newEnv(t)
	_, sha := e.s.OpenPR(repoName, "alice", PROptions{Title: "A", HeadRef: "login"})
	mine := e.s.StartWorkflow(repoName, sha, "CI", Job{Name: "test"})
	waits := e.s.QueueWorkflow(repoName, sha, "Deploy", Job{Name: "deploy"})
	empty := e.s.EmptySuite(repoName, sha, "github-actions")
	fork := e.s.OpenPRAt(repoName, "mallory", sha, SharedPROptions{Fork: true, Title: "Same"})
	theirs := e.s.StartPRWorkflow(repoName, fork, "CI", Job{Name: "test"})
	e.wait()
	got := workflowRunsOf(t, e, sha)
	own := "/" + repoName + ":login/1"
	want := map[int64]string{mine: "in_progress//1/push" + own, waits: "pending//1/push" + own,
		theirs: "in_progress//1/pull_request/mallory/" + strings.SplitN(repoName, "/", 2)[1] + ":login/0"}
	if !mapsEqual(got, want) {
		t.Fatalf("workflow runs %v, want %v", got, want)
	}
	if s := suitesOf(t, e, sha); s[waits] != "queued//0/github-actions" || s[empty] != "queued//0/github-actions" {
		t.Fatalf("suites %v: the waiting run's and the empty one's should both be queued with no run", s)
	}
	e.s.FinishJob(repoName, mine, "test", "failure")
	e.s.RerunFailedJobs(repoName, mine)
	e.s.RunQueuedWorkflow(repoName, waits)
	e.wait()
	got = workflowRunsOf(t, e, sha)
	if got[mine] != "in_progress//2/push"+own || got[waits] != "in_progress//1/push"+own {
		t.Fatalf("after a re-run and the waiting run's start: %v", got)
	}
	if err := e.s.Err(); err != nil {
		t.Fatal(err)
	}
}

// A workflow run that fails to start (FailToStart) and one held for a
// maintainer's approval (AwaitApproval) are completed with no job: their
// suites are completed with their conclusion and no check run.
func TestWorkflowRunsWithNoJob(t *testing.T) {
	e := newEnv(t)
	pr, sha := e.s.OpenPR(repoName, "alice", PROptions{Title: "A", HeadRef: "login"})
	broken := e.s.FailToStart(repoName, sha, "Lint", Job{Name: "lint"})
	held := e.s.AwaitApproval(repoName, pr, "CI", Job{Name: "test"})
	e.wait()
	s := suitesOf(t, e, sha)
	if s[broken] != "completed/startup_failure/0/github-actions" || s[held] != "completed/action_required/0/github-actions" {
		t.Fatalf("suites %v: want the broken run's completed startup_failure and the held one's completed action_required, with no run", s)
	}
	got := workflowRunsOf(t, e, sha)
	if !strings.HasPrefix(got[broken], "completed/startup_failure/") || !strings.HasPrefix(got[held], "completed/action_required/") {
		t.Fatalf("workflow runs %v", got)
	}
	if err := e.s.Err(); err != nil {
		t.Fatal(err)
	}
}

// jobsOf lists the ids of the jobs of workflow run id through the REST API
// (filter "" or "all"), and the HTTP status.
func jobsOf(t *testing.T, e *env, id int64, filter string) ([]int64, int) {
	t.Helper()
	path := fmt.Sprintf("repos/%s/actions/runs/%d/jobs", repoName, id)
	if filter != "" {
		path += "?filter=" + filter
	}
	req, err := e.client.NewRequest("GET", path, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Total int `json:"total_count"`
		Jobs  []struct {
			ID          int64  `json:"id"`
			RunID       int64  `json:"run_id"`
			CheckRunURL string `json:"check_run_url"`
		} `json:"jobs"`
	}
	resp, err := e.client.Do(e.ctx, req, &out)
	if err != nil {
		if resp != nil {
			return nil, resp.StatusCode
		}
		t.Fatal(err)
	}
	var ids []int64
	for _, j := range out.Jobs {
		if j.RunID != id || !strings.HasSuffix(j.CheckRunURL, fmt.Sprintf("/check-runs/%d", j.ID)) {
			t.Fatalf("job %+v: not of run %d, or not its check run's id", j, id)
		}
		ids = append(ids, j.ID)
	}
	return ids, resp.StatusCode
}

// A check run a workflow's token creates is github-actions' and joins a
// workflow run's suite on the commit, yet is no job: the jobs list (each
// job's id its check run's) leaves it out. filter=all lists a re-run job's
// earlier attempts; the default, the latest of each job. Without the Actions
// permission the jobs answer 403.
func TestWorkflowTokenCheckRunIsNoJob(t *testing.T) {
	e := newEnv(t)
	_, sha := e.s.OpenPR(repoName, "alice", PROptions{Title: "A"})
	run := e.s.StartWorkflow(repoName, sha, "CI", Job{Name: "test"})
	e.s.FinishJob(repoName, run, "test", "failure")
	e.s.RerunFailedJobs(repoName, run)
	e.s.FinishJob(repoName, run, "test", "failure")
	forged := e.s.WorkflowTokenCheckRun(repoName, sha, "test", "success")
	e.wait()
	var jobs []int64
	for _, d := range e.hooks.all() {
		var ev struct {
			Action   string `json:"action"`
			CheckRun struct {
				ID  int64 `json:"id"`
				App struct {
					Slug string `json:"slug"`
				} `json:"app"`
				CheckSuite struct {
					ID int64 `json:"id"`
				} `json:"check_suite"`
			} `json:"check_run"`
		}
		if d.Event != "check_run" || json.Unmarshal(d.Raw, &ev) != nil || ev.Action != "created" {
			continue
		}
		if ev.CheckRun.App.Slug != "github-actions" || ev.CheckRun.CheckSuite.ID != run {
			t.Fatalf("check run %d: App %q, suite %d; want github-actions' workflow run %d", ev.CheckRun.ID, ev.CheckRun.App.Slug, ev.CheckRun.CheckSuite.ID, run)
		}
		if ev.CheckRun.ID != forged {
			jobs = append(jobs, ev.CheckRun.ID)
		}
	}
	if len(jobs) != 2 {
		t.Fatalf("%d job check runs, want 2 (a job and its re-run)", len(jobs))
	}
	wf := e.s.WorkflowRunID(repoName, run)
	if got, code := jobsOf(t, e, wf, "all"); code != 200 || !slices.Equal(got, jobs) {
		t.Fatalf("filter=all: %v (%d), want %v", got, code, jobs)
	}
	if got, code := jobsOf(t, e, wf, ""); code != 200 || !slices.Equal(got, jobs[1:]) {
		t.Fatalf("filter=latest: %v (%d), want %v", got, code, jobs[1:])
	}
	e.s.DenyActions(repoName)
	if _, code := jobsOf(t, e, wf, "all"); code != 403 {
		t.Fatalf("without the Actions permission: %d, want 403", code)
	}
}
