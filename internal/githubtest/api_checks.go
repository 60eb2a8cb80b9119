package githubtest

import (
	"net/http"
	"sort"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/google/go-github/v60/github"
)

const maxOutputText = 65535

func (s *Server) checkRoutes(h routeFunc) {
	const r = "/repos/{owner}/{repo}"
	h("POST", r+"/check-runs", authRepo, s.createCheckRunAPI)
	h("GET", r+"/check-runs/{id:[0-9]+}", authRepo, s.getCheckRun)
	h("PATCH", r+"/check-runs/{id:[0-9]+}", authRepo, s.updateCheckRunAPI)
	h("GET", r+"/commits/{ref:.+}/check-runs", authRepo, s.listCheckRunsForRef)
	h("GET", r+"/commits/{ref:.+}/status", authRepo, s.combinedStatus)
	h("GET", r+"/commits/{ref:.+}/statuses", authRepo, s.listStatuses)
	h("GET", r+"/statuses/{ref:.+}", authRepo, s.listStatuses)
	h("POST", r+"/statuses/{sha}", authRepo, s.createStatusAPI)
	s.suiteRoutes(h)
	// After every commits/{ref}/... route: {ref:.+} would take their tails.
	h("GET", r+"/commits/{ref:.+}", authRepo, s.getCommit)
}

// getCommit is GET /repos/{owner}/{repo}/commits/{ref}: the commit a sha,
// branch or HEAD names, with its parents (a merge group's commit: first the
// commit the group is built on, then the queued pull request's head) and
// the files it adds or changes; 422 when no commit is found, as GitHub says.
func (s *Server) getCommit(c *apiCall) {
	sha, ok := s.resolveRef(c.repo, c.vars["ref"])
	cm := c.repo.commits[sha]
	if !ok || cm == nil {
		c.unprocessable("No commit found for SHA: " + c.vars["ref"])
		return
	}
	out := s.ghRepoCommit(c.repo, cm)
	full := c.repo.fullName()
	for _, f := range cm.added {
		out.Files = append(out.Files, s.commitFile(full, sha, f, "added", 1, 0))
	}
	for _, f := range cm.changed {
		out.Files = append(out.Files, s.commitFile(full, sha, f, "modified", 1, 1))
	}
	for _, f := range cm.removed {
		out.Files = append(out.Files, s.commitFile(full, sha, f, "removed", 0, 1))
	}
	add, del := len(cm.added)+len(cm.changed), len(cm.changed)+len(cm.removed)
	out.Stats = &github.CommitStats{Additions: ptr(add), Deletions: ptr(del), Total: ptr(add + del)}
	c.json(http.StatusOK, out)
}

// commitFile is one file of a commit as GET a commit lists it.
func (s *Server) commitFile(full, sha, name, status string, add, del int) *github.CommitFile {
	return &github.CommitFile{
		SHA: ptr(blobSHA(sha + name)), Filename: ptr(name), Status: ptr(status),
		Additions: ptr(add), Deletions: ptr(del), Changes: ptr(add + del),
		BlobURL:     ptr(s.webURL(full + "/blob/" + sha + "/" + name)),
		RawURL:      ptr(s.webURL(full + "/raw/" + sha + "/" + name)),
		ContentsURL: ptr(s.apiURL("repos/" + full + "/contents/" + name + "?ref=" + sha)),
	}
}

const maxAnnotations = 50

var annotationLevels = map[string]bool{"notice": true, "warning": true, "failure": true}

type checkRunReq struct {
	Name        *string                `json:"name"`
	HeadSHA     *string                `json:"head_sha"`
	DetailsURL  *string                `json:"details_url"`
	ExternalID  *string                `json:"external_id"`
	Status      *string                `json:"status"`
	Conclusion  *string                `json:"conclusion"`
	StartedAt   *github.Timestamp      `json:"started_at"`
	CompletedAt *github.Timestamp      `json:"completed_at"`
	Output      *github.CheckRunOutput `json:"output"`
}

// validate checks status/conclusion/output like GitHub; it answers 422 and
// returns false on error.
func (c *apiCall) validateCheckRun(req *checkRunReq, current *checkRunState) bool {
	if req.Status != nil && !checkStatuses[*req.Status] {
		c.invalid("CheckRun", "status", "invalid", "")
		return false
	}
	if req.Conclusion != nil && *req.Conclusion != "" && !checkConclusions[*req.Conclusion] {
		c.invalid("CheckRun", "conclusion", "invalid", "")
		return false
	}
	// "You cannot change a check run conclusion to stale, only GitHub can
	// set this."
	if req.Conclusion != nil && *req.Conclusion == "stale" {
		c.invalid("CheckRun", "conclusion", "invalid", "Only GitHub can set the conclusion stale.")
		return false
	}
	status := ""
	if req.Status != nil {
		status = *req.Status
	}
	hasConclusion := req.Conclusion != nil && *req.Conclusion != ""
	if status == "completed" && !hasConclusion && (current == nil || current.conclusion == "") {
		c.unprocessable("Conclusion is required when status is completed.")
		return false
	}
	// The conclusion is "Required if you provide completed_at".
	if req.CompletedAt != nil && !hasConclusion && (current == nil || current.conclusion == "") {
		c.unprocessable("Conclusion is required when completed_at is provided.")
		return false
	}
	if hasConclusion && status != "" && status != "completed" {
		c.unprocessable("Conclusion can only be set when status is completed.")
		return false
	}
	if o := req.Output; o != nil {
		if o.Title == nil || o.Summary == nil {
			c.invalid("CheckRun", "output", "missing_field", "output requires title and summary")
			return false
		}
		// "The Checks API limits the number of annotations to a maximum
		// of 50 per API request"; each needs its path, lines, level and
		// message.
		if len(o.Annotations) > maxAnnotations {
			c.invalid("CheckRun", "annotations", "custom", "Only "+strconv.Itoa(maxAnnotations)+" annotations are allowed per request; "+strconv.Itoa(len(o.Annotations))+" were supplied.")
			return false
		}
		for _, a := range o.Annotations {
			if a == nil || a.Path == nil || a.StartLine == nil || a.EndLine == nil || a.Message == nil || !annotationLevels[a.GetAnnotationLevel()] {
				c.invalid("CheckRun", "annotations", "invalid", "an annotation needs path, start_line, end_line, annotation_level (notice, warning or failure) and message")
				return false
			}
		}
		if utf8.RuneCountInString(o.GetSummary()) > maxOutputText || utf8.RuneCountInString(o.GetText()) > maxOutputText {
			c.invalid("CheckRun", "output", "custom", "Only 65535 characters are allowed; "+strconv.Itoa(utf8.RuneCountInString(o.GetSummary()+o.GetText()))+" were supplied.")
			return false
		}
	}
	return true
}

func applyCheckRun(cr *checkRunState, req *checkRunReq) {
	if req.Name != nil && *req.Name != "" {
		cr.name = *req.Name
	}
	if req.DetailsURL != nil {
		cr.detailsURL = *req.DetailsURL
	}
	if req.ExternalID != nil {
		cr.externalID = *req.ExternalID
	}
	if req.StartedAt != nil {
		cr.startedAt = req.StartedAt.UTC()
	}
	if req.Status != nil {
		cr.status = *req.Status
	}
	if req.Conclusion != nil && *req.Conclusion != "" {
		cr.conclusion = *req.Conclusion
		cr.status = "completed"
	}
	if cr.status != "completed" {
		cr.conclusion = ""
		cr.completedAt = time.Time{}
	}
	if req.CompletedAt != nil && cr.status == "completed" {
		cr.completedAt = req.CompletedAt.UTC()
	}
	if o := req.Output; o != nil {
		cr.title = o.GetTitle()
		cr.summary = o.GetSummary()
		if o.Text != nil {
			cr.text = *o.Text
		}
	}
}

func (s *Server) createCheckRunAPI(c *apiCall) {
	var req checkRunReq
	if !c.decode(&req) {
		return
	}
	if req.Name == nil || *req.Name == "" {
		c.invalid("CheckRun", "name", "missing_field", "")
		return
	}
	if req.HeadSHA == nil || *req.HeadSHA == "" {
		c.invalid("CheckRun", "head_sha", "missing_field", "")
		return
	}
	sha, ok := s.resolveRef(c.repo, *req.HeadSHA)
	if !ok || len(*req.HeadSHA) != 40 {
		c.unprocessable("No commit found for SHA: " + *req.HeadSHA)
		return
	}
	if !c.validateCheckRun(&req, nil) {
		return
	}
	cr := &checkRunState{headSHA: sha, status: "queued", appSlug: s.opts.AppSlug}
	applyCheckRun(cr, &req)
	s.createCheckRun(c.repo, cr, c.bot())
	c.json(http.StatusCreated, s.ghCheckRun(c.repo, cr))
}

func (c *apiCall) checkRun() *checkRunState {
	id, _ := c.intVar("id")
	cr := c.s.checkRuns[id]
	if cr == nil || cr.repo != c.repo {
		c.notFound()
		return nil
	}
	return cr
}

func (s *Server) getCheckRun(c *apiCall) {
	if cr := c.checkRun(); cr != nil {
		c.json(http.StatusOK, s.ghCheckRun(c.repo, cr))
	}
}

func (s *Server) updateCheckRunAPI(c *apiCall) {
	cr := c.checkRun()
	if cr == nil {
		return
	}
	if cr.appSlug != s.opts.AppSlug {
		c.fail(http.StatusForbidden, "Invalid app_id `"+strconv.FormatInt(s.appIDFor(cr.appSlug), 10)+"` - check run can only be modified by the GitHub App that created it.")
		return
	}
	var req checkRunReq
	if !c.decode(&req) {
		return
	}
	if !c.validateCheckRun(&req, cr) {
		return
	}
	wasCompleted := cr.status == "completed"
	// A completed run stays completed: a new attempt is a new run.
	if wasCompleted && ((req.Status != nil && *req.Status != "completed") || (req.Conclusion != nil && *req.Conclusion != cr.conclusion)) {
		c.fail(http.StatusUnprocessableEntity, "Cannot change the status or conclusion of a completed check run; create a new check run instead.")
		return
	}
	applyCheckRun(cr, &req)
	if cr.status == "completed" && cr.completedAt.IsZero() {
		cr.completedAt = now()
	}
	if cr.status == "completed" && !wasCompleted {
		s.emitCheckRun(c.repo, cr, "completed", c.bot())
	}
	c.json(http.StatusOK, s.ghCheckRun(c.repo, cr))
}

// listCheckRunsForRef follows GitHub: filter=latest (default) keeps the
// newest run per name in each check suite (two workflow runs on a commit
// both show theirs); newest first; check_name, status and app_id filters;
// total_count is the count before pagination.
func (s *Server) listCheckRunsForRef(c *apiCall) {
	sha, ok := s.resolveRef(c.repo, c.vars["ref"])
	if !ok {
		c.unprocessable("No commit found for SHA: " + c.vars["ref"])
		return
	}
	q := c.r.URL.Query()
	latestOnly := q.Get("filter") != "all"
	seen := map[string]bool{}
	var list []*checkRunState
	runs := c.repo.checkRuns
	for i := len(runs) - 1; i >= 0; i-- {
		cr := runs[i]
		if cr.headSHA != sha {
			continue
		}
		key := strconv.FormatInt(suiteIDOf(s, cr), 10) + "\x00" + cr.name
		if latestOnly && seen[key] {
			continue
		}
		seen[key] = true
		if v := q.Get("check_name"); v != "" && v != cr.name {
			continue
		}
		if v := q.Get("status"); v != "" && v != cr.status {
			continue
		}
		if v := q.Get("app_id"); v != "" && v != strconv.FormatInt(s.appIDFor(cr.appSlug), 10) {
			continue
		}
		list = append(list, cr)
	}
	total := len(list)
	page := paginate(c, list)
	out := make([]*github.CheckRun, 0, len(page))
	for _, cr := range page {
		out = append(out, s.ghCheckRun(c.repo, cr))
	}
	c.json(http.StatusOK, struct {
		Total     int                `json:"total_count"`
		CheckRuns []*github.CheckRun `json:"check_runs"`
	}{total, out})
}

func (s *Server) combinedStatus(c *apiCall) {
	sha, ok := s.resolveRef(c.repo, c.vars["ref"])
	if !ok {
		c.fail(http.StatusNotFound, "No commit found for SHA: "+c.vars["ref"])
		return
	}
	latest := latestStatuses(c.repo, sha)
	total := len(latest)
	sts := make([]*github.RepoStatus, 0, len(latest))
	for _, st := range paginate(c, latest) {
		gs := s.ghStatus(c.repo, st)
		gs.Creator = nil // the combined status's statuses are "simple": no creator
		sts = append(sts, gs)
	}
	full := c.repo.fullName()
	c.json(http.StatusOK, struct {
		*github.CombinedStatus
		Statuses   []*github.RepoStatus `json:"statuses"`
		Repository *github.Repository   `json:"repository"`
	}{
		CombinedStatus: &github.CombinedStatus{
			State: ptr(combinedState(latest)), SHA: ptr(sha), TotalCount: ptr(total),
			CommitURL:     ptr(s.apiURL("repos/" + full + "/commits/" + sha)),
			RepositoryURL: ptr(s.apiURL("repos/" + full)),
		},
		Statuses:   sts,
		Repository: s.ghRepo(c.repo),
	})
}

func (s *Server) listStatuses(c *apiCall) {
	sha, ok := s.resolveRef(c.repo, c.vars["ref"])
	if !ok {
		c.json(http.StatusOK, []*github.RepoStatus{})
		return
	}
	var list []*statusState
	for i := len(c.repo.statuses) - 1; i >= 0; i-- {
		if st := c.repo.statuses[i]; st.sha == sha {
			list = append(list, st)
		}
	}
	out := make([]*github.RepoStatus, 0, len(list))
	for _, st := range paginate(c, list) {
		out = append(out, s.ghStatus(c.repo, st))
	}
	c.json(http.StatusOK, out)
}

var statusStates = map[string]bool{"pending": true, "success": true, "error": true, "failure": true}

func (s *Server) createStatusAPI(c *apiCall) {
	var req struct {
		State       string `json:"state"`
		TargetURL   string `json:"target_url"`
		Description string `json:"description"`
		Context     string `json:"context"`
	}
	if !c.decode(&req) {
		return
	}
	if !statusStates[req.State] {
		c.invalid("Status", "state", "custom", "state is not included in the list")
		return
	}
	sha, ok := s.resolveRef(c.repo, c.vars["sha"])
	if !ok {
		c.unprocessable("No commit found for SHA: " + c.vars["sha"])
		return
	}
	n := 0
	for _, st := range c.repo.statuses {
		if st.sha == sha {
			n++
		}
	}
	if n >= 1000 {
		c.invalid("Status", "", "custom", "This SHA and context has reached the maximum number of statuses.")
		return
	}
	st := s.createStatus(c.repo, c.bot(), sha, req.State, req.Context, req.TargetURL, req.Description)
	c.json(http.StatusCreated, s.ghStatus(c.repo, st))
}

// sortedRuns returns the runs of rp for sha, oldest first.
func sortedRuns(rp *repoState, sha string) []*checkRunState {
	var out []*checkRunState
	for _, cr := range rp.checkRuns {
		if cr.headSHA == sha {
			out = append(out, cr)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}
