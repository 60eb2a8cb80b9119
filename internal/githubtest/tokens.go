package githubtest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/google/go-github/v60/github"
	"github.com/gorilla/mux"
)

// This file gives the fake's people personal access tokens. A request with
// "Authorization: token <pat>" (or "Bearer <pat>") acts as that person: what
// it writes (issues, comments, reviews, assignments, milestones) is authored
// by them and sends the webhooks GitHub sends for it, with them as sender.
// Every repository of the fake is public: a person reads any of them and may
// open issues and comment on them; the rest follows their role there
// (SetPermission), as GitHub documents it:
//
//   - creating an issue: anyone; its labels, assignees and milestone are
//     silently dropped without push access;
//   - editing an issue: its author, or triage and up; the author without
//     triage cannot change its labels, assignees or milestone (dropped);
//     anyone else gets 403;
//   - adding or removing assignees: triage and up; otherwise GitHub answers
//     201 and changes nothing;
//   - labels (on issues and of the repository): triage and up, else 403;
//   - milestones: push access, else 404 (GitHub's answer for them);
//   - editing or deleting a comment: its author, or push access, else 403;
//   - reviews: anyone, but not APPROVE or REQUEST_CHANGES on one's own pull
//     request (422);
//   - check runs are the Apps' (403 "Resource not accessible by personal
//     access token").

// AddToken issues a personal access token for login and returns it.
func (s *Server) AddToken(login string) string {
	b := make([]byte, 20)
	if _, err := rand.Read(b); err != nil {
		panic("githubtest: generating a token: " + err.Error())
	}
	tok := "ghp_" + hex.EncodeToString(b)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pats == nil {
		s.pats = map[string]string{}
	}
	s.pats[tok] = login
	s.rememberLogin(login)
	return tok
}

// RevokeToken makes a personal access token invalid: calls with it get 401.
func (s *Server) RevokeToken(tok string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pats, tok)
}

// personOf is the person whose personal access token authenticates c, if it
// carries one. Call with s.mu held.
func (s *Server) personOf(c *apiCall) (string, bool) {
	scheme, cred := authHeader(c.r)
	if scheme != "token" && scheme != "bearer" {
		return "", false
	}
	login, ok := s.pats[cred]
	return login, ok
}

// sees reports whether the caller can see rp: an installation sees its own
// repositories; a person sees every (public) repository.
func (c *apiCall) sees(rp *repoState) bool {
	if c.user != "" {
		return true
	}
	return rp.installation == c.inst
}

// roleRank orders the repository roles.
var roleRank = map[string]int{"none": 0, "read": 1, "triage": 2, "write": 3, "maintain": 4, "admin": 5}

// personRank is login's rank on rp: a public repository is readable by all.
func personRank(rp *repoState, login string) int {
	return max(roleRank[rp.permission(login)], roleRank["read"])
}

// authorizePerson authenticates c as login for a route of kind auth and
// applies GitHub's permission rules to what the person may do there. It
// answers the call itself (and returns false) when the person may not.
// Call with s.mu held.
func (s *Server) authorizePerson(c *apiCall, auth authKind, login string) bool {
	c.user, c.info.user = login, login
	if auth == authOrg {
		return true // team lookups: the fake's organizations are visible
	}
	if auth != authRepo {
		return true
	}
	rp := s.repos[strings.ToLower(c.vars["owner"]+"/"+c.vars["repo"])]
	if rp == nil {
		c.notFound()
		return false
	}
	c.repo = rp
	if c.r.Method == http.MethodGet || c.r.Method == http.MethodHead {
		return true
	}
	tmpl := ""
	if rt := mux.CurrentRoute(c.r); rt != nil {
		tmpl, _ = rt.GetPathTemplate()
	}
	route := strings.TrimPrefix(tmpl, "/repos/{owner}/{repo}")
	rank := personRank(rp, login)
	const mustAdmin = "Must have admin rights to Repository."
	switch {
	case route == "/issues" && c.r.Method == http.MethodPost:
		if rank < roleRank["write"] {
			c.info.body = dropFields(c.info.body, "labels", "assignees", "assignee", "milestone")
		}
	case strings.HasPrefix(route, "/issues/{number") && strings.HasSuffix(route, "/comments"):
		// anyone may comment
	case strings.HasPrefix(route, "/issues/{number") && strings.HasSuffix(route, "/assignees"):
		if rank < roleRank["triage"] {
			c.info.body = []byte(`{"assignees":[]}`) // GitHub: 201, nothing changed
		}
	case strings.HasPrefix(route, "/issues/{number") && strings.Contains(route, "/labels"), strings.HasPrefix(route, "/labels"):
		if rank < roleRank["triage"] {
			c.fail(http.StatusForbidden, mustAdmin)
			return false
		}
	case strings.HasPrefix(route, "/issues/{number"): // PATCH the issue
		if rank >= roleRank["triage"] {
			return true
		}
		if is := rp.issues[atoiOr(c.vars["number"])]; is == nil || !strings.EqualFold(is.user, login) {
			c.fail(http.StatusForbidden, mustAdmin)
			return false
		}
		c.info.body = dropFields(c.info.body, "labels", "assignees", "assignee", "milestone")
	case strings.HasPrefix(route, "/issues/comments/"):
		cm := s.comments[atoi64Or(c.vars["id"])]
		if rank < roleRank["write"] && (cm == nil || !strings.EqualFold(cm.user, login)) {
			c.fail(http.StatusForbidden, mustAdmin)
			return false
		}
	case strings.HasPrefix(route, "/milestones"):
		if rank < roleRank["write"] {
			c.notFound()
			return false
		}
	case strings.HasPrefix(route, "/pulls/"):
		// reviews: the handler refuses approving one's own pull request
	default:
		c.fail(http.StatusForbidden, "Resource not accessible by personal access token")
		return false
	}
	return true
}

// dropFields removes keys from a JSON object body (what GitHub silently
// ignores for people without the access to set them).
func dropFields(body []byte, keys ...string) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return body
	}
	for _, k := range keys {
		delete(m, k)
	}
	out, err := json.Marshal(m)
	if err != nil {
		return body
	}
	return out
}

func atoiOr(v string) int {
	n := 0
	fmt.Sscan(v, &n)
	return n
}

func atoi64Or(v string) int64 {
	var n int64
	fmt.Sscan(v, &n)
	return n
}

// personRoutes are the routes only a person's token has: who am I, the issues
// assigned to me, and submitting a review.
func (s *Server) personRoutes(h routeFunc) {
	h("GET", "/user", authToken, s.getAuthenticatedUser)
	h("GET", "/issues", authToken, s.listMyIssues)
	h("POST", "/repos/{owner}/{repo}/pulls/{number:[0-9]+}/reviews", authRepo, s.createReviewAPI)
}

// personOnly answers 403 to an installation token, as GitHub does for the
// routes about "the authenticated user".
func (c *apiCall) personOnly() bool {
	if c.user == "" {
		c.fail(http.StatusForbidden, "Resource not accessible by integration")
		return false
	}
	return true
}

func (s *Server) getAuthenticatedUser(c *apiCall) {
	if c.personOnly() {
		c.json(http.StatusOK, s.ghUser(c.user))
	}
}

// listMyIssues is GET /issues: the open issues (and pull requests) assigned
// to the person, across repositories (filter=assigned, the default; state
// open, closed or all).
func (s *Server) listMyIssues(c *apiCall) {
	if !c.personOnly() {
		return
	}
	q := c.r.URL.Query()
	if f := q.Get("filter"); f != "" && f != "assigned" {
		c.unprocessable("only filter=assigned is supported by the fake")
		return
	}
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	var out []*github.Issue
	for _, name := range sortedKeys(s.repos) {
		rp := s.repos[name]
		for _, n := range sortedIssueNumbers(rp) {
			is := rp.issues[n]
			if (state == "all" || is.state == state) && is.hasAssignee(c.user) {
				gi := s.ghIssue(rp, is)
				gi.Repository = s.ghRepo(rp)
				out = append(out, gi)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].GetUpdatedAt().After(out[j].GetUpdatedAt().Time) })
	c.json(http.StatusOK, paginate(c, out))
}

// createReviewAPI submits a review as the person: event APPROVE,
// REQUEST_CHANGES or COMMENT (a pending review, without event, is not
// supported by the fake).
func (s *Server) createReviewAPI(c *apiCall) {
	if !c.personOnly() {
		return
	}
	is := c.pull()
	if is == nil {
		return
	}
	var req struct {
		Body     string `json:"body"`
		Event    string `json:"event"`
		CommitID string `json:"commit_id"`
	}
	if !c.decode(&req) {
		return
	}
	state := map[string]string{"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED", "COMMENT": "COMMENTED"}[req.Event]
	switch {
	case state == "":
		c.unprocessable("Unprocessable Entity: event must be APPROVE, REQUEST_CHANGES or COMMENT")
		return
	case state != "COMMENTED" && strings.EqualFold(c.user, is.user):
		verb := map[string]string{"APPROVED": "approve", "CHANGES_REQUESTED": "request changes on"}[state]
		c.unprocessable(fmt.Sprintf("Unprocessable Entity: Can not %s your own pull request", verb))
		return
	case state != "APPROVED" && strings.TrimSpace(req.Body) == "":
		c.unprocessable("Unprocessable Entity: Body is required for this event")
		return
	case req.CommitID != "" && req.CommitID != is.pr.headSHA:
		c.unprocessable("Unprocessable Entity: commit_id is not the head of the pull request")
		return
	}
	rv := &reviewState{id: s.newID(), user: c.user, state: state, body: req.Body, commitID: is.pr.headSHA, submittedAt: now()}
	is.pr.reviews = append(is.pr.reviews, rv)
	s.touch(is)
	s.emit(c.repo, "pull_request_review", "submitted", c.user, &github.PullRequestReviewEvent{
		Action: ptr("submitted"), Review: s.ghReview(c.repo, is, rv, true), PullRequest: s.ghPull(c.repo, is),
		Repo: s.ghRepo(c.repo), Sender: s.ghUser(c.user), Installation: s.ghInstallation(c.repo.installation),
	})
	c.json(http.StatusOK, s.ghReview(c.repo, is, rv, false))
}

// ---- GraphQL: an issue's comments and who last edited them ----

// gqlIssue is an Issue: number, title, and its comments, each with
//
//	databaseId body createdAt lastEditedAt
//	author { login resourcePath } editor { login resourcePath }
//
// An App's bot is, as in GitHub's GraphQL API, the Actor whose login is the
// App's slug (no "[bot]") and whose resourcePath is /apps/<slug>.
func (s *Server) gqlIssue(rp *repoState, is *issueState) gqlObject {
	return gqlObject{typ: "Issue", field: func(name string, args map[string]any) (any, bool, error) {
		switch name {
		case "number":
			return is.number, true, nil
		case "title":
			return is.title, true, nil
		case "comments":
			list := make([]gqlObject, 0, len(is.comments))
			for _, id := range is.comments {
				if cm := s.comments[id]; cm != nil {
					list = append(list, s.gqlComment(cm))
				}
			}
			return gqlConnection("IssueCommentConnection", list, args, len(list))
		}
		return nil, false, nil
	}}
}

func (s *Server) gqlComment(cm *commentState) gqlObject {
	return gqlObject{typ: "IssueComment", field: func(name string, _ map[string]any) (any, bool, error) {
		switch name {
		case "databaseId":
			return cm.id, true, nil
		case "body":
			return cm.body, true, nil
		case "createdAt":
			return cm.createdAt.Format("2006-01-02T15:04:05Z"), true, nil
		case "lastEditedAt":
			if cm.editor == "" {
				return nil, true, nil
			}
			return cm.editedAt.Format("2006-01-02T15:04:05Z"), true, nil
		case "author":
			return s.gqlActorOf(cm.user), true, nil
		case "editor":
			return s.gqlActorOf(cm.editor), true, nil
		}
		return nil, false, nil
	}}
}

// gqlActorOf is the Actor login is (nil for "").
func (s *Server) gqlActorOf(login string) *gqlObject {
	if login == "" {
		return nil
	}
	shown, path := login, "/"+login
	if slug, ok := strings.CutSuffix(login, "[bot]"); ok {
		shown, path = slug, "/apps/"+slug
	}
	return &gqlObject{typ: "Actor", field: func(name string, _ map[string]any) (any, bool, error) {
		switch name {
		case "login":
			return shown, true, nil
		case "resourcePath":
			return path, true, nil
		}
		return nil, false, nil
	}}
}
