package githubtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/go-github/v60/github"
)

const maxBody = 65536

func (s *Server) issueRoutes(h routeFunc) {
	const r = "/repos/{owner}/{repo}"
	// comments by id first: "comments" is not an issue number
	h("GET", r+"/issues/comments", authRepo, s.listRepoComments)
	h("GET", r+"/issues/comments/{id:[0-9]+}", authRepo, s.getComment)
	h("PATCH", r+"/issues/comments/{id:[0-9]+}", authRepo, s.editCommentAPI)
	h("DELETE", r+"/issues/comments/{id:[0-9]+}", authRepo, s.deleteCommentAPI)

	h("GET", r+"/issues", authRepo, s.listIssues)
	h("POST", r+"/issues", authRepo, s.createIssueAPI)
	h("GET", r+"/issues/{number:[0-9]+}", authRepo, s.getIssue)
	h("PATCH", r+"/issues/{number:[0-9]+}", authRepo, s.patchIssue)

	h("GET", r+"/issues/{number:[0-9]+}/labels", authRepo, s.listIssueLabels)
	h("POST", r+"/issues/{number:[0-9]+}/labels", authRepo, s.addIssueLabels)
	h("PUT", r+"/issues/{number:[0-9]+}/labels", authRepo, s.replaceIssueLabels)
	h("DELETE", r+"/issues/{number:[0-9]+}/labels", authRepo, s.clearIssueLabels)
	h("DELETE", r+"/issues/{number:[0-9]+}/labels/{name}", authRepo, s.removeIssueLabel)

	h("GET", r+"/issues/{number:[0-9]+}/events", authRepo, s.listIssueEvents)
	h("GET", r+"/issues/{number:[0-9]+}/comments", authRepo, s.listComments)
	h("POST", r+"/issues/{number:[0-9]+}/comments", authRepo, s.createCommentAPI)

	h("POST", r+"/issues/{number:[0-9]+}/assignees", authRepo, s.addAssigneesAPI)
	h("DELETE", r+"/issues/{number:[0-9]+}/assignees", authRepo, s.removeAssigneesAPI)

	h("GET", r+"/labels", authRepo, s.listRepoLabels)
	h("POST", r+"/labels", authRepo, s.createLabelAPI)
	h("GET", r+"/labels/{name}", authRepo, s.getLabel)
	h("PATCH", r+"/labels/{name}", authRepo, s.patchLabel)
	h("DELETE", r+"/labels/{name}", authRepo, s.deleteLabel)

	h("GET", r+"/milestones", authRepo, s.listMilestones)
	h("POST", r+"/milestones", authRepo, s.createMilestoneAPI)
	h("GET", r+"/milestones/{number:[0-9]+}", authRepo, s.getMilestone)
	h("PATCH", r+"/milestones/{number:[0-9]+}", authRepo, s.patchMilestone)
}

// issue resolves {number}; it answers 404 and returns nil when unknown.
func (c *apiCall) issue() *issueState {
	n, err := strconv.Atoi(c.vars["number"])
	if err != nil {
		c.notFound()
		return nil
	}
	is := c.repo.issues[n]
	if to := c.repo.moved[n]; is == nil && to != "" {
		c.w.Header().Set("Location", to)
		c.fail(http.StatusMovedPermanently, "Moved Permanently")
		return nil
	}
	if is == nil && c.repo.deleted[n] {
		c.fail(http.StatusGone, "This issue was deleted")
		return nil
	}
	if is == nil {
		c.notFound()
		return nil
	}
	return is
}

// bot is who acts in a REST call: the App's bot, or the person whose
// personal access token made it.
func (c *apiCall) bot() string {
	if c.user != "" {
		return c.user
	}
	return c.s.botLogin
}

// ---- issues ----

func (s *Server) getIssue(c *apiCall) {
	if is := c.issue(); is != nil {
		c.json(http.StatusOK, s.ghIssueFull(c.repo, is))
	}
}

func (s *Server) listIssues(c *apiCall) {
	q := c.r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	var labels []string
	if v := q.Get("labels"); v != "" {
		for _, l := range strings.Split(v, ",") {
			if l = strings.TrimSpace(l); l != "" {
				labels = append(labels, l)
			}
		}
	}
	var since time.Time
	if v := q.Get("since"); v != "" {
		since, _ = time.Parse(time.RFC3339, v)
	}
	var list []*issueState
	for _, n := range sortedIssueNumbers(c.repo) {
		is := c.repo.issues[n]
		if state != "all" && is.state != state {
			continue
		}
		if !matchMilestone(c.repo, is, q.Get("milestone")) {
			continue
		}
		if !matchUser(is.assignees, q.Get("assignee")) {
			continue
		}
		if v := q.Get("creator"); v != "" && !strings.EqualFold(v, is.user) {
			continue
		}
		ok := true
		for _, l := range labels {
			if lab := c.repo.label(l); lab == nil || !is.hasLabel(lab) {
				ok = false
			}
		}
		if !ok || (!since.IsZero() && is.updatedAt.Before(since)) {
			continue
		}
		list = append(list, is)
	}
	sortIssues(list, q.Get("sort"), q.Get("direction"))
	out := make([]any, 0, len(list))
	for _, is := range paginate(c, list) {
		out = append(out, s.ghIssueFull(c.repo, is))
	}
	c.json(http.StatusOK, out)
}

func matchMilestone(rp *repoState, is *issueState, f string) bool {
	switch f {
	case "":
		return true
	case "none":
		return is.milestone == 0
	case "*":
		return is.milestone != 0
	}
	n, err := strconv.Atoi(f)
	return err == nil && is.milestone == n
}

func matchUser(users []string, f string) bool {
	switch f {
	case "":
		return true
	case "none":
		return len(users) == 0
	case "*":
		return len(users) > 0
	}
	for _, u := range users {
		if strings.EqualFold(u, f) {
			return true
		}
	}
	return false
}

func sortIssues(list []*issueState, by, dir string) {
	key := func(is *issueState) int64 {
		switch by {
		case "updated":
			return is.updatedAt.UnixNano()
		case "comments":
			return int64(len(is.comments))
		}
		return int64(is.number) // created
	}
	asc := dir == "asc"
	sort.SliceStable(list, func(i, j int) bool {
		a, b := key(list[i]), key(list[j])
		if a == b {
			a, b = int64(list[i].number), int64(list[j].number)
		}
		if asc {
			return a < b
		}
		return a > b
	})
}

// parseNames reads label or user names: ["a","b"], [{"name":"a"}]. Like
// GitHub, it refuses anything but an array ("labels": "a" is invalid).
func parseNames(raw json.RawMessage) ([]string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, true
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, false
	}
	out := []string{}
	for _, it := range items {
		var name string
		if json.Unmarshal(it, &name) == nil {
			out = append(out, name)
			continue
		}
		var obj struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(it, &obj) != nil {
			return nil, false
		}
		out = append(out, obj.Name)
	}
	return out, true
}

// labelsBody reads the body of POST/PUT .../labels: a bare array or
// {"labels": [...]}.
func (c *apiCall) labelsBody() ([]string, bool) {
	body := bytes.TrimSpace(c.info.body)
	if len(body) > 0 && body[0] == '{' {
		var m map[string]json.RawMessage
		if json.Unmarshal(body, &m) != nil {
			c.fail(http.StatusBadRequest, "Problems parsing JSON")
			return nil, false
		}
		names, ok := parseNames(m["labels"])
		if !ok {
			c.invalid("Label", "labels", "invalid", "")
			return nil, false
		}
		return names, true
	}
	names, ok := parseNames(body)
	if !ok {
		c.fail(http.StatusBadRequest, "Problems parsing JSON")
		return nil, false
	}
	return names, true
}

func (c *apiCall) checkBody(resource, body string) bool {
	if utf8.RuneCountInString(body) > maxBody {
		c.invalid(resource, "body", "custom", "body is too long (maximum is 65536 characters)")
		return false
	}
	return true
}

func (s *Server) createIssueAPI(c *apiCall) {
	var req struct {
		Title     *json.RawMessage `json:"title"`
		Body      *string          `json:"body"`
		Labels    json.RawMessage  `json:"labels"`
		Assignees json.RawMessage  `json:"assignees"`
		Assignee  *string          `json:"assignee"`
		Milestone *json.RawMessage `json:"milestone"`
	}
	if !c.decode(&req) {
		return
	}
	title := ""
	if req.Title != nil {
		if err := json.Unmarshal(*req.Title, &title); err != nil {
			var n json.Number
			if json.Unmarshal(*req.Title, &n) == nil {
				title = n.String()
			}
		}
	}
	if strings.TrimSpace(title) == "" {
		c.invalid("Issue", "title", "missing_field", "")
		return
	}
	body := ""
	if req.Body != nil {
		body = *req.Body
	}
	if !c.checkBody("Issue", body) {
		return
	}
	labels, ok := parseNames(req.Labels)
	if !ok {
		c.invalid("Issue", "labels", "invalid", "")
		return
	}
	assignees, ok := parseNames(req.Assignees)
	if !ok {
		c.invalid("Issue", "assignees", "invalid", "")
		return
	}
	if req.Assignee != nil && *req.Assignee != "" {
		assignees = append(assignees, *req.Assignee)
	}
	milestone := 0
	if req.Milestone != nil && string(*req.Milestone) != "null" {
		if err := json.Unmarshal(*req.Milestone, &milestone); err != nil || c.repo.milestones[milestone] == nil {
			c.invalid("Issue", "milestone", "invalid", "")
			return
		}
	}
	is := s.createIssue(c.repo, c.bot(), title, body, labels, assignees, milestone)
	c.json(http.StatusCreated, s.ghIssue(c.repo, is))
}

func (s *Server) patchIssue(c *apiCall) {
	is := c.issue()
	if is == nil {
		return
	}
	var m map[string]json.RawMessage
	if !c.decode(&m) {
		return
	}
	str := func(key string) (*string, bool) {
		raw, ok := m[key]
		if !ok {
			return nil, true
		}
		if string(bytes.TrimSpace(raw)) == "null" {
			return ptr(""), true
		}
		var v string
		if json.Unmarshal(raw, &v) != nil {
			return nil, false
		}
		return &v, true
	}
	title, ok1 := str("title")
	body, ok2 := str("body")
	state, ok3 := str("state")
	reason, ok4 := str("state_reason")
	if !ok1 || !ok2 || !ok3 || !ok4 {
		c.invalid("Issue", "", "invalid", "")
		return
	}
	if title != nil && strings.TrimSpace(*title) == "" {
		c.invalid("Issue", "title", "missing_field", "")
		return
	}
	if body != nil && !c.checkBody("Issue", *body) {
		return
	}
	if state != nil && *state != "open" && *state != "closed" {
		c.invalid("Issue", "state", "invalid", "")
		return
	}
	if reason != nil && *reason != "" && *reason != "completed" && *reason != "not_planned" && *reason != "reopened" {
		c.invalid("Issue", "state_reason", "invalid", "")
		return
	}
	var labels, assignees []string
	_, setLabels := m["labels"]
	if setLabels {
		var ok bool
		if labels, ok = parseNames(m["labels"]); !ok {
			c.invalid("Issue", "labels", "invalid", "")
			return
		}
	}
	_, setAssignees := m["assignees"]
	if setAssignees {
		var ok bool
		if assignees, ok = parseNames(m["assignees"]); !ok {
			c.invalid("Issue", "assignees", "invalid", "")
			return
		}
	}
	if raw, ok := m["assignee"]; ok && !setAssignees {
		setAssignees = true
		var one string
		if json.Unmarshal(raw, &one) == nil && one != "" { // the single assignee, a login
			assignees = []string{one}
		}
	}
	milestone, setMilestone := -1, false
	if raw, ok := m["milestone"]; ok {
		setMilestone = true
		if string(bytes.TrimSpace(raw)) == "null" {
			milestone = 0
		} else if json.Unmarshal(raw, &milestone) != nil || (milestone != 0 && c.repo.milestones[milestone] == nil) {
			c.invalid("Issue", "milestone", "invalid", "")
			return
		}
	}

	bot := c.bot()
	s.editIssue(c.repo, is, bot, title, body)
	if setLabels {
		s.replaceLabels(c.repo, is, bot, labels)
	}
	if setAssignees {
		s.replaceAssignees(c.repo, is, bot, assignees)
	}
	if setMilestone {
		_ = s.setMilestone(c.repo, is, bot, milestone)
	}
	r := ""
	if reason != nil {
		r = *reason
	}
	switch {
	case state != nil && *state == "closed":
		s.closeIssue(c.repo, is, bot, r)
	case state != nil && *state == "open":
		s.reopenIssue(c.repo, is, bot)
	case reason != nil && is.state == "closed" && is.pr == nil && r != "" && r != "reopened":
		is.stateReason = r
	}
	c.json(http.StatusOK, s.ghIssue(c.repo, is))
}

// ---- issue labels ----

func (s *Server) listIssueLabels(c *apiCall) {
	if is := c.issue(); is != nil {
		c.json(http.StatusOK, paginate(c, s.ghLabels(c.repo, is.labels)))
	}
}

func (s *Server) addIssueLabels(c *apiCall) {
	is := c.issue()
	if is == nil {
		return
	}
	names, ok := c.labelsBody()
	if !ok {
		return
	}
	for _, n := range names {
		if strings.TrimSpace(n) == "" {
			c.invalid("Label", "name", "missing_field", "")
			return
		}
	}
	s.addLabels(c.repo, is, c.bot(), names)
	c.json(http.StatusOK, s.ghLabels(c.repo, is.labels))
}

func (s *Server) replaceIssueLabels(c *apiCall) {
	is := c.issue()
	if is == nil {
		return
	}
	names, ok := c.labelsBody()
	if !ok {
		return
	}
	s.replaceLabels(c.repo, is, c.bot(), names)
	c.json(http.StatusOK, s.ghLabels(c.repo, is.labels))
}

func (s *Server) clearIssueLabels(c *apiCall) {
	is := c.issue()
	if is == nil {
		return
	}
	s.replaceLabels(c.repo, is, c.bot(), nil)
	c.noContent()
}

func (s *Server) removeIssueLabel(c *apiCall) {
	is := c.issue()
	if is == nil {
		return
	}
	if !s.removeLabel(c.repo, is, c.bot(), c.vars["name"]) {
		c.fail(http.StatusNotFound, "Label does not exist")
		return
	}
	c.json(http.StatusOK, s.ghLabels(c.repo, is.labels))
}

// ---- repository labels ----

func (s *Server) listRepoLabels(c *apiCall) {
	c.json(http.StatusOK, paginate(c, s.ghLabels(c.repo, c.repo.labels)))
}

func (s *Server) getLabel(c *apiCall) {
	l := c.repo.label(c.vars["name"])
	if l == nil {
		c.notFound()
		return
	}
	c.json(http.StatusOK, s.ghLabel(c.repo, l))
}

func normColor(v string) (string, bool) {
	v = strings.TrimPrefix(v, "#")
	return strings.ToLower(v), colorRE.MatchString(v)
}

func (s *Server) createLabelAPI(c *apiCall) {
	var req struct {
		Name        string `json:"name"`
		Color       string `json:"color"`
		Description string `json:"description"`
	}
	if !c.decode(&req) {
		return
	}
	if strings.TrimSpace(req.Name) == "" {
		c.invalid("Label", "name", "missing_field", "")
		return
	}
	color := defaultLabelColor
	if req.Color != "" {
		var ok bool
		if color, ok = normColor(req.Color); !ok {
			c.invalid("Label", "color", "invalid", "")
			return
		}
	}
	if utf8.RuneCountInString(req.Description) > 100 {
		c.invalid("Label", "description", "custom", "description is too long (maximum is 100 characters)")
		return
	}
	if c.repo.label(req.Name) != nil {
		c.invalid("Label", "name", "already_exists", "")
		return
	}
	l := s.createLabel(c.repo, c.bot(), req.Name, color, req.Description)
	c.json(http.StatusCreated, s.ghLabel(c.repo, l))
}

func (s *Server) patchLabel(c *apiCall) {
	l := c.repo.label(c.vars["name"])
	if l == nil {
		c.notFound()
		return
	}
	var req struct {
		NewName     *string `json:"new_name"`
		Name        *string `json:"name"`
		Color       *string `json:"color"`
		Description *string `json:"description"`
	}
	if !c.decode(&req) {
		return
	}
	newName := req.NewName
	if newName == nil {
		newName = req.Name
	}
	changes := map[string]any{}
	if newName != nil && *newName != "" && *newName != l.name {
		if other := c.repo.label(*newName); other != nil && other != l {
			c.invalid("Label", "name", "already_exists", "")
			return
		}
		changes["name"] = map[string]string{"from": l.name}
	}
	var color string
	if req.Color != nil {
		var ok bool
		if color, ok = normColor(*req.Color); !ok {
			c.invalid("Label", "color", "invalid", "")
			return
		}
		if color != l.color {
			changes["color"] = map[string]string{"from": l.color}
		}
	}
	if req.Description != nil && *req.Description != l.description {
		changes["description"] = map[string]string{"from": l.description}
	}
	if _, ok := changes["name"]; ok {
		l.name = *newName
	}
	if _, ok := changes["color"]; ok {
		l.color = color
	}
	if _, ok := changes["description"]; ok {
		l.description = *req.Description
	}
	if len(changes) > 0 {
		s.emitLabel(c.repo, l, "edited", c.bot(), changes)
	}
	c.json(http.StatusOK, s.ghLabel(c.repo, l))
}

// dropLabel deletes label l from the repository and every issue carrying it.
func (rp *repoState) dropLabel(l *labelState) {
	rp.labels = slices.DeleteFunc(rp.labels, func(x *labelState) bool { return x == l })
	for _, is := range rp.issues {
		is.labels = slices.DeleteFunc(is.labels, func(x *labelState) bool { return x == l })
	}
}

func (s *Server) deleteLabel(c *apiCall) {
	l := c.repo.label(c.vars["name"])
	if l == nil {
		c.notFound()
		return
	}
	c.repo.dropLabel(l)
	s.emitLabel(c.repo, l, "deleted", c.bot(), nil)
	c.noContent()
}

// ---- comments ----

func (s *Server) issueComments(rp *repoState, is *issueState) []*commentState {
	out := make([]*commentState, 0, len(is.comments))
	for _, id := range is.comments {
		if cm := s.comments[id]; cm != nil {
			out = append(out, cm)
		}
	}
	return out
}

func sinceFilter(c *apiCall, list []*commentState) []*commentState {
	v := c.r.URL.Query().Get("since")
	if v == "" {
		return list
	}
	since, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return list
	}
	var out []*commentState
	for _, cm := range list {
		if !cm.updatedAt.Before(since) {
			out = append(out, cm)
		}
	}
	return out
}

func (s *Server) listComments(c *apiCall) {
	is := c.issue()
	if is == nil {
		return
	}
	list := paginate(c, sinceFilter(c, s.issueComments(c.repo, is)))
	out := make([]*github.IssueComment, 0, len(list))
	for _, cm := range list {
		out = append(out, s.ghComment(c.repo, cm))
	}
	c.json(http.StatusOK, out)
}

func (s *Server) listRepoComments(c *apiCall) {
	var list []*commentState
	for _, n := range sortedIssueNumbers(c.repo) {
		list = append(list, s.issueComments(c.repo, c.repo.issues[n])...)
	}
	q := c.r.URL.Query()
	desc := q.Get("direction") == "desc"
	byUpdated := q.Get("sort") == "updated"
	sort.SliceStable(list, func(i, j int) bool {
		a, b := list[i].createdAt, list[j].createdAt
		if byUpdated {
			a, b = list[i].updatedAt, list[j].updatedAt
		}
		if a.Equal(b) {
			if desc {
				return list[i].id > list[j].id
			}
			return list[i].id < list[j].id
		}
		if desc {
			return a.After(b)
		}
		return a.Before(b)
	})
	list = paginate(c, sinceFilter(c, list))
	out := make([]*github.IssueComment, 0, len(list))
	for _, cm := range list {
		out = append(out, s.ghComment(c.repo, cm))
	}
	c.json(http.StatusOK, out)
}

func (c *apiCall) comment() *commentState {
	id, ok := c.intVar("id")
	cm := c.s.comments[id]
	if !ok || cm == nil || cm.repo != c.repo {
		c.notFound()
		return nil
	}
	return cm
}

func (s *Server) getComment(c *apiCall) {
	if cm := c.comment(); cm != nil {
		c.json(http.StatusOK, s.ghComment(c.repo, cm))
	}
}

func (c *apiCall) commentBody() (string, bool) {
	var req struct {
		Body *string `json:"body"`
	}
	if !c.decode(&req) {
		return "", false
	}
	if req.Body == nil || strings.TrimSpace(*req.Body) == "" {
		c.invalid("IssueComment", "body", "missing_field", "")
		return "", false
	}
	if !c.checkBody("IssueComment", *req.Body) {
		return "", false
	}
	return *req.Body, true
}

func (s *Server) createCommentAPI(c *apiCall) {
	is := c.issue()
	if is == nil {
		return
	}
	body, ok := c.commentBody()
	if !ok {
		return
	}
	cm := s.addComment(c.repo, is, c.bot(), body)
	c.json(http.StatusCreated, s.ghComment(c.repo, cm))
}

func (s *Server) editCommentAPI(c *apiCall) {
	cm := c.comment()
	if cm == nil {
		return
	}
	body, ok := c.commentBody()
	if !ok {
		return
	}
	s.editComment(c.repo, cm, c.bot(), body)
	c.json(http.StatusOK, s.ghComment(c.repo, cm))
}

func (s *Server) deleteCommentAPI(c *apiCall) {
	cm := c.comment()
	if cm == nil {
		return
	}
	s.deleteComment(c.repo, cm, c.bot())
	c.noContent()
}

// ---- assignees ----

func (c *apiCall) assigneesBody() ([]string, bool) {
	var m map[string]json.RawMessage
	if !c.decode(&m) {
		return nil, false
	}
	names, ok := parseNames(m["assignees"])
	if !ok {
		c.invalid("Issue", "assignees", "invalid", "")
		return nil, false
	}
	return names, true
}

func (s *Server) addAssigneesAPI(c *apiCall) {
	is := c.issue()
	if is == nil {
		return
	}
	names, ok := c.assigneesBody()
	if !ok {
		return
	}
	s.addAssignees(c.repo, is, c.bot(), names)
	c.json(http.StatusCreated, s.ghIssue(c.repo, is))
}

func (s *Server) removeAssigneesAPI(c *apiCall) {
	is := c.issue()
	if is == nil {
		return
	}
	names, ok := c.assigneesBody()
	if !ok {
		return
	}
	s.removeAssignees(c.repo, is, c.bot(), names)
	c.json(http.StatusOK, s.ghIssue(c.repo, is))
}

// ---- milestones ----

func (s *Server) listMilestones(c *apiCall) {
	q := c.r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	nums := make([]int, 0, len(c.repo.milestones))
	for n, m := range c.repo.milestones {
		if state == "all" || m.state == state {
			nums = append(nums, n)
		}
	}
	sort.Ints(nums)
	if q.Get("direction") == "desc" {
		sort.Sort(sort.Reverse(sort.IntSlice(nums)))
	}
	out := make([]*github.Milestone, 0, len(nums))
	for _, n := range paginate(c, nums) {
		out = append(out, s.ghMilestone(c.repo, c.repo.milestones[n]))
	}
	c.json(http.StatusOK, out)
}

func (c *apiCall) milestone() *milestoneState {
	n, err := strconv.Atoi(c.vars["number"])
	m := c.repo.milestones[n]
	if err != nil || m == nil {
		c.notFound()
		return nil
	}
	return m
}

func (s *Server) getMilestone(c *apiCall) {
	if m := c.milestone(); m != nil {
		c.json(http.StatusOK, s.ghMilestone(c.repo, m))
	}
}

type milestoneReq struct {
	Title       *string `json:"title"`
	State       *string `json:"state"`
	Description *string `json:"description"`
}

func (s *Server) createMilestoneAPI(c *apiCall) {
	var req milestoneReq
	if !c.decode(&req) {
		return
	}
	if req.Title == nil || strings.TrimSpace(*req.Title) == "" {
		c.invalid("Milestone", "title", "missing_field", "")
		return
	}
	for _, m := range c.repo.milestones {
		if m.title == *req.Title {
			c.invalid("Milestone", "title", "already_exists", "")
			return
		}
	}
	state, desc := "open", ""
	if req.State != nil {
		if *req.State != "open" && *req.State != "closed" {
			c.invalid("Milestone", "state", "invalid", "")
			return
		}
		state = *req.State
	}
	if req.Description != nil {
		desc = *req.Description
	}
	m := s.createMilestone(c.repo, c.bot(), *req.Title, desc, state)
	c.json(http.StatusCreated, s.ghMilestone(c.repo, m))
}

func (s *Server) patchMilestone(c *apiCall) {
	m := c.milestone()
	if m == nil {
		return
	}
	var req milestoneReq
	if !c.decode(&req) {
		return
	}
	if req.State != nil && *req.State != "open" && *req.State != "closed" {
		c.invalid("Milestone", "state", "invalid", "")
		return
	}
	changes := map[string]any{}
	if req.Title != nil && *req.Title != "" && *req.Title != m.title {
		changes["title"] = map[string]string{"from": m.title}
		m.title = *req.Title
	}
	if req.Description != nil && *req.Description != m.description {
		changes["description"] = map[string]string{"from": m.description}
		m.description = *req.Description
	}
	if len(changes) > 0 {
		m.updatedAt = now()
		s.emitMilestone(c.repo, m, "edited", c.bot(), changes)
	}
	if req.State != nil {
		s.setMilestoneState(c.repo, m, c.bot(), *req.State)
	}
	c.json(http.StatusOK, s.ghMilestone(c.repo, m))
}

// listIssueEvents is GET /repos/{owner}/{repo}/issues/{issue_number}/events:
// the issue's events, oldest first, paginated.
func (s *Server) listIssueEvents(c *apiCall) {
	is := c.issue()
	if is == nil {
		return
	}
	list := paginate(c, is.events)
	out := make([]*github.IssueEvent, 0, len(list))
	for _, e := range list {
		ev := &github.IssueEvent{ID: ptr(e.id), Event: ptr(e.event), Actor: s.ghUser(e.actor), CreatedAt: ts(e.createdAt),
			URL: ptr(fmt.Sprintf("%srepos/%s/issues/events/%d", s.url, c.repo.fullName(), e.id))}
		if e.label != "" {
			ev.Label = &github.Label{Name: ptr(e.label), Color: ptr(e.labelColor)}
		}
		if e.assignee != "" {
			ev.Assignee = s.ghUser(e.assignee)
		}
		if e.milestone != "" {
			ev.Milestone = &github.Milestone{Title: ptr(e.milestone)}
		}
		if userType(e.actor) == "Bot" && e.actor == s.botLogin {
			ev.PerformedViaGithubApp = s.ghApp(s.opts.AppSlug) // GitHub's integration: name and html_url too
		}
		out = append(out, ev)
	}
	c.json(http.StatusOK, out)
}
