package gh

import (
	"context"
	"fmt"
	"net/url"

	"github.com/google/go-github/v60/github"
)

// CheckSuite is a check suite as GitHub's checks API shows it: go-github's,
// with the count of its latest check runs, which go-github leaves out (an
// App's suite that never got a run has none).
type CheckSuite struct {
	github.CheckSuite
	LatestCheckRunsCount int `json:"latest_check_runs_count"`
}

// CheckSuites is one page of the check suites on a commit.
type CheckSuites struct {
	Total       int           `json:"total_count"`
	CheckSuites []*CheckSuite `json:"check_suites"`
}

// ListCheckSuitesForRef is GET /repos/{owner}/{repo}/commits/{ref}/check-suites
// (Checks.ListCheckSuitesForRef, with each suite's latest_check_runs_count).
func (c *Client) ListCheckSuitesForRef(ctx context.Context, owner, repo, ref string, opts *github.ListOptions) (*CheckSuites, *github.Response, error) {
	u := fmt.Sprintf("repos/%v/%v/commits/%v/check-suites", owner, repo, url.PathEscape(ref))
	if opts != nil {
		q := url.Values{}
		if opts.PerPage != 0 {
			q.Set("per_page", fmt.Sprint(opts.PerPage))
		}
		if opts.Page != 0 {
			q.Set("page", fmt.Sprint(opts.Page))
		}
		if len(q) > 0 {
			u += "?" + q.Encode()
		}
	}
	req, err := c.c.NewRequest("GET", u, nil)
	if err != nil {
		return nil, nil, err
	}
	out := &CheckSuites{}
	resp, err := c.c.Do(ctx, req, out)
	if err != nil {
		return nil, resp, err
	}
	return out, resp, nil
}

// ListWorkflowRunsForHead is GET /repos/{owner}/{repo}/actions/runs with
// head_sha (Actions.ListRepositoryWorkflowRuns): the workflow runs on a
// commit, without the pull requests each lists (countersign tells whose a
// run is by its head branch and repository).
func (c *Client) ListWorkflowRunsForHead(ctx context.Context, owner, repo, sha string, opts *github.ListOptions) (*github.WorkflowRuns, *github.Response, error) {
	o := &github.ListWorkflowRunsOptions{HeadSHA: sha, ExcludePullRequests: true}
	if opts != nil {
		o.ListOptions = *opts
	}
	return c.c.Actions.ListRepositoryWorkflowRuns(ctx, owner, repo, o)
}

// ListWorkflowJobsAll is GET /repos/{owner}/{repo}/actions/runs/{run_id}/jobs
// with filter=all (Actions.ListWorkflowJobs): every job of every attempt of
// a workflow run. A job's id is its check run's id.
func (c *Client) ListWorkflowJobsAll(ctx context.Context, owner, repo string, runID int64, opts *github.ListOptions) (*github.Jobs, *github.Response, error) {
	o := &github.ListWorkflowJobsOptions{Filter: "all"}
	if opts != nil {
		o.ListOptions = *opts
	}
	return c.c.Actions.ListWorkflowJobs(ctx, owner, repo, runID, o)
}
