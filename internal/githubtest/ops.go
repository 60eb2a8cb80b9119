package githubtest

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v60/github"
)

// State changes shared by the REST handlers (actor = the bot) and the user
// actions (actor = a user). Each sends the webhooks GitHub sends for it.
// All are called with s.mu held.

const defaultLabelColor = "ededed"

var colorRE = regexp.MustCompile(`^[0-9a-fA-F]{6}$`)

func (s *Server) touch(is *issueState) { is.updatedAt = now() }

// createLabel adds a repository label (label.created). The caller checks
// that the name is free.
func (s *Server) createLabel(rp *repoState, actor, name, color, desc string) *labelState {
	if color == "" {
		color = defaultLabelColor
	}
	l := &labelState{id: s.newID(), name: name, color: strings.ToLower(color), description: desc}
	rp.labels = append(rp.labels, l)
	s.emitLabel(rp, l, "created", actor, nil)
	return l
}

// ensureLabel finds a label by name, creating it like GitHub does when an
// unknown label is put on an issue.
func (s *Server) ensureLabel(rp *repoState, actor, name string) *labelState {
	if l := rp.label(name); l != nil {
		return l
	}
	return s.createLabel(rp, actor, name, "", "")
}

func (s *Server) addLabels(rp *repoState, is *issueState, actor string, names []string) {
	for _, name := range names {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		l := s.ensureLabel(rp, actor, name)
		if is.hasLabel(l) {
			continue
		}
		is.labels = append(is.labels, l)
		s.touch(is)
		s.emitIssue(rp, is, "labeled", actor, issueExtra{label: l})
	}
}

func (s *Server) removeLabel(rp *repoState, is *issueState, actor, name string) bool {
	for i, l := range is.labels {
		if strings.EqualFold(l.name, name) {
			is.labels = append(is.labels[:i:i], is.labels[i+1:]...)
			s.touch(is)
			s.emitIssue(rp, is, "unlabeled", actor, issueExtra{label: l})
			return true
		}
	}
	return false
}

func (s *Server) replaceLabels(rp *repoState, is *issueState, actor string, names []string) {
	want := map[string]bool{}
	for _, n := range names {
		want[strings.ToLower(strings.TrimSpace(n))] = true
	}
	for _, l := range append([]*labelState(nil), is.labels...) {
		if !want[strings.ToLower(l.name)] {
			s.removeLabel(rp, is, actor, l.name)
		}
	}
	s.addLabels(rp, is, actor, names)
}

func (s *Server) addAssignees(rp *repoState, is *issueState, actor string, users []string) {
	for _, u := range users {
		u = strings.TrimSpace(u)
		if u == "" || is.hasAssignee(u) || len(is.assignees) >= 10 {
			continue
		}
		is.assignees = append(is.assignees, u)
		s.touch(is)
		s.emitIssue(rp, is, "assigned", actor, issueExtra{assignee: u})
	}
}

func (s *Server) removeAssignees(rp *repoState, is *issueState, actor string, users []string) {
	for _, u := range users {
		for i, a := range is.assignees {
			if strings.EqualFold(a, strings.TrimSpace(u)) {
				is.assignees = append(is.assignees[:i:i], is.assignees[i+1:]...)
				s.touch(is)
				s.emitIssue(rp, is, "unassigned", actor, issueExtra{assignee: a})
				break
			}
		}
	}
}

func (s *Server) replaceAssignees(rp *repoState, is *issueState, actor string, users []string) {
	var drop []string
	for _, a := range is.assignees {
		keep := false
		for _, u := range users {
			if strings.EqualFold(a, u) {
				keep = true
			}
		}
		if !keep {
			drop = append(drop, a)
		}
	}
	s.removeAssignees(rp, is, actor, drop)
	s.addAssignees(rp, is, actor, users)
}

// setMilestone sets (number > 0) or clears (0) the issue's milestone.
func (s *Server) setMilestone(rp *repoState, is *issueState, actor string, number int) error {
	if number == is.milestone {
		return nil
	}
	if number != 0 && rp.milestones[number] == nil {
		return fmt.Errorf("no milestone %d", number)
	}
	old := rp.milestones[is.milestone]
	is.milestone = number
	s.touch(is)
	if number == 0 {
		s.emitIssue(rp, is, "demilestoned", actor, issueExtra{milestone: old})
	} else {
		s.emitIssue(rp, is, "milestoned", actor, issueExtra{milestone: rp.milestones[number]})
	}
	return nil
}

// editIssue changes title and/or body (issues.edited / pull_request.edited
// with "changes").
func (s *Server) editIssue(rp *repoState, is *issueState, actor string, title, body *string) {
	ch := &github.EditChange{}
	changed := false
	if title != nil && *title != is.title {
		ch.Title = &github.EditTitle{From: ptr(is.title)}
		is.title = *title
		changed = true
	}
	if body != nil && *body != is.body {
		ch.Body = &github.EditBody{From: ptr(is.body)}
		is.body = *body
		changed = true
	}
	if changed {
		s.touch(is)
		s.emitIssue(rp, is, "edited", actor, issueExtra{changes: ch})
	}
}

func (s *Server) closeIssue(rp *repoState, is *issueState, actor, reason string) {
	if is.state == "closed" {
		if is.pr == nil && reason != "" && reason != is.stateReason {
			is.stateReason = reason
			s.touch(is)
		}
		return
	}
	if reason == "" {
		reason = "completed"
	}
	is.state = "closed"
	if is.pr == nil {
		is.stateReason = reason
	}
	is.closedAt = now()
	is.closedBy = actor
	s.touch(is)
	s.emitIssue(rp, is, "closed", actor, issueExtra{})
}

func (s *Server) reopenIssue(rp *repoState, is *issueState, actor string) bool {
	if is.state == "open" || (is.pr != nil && is.pr.merged) {
		return false
	}
	is.state = "open"
	if is.pr == nil {
		is.stateReason = "reopened"
	}
	is.closedAt = time.Time{}
	is.closedBy = ""
	s.touch(is)
	s.emitIssue(rp, is, "reopened", actor, issueExtra{})
	return true
}

func (s *Server) newIssue(rp *repoState, user, title, body string) *issueState {
	rp.lastNumber++
	t := now()
	is := &issueState{
		id: s.newID(), number: rp.lastNumber, title: title, body: body, user: user,
		state: "open", createdAt: t, updatedAt: t,
	}
	rp.issues[is.number] = is
	return is
}

// createIssue opens an issue: issues.opened, then issues.labeled /
// issues.assigned / issues.milestoned for what it was created with.
func (s *Server) createIssue(rp *repoState, actor, title, body string, labels, assignees []string, milestone int) *issueState {
	is := s.newIssue(rp, actor, title, body)
	var ls []*labelState
	for _, n := range labels {
		if n = strings.TrimSpace(n); n != "" {
			l := s.ensureLabel(rp, actor, n)
			if !containsLabel(ls, l) {
				ls = append(ls, l)
			}
		}
	}
	is.labels = ls
	for _, a := range assignees {
		if a = strings.TrimSpace(a); a != "" && !is.hasAssignee(a) && len(is.assignees) < 10 {
			is.assignees = append(is.assignees, a)
		}
	}
	if rp.milestones[milestone] != nil {
		is.milestone = milestone
	}
	s.emitIssue(rp, is, "opened", actor, issueExtra{})
	for _, l := range is.labels {
		s.emitIssue(rp, is, "labeled", actor, issueExtra{label: l})
	}
	for _, a := range is.assignees {
		s.emitIssue(rp, is, "assigned", actor, issueExtra{assignee: a})
	}
	if is.milestone != 0 {
		s.emitIssue(rp, is, "milestoned", actor, issueExtra{milestone: rp.milestones[is.milestone]})
	}
	return is
}

func containsLabel(ls []*labelState, l *labelState) bool {
	for _, x := range ls {
		if x == l {
			return true
		}
	}
	return false
}

func (s *Server) addComment(rp *repoState, is *issueState, actor, body string) *commentState {
	t := now()
	c := &commentState{id: s.newID(), repo: rp, number: is.number, user: actor, body: body, createdAt: t, updatedAt: t}
	s.comments[c.id] = c
	is.comments = append(is.comments, c.id)
	s.touch(is)
	s.emitComment(rp, is, c, "created", actor, nil)
	return c
}

func (s *Server) editComment(rp *repoState, c *commentState, actor, body string) {
	if body == c.body {
		c.updatedAt = now()
		return
	}
	old := c.body
	c.body = body
	c.updatedAt = now()
	if is := rp.issues[c.number]; is != nil {
		s.emitComment(rp, is, c, "edited", actor, &github.EditChange{Body: &github.EditBody{From: ptr(old)}})
	}
}

func (s *Server) deleteComment(rp *repoState, c *commentState, actor string) {
	delete(s.comments, c.id)
	is := rp.issues[c.number]
	if is == nil {
		return
	}
	for i, id := range is.comments {
		if id == c.id {
			is.comments = append(is.comments[:i:i], is.comments[i+1:]...)
			break
		}
	}
	s.emitComment(rp, is, c, "deleted", actor, nil)
}

func (s *Server) createMilestone(rp *repoState, actor, title, desc, state string) *milestoneState {
	if state != "closed" {
		state = "open"
	}
	rp.lastMilestone++
	t := now()
	m := &milestoneState{id: s.newID(), number: rp.lastMilestone, title: title, description: desc, state: state,
		creator: actor, createdAt: t, updatedAt: t}
	if state == "closed" {
		m.closedAt = t
	}
	rp.milestones[m.number] = m
	s.emitMilestone(rp, m, "created", actor, nil)
	return m
}

func (s *Server) setMilestoneState(rp *repoState, m *milestoneState, actor, state string) {
	if m.state == state {
		return
	}
	m.state = state
	m.updatedAt = now()
	action := "opened"
	if state == "closed" {
		m.closedAt = m.updatedAt
		action = "closed"
	} else {
		m.closedAt = time.Time{}
	}
	s.emitMilestone(rp, m, action, actor, nil)
}

// ---- checks and statuses ----

var checkStatuses = map[string]bool{"queued": true, "in_progress": true, "completed": true, "waiting": true, "requested": true, "pending": true}
var checkConclusions = map[string]bool{"action_required": true, "cancelled": true, "failure": true, "neutral": true,
	"success": true, "skipped": true, "stale": true, "timed_out": true}

// createCheckRun records a new run and sends check_run.created (and
// check_run.completed when it is created completed).
func (s *Server) createCheckRun(rp *repoState, cr *checkRunState, sender string) {
	cr.id = s.newID()
	cr.repo = rp
	t := now()
	if cr.startedAt.IsZero() {
		cr.startedAt = t
	}
	if cr.status == "completed" && cr.completedAt.IsZero() {
		cr.completedAt = t
	}
	rp.checkRuns = append(rp.checkRuns, cr)
	s.checkRuns[cr.id] = cr
	s.emitCheckRun(rp, cr, "created", sender)
	if cr.status == "completed" {
		s.emitCheckRun(rp, cr, "completed", sender)
	}
}

func (s *Server) createStatus(rp *repoState, creator, sha, state, context, targetURL, desc string) *statusState {
	if context == "" {
		context = "default"
	}
	st := &statusState{id: s.newID(), sha: sha, state: state, context: context, targetURL: targetURL,
		description: desc, creator: creator, createdAt: now()}
	rp.statuses = append(rp.statuses, st)
	s.emitStatus(rp, st, creator)
	return st
}

// combinedState is GitHub's combined commit status over the latest status
// of each context.
func combinedState(latest []*statusState) string {
	if len(latest) == 0 {
		return "pending"
	}
	state := "success"
	for _, st := range latest {
		switch st.state {
		case "error", "failure":
			return "failure"
		case "pending":
			state = "pending"
		}
	}
	return state
}

func latestStatuses(rp *repoState, sha string) []*statusState {
	seen := map[string]bool{}
	var out []*statusState
	for i := len(rp.statuses) - 1; i >= 0; i-- {
		st := rp.statuses[i]
		if st.sha != sha || seen[st.context] {
			continue
		}
		seen[st.context] = true
		out = append(out, st)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].context < out[j].context })
	return out
}

// ---- commits ----

func (s *Server) newCommit(rp *repoState, author, message string, parent string) *commitState {
	c := &commitState{sha: s.newSHA(rp.fullName(), author, message), author: author, message: message, time: now()}
	if parent != "" {
		c.parents = []string{parent}
	}
	rp.commits[c.sha] = c
	return c
}

// closingRE finds GitHub's closing keywords followed by an issue reference:
// "#12", "owner/repo#12" or an issues URL.
var closingRE = regexp.MustCompile(`(?i)\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\s*:?\s+(?:([\w.-]+/[\w.-]+)#(\d+)|#(\d+)|https?://[^\s/]+/([\w.-]+/[\w.-]+)/issues/(\d+))`)

// closingRefs lists the issue numbers of rp that text closes.
func closingRefs(rp *repoState, text string) []int {
	var out []int
	seen := map[int]bool{}
	for _, m := range closingRE.FindAllStringSubmatch(text, -1) {
		repo, num := "", ""
		switch {
		case m[2] != "":
			repo, num = m[1], m[2]
		case m[3] != "":
			num = m[3]
		case m[5] != "":
			repo, num = m[4], m[5]
		}
		if repo != "" && !strings.EqualFold(repo, rp.fullName()) {
			continue
		}
		n, err := strconv.Atoi(num)
		if err != nil || seen[n] {
			continue
		}
		seen[n] = true
		out = append(out, n)
	}
	return out
}
