package githubtest

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-github/v60/github"
)

func (s *Server) pullRoutes(h routeFunc) {
	const r = "/repos/{owner}/{repo}"
	h("GET", r+"/pulls", authRepo, s.listPulls)
	h("GET", r+"/pulls/{number:[0-9]+}", authRepo, s.getPull)
	h("GET", r+"/pulls/{number:[0-9]+}/commits", authRepo, s.listPullCommits)
	h("GET", r+"/pulls/{number:[0-9]+}/files", authRepo, s.listPullFiles)
	h("GET", r+"/pulls/{number:[0-9]+}/reviews", authRepo, s.listPullReviews)
	h("GET", r+"/pulls/{number:[0-9]+}/reviews/{id:[0-9]+}", authRepo, s.getPullReview)
}

// pull resolves {number} to a PR; a plain issue number is a 404 like on GitHub.
func (c *apiCall) pull() *issueState {
	is := c.issue()
	if is == nil {
		return nil
	}
	if is.pr == nil {
		c.notFound()
		return nil
	}
	return is
}

func (s *Server) getPull(c *apiCall) {
	if is := c.pull(); is != nil {
		c.json(http.StatusOK, s.ghPull(c.repo, is))
	}
}

func (s *Server) listPulls(c *apiCall) {
	q := c.r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	head := q.Get("head")
	if i := strings.IndexByte(head, ':'); i >= 0 {
		if !strings.EqualFold(head[:i], c.repo.owner) {
			c.json(http.StatusOK, []*github.PullRequest{})
			return
		}
		head = head[i+1:]
	}
	var list []*issueState
	for _, n := range sortedIssueNumbers(c.repo) {
		is := c.repo.issues[n]
		if is.pr == nil || (state != "all" && is.state != state) {
			continue
		}
		if head != "" && is.pr.headRef != head {
			continue
		}
		if b := q.Get("base"); b != "" && is.pr.baseRef != b {
			continue
		}
		list = append(list, is)
	}
	sortIssues(list, q.Get("sort"), q.Get("direction"))
	out := make([]*github.PullRequest, 0, len(list))
	for _, is := range paginate(c, list) {
		out = append(out, s.ghPull(c.repo, is))
	}
	c.json(http.StatusOK, out)
}

func (s *Server) listPullCommits(c *apiCall) {
	is := c.pull()
	if is == nil {
		return
	}
	list := paginate(c, is.pr.commits)
	out := make([]*github.RepositoryCommit, 0, len(list))
	for _, cm := range list {
		out = append(out, s.ghRepoCommit(c.repo, cm))
	}
	c.json(http.StatusOK, out)
}

func (s *Server) listPullFiles(c *apiCall) {
	is := c.pull()
	if is == nil {
		return
	}
	list := paginate(c, is.pr.files)
	out := make([]*github.CommitFile, 0, len(list))
	full := c.repo.fullName()
	for _, f := range list {
		add, del := 1, 0
		switch f.status {
		case "removed":
			add, del = 0, 1
		case "modified":
			add, del = 1, 1
		}
		out = append(out, &github.CommitFile{
			SHA: ptr(blobSHA(is.pr.headSHA + f.filename)), Filename: ptr(f.filename), Status: ptr(f.status),
			Additions: ptr(add), Deletions: ptr(del), Changes: ptr(add + del),
			BlobURL:     ptr(s.webURL(full + "/blob/" + is.pr.headSHA + "/" + f.filename)),
			RawURL:      ptr(s.webURL(full + "/raw/" + is.pr.headSHA + "/" + f.filename)),
			ContentsURL: ptr(s.apiURL("repos/" + full + "/contents/" + f.filename + "?ref=" + is.pr.headSHA)),
			Patch:       ptr(f.patchOf(is.number)),
		})
	}
	c.json(http.StatusOK, out)
}

// patchOf is the patch GitHub shows for f in pull request n: the one it was
// given (retarget.go), else one of its own.
func (f prFile) patchOf(n int) string {
	if f.patch != "" {
		return f.patch
	}
	return fmt.Sprintf("@@ -0,0 +1 @@\n+%s (#%d)", f.filename, n)
}

func (s *Server) listPullReviews(c *apiCall) {
	is := c.pull()
	if is == nil {
		return
	}
	list := paginate(c, is.pr.reviews)
	out := make([]*github.PullRequestReview, 0, len(list))
	for _, rv := range list {
		out = append(out, s.ghReview(c.repo, is, rv, false))
	}
	c.json(http.StatusOK, out)
}

func (s *Server) getPullReview(c *apiCall) {
	is := c.pull()
	if is == nil {
		return
	}
	id, _ := c.intVar("id")
	for _, rv := range is.pr.reviews {
		if rv.id == id {
			c.json(http.StatusOK, s.ghReview(c.repo, is, rv, false))
			return
		}
	}
	c.notFound()
}
