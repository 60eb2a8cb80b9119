package githubtest

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v60/github"
)

// This file is GitHub's check suites as GitHub Actions and other Apps make
// them:
//
//   - a workflow run is a check suite of the github-actions App, opened on a
//     push (queued, then in_progress as the run starts); a job's check run is
//     created only when the job is queued, so a job behind `needs:` has no
//     check run while the jobs it waits for run; the suite stays in_progress
//     until its last job completes, then completes, and check_suite.completed
//     is sent (StartWorkflow, FinishJob, QueueJobs);
//   - "Re-run failed jobs" gives each failed job a new check run of the same
//     name, its dependents are queued again once it completes, and the suite
//     goes back to in_progress and completes again (RerunFailedJobs);
//   - a workflow run that waits in its concurrency group (or to be
//     scheduled) is listed with status pending, and its check suite is
//     queued with no check run, like an App's empty suite: only the workflow
//     run tells them apart (QueueWorkflow, then RunQueuedWorkflow);
//   - a pull request's workflow run (event pull_request) is on its head
//     branch, in its head repository: a fork's for a pull request from a
//     fork, whose check suite and check runs then list no pull request
//     (StartPRWorkflow);
//   - an App with checks permission that never reports still gets a suite on
//     every push: queued, with no runs, never completed (EmptySuite); so
//     does github-actions on a push that triggers no workflow;
//   - a check run made any other way (CheckRun, or the checks API) belongs to
//     its App's one suite on the commit, whose status follows its runs;
//   - a workflow whose token may write checks creates check runs through
//     the Checks API as the App github-actions, of any name, on any commit:
//     GitHub attaches each to one of github-actions' suites on the commit,
//     maybe a workflow run's; no job of any workflow run is it
//     (WorkflowTokenCheckRun). Only the jobs of a workflow run tell (GET
//     .../actions/runs/{run_id}/jobs: a job's id is its check run's).
//
// GET /repos/{owner}/{repo}/commits/{ref}/check-suites and
// GET /repos/{owner}/{repo}/check-suites/{check_suite_id} serve them, and
// GET /repos/{owner}/{repo}/actions/runs the workflow runs.

// Job is a job of a workflow: a check run of its name once it is queued.
type Job struct {
	Name string
	// Needs are the jobs it waits for: it is queued once each has succeeded,
	// and skipped (a check run created completed, conclusion skipped) once one
	// did not.
	Needs []string
}

// suiteState is a check suite opened explicitly: a workflow run, or an App's
// empty suite.
type suiteState struct {
	id         int64
	repo       *repoState
	headSHA    string
	headBranch string
	appSlug    string
	status     string // queued, in_progress, completed
	conclusion string
	createdAt  time.Time
	updatedAt  time.Time
	// A workflow run's: its name, its jobs, and those not queued yet in
	// this attempt.
	workflow string
	jobs     []Job
	waiting  map[string]bool
	// run is the workflow run's id (GitHub numbers workflow runs apart from
	// their suites), number its run_number, attempt its run_attempt.
	run     int64
	number  int
	attempt int
	// event triggered it (push, pull_request); headFork is the fork its
	// head branch is in (nil: the repository itself).
	event    string
	headFork *forkState
	// pending: the run waits in its concurrency group (status pending),
	// no job started.
	pending bool
}

func (s *Server) suiteRoutes(h routeFunc) {
	const r = "/repos/{owner}/{repo}"
	h("GET", r+"/commits/{ref:.+}/check-suites", authRepo, s.listCheckSuitesForRef)
	h("GET", r+"/check-suites/{id:[0-9]+}", authRepo, s.getCheckSuite)
	h("GET", r+"/actions/runs", authRepo, s.listWorkflowRuns)
	h("GET", r+"/actions/runs/{run_id:[0-9]+}/jobs", authRepo, s.listWorkflowJobs)
}

// suiteIDOf is the id of check run cr's suite.
func suiteIDOf(s *Server, cr *checkRunState) int64 {
	if cr.suite != nil {
		return cr.suite.id
	}
	return s.suiteID(cr.headSHA, cr.appSlug)
}

// checkRunPage is check run cr's html_url: a workflow job's page for a job
// of a workflow run, as GitHub Actions links it.
func checkRunPage(s *Server, rp *repoState, cr *checkRunState) string {
	if cr.suite != nil && cr.suite.workflow != "" && cr.detailsURL != "" {
		return cr.detailsURL
	}
	return s.webURL(fmt.Sprintf("%s/runs/%d", rp.fullName(), cr.id))
}

// StartWorkflow is GitHub Actions starting a workflow run named workflow on
// sha, as a push triggers it: the run's check suite (github-actions) is
// opened and set in_progress, and each job that needs nothing is queued, its
// check run created (check_run.created) in order. A job with needs has no
// check run yet. The run is on the head branch of the first open pull
// request whose head is sha (in its fork for a fork's), else on the default
// branch. It returns the suite's id.
func (s *Server) StartWorkflow(repo, sha, workflow string, jobs ...Job) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.actRepo("StartWorkflow", repo)
	if rp == nil || !s.actSHA("StartWorkflow", rp, sha) {
		return 0
	}
	st := s.newWorkflowRun("StartWorkflow", rp, sha, workflow, jobs, nil)
	if st == nil {
		return 0
	}
	s.beginWorkflowRun(rp, st)
	return st.id
}

// StartPRWorkflow is GitHub Actions starting a workflow run named workflow
// for pull request pr (event pull_request) on its head: on its head branch,
// in its head repository (the fork, for a pull request from a fork, whose
// suite then lists no pull request), started as StartWorkflow starts one. It
// returns the suite's id.
func (s *Server) StartPRWorkflow(repo string, pr int, workflow string, jobs ...Job) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.actRepo("StartPRWorkflow", repo)
	if rp == nil {
		return 0
	}
	is := rp.issues[pr]
	if is == nil || is.pr == nil || is.state != "open" {
		s.misuse("StartPRWorkflow: no open pull request #%d in %s", pr, repo)
		return 0
	}
	st := s.newWorkflowRun("StartPRWorkflow", rp, is.pr.headSHA, workflow, jobs, is.pr)
	if st == nil {
		return 0
	}
	s.beginWorkflowRun(rp, st)
	return st.id
}

// QueueWorkflow is a workflow run named workflow on sha (as StartWorkflow
// places it) that waits in its concurrency group: the run is listed with
// status pending, its check suite is queued with no check run, and nothing
// is sent. RunQueuedWorkflow starts it. It returns the suite's id.
func (s *Server) QueueWorkflow(repo, sha, workflow string, jobs ...Job) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.actRepo("QueueWorkflow", repo)
	if rp == nil || !s.actSHA("QueueWorkflow", rp, sha) {
		return 0
	}
	st := s.newWorkflowRun("QueueWorkflow", rp, sha, workflow, jobs, nil)
	if st == nil {
		return 0
	}
	st.pending = true
	return st.id
}

// RunQueuedWorkflow starts the workflow run of suite that QueueWorkflow
// left waiting, as StartWorkflow starts one.
func (s *Server) RunQueuedWorkflow(repo string, suite int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.actRepo("RunQueuedWorkflow", repo)
	if rp == nil {
		return
	}
	st := s.workflowRun("RunQueuedWorkflow", rp, suite)
	if st == nil {
		return
	}
	if !st.pending {
		s.misuse("RunQueuedWorkflow: workflow run %d does not wait", suite)
		return
	}
	s.beginWorkflowRun(rp, st)
}

// newWorkflowRun opens the check suite of a new workflow run on sha, queued:
// for pull request pr's head (event pull_request), or, pr nil, as a push
// triggers it. Nil, and misuse recorded, when the jobs are not a workflow's.
func (s *Server) newWorkflowRun(what string, rp *repoState, sha, workflow string, jobs []Job, pr *prState) *suiteState {
	if len(jobs) == 0 {
		s.misuse("%s: workflow %q has no jobs", what, workflow)
		return nil
	}
	names := map[string]bool{}
	for _, j := range jobs {
		if j.Name == "" || names[j.Name] {
			s.misuse("%s: job name %q empty or repeated", what, j.Name)
			return nil
		}
		names[j.Name] = true
	}
	for _, j := range jobs {
		for _, n := range j.Needs {
			if !names[n] || n == j.Name {
				s.misuse("%s: job %q needs %q, which is no other job of %q", what, j.Name, n, workflow)
				return nil
			}
		}
	}
	st := s.openSuite(rp, sha, "github-actions")
	st.workflow, st.jobs, st.waiting = workflow, slices.Clone(jobs), map[string]bool{}
	for _, j := range jobs {
		st.waiting[j.Name] = true
	}
	st.run, st.attempt, st.event = s.newID(), 1, "push"
	for _, o := range rp.suites {
		if o.workflow == workflow {
			st.number++
		}
	}
	if pr == nil {
		pr = s.pullAt(rp, sha)
	} else {
		st.event = "pull_request"
	}
	if pr != nil {
		st.headBranch, st.headFork = pr.headRef, pr.headFork
	}
	return st
}

// beginWorkflowRun starts workflow run st: in_progress, its first jobs
// queued.
func (s *Server) beginWorkflowRun(rp *repoState, st *suiteState) {
	st.pending = false
	st.status, st.updatedAt = "in_progress", now()
	s.queueJobs(rp, st)
}

// EmptySuite opens the check suite GitHub opens on a push for an App with
// checks permission that never reports (app): queued, no runs, never
// completed, and nothing is sent (check_suite.requested goes to that App
// alone). It returns the suite's id.
func (s *Server) EmptySuite(repo, sha, app string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.actRepo("EmptySuite", repo)
	if rp == nil || !s.actSHA("EmptySuite", rp, sha) {
		return 0
	}
	if app == "" {
		s.misuse("EmptySuite: no App")
		return 0
	}
	return s.openSuite(rp, sha, app).id
}

// FinishJob completes the latest check run of job in workflow run suite with
// conclusion (check_run.completed). The jobs that need it still have no check
// run: QueueJobs creates them. When no job waits or runs any more, the suite
// completes and check_suite.completed is sent.
func (s *Server) FinishJob(repo string, suite int64, job, conclusion string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.actRepo("FinishJob", repo)
	if rp == nil {
		return
	}
	st := s.workflowRun("FinishJob", rp, suite)
	if st == nil {
		return
	}
	if !checkConclusions[conclusion] || conclusion == "stale" {
		s.misuse("FinishJob: bad conclusion %q", conclusion)
		return
	}
	cr := latestJobRun(rp, st, job)
	if cr == nil || cr.status == "completed" {
		s.misuse("FinishJob: job %q of workflow run %d has no check run still running", job, suite)
		return
	}
	cr.status, cr.conclusion, cr.completedAt = "completed", conclusion, now()
	s.emitCheckRun(rp, cr, "completed", "github-actions[bot]")
	s.completeIfDone(rp, st)
}

// QueueJobs is GitHub Actions picking up the jobs of workflow run suite
// whose needs have all completed: each is queued (its check run created),
// or created skipped when a job it needs did not succeed, until no more can
// be; the suite completes (check_suite.completed) when no job waits or runs.
// Until then a job that waits has no check run: FinishJob does not queue
// the jobs that need the one it finishes.
func (s *Server) QueueJobs(repo string, suite int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.actRepo("QueueJobs", repo)
	if rp == nil {
		return
	}
	if st := s.workflowRun("QueueJobs", rp, suite); st != nil {
		s.queueJobs(rp, st)
	}
}

// RerunFailedJobs is "Re-run failed jobs" on workflow run suite: the suite
// goes back to in_progress, each job whose latest run failed (or was
// cancelled or timed out) gets a new check run of its name, queued, and each
// job that depends on one of them, directly or not, waits again: its new
// check run is created (QueueJobs) once what it needs completes.
func (s *Server) RerunFailedJobs(repo string, suite int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.actRepo("RerunFailedJobs", repo)
	if rp == nil {
		return
	}
	st := s.workflowRun("RerunFailedJobs", rp, suite)
	if st == nil {
		return
	}
	if st.status != "completed" {
		s.misuse("RerunFailedJobs: workflow run %d is still %s", suite, st.status)
		return
	}
	var failed []string
	for _, j := range st.jobs {
		if cr := latestJobRun(rp, st, j.Name); cr != nil && failing(cr.conclusion) {
			failed = append(failed, j.Name)
		}
	}
	if len(failed) == 0 {
		s.misuse("RerunFailedJobs: workflow run %d has no failed job", suite)
		return
	}
	rerun := map[string]bool{}
	for _, n := range failed {
		rerun[n] = true
	}
	for changed := true; changed; { // the dependents, transitively
		changed = false
		for _, j := range st.jobs {
			if !rerun[j.Name] && slices.ContainsFunc(j.Needs, func(n string) bool { return rerun[n] }) {
				rerun[j.Name], changed = true, true
			}
		}
	}
	st.status, st.conclusion, st.updatedAt = "in_progress", "", now()
	st.attempt++
	for _, j := range st.jobs {
		if rerun[j.Name] && !slices.Contains(failed, j.Name) {
			st.waiting[j.Name] = true
		}
	}
	for _, n := range failed {
		s.createCheckRun(rp, &checkRunState{headSHA: st.headSHA, name: n, status: "queued", appSlug: st.appSlug, suite: st, attempt: st.attempt,
			detailsURL: s.jobURL(rp, st)}, "github-actions[bot]")
	}
}

func failing(conclusion string) bool {
	switch conclusion {
	case "failure", "cancelled", "timed_out", "action_required", "startup_failure":
		return true
	}
	return false
}

func (s *Server) workflowRun(what string, rp *repoState, id int64) *suiteState {
	for _, st := range rp.suites {
		if st.id == id && st.workflow != "" {
			return st
		}
	}
	s.misuse("%s: no workflow run %d in %s", what, id, rp.fullName())
	return nil
}

func (s *Server) openSuite(rp *repoState, sha, app string) *suiteState {
	t := now()
	st := &suiteState{id: s.newID(), repo: rp, headSHA: sha, headBranch: s.branchAt(rp, sha), appSlug: app,
		status: "queued", createdAt: t, updatedAt: t}
	rp.suites = append(rp.suites, st)
	return st
}

// branchAt is the branch a suite on sha is for: the head branch of an open
// pull request whose head it is, else the default branch.
func (s *Server) branchAt(rp *repoState, sha string) string {
	if pr := s.pullAt(rp, sha); pr != nil {
		return pr.headRef
	}
	return rp.defaultBranch
}

// pullAt is the first open pull request whose head is sha, nil if none.
func (s *Server) pullAt(rp *repoState, sha string) *prState {
	for _, n := range sortedIssueNumbers(rp) {
		if is := rp.issues[n]; is.pr != nil && is.state == "open" && is.pr.headSHA == sha {
			return is.pr
		}
	}
	return nil
}

// jobURL is the page of the job whose check run is created next in
// workflow run st.
func (s *Server) jobURL(rp *repoState, st *suiteState) string {
	return s.webURL(fmt.Sprintf("%s/actions/runs/%d/job/%d", rp.fullName(), st.run, s.nextID+1))
}

// latestJobRun is the latest check run of job in workflow run st.
func latestJobRun(rp *repoState, st *suiteState, job string) *checkRunState {
	for i := len(rp.checkRuns) - 1; i >= 0; i-- {
		if cr := rp.checkRuns[i]; cr.suite == st && cr.name == job && !cr.token {
			return cr
		}
	}
	return nil
}

// queueJobs creates the check runs of the jobs of st whose needs have all
// completed (queued, or skipped when one did not succeed), until none more
// can be, and completes st when no job waits or runs.
func (s *Server) queueJobs(rp *repoState, st *suiteState) {
	for changed := true; changed; {
		changed = false
		for _, j := range st.jobs {
			if !st.waiting[j.Name] {
				continue
			}
			ready, ok := true, true
			for _, n := range j.Needs {
				cr := latestJobRun(rp, st, n)
				if st.waiting[n] || cr == nil || cr.status != "completed" {
					ready = false
					break
				}
				ok = ok && cr.conclusion == "success"
			}
			if !ready {
				continue
			}
			delete(st.waiting, j.Name)
			changed = true
			cr := &checkRunState{headSHA: st.headSHA, name: j.Name, status: "queued", appSlug: st.appSlug, suite: st, attempt: st.attempt,
				detailsURL: s.jobURL(rp, st)}
			if !ok {
				cr.status, cr.conclusion = "completed", "skipped"
			}
			s.createCheckRun(rp, cr, "github-actions[bot]")
		}
	}
	s.completeIfDone(rp, st)
}

// completeIfDone completes workflow run st, sending check_suite.completed,
// when no job of it waits or runs.
func (s *Server) completeIfDone(rp *repoState, st *suiteState) {
	if len(st.waiting) > 0 || st.status == "completed" {
		return
	}
	for _, j := range st.jobs {
		if cr := latestJobRun(rp, st, j.Name); cr == nil || cr.status != "completed" {
			return
		}
	}
	st.status, st.conclusion, st.updatedAt = "completed", suiteConclusion(suiteRuns(rp, st.headSHA, st.appSlug, st)), now()
	s.emit(rp, "check_suite", "completed", st.appSlug+"[bot]", s.suiteEvent(rp, st))
}

// suiteConclusion is what a completed suite concludes from the latest run of
// each name in it: the first failing conclusion, else success if one
// succeeded, else neutral or skipped.
func suiteConclusion(latest []*checkRunState) string {
	for _, c := range []string{"action_required", "startup_failure", "cancelled", "timed_out", "failure"} {
		if slices.ContainsFunc(latest, func(cr *checkRunState) bool { return cr.conclusion == c }) {
			return c
		}
	}
	for _, c := range []string{"success", "neutral"} {
		if slices.ContainsFunc(latest, func(cr *checkRunState) bool { return cr.conclusion == c }) {
			return c
		}
	}
	return "skipped"
}

// suiteRuns are the latest runs of each name of suite st (nil: app's one
// suite on sha, the runs made outside any explicit suite).
func suiteRuns(rp *repoState, sha, app string, st *suiteState) []*checkRunState {
	seen := map[string]bool{}
	var out []*checkRunState
	for i := len(rp.checkRuns) - 1; i >= 0; i-- {
		cr := rp.checkRuns[i]
		if cr.headSHA != sha || cr.appSlug != app || cr.suite != st || seen[cr.name] {
			continue
		}
		seen[cr.name] = true
		out = append(out, cr)
	}
	return out
}

// suiteView is a check suite as the checks API shows it: go-github's, with
// the fields it lacks.
type suiteView struct {
	*github.CheckSuite
	LatestCheckRunsCount int    `json:"latest_check_runs_count"`
	CheckRunsURL         string `json:"check_runs_url"`
	Rerequestable        bool   `json:"rerequestable"`
	RunsRerequestable    bool   `json:"runs_rerequestable"`
}

// suitesAt are the check suites on sha: those opened explicitly, and one per
// App with check runs made outside them, oldest first.
func (s *Server) suitesAt(rp *repoState, sha string) []suiteView {
	var out []suiteView
	for _, st := range rp.suites {
		if st.headSHA == sha {
			out = append(out, s.ghSuite(rp, st))
		}
	}
	var apps []string
	for _, cr := range sortedRuns(rp, sha) {
		if cr.suite == nil && !slices.Contains(apps, cr.appSlug) {
			apps = append(apps, cr.appSlug)
		}
	}
	for _, app := range apps {
		out = append(out, s.implicitSuite(rp, sha, app))
	}
	slices.SortStableFunc(out, func(a, b suiteView) int { return int(a.GetID() - b.GetID()) })
	return out
}

// implicitSuite is app's one suite on sha: queued until a run of it starts,
// in_progress while one has not completed, then completed.
func (s *Server) implicitSuite(rp *repoState, sha, app string) suiteView {
	runs := suiteRuns(rp, sha, app, nil)
	st := &suiteState{id: s.suiteID(sha, app), repo: rp, headSHA: sha, headBranch: s.branchAt(rp, sha), appSlug: app, status: "completed"}
	queued := true
	for _, cr := range runs {
		if cr.status != "completed" {
			st.status = "in_progress"
		}
		if cr.status != "queued" {
			queued = false
		}
		if st.createdAt.IsZero() || cr.startedAt.Before(st.createdAt) {
			st.createdAt = cr.startedAt
		}
		st.updatedAt = maxTime(st.updatedAt, cr.startedAt, cr.completedAt)
	}
	if queued {
		st.status = "queued"
	}
	if st.status == "completed" {
		st.conclusion = suiteConclusion(runs)
	}
	v := s.ghSuite(rp, st)
	v.LatestCheckRunsCount = len(runs)
	return v
}

func maxTime(ts ...time.Time) time.Time {
	var m time.Time
	for _, t := range ts {
		if t.After(m) {
			m = t
		}
	}
	return m
}

func (s *Server) ghSuite(rp *repoState, st *suiteState) suiteView {
	full := rp.fullName()
	cs := &github.CheckSuite{
		ID: ptr(st.id), NodeID: ptr(nodeID("CS", st.id)), HeadBranch: ptr(st.headBranch), HeadSHA: ptr(st.headSHA),
		URL:    ptr(s.apiURL(fmt.Sprintf("repos/%s/check-suites/%d", full, st.id))),
		Status: ptr(st.status), Conclusion: strOrNil(st.conclusion), CreatedAt: ts(st.createdAt), UpdatedAt: ts(st.updatedAt),
		App:       s.ghApp(st.appSlug),
		BeforeSHA: ptr(before(rp, st.headSHA)), AfterSHA: ptr(st.headSHA), PullRequests: s.openPullsAt(rp, st.headSHA),
		Repository: s.ghRepo(rp),
	}
	if st.headFork != nil { // the Checks API looks for pull requests in the repository only (forks.go)
		cs.PullRequests = []*github.PullRequest{}
	}
	return suiteView{CheckSuite: cs, LatestCheckRunsCount: len(suiteRuns(rp, st.headSHA, st.appSlug, st)),
		CheckRunsURL:  s.apiURL(fmt.Sprintf("repos/%s/check-suites/%d/check-runs", full, st.id)),
		Rerequestable: true, RunsRerequestable: true}
}

// suiteEvent is check_suite.completed (as in GitHub's sample payloads) of st.
func (s *Server) suiteEvent(rp *repoState, st *suiteState) any {
	v := s.ghSuite(rp, st)
	v.Repository = nil
	return struct {
		Action       string               `json:"action"`
		CheckSuite   suiteView            `json:"check_suite"`
		Repo         *github.Repository   `json:"repository"`
		Sender       *github.User         `json:"sender"`
		Installation *github.Installation `json:"installation"`
	}{"completed", v, s.ghRepo(rp), s.ghUser(st.appSlug + "[bot]"), s.ghInstallation(rp.installation)}
}

// listCheckSuitesForRef follows GitHub: the suites on the commit, filtered by
// app_id and check_name; total_count before pagination.
func (s *Server) listCheckSuitesForRef(c *apiCall) {
	sha, ok := s.resolveRef(c.repo, c.vars["ref"])
	if !ok {
		c.unprocessable("No commit found for SHA: " + c.vars["ref"])
		return
	}
	q := c.r.URL.Query()
	var list []suiteView
	for _, v := range s.suitesAt(c.repo, sha) {
		if id := q.Get("app_id"); id != "" && id != strconv.FormatInt(v.GetApp().GetID(), 10) {
			continue
		}
		if name := q.Get("check_name"); name != "" && !slices.ContainsFunc(sortedRuns(c.repo, sha), func(cr *checkRunState) bool {
			return cr.name == name && suiteIDOf(s, cr) == v.GetID()
		}) {
			continue
		}
		list = append(list, v)
	}
	total := len(list)
	page := paginate(c, list)
	if page == nil {
		page = []suiteView{}
	}
	c.json(http.StatusOK, struct {
		Total  int         `json:"total_count"`
		Suites []suiteView `json:"check_suites"`
	}{total, page})
}

func (s *Server) getCheckSuite(c *apiCall) {
	id, _ := c.intVar("id")
	for _, sha := range suiteSHAs(c.repo) {
		for _, v := range s.suitesAt(c.repo, sha) {
			if v.GetID() == id {
				c.json(http.StatusOK, v)
				return
			}
		}
	}
	c.notFound()
}

// suiteSHAs are the commits of rp with a suite or a check run.
func suiteSHAs(rp *repoState) []string {
	var out []string
	for _, st := range rp.suites {
		if !slices.Contains(out, st.headSHA) {
			out = append(out, st.headSHA)
		}
	}
	for _, cr := range rp.checkRuns {
		if !slices.Contains(out, cr.headSHA) {
			out = append(out, cr.headSHA)
		}
	}
	return out
}

// before is the commit before sha (its first parent), as a push's "before":
// forty zeros when it has none.
func before(rp *repoState, sha string) string {
	if c := rp.commits[sha]; c != nil && len(c.parents) > 0 {
		return c.parents[0]
	}
	return "0000000000000000000000000000000000000000"
}

// workflowRunView is a workflow run as GitHub's REST API shows it (the
// "workflow-run" schema): go-github's WorkflowRun drops a null conclusion
// and lacks path.
type workflowRunView struct {
	ID                 int64                 `json:"id"`
	Name               string                `json:"name"`
	NodeID             string                `json:"node_id"`
	CheckSuiteID       int64                 `json:"check_suite_id"`
	CheckSuiteNodeID   string                `json:"check_suite_node_id"`
	HeadBranch         *string               `json:"head_branch"`
	HeadSHA            string                `json:"head_sha"`
	Path               string                `json:"path"`
	DisplayTitle       string                `json:"display_title"`
	RunNumber          int                   `json:"run_number"`
	RunAttempt         int                   `json:"run_attempt"`
	Event              string                `json:"event"`
	Status             string                `json:"status"`
	Conclusion         *string               `json:"conclusion"`
	WorkflowID         int64                 `json:"workflow_id"`
	URL                string                `json:"url"`
	HTMLURL            string                `json:"html_url"`
	PullRequests       []*github.PullRequest `json:"pull_requests"`
	CreatedAt          *github.Timestamp     `json:"created_at"`
	UpdatedAt          *github.Timestamp     `json:"updated_at"`
	RunStartedAt       *github.Timestamp     `json:"run_started_at"`
	Actor              *github.User          `json:"actor,omitempty"`
	TriggeringActor    *github.User          `json:"triggering_actor,omitempty"`
	JobsURL            string                `json:"jobs_url"`
	LogsURL            string                `json:"logs_url"`
	CheckSuiteURL      string                `json:"check_suite_url"`
	ArtifactsURL       string                `json:"artifacts_url"`
	CancelURL          string                `json:"cancel_url"`
	RerunURL           string                `json:"rerun_url"`
	PreviousAttemptURL *string               `json:"previous_attempt_url"`
	WorkflowURL        string                `json:"workflow_url"`
	HeadCommit         *simpleCommit         `json:"head_commit"`
	Repository         *github.Repository    `json:"repository"`
	HeadRepository     *github.Repository    `json:"head_repository"`
	HeadRepositoryID   int64                 `json:"head_repository_id"`
}

// simpleCommit is GitHub's "simple-commit": a workflow run's head commit.
type simpleCommit struct {
	ID        string            `json:"id"`
	TreeID    string            `json:"tree_id"`
	Message   string            `json:"message"`
	Timestamp *github.Timestamp `json:"timestamp"`
	Author    *gitPerson        `json:"author"`
	Committer *gitPerson        `json:"committer"`
}

type gitPerson struct {
	Name  string `json:"name"`
	Email string `json:"email"`
}

// ghWorkflowRun is workflow run st as the API shows it: status pending
// while it waits in its concurrency group, then its suite's.
func (s *Server) ghWorkflowRun(rp *repoState, st *suiteState) workflowRunView {
	full := rp.fullName()
	api := s.apiURL(fmt.Sprintf("repos/%s/actions/runs/%d", full, st.run))
	status := st.status
	if st.pending {
		status = "pending"
	}
	wfFile := workflowFile(st.workflow)
	v := workflowRunView{
		ID: st.run, Name: st.workflow, NodeID: nodeID("WFR", st.run), CheckSuiteID: st.id, CheckSuiteNodeID: nodeID("CS", st.id),
		HeadBranch: ptr(st.headBranch), HeadSHA: st.headSHA, Path: ".github/workflows/" + wfFile, DisplayTitle: st.workflow,
		RunNumber: st.number, RunAttempt: st.attempt, Event: st.event, Status: status, Conclusion: strOrNil(st.conclusion),
		WorkflowID: s.suiteID(full, "workflow "+st.workflow), URL: api,
		HTMLURL: s.webURL(fmt.Sprintf("%s/actions/runs/%d", full, st.run)), PullRequests: s.openPullsAt(rp, st.headSHA),
		CreatedAt: ts(st.createdAt), UpdatedAt: ts(st.updatedAt), RunStartedAt: ts(st.createdAt),
		JobsURL: api + "/jobs", LogsURL: api + "/logs", CheckSuiteURL: s.apiURL(fmt.Sprintf("repos/%s/check-suites/%d", full, st.id)),
		ArtifactsURL: api + "/artifacts", CancelURL: api + "/cancel", RerunURL: api + "/rerun",
		WorkflowURL: s.apiURL(fmt.Sprintf("repos/%s/actions/workflows/%s", full, wfFile)),
		Repository:  s.ghRepo(rp), HeadRepository: s.ghRepo(rp),
	}
	if st.attempt > 1 {
		v.PreviousAttemptURL = ptr(fmt.Sprintf("%s/attempts/%d", api, st.attempt-1))
	}
	if st.headFork != nil { // the fork's (as ghHead shows it); the Checks API lists no pull request for it
		f, hr := st.headFork, v.HeadRepository
		fork := f.owner + "/" + rp.name
		hr.ID, hr.NodeID, hr.FullName = ptr(f.id), ptr(nodeID("R", f.id)), ptr(fork)
		hr.Owner, hr.Fork = s.ghUser(f.owner), ptr(true)
		hr.HTMLURL, hr.URL, hr.CloneURL = ptr(s.webURL(fork)), ptr(s.apiURL("repos/"+fork)), ptr(s.webURL(fork+".git"))
		v.PullRequests = []*github.PullRequest{}
	}
	v.HeadRepositoryID = v.HeadRepository.GetID()
	if c := rp.commits[st.headSHA]; c != nil {
		author, committer := c.author, c.committer
		if committer == "" {
			committer = author
		}
		v.HeadCommit = &simpleCommit{ID: c.sha, TreeID: treeOf(c.sha), Message: c.message, Timestamp: ts(c.time),
			Author: &gitPerson{Name: author, Email: orDefault(c.email, commitEmail(author))}, Committer: &gitPerson{Name: committer,
				Email: orDefault(c.committerMail, commitEmail(committer))}}
	}
	return v
}

// treeOf is a tree id for commit sha (the fake keeps no trees).
func treeOf(sha string) string {
	h := sha1.Sum([]byte("tree " + sha))
	return hex.EncodeToString(h[:])
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// workflowFile is the file of the workflow named name.
func workflowFile(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	return b.String() + ".yml"
}

// listWorkflowRuns follows GitHub: the repository's workflow runs, newest
// first, filtered by head_sha, branch, event, status (a status or a
// conclusion) and check_suite_id; total_count before pagination.
func (s *Server) listWorkflowRuns(c *apiCall) {
	if c.repo.noActions {
		c.fail(http.StatusForbidden, "Resource not accessible by integration")
		return
	}
	q := c.r.URL.Query()
	var list []workflowRunView
	for i := len(c.repo.suites) - 1; i >= 0; i-- {
		st := c.repo.suites[i]
		if st.workflow == "" {
			continue
		}
		v := s.ghWorkflowRun(c.repo, st)
		if x := q.Get("head_sha"); x != "" && x != v.HeadSHA {
			continue
		}
		if x := q.Get("branch"); x != "" && x != st.headBranch {
			continue
		}
		if x := q.Get("event"); x != "" && x != v.Event {
			continue
		}
		if x := q.Get("status"); x != "" && x != v.Status && x != st.conclusion {
			continue
		}
		if x := q.Get("check_suite_id"); x != "" && x != strconv.FormatInt(st.id, 10) {
			continue
		}
		if q.Get("exclude_pull_requests") == "true" {
			v.PullRequests = []*github.PullRequest{}
		}
		list = append(list, v)
	}
	total := len(list)
	page := paginate(c, list)
	if page == nil {
		page = []workflowRunView{}
	}
	c.json(http.StatusOK, struct {
		Total int               `json:"total_count"`
		Runs  []workflowRunView `json:"workflow_runs"`
	}{total, page})
}

// WorkflowRunID is the id of the workflow run whose check suite is suite
// (GitHub numbers workflow runs apart from their suites): the number its
// pages and jobs' links show.
func (s *Server) WorkflowRunID(repo string, suite int64) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.actRepo("WorkflowRunID", repo)
	if rp == nil {
		return 0
	}
	if st := s.workflowRun("WorkflowRunID", rp, suite); st != nil {
		return st.run
	}
	return 0
}

// DenyActions is repo's installation without the Actions permission (an
// App that asks for it since, not yet accepted): the workflow runs answer
// 403 "Resource not accessible by integration".
func (s *Server) DenyActions(repo string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rp := s.actRepo("DenyActions", repo); rp != nil {
		rp.noActions = true
	}
}

// AwaitApproval is GitHub Actions holding a workflow run named workflow
// for pull request pr (event pull_request) until a maintainer approves it,
// as it does for a pull request from a fork by a first-time contributor or
// an outside collaborator (the repository's "Approval for running fork
// pull request workflows"): the run is completed with conclusion
// action_required and no job; its check suite is completed,
// action_required, with no check run (check_suite.completed is sent). It
// returns the suite's id.
func (s *Server) AwaitApproval(repo string, pr int, workflow string, jobs ...Job) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.actRepo("AwaitApproval", repo)
	if rp == nil {
		return 0
	}
	is := rp.issues[pr]
	if is == nil || is.pr == nil || is.state != "open" {
		s.misuse("AwaitApproval: no open pull request #%d in %s", pr, repo)
		return 0
	}
	st := s.newWorkflowRun("AwaitApproval", rp, is.pr.headSHA, workflow, jobs, is.pr)
	if st == nil {
		return 0
	}
	st.waiting = map[string]bool{}
	st.status, st.conclusion, st.updatedAt = "completed", "action_required", now()
	s.emit(rp, "check_suite", "completed", st.appSlug+"[bot]", s.suiteEvent(rp, st))
	return st.id
}

// FailToStart is GitHub Actions failing to start a workflow run named
// workflow on sha, as a push triggers it, because its workflow file does not
// parse: the run is completed with conclusion startup_failure and no job;
// its check suite is completed, startup_failure, with no check run
// (check_suite.completed is sent). It returns the suite's id.
func (s *Server) FailToStart(repo, sha, workflow string, jobs ...Job) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.actRepo("FailToStart", repo)
	if rp == nil || !s.actSHA("FailToStart", rp, sha) {
		return 0
	}
	st := s.newWorkflowRun("FailToStart", rp, sha, workflow, jobs, nil)
	if st == nil {
		return 0
	}
	st.waiting = map[string]bool{}
	st.status, st.conclusion, st.updatedAt = "completed", "startup_failure", now()
	s.emit(rp, "check_suite", "completed", st.appSlug+"[bot]", s.suiteEvent(rp, st))
	return st.id
}
