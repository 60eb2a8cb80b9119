package openapi_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/countersign/countersign/internal/githubtest"
)

// The check suites the fake serves (workflow runs, one waiting in its
// concurrency group, a fork pull request's, an App's empty suite, an App's
// one suite of runs made outside a workflow), the workflow runs, their jobs
// (beside a check run a workflow's token created in a workflow run's suite),
// and the check_suite.completed it sends are GitHub's: each response
// validates against the description of GET .../commits/{ref}/check-suites,
// GET .../check-suites/{check_suite_id}, GET .../actions/runs and GET
// .../actions/runs/{run_id}/jobs, each webhook against
// @octokit/openapi-webhooks.
func TestCheckSuitesConform(t *testing.T) {
	rest, hooks := specs(t)
	s := githubtest.New(githubtest.Options{RecordBodies: true})
	defer s.Close()
	const repo = "acme/widgets"
	s.AddRepo(repo, 7)
	_, sha := s.OpenPR(repo, "alice", githubtest.PROptions{})
	run := s.StartWorkflow(repo, sha, "CI", githubtest.Job{Name: "build"}, githubtest.Job{Name: "test", Needs: []string{"build"}})
	empty := s.EmptySuite(repo, sha, "octo-linter")
	waits := s.QueueWorkflow(repo, sha, "Deploy", githubtest.Job{Name: "deploy"})
	fork := s.OpenPRAt(repo, "mallory", sha, githubtest.SharedPROptions{Fork: true, Title: "Same"})
	theirs := s.StartPRWorkflow(repo, fork, "CI", githubtest.Job{Name: "build"})
	s.CheckRun(repo, sha, "lint", "", "success", "buildkite")
	ctx := context.Background()
	itr, err := ghinstallation.New(http.DefaultTransport, s.AppID(), 7, s.PrivateKeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	itr.BaseURL = strings.TrimRight(s.URL(), "/") + "/api/v3"
	tok, err := itr.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, "GET", strings.TrimRight(s.URL(), "/")+"/api/v3"+path, nil)
		req.Header.Set("Authorization", "token "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
	}
	list := func() {
		get("/repos/" + repo + "/commits/" + sha + "/check-suites?per_page=100")
		get("/repos/" + repo + "/actions/runs?head_sha=" + sha + "&per_page=100")
	}
	list()
	get(fmt.Sprintf("/repos/%s/check-suites/%d", repo, empty))
	s.FinishJob(repo, run, "build", "success")
	list()
	s.QueueJobs(repo, run)
	s.FinishJob(repo, run, "test", "failure")
	s.RerunFailedJobs(repo, run)
	list()
	s.QueueJobs(repo, run)
	s.FinishJob(repo, run, "test", "success")
	s.RunQueuedWorkflow(repo, waits)
	s.FinishJob(repo, theirs, "build", "failure")
	get(fmt.Sprintf("/repos/%s/check-suites/%d", repo, run))
	get("/repos/" + repo + "/actions/runs?head_sha=" + sha + "&status=pending&exclude_pull_requests=true")
	forged := s.WorkflowTokenCheckRun(repo, sha, "test", "success")
	wf := s.WorkflowRunID(repo, run)
	get(fmt.Sprintf("/repos/%s/actions/runs/%d/jobs?filter=all&per_page=100", repo, wf))
	get(fmt.Sprintf("/repos/%s/actions/runs/%d/jobs", repo, wf))
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	ty := &tally{ops: map[string]bool{}, missing: map[string]int{}}
	for _, r := range s.Requests() {
		if strings.Contains(r.Path, "check-suites") || strings.Contains(r.Path, "/actions/runs") {
			checkCall(t, rest, r, ty)
		}
	}
	completed := 0
	for _, d := range s.Deliveries() {
		checkHook(t, hooks, d, ty)
		if d.Event == "check_suite" {
			completed++
		}
	}
	if ty.responses != 11 || completed != 3 {
		t.Fatalf("%d suite, workflow run and job responses and %d check_suite webhooks validated, want 11 and 3", ty.responses, completed)
	}
	if forged == 0 {
		t.Fatal("no check run made with a workflow's token")
	}
}
