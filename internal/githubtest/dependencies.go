package githubtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// This file is GitHub's issue dependencies ("blocked by" / "blocking") and
// sub-issues: the REST routes that list and change them, the
// issue_dependencies and sub_issues webhooks, and the summaries an issue
// carries (issue_dependencies_summary, sub_issues_summary). An issue may be
// blocked by, or have as sub-issue, an issue of another repository the fake
// knows.

// issueRef names an issue of any repository the fake knows.
type issueRef struct {
	repo   string // lower-case full name
	number int
}

func refOf(rp *repoState, n int) issueRef {
	return issueRef{repo: strings.ToLower(rp.fullName()), number: n}
}

// resolve is the repository and issue ref names (nil when it is gone).
func (s *Server) resolve(r issueRef) (*repoState, *issueState) {
	rp := s.repos[r.repo]
	if rp == nil || rp.issues[r.number] == nil {
		return nil, nil
	}
	return rp, rp.issues[r.number]
}

func (s *Server) dependencyRoutes(h routeFunc) {
	const r = "/repos/{owner}/{repo}/issues/{number:[0-9]+}"
	h("GET", r+"/dependencies/blocked_by", authRepo, s.listBlockedBy)
	h("POST", r+"/dependencies/blocked_by", authRepo, s.addBlockedByAPI)
	h("DELETE", r+"/dependencies/blocked_by/{id:[0-9]+}", authRepo, s.removeBlockedByAPI)
	h("GET", r+"/dependencies/blocking", authRepo, s.listBlocking)
	h("GET", r+"/sub_issues", authRepo, s.listSubIssues)
	h("POST", r+"/sub_issues", authRepo, s.addSubIssueAPI)
	h("DELETE", r+"/sub_issue", authRepo, s.removeSubIssueAPI)
	h("GET", r+"/parent", authRepo, s.getParent)
}

// ---- what tests do ----

// AddBlockedBy marks issue n of repo as blocked by issue blocker of
// blockerRepo, as actor does on GitHub: issue_dependencies.blocked_by_added
// goes to repo, blocking_added to blockerRepo.
func (s *Server) AddBlockedBy(repo string, n int, actor, blockerRepo string, blocker int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, is := s.actIssue("AddBlockedBy", repo, n)
	brp, bis := s.actIssue("AddBlockedBy", blockerRepo, blocker)
	if is == nil || bis == nil {
		return
	}
	s.addBlockedBy(rp, is, brp, bis, actor)
}

// RemoveBlockedBy removes the dependency AddBlockedBy made.
func (s *Server) RemoveBlockedBy(repo string, n int, actor, blockerRepo string, blocker int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, is := s.actIssue("RemoveBlockedBy", repo, n)
	brp, bis := s.actIssue("RemoveBlockedBy", blockerRepo, blocker)
	if is == nil || bis == nil {
		return
	}
	if !s.removeBlockedBy(rp, is, brp, bis, actor) {
		s.misuse("RemoveBlockedBy: %s#%d is not blocked by %s#%d", repo, n, blockerRepo, blocker)
	}
}

// AddSubIssue makes issue sub of subRepo a sub-issue of issue parent of
// repo: sub_issues.sub_issue_added goes to repo, parent_issue_added to
// subRepo.
func (s *Server) AddSubIssue(repo string, parent int, actor, subRepo string, sub int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, is := s.actIssue("AddSubIssue", repo, parent)
	srp, sis := s.actIssue("AddSubIssue", subRepo, sub)
	if is == nil || sis == nil {
		return
	}
	if msg := s.addSubIssue(rp, is, srp, sis, actor); msg != "" {
		s.misuse("AddSubIssue: %s", msg)
	}
}

// RemoveSubIssue undoes AddSubIssue.
func (s *Server) RemoveSubIssue(repo string, parent int, actor, subRepo string, sub int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, is := s.actIssue("RemoveSubIssue", repo, parent)
	srp, sis := s.actIssue("RemoveSubIssue", subRepo, sub)
	if is == nil || sis == nil {
		return
	}
	if !s.removeSubIssue(rp, is, srp, sis, actor) {
		s.misuse("RemoveSubIssue: %s#%d is not a sub-issue of %s#%d", subRepo, sub, repo, parent)
	}
}

// ---- the changes (s.mu held) ----

func (s *Server) addBlockedBy(rp *repoState, is *issueState, brp *repoState, bis *issueState, actor string) string {
	ref := refOf(brp, bis.number)
	if rp == brp && is == bis {
		return "an issue cannot block itself"
	}
	for _, r := range is.blockedBy {
		if r == ref {
			return "the dependency already exists"
		}
	}
	is.blockedBy = append(is.blockedBy, ref)
	bis.blocking = append(bis.blocking, refOf(rp, is.number))
	is.updatedAt, bis.updatedAt = now(), now()
	s.emitDependency(rp, is, brp, bis, "blocked_by_added", actor)
	return ""
}

func (s *Server) removeBlockedBy(rp *repoState, is *issueState, brp *repoState, bis *issueState, actor string) bool {
	ref, back := refOf(brp, bis.number), refOf(rp, is.number)
	if !removeRef(&is.blockedBy, ref) {
		return false
	}
	removeRef(&bis.blocking, back)
	is.updatedAt, bis.updatedAt = now(), now()
	s.emitDependency(rp, is, brp, bis, "blocked_by_removed", actor)
	return true
}

func (s *Server) addSubIssue(rp *repoState, is *issueState, srp *repoState, sis *issueState, actor string) string {
	if rp == srp && is == sis {
		return "an issue cannot be its own sub-issue"
	}
	if sis.parent != nil {
		return "the issue already has a parent"
	}
	ref := refOf(rp, is.number)
	sis.parent = &ref
	is.subIssues = append(is.subIssues, refOf(srp, sis.number))
	is.updatedAt, sis.updatedAt = now(), now()
	s.emitSubIssue(rp, is, srp, sis, "added", actor)
	return ""
}

func (s *Server) removeSubIssue(rp *repoState, is *issueState, srp *repoState, sis *issueState, actor string) bool {
	if !removeRef(&is.subIssues, refOf(srp, sis.number)) {
		return false
	}
	sis.parent = nil
	is.updatedAt, sis.updatedAt = now(), now()
	s.emitSubIssue(rp, is, srp, sis, "removed", actor)
	return true
}

func removeRef(list *[]issueRef, r issueRef) bool {
	for i, x := range *list {
		if x == r {
			*list = append((*list)[:i], (*list)[i+1:]...)
			return true
		}
	}
	return false
}

// ---- webhooks ----

// emitDependency sends what GitHub sends for a dependency added or removed
// (action blocked_by_added or blocked_by_removed): to the blocked issue's
// repository, blocked_by_*; to the blocking issue's, blocking_*.
func (s *Server) emitDependency(rp *repoState, is *issueState, brp *repoState, bis *issueState, action, actor string) {
	blocked, blocking := s.ghIssueFull(rp, is), s.ghIssueFull(brp, bis)
	base := func(at *repoState) map[string]any {
		m := map[string]any{
			"blocked_issue_id": is.id, "blocked_issue": blocked, "blocking_issue_id": bis.id, "blocking_issue": blocking,
			"repository": s.ghRepo(at), "sender": s.ghUser(actor), "installation": s.ghInstallation(at.installation),
		}
		if o := s.ghOrg(at); o != nil {
			m["organization"] = o
		}
		return m
	}
	m := base(rp)
	m["action"] = action
	m["blocking_issue_repo"] = s.ghRepo(brp)
	s.emit(rp, "issue_dependencies", action, actor, m)
	other := strings.Replace(action, "blocked_by", "blocking", 1)
	m = base(brp)
	m["action"] = other
	m["blocked_issue_repo"] = s.ghRepo(rp)
	s.emit(brp, "issue_dependencies", other, actor, m)
}

// emitSubIssue sends what GitHub sends for a sub-issue added or removed
// (how: added or removed): to the parent's repository,
// sub_issues.sub_issue_*; to the sub-issue's, parent_issue_*.
func (s *Server) emitSubIssue(rp *repoState, is *issueState, srp *repoState, sis *issueState, how, actor string) {
	parent, sub := s.ghIssueFull(rp, is), s.ghIssueFull(srp, sis)
	base := func(at *repoState) map[string]any {
		m := map[string]any{
			"parent_issue_id": is.id, "parent_issue": parent, "sub_issue_id": sis.id, "sub_issue": sub,
			"repository": s.ghRepo(at), "sender": s.ghUser(actor), "installation": s.ghInstallation(at.installation),
		}
		if o := s.ghOrg(at); o != nil {
			m["organization"] = o
		}
		return m
	}
	m := base(rp)
	m["action"] = "sub_issue_" + how
	m["sub_issue_repo"] = s.ghRepo(srp)
	s.emit(rp, "sub_issues", "sub_issue_"+how, actor, m)
	m = base(srp)
	m["action"] = "parent_issue_" + how
	m["parent_issue_repo"] = s.ghRepo(rp)
	s.emit(srp, "sub_issues", "parent_issue_"+how, actor, m)
}

// ghOrg is the organization owning rp, as webhooks show it (nil for a
// user's repository).
func (s *Server) ghOrg(rp *repoState) map[string]any {
	owner := s.ghRepo(rp).GetOwner()
	if owner.GetType() != "Organization" {
		return nil
	}
	login := owner.GetLogin()
	api := func(p string) string { return s.apiURL("orgs/" + login + p) }
	return map[string]any{
		"login": login, "id": owner.GetID(), "node_id": owner.GetNodeID(), "url": api(""),
		"repos_url": api("/repos"), "events_url": api("/events"), "hooks_url": api("/hooks"),
		"issues_url": api("/issues"), "members_url": api("/members{/member}"),
		"public_members_url": api("/public_members{/member}"), "avatar_url": owner.GetAvatarURL(), "description": nil,
	}
}

// ---- issues as GitHub shows them ----

// ghIssueFull is ghIssue with the fields go-github's Issue lacks: the
// dependency and sub-issue summaries (and parent_issue_url).
func (s *Server) ghIssueFull(rp *repoState, is *issueState) any {
	extra := map[string]any{}
	if is.pr == nil {
		open := func(list []issueRef) int {
			n := 0
			for _, r := range list {
				if _, x := s.resolve(r); x != nil && x.state == "open" {
					n++
				}
			}
			return n
		}
		total := func(list []issueRef) int {
			n := 0
			for _, r := range list {
				if _, x := s.resolve(r); x != nil {
					n++
				}
			}
			return n
		}
		extra["issue_dependencies_summary"] = map[string]int{
			"blocked_by": open(is.blockedBy), "blocking": open(is.blocking),
			"total_blocked_by": total(is.blockedBy), "total_blocking": total(is.blocking),
		}
		subs, done := total(is.subIssues), 0
		for _, r := range is.subIssues {
			if _, x := s.resolve(r); x != nil && x.state == "closed" {
				done++
			}
		}
		pct := 0
		if subs > 0 {
			pct = done * 100 / subs
		}
		extra["sub_issues_summary"] = map[string]int{"total": subs, "completed": done, "percent_completed": pct}
		if is.parent != nil {
			if prp, pis := s.resolve(*is.parent); pis != nil {
				extra["parent_issue_url"] = s.apiURL(fmt.Sprintf("repos/%s/issues/%d", prp.fullName(), pis.number))
			}
		}
	}
	return withFields{s.ghIssue(rp, is), extra}
}

func (s *Server) listRefs(c *apiCall, refs []issueRef) {
	var out []any
	for _, r := range refs {
		if rp, is := s.resolve(r); is != nil {
			out = append(out, s.ghIssueFull(rp, is))
		}
	}
	if out == nil {
		out = []any{}
	}
	c.json(http.StatusOK, paginate(c, out))
}

// ---- REST ----

func (s *Server) listBlockedBy(c *apiCall) {
	if is := c.issue(); is != nil {
		s.listRefs(c, is.blockedBy)
	}
}

func (s *Server) listBlocking(c *apiCall) {
	if is := c.issue(); is != nil {
		s.listRefs(c, is.blocking)
	}
}

func (s *Server) listSubIssues(c *apiCall) {
	if is := c.issue(); is != nil {
		s.listRefs(c, is.subIssues)
	}
}

func (s *Server) getParent(c *apiCall) {
	is := c.issue()
	if is == nil {
		return
	}
	if is.parent == nil {
		c.notFound()
		return
	}
	prp, pis := s.resolve(*is.parent)
	if pis == nil {
		c.notFound()
		return
	}
	c.json(http.StatusOK, s.ghIssueFull(prp, pis))
}

// byID finds an issue by its id among the repositories the fake knows.
func (s *Server) byID(id int64) (*repoState, *issueState) {
	for _, rp := range s.repos {
		for _, is := range rp.issues {
			if is.id == id && is.pr == nil {
				return rp, is
			}
		}
	}
	return nil, nil
}

func (s *Server) addBlockedByAPI(c *apiCall) { s.addLinkAPI(c, "issue_id", s.addBlockedBy) }

func (s *Server) addSubIssueAPI(c *apiCall) { s.addLinkAPI(c, "sub_issue_id", s.addSubIssue) }

// addLinkAPI adds a link from the call's issue to the issue whose id the
// body names in field (a blocker, a sub-issue), as add does: 404 when that
// issue is unknown, 422 with add's message when GitHub refuses the link.
func (s *Server) addLinkAPI(c *apiCall, field string, add func(rp *repoState, is *issueState, orp *repoState, ois *issueState, actor string) string) {
	is := c.issue()
	if is == nil {
		return
	}
	var body map[string]json.RawMessage
	if !c.decode(&body) {
		return
	}
	var id int64
	if err := json.Unmarshal(body[field], &id); err != nil {
		c.invalid("Issue", field, "invalid", field+" must be an integer")
		return
	}
	orp, ois := s.byID(id)
	if ois == nil {
		c.notFound()
		return
	}
	if msg := add(c.repo, is, orp, ois, c.bot()); msg != "" {
		c.invalid("Issue", field, "invalid", msg)
		return
	}
	c.json(http.StatusCreated, s.ghIssueFull(c.repo, is))
}

func (s *Server) removeBlockedByAPI(c *apiCall) {
	is := c.issue()
	if is == nil {
		return
	}
	id, _ := c.intVar("id")
	brp, bis := s.byID(id)
	if bis == nil || !s.removeBlockedBy(c.repo, is, brp, bis, c.bot()) {
		c.notFound()
		return
	}
	c.json(http.StatusOK, s.ghIssueFull(c.repo, is))
}

func (s *Server) removeSubIssueAPI(c *apiCall) {
	is := c.issue()
	if is == nil {
		return
	}
	var body struct {
		SubIssueID int64 `json:"sub_issue_id"`
	}
	if !c.decode(&body) {
		return
	}
	srp, sis := s.byID(body.SubIssueID)
	if sis == nil || !s.removeSubIssue(c.repo, is, srp, sis, c.bot()) {
		c.notFound()
		return
	}
	c.json(http.StatusOK, s.ghIssueFull(srp, sis))
}
