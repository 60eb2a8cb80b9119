package githubtest

import (
	"fmt"
	"net/http"
	"time"

	"github.com/google/go-github/v60/github"
)

// This file is the jobs of workflow runs, and the check runs a workflow's
// token creates, which are none:
//
//   - a job's id is its check run's id; GET
//     /repos/{owner}/{repo}/actions/runs/{run_id}/jobs lists a workflow run's
//     jobs (filter=latest, the default: the latest check run of each job;
//     filter=all: every attempt's), paginated, total_count before
//     pagination; 403 without the Actions permission (DenyActions);
//   - a workflow with `permissions: checks: write` can create a check run
//     of any name and conclusion on any commit of the repository through
//     POST /repos/{owner}/{repo}/check-runs with its GITHUB_TOKEN: it is the
//     App github-actions', as a job's is, and GitHub attaches it to one of
//     github-actions' suites on the commit (WorkflowTokenCheckRun). It is no
//     job of any workflow run.

// WorkflowTokenCheckRun is a workflow's token creating a check run named
// name on sha through the Checks API (the workflow may run for any branch:
// nothing of it shows on sha): the check run is the App github-actions',
// created completed with conclusion (queued when ""), sent
// (check_run.created, then completed) by github-actions[bot]. GitHub
// attaches it to one of github-actions' suites on sha: here the latest
// workflow run's on sha, or github-actions' one suite of runs made outside
// a workflow when sha has none. It returns the run's id.
func (s *Server) WorkflowTokenCheckRun(repo, sha, name, conclusion string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.actRepo("WorkflowTokenCheckRun", repo)
	if rp == nil || !s.actSHA("WorkflowTokenCheckRun", rp, sha) {
		return 0
	}
	if name == "" || (conclusion != "" && !checkConclusions[conclusion]) {
		s.misuse("WorkflowTokenCheckRun: bad name/conclusion %q/%q", name, conclusion)
		return 0
	}
	cr := &checkRunState{headSHA: sha, name: name, status: "queued", appSlug: "github-actions", token: true}
	if conclusion != "" {
		cr.status, cr.conclusion = "completed", conclusion
	}
	for i := len(rp.suites) - 1; i >= 0; i-- {
		if st := rp.suites[i]; st.headSHA == sha && st.workflow != "" {
			cr.suite = st
			break
		}
	}
	s.createCheckRun(rp, cr, "github-actions[bot]")
	return cr.id
}

// jobView is a job of a workflow run as GitHub's REST API shows it (the
// "job" schema): go-github's WorkflowJob drops null fields the schema
// requires.
type jobView struct {
	ID              int64             `json:"id"`
	RunID           int64             `json:"run_id"`
	RunURL          string            `json:"run_url"`
	RunAttempt      int               `json:"run_attempt"`
	NodeID          string            `json:"node_id"`
	HeadSHA         string            `json:"head_sha"`
	URL             string            `json:"url"`
	HTMLURL         *string           `json:"html_url"`
	Status          string            `json:"status"`
	Conclusion      *string           `json:"conclusion"`
	CreatedAt       *github.Timestamp `json:"created_at"`
	StartedAt       *github.Timestamp `json:"started_at"`
	CompletedAt     *github.Timestamp `json:"completed_at"`
	Name            string            `json:"name"`
	Steps           []any             `json:"steps"`
	CheckRunURL     string            `json:"check_run_url"`
	Labels          []string          `json:"labels"`
	RunnerID        *int64            `json:"runner_id"`
	RunnerName      *string           `json:"runner_name"`
	RunnerGroupID   *int64            `json:"runner_group_id"`
	RunnerGroupName *string           `json:"runner_group_name"`
	WorkflowName    *string           `json:"workflow_name"`
	HeadBranch      *string           `json:"head_branch"`
}

// listWorkflowJobs follows GitHub: the jobs of workflow run run_id (filter
// latest or all), in the order they were created.
func (s *Server) listWorkflowJobs(c *apiCall) {
	if c.repo.noActions {
		c.fail(http.StatusForbidden, "Resource not accessible by integration")
		return
	}
	id, _ := c.intVar("run_id")
	var st *suiteState
	for _, o := range c.repo.suites {
		if o.workflow != "" && o.run == id {
			st = o
		}
	}
	if st == nil {
		c.notFound()
		return
	}
	filter := c.r.URL.Query().Get("filter")
	switch filter {
	case "", "latest", "all":
	default:
		c.unprocessable("filter must be one of latest, all")
		return
	}
	full := c.repo.fullName()
	var list []jobView
	for _, cr := range c.repo.checkRuns {
		if cr.suite != st || cr.token {
			continue
		}
		if filter != "all" && latestJobRun(c.repo, st, cr.name) != cr {
			continue
		}
		api := s.apiURL(fmt.Sprintf("repos/%s/actions/jobs/%d", full, cr.id))
		list = append(list, jobView{
			ID: cr.id, RunID: st.run, RunURL: s.apiURL(fmt.Sprintf("repos/%s/actions/runs/%d", full, st.run)), RunAttempt: max(cr.attempt, 1),
			NodeID: nodeID("CR", cr.id), HeadSHA: cr.headSHA, URL: api, HTMLURL: ptr(checkRunPage(s, c.repo, cr)),
			Status: cr.status, Conclusion: strOrNil(cr.conclusion), CreatedAt: ts(cr.startedAt), StartedAt: ts(cr.startedAt),
			CompletedAt: tsOrNil(cr.completedAt), Name: cr.name, Steps: []any{},
			CheckRunURL: s.apiURL(fmt.Sprintf("repos/%s/check-runs/%d", full, cr.id)), Labels: []string{"ubuntu-latest"},
			WorkflowName: ptr(st.workflow), HeadBranch: ptr(st.headBranch),
		})
	}
	total := len(list)
	page := paginate(c, list)
	if page == nil {
		page = []jobView{}
	}
	c.json(http.StatusOK, struct {
		Total int       `json:"total_count"`
		Jobs  []jobView `json:"jobs"`
	}{total, page})
}

func tsOrNil(t time.Time) *github.Timestamp {
	if t.IsZero() {
		return nil
	}
	return ts(t)
}
