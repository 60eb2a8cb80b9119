package githubtest

import (
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v60/github"
)

// ---- model (all guarded by Server.mu) ----

type installationState struct {
	id        int64
	account   string
	createdAt time.Time
}

type repoState struct {
	id            int64
	owner, name   string
	installation  int64
	defaultBranch string
	headSHA       string // head of the default branch
	createdAt     time.Time
	perms         map[string]string // lower(login) -> admin|maintain|write|triage|read|none
	files         map[string]string // default branch: path -> content
	labels        []*labelState     // creation order
	issues        map[int]*issueState
	deleted       map[int]bool   // issues deleted (or converted to discussions): GitHub answers 410 Gone
	moved         map[int]string // issues transferred away: the API URL GitHub redirects to (301)
	lastNumber    int
	milestones    map[int]*milestoneState
	lastMilestone int
	checkRuns     []*checkRunState
	suites        []*suiteState // check suites opened explicitly (workflows.go)
	noActions     bool          // the installation lacks the Actions permission (DenyActions)
	statuses      []*statusState
	commits       map[string]*commitState // every known sha
	queue         []*queueEntry           // the merge queue, first in line first
	branches      map[string]*branchState // branches pushed with PushBranch (branches.go)
	activity      []*activityState        // pushes and branch changes, oldest first (branches.go)
}

func (rp *repoState) fullName() string { return rp.owner + "/" + rp.name }

type labelState struct {
	id          int64
	name        string
	color       string
	description string
}

type milestoneState struct {
	id          int64
	number      int
	title       string
	description string
	state       string
	creator     string
	createdAt   time.Time
	updatedAt   time.Time
	closedAt    time.Time
}

type issueState struct {
	id          int64
	number      int
	title       string
	body        string
	user        string
	state       string // open | closed
	stateReason string // completed | not_planned | reopened | ""
	assignees   []string
	labels      []*labelState
	milestone   int
	comments    []int64
	events      []*issueEventState // the issue's timeline events (GET .../issues/{n}/events)
	createdAt   time.Time
	updatedAt   time.Time
	closedAt    time.Time
	closedBy    string
	pr          *prState // nil for a plain issue
	// dependencies.go: the issues it is blocked by and blocks, its
	// sub-issues and its parent.
	blockedBy, blocking, subIssues []issueRef
	parent                         *issueRef
}

// issueEventState is one event of an issue's history, as the issue events
// API lists it: labeled, unlabeled, assigned, unassigned, closed, reopened,
// milestoned, demilestoned.
type issueEventState struct {
	id         int64
	event      string
	actor      string
	label      string // labeled, unlabeled
	labelColor string
	assignee   string // assigned, unassigned
	milestone  string // milestoned, demilestoned: the milestone's title
	createdAt  time.Time
}

type prState struct {
	headRef        string
	headSHA        string
	headFork       *forkState // the head branch is in this fork (forks.go); nil: in the repository itself
	baseRef        string
	baseSHA        string
	draft          bool
	merged         bool
	mergedAt       time.Time
	mergedBy       string
	mergeCommitSHA string
	commits        []*commitState
	files          []prFile
	reviews        []*reviewState
}

type prFile struct {
	filename string
	status   string // added | modified | removed
	patch    string // the change as GitHub shows it ("": none shown)
}

type commitState struct {
	sha    string
	author string
	email  string // the git author's email ("": author's noreply address)
	// committer is who committed it ("": the author); committerMail its email.
	committer     string
	committerMail string
	message       string
	parents       []string
	time          time.Time
	added         []string
	changed       []string
	removed       []string
	files         map[string]string // files written on a PR's branch up to this commit (path -> content)
}

type reviewState struct {
	id          int64
	user        string
	state       string // APPROVED | CHANGES_REQUESTED | COMMENTED | DISMISSED
	body        string
	commitID    string
	submittedAt time.Time
}

type commentState struct {
	id        int64
	repo      *repoState
	number    int
	user      string
	body      string
	createdAt time.Time
	updatedAt time.Time
	editor    string    // who last edited the body ("": never edited)
	editedAt  time.Time // when
}

type checkRunState struct {
	id          int64
	repo        *repoState
	headSHA     string
	name        string
	status      string
	conclusion  string
	title       string
	summary     string
	text        string
	detailsURL  string
	externalID  string
	appSlug     string
	startedAt   time.Time
	completedAt time.Time
	suite       *suiteState // its check suite (workflows.go); nil: the App's one suite on the commit
	// token: created through the Checks API with a workflow's token
	// (WorkflowTokenCheckRun), no job of its suite's workflow run.
	token bool
	// attempt is the workflow run's attempt a job's check run belongs to.
	attempt int
}

type statusState struct {
	id          int64
	sha         string
	state       string
	context     string
	targetURL   string
	description string
	creator     string
	createdAt   time.Time
}

type teamState struct {
	id      int64
	org     string
	slug    string
	members []string
}

// ---- ids, shas, times ----

func (s *Server) newID() int64 {
	s.nextID++
	return s.nextID
}

func (s *Server) newSHA(parts ...string) string {
	s.seq++
	h := sha1.New()
	fmt.Fprintf(h, "%d|%d|%s", s.seq, time.Now().UnixNano(), strings.Join(parts, "|"))
	return hex.EncodeToString(h.Sum(nil))
}

func now() time.Time { return time.Now().UTC().Truncate(time.Second) }

func ts(t time.Time) *github.Timestamp {
	if t.IsZero() {
		return nil
	}
	return &github.Timestamp{Time: t}
}

func ptr[T any](v T) *T { return &v }

func strOrNil(v string) *string {
	if v == "" {
		return nil
	}
	return &v
}

func blobSHA(content string) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00%s", len(content), content)
	return hex.EncodeToString(h.Sum(nil))
}

// ---- lookups ----

func (s *Server) repoByName(full string) *repoState {
	return s.repos[strings.ToLower(strings.TrimSpace(full))]
}

func (rp *repoState) label(name string) *labelState {
	for _, l := range rp.labels {
		if strings.EqualFold(l.name, name) {
			return l
		}
	}
	return nil
}

func (is *issueState) hasLabel(l *labelState) bool {
	for _, x := range is.labels {
		if x == l {
			return true
		}
	}
	return false
}

func (is *issueState) hasAssignee(login string) bool {
	for _, a := range is.assignees {
		if strings.EqualFold(a, login) {
			return true
		}
	}
	return false
}

// permission is the role of login on the repository: the explicit one, admin
// for the owning account, none otherwise.
func (rp *repoState) permission(login string) string {
	if p, ok := rp.perms[strings.ToLower(login)]; ok {
		return p
	}
	if strings.EqualFold(login, rp.owner) {
		return "admin"
	}
	return "none"
}

// resolveRef turns a sha (full or abbreviated, at least 7 chars), "HEAD", a
// branch name (the default branch or an open PR's head ref) or
// "refs/heads/<branch>" into a known commit sha.
func (s *Server) resolveRef(rp *repoState, ref string) (string, bool) {
	ref = strings.TrimPrefix(ref, "refs/heads/")
	if ref == "" || ref == "HEAD" || ref == rp.defaultBranch {
		return rp.headSHA, true
	}
	if _, ok := rp.commits[strings.ToLower(ref)]; ok {
		return strings.ToLower(ref), true
	}
	for _, n := range sortedIssueNumbers(rp) {
		is := rp.issues[n]
		if is.pr != nil && is.state == "open" && !is.pr.merged && is.pr.headRef == ref {
			return is.pr.headSHA, true
		}
	}
	if len(ref) >= 7 && isHex(ref) {
		for sha := range rp.commits {
			if strings.HasPrefix(sha, strings.ToLower(ref)) {
				return sha, true
			}
		}
	}
	return "", false
}

func isHex(v string) bool {
	_, err := hex.DecodeString(strings.Repeat("0", len(v)%2) + v)
	return err == nil
}

func sortedIssueNumbers(rp *repoState) []int {
	out := make([]int, 0, len(rp.issues))
	for n := range rp.issues {
		out = append(out, n)
	}
	sort.Ints(out)
	return out
}

// ---- conversion to go-github types (GitHub's JSON shapes) ----

func (s *Server) apiURL(path string) string { return s.url + "api/v3/" + strings.TrimPrefix(path, "/") }
func (s *Server) webURL(path string) string { return s.htmlURL + strings.TrimPrefix(path, "/") }

func (s *Server) userID(login string) int64 {
	k := strings.ToLower(login)
	id, ok := s.userIDs[k]
	if !ok {
		id = 100 + int64(len(s.userIDs))
		if strings.EqualFold(login, s.botLogin) {
			id = 41000000 + s.opts.AppID
		}
		s.userIDs[k] = id
	}
	return id
}

func userType(login string) string {
	if strings.HasSuffix(login, "[bot]") {
		return "Bot"
	}
	return "User"
}

func (s *Server) ghUser(login string) *github.User {
	if login == "" {
		return nil
	}
	id := s.userID(login)
	typ := userType(login)
	if s.isOrg(login) {
		typ = "Organization"
	}
	htmlLogin := login
	if typ == "Bot" {
		htmlLogin = "apps/" + strings.TrimSuffix(login, "[bot]")
	}
	if cur, ok := s.currentLogin[id]; ok {
		login = cur // references keep the account, which shows its current login
	}
	return &github.User{
		Login:     ptr(login),
		ID:        ptr(id),
		NodeID:    ptr(nodeID("U", id)),
		AvatarURL: ptr(fmt.Sprintf("https://avatars.githubusercontent.com/u/%d?v=4", id)),
		HTMLURL:   ptr(s.webURL(htmlLogin)),
		URL:       ptr(s.apiURL("users/" + login)),
		Type:      ptr(typ),
		SiteAdmin: ptr(false),
	}
}

func (s *Server) isOrg(login string) bool {
	for _, t := range s.teams {
		if strings.EqualFold(t.org, login) {
			return true
		}
	}
	return false
}

func nodeID(kind string, id int64) string {
	return kind + "_" + base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(id, 10)))
}

func (s *Server) ghRepo(rp *repoState) *github.Repository {
	full := rp.fullName()
	return &github.Repository{
		ID:            ptr(rp.id),
		NodeID:        ptr(nodeID("R", rp.id)),
		Name:          ptr(rp.name),
		FullName:      ptr(full),
		Owner:         s.ghUser(rp.owner),
		Private:       ptr(false),
		Visibility:    ptr("public"),
		Fork:          ptr(false),
		Archived:      ptr(false),
		Disabled:      ptr(false),
		HTMLURL:       ptr(s.webURL(full)),
		URL:           ptr(s.apiURL("repos/" + full)),
		CloneURL:      ptr(s.webURL(full + ".git")),
		DefaultBranch: ptr(rp.defaultBranch),
		HasIssues:     ptr(true),
		CreatedAt:     ts(rp.createdAt),
		UpdatedAt:     ts(rp.createdAt),
		PushedAt:      ts(rp.createdAt),
	}
}

func (s *Server) ghPushRepo(rp *repoState) *github.PushEventRepository {
	full := rp.fullName()
	owner := s.ghUser(rp.owner)
	owner.Name = ptr(rp.owner)
	return &github.PushEventRepository{
		ID:            ptr(rp.id),
		NodeID:        ptr(nodeID("R", rp.id)),
		Name:          ptr(rp.name),
		FullName:      ptr(full),
		Owner:         owner,
		Private:       ptr(false),
		Fork:          ptr(false),
		HTMLURL:       ptr(s.webURL(full)),
		URL:           ptr(s.webURL(full)),
		DefaultBranch: ptr(rp.defaultBranch),
		MasterBranch:  ptr(rp.defaultBranch),
		CreatedAt:     ts(rp.createdAt),
	}
}

func (s *Server) ghInstallation(id int64) *github.Installation {
	return &github.Installation{ID: ptr(id), NodeID: ptr(nodeID("MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9u", id))}
}

func (s *Server) ghInstallationFull(in *installationState) *github.Installation {
	return &github.Installation{
		ID:                  ptr(in.id),
		NodeID:              ptr(nodeID("MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9u", in.id)),
		AppID:               ptr(s.opts.AppID),
		AppSlug:             ptr(s.opts.AppSlug),
		TargetID:            ptr(s.userID(in.account)),
		TargetType:          ptr(s.accountType(in.account)),
		Account:             s.ghUser(in.account),
		AccessTokensURL:     ptr(s.apiURL(fmt.Sprintf("app/installations/%d/access_tokens", in.id))),
		RepositoriesURL:     ptr(s.apiURL("installation/repositories")),
		HTMLURL:             ptr(s.webURL(fmt.Sprintf("settings/installations/%d", in.id))),
		RepositorySelection: ptr("selected"),
		Permissions:         installationPermissions(),
		Events:              []string{"issues", "issue_comment", "pull_request", "pull_request_review", "check_run", "check_suite", "status", "milestone", "push", "label"},
		CreatedAt:           ts(in.createdAt),
		UpdatedAt:           ts(in.createdAt),
	}
}

func (s *Server) accountType(login string) string {
	if s.isOrg(login) {
		return "Organization"
	}
	return "User"
}

func installationPermissions() *github.InstallationPermissions {
	return &github.InstallationPermissions{
		Issues:       ptr("write"),
		PullRequests: ptr("write"),
		Checks:       ptr("write"),
		Statuses:     ptr("read"),
		Contents:     ptr("read"),
		Metadata:     ptr("read"),
		Members:      ptr("read"),
	}
}

func (s *Server) ghLabel(rp *repoState, l *labelState) *github.Label {
	return &github.Label{
		ID:          ptr(l.id),
		NodeID:      ptr(nodeID("LA", l.id)),
		URL:         ptr(s.apiURL("repos/" + rp.fullName() + "/labels/" + pathEscape(l.name))),
		Name:        ptr(l.name),
		Color:       ptr(l.color),
		Description: ptr(l.description),
		Default:     ptr(false),
	}
}

func pathEscape(v string) string {
	// like url.PathEscape, which GitHub's urls follow for label names
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9') || strings.IndexByte("-_.~", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

func (s *Server) ghMilestone(rp *repoState, m *milestoneState) *github.Milestone {
	if m == nil {
		return nil
	}
	open, closed := 0, 0
	for _, is := range rp.issues {
		if is.milestone == m.number {
			if is.state == "open" {
				open++
			} else {
				closed++
			}
		}
	}
	return &github.Milestone{
		URL:          ptr(s.apiURL(fmt.Sprintf("repos/%s/milestones/%d", rp.fullName(), m.number))),
		HTMLURL:      ptr(s.webURL(fmt.Sprintf("%s/milestone/%d", rp.fullName(), m.number))),
		LabelsURL:    ptr(s.apiURL(fmt.Sprintf("repos/%s/milestones/%d/labels", rp.fullName(), m.number))),
		ID:           ptr(m.id),
		NodeID:       ptr(nodeID("MI", m.id)),
		Number:       ptr(m.number),
		State:        ptr(m.state),
		Title:        ptr(m.title),
		Description:  strOrNil(m.description),
		Creator:      s.ghUser(m.creator),
		OpenIssues:   ptr(open),
		ClosedIssues: ptr(closed),
		CreatedAt:    ts(m.createdAt),
		UpdatedAt:    ts(m.updatedAt),
		ClosedAt:     ts(m.closedAt),
	}
}

func (s *Server) authorAssociation(rp *repoState, login string) string {
	if strings.EqualFold(login, rp.owner) {
		return "OWNER"
	}
	switch rp.permission(login) {
	case "admin", "maintain", "write", "triage":
		return "COLLABORATOR"
	}
	for _, t := range s.teams {
		if strings.EqualFold(t.org, rp.owner) {
			for _, m := range t.members {
				if strings.EqualFold(m, login) {
					return "MEMBER"
				}
			}
		}
	}
	return "NONE"
}

func (s *Server) ghLabels(rp *repoState, ls []*labelState) []*github.Label {
	out := make([]*github.Label, 0, len(ls))
	for _, l := range ls {
		out = append(out, s.ghLabel(rp, l))
	}
	return out
}

func (s *Server) ghUsers(logins []string) []*github.User {
	out := make([]*github.User, 0, len(logins))
	for _, l := range logins {
		out = append(out, s.ghUser(l))
	}
	return out
}

func (s *Server) ghIssue(rp *repoState, is *issueState) *github.Issue {
	full := rp.fullName()
	kind := "issues"
	if is.pr != nil {
		kind = "pull"
	}
	out := &github.Issue{
		ID:                ptr(is.id),
		NodeID:            ptr(nodeID("I", is.id)),
		Number:            ptr(is.number),
		State:             ptr(is.state),
		StateReason:       strOrNil(is.stateReason),
		Locked:            ptr(false),
		Title:             ptr(is.title),
		Body:              strOrNil(is.body),
		AuthorAssociation: ptr(s.authorAssociation(rp, is.user)),
		User:              s.ghUser(is.user),
		Labels:            s.ghLabels(rp, is.labels),
		Assignees:         s.ghUsers(is.assignees),
		Comments:          ptr(len(is.comments)),
		CreatedAt:         ts(is.createdAt),
		UpdatedAt:         ts(is.updatedAt),
		ClosedAt:          ts(is.closedAt),
		URL:               ptr(s.apiURL(fmt.Sprintf("repos/%s/issues/%d", full, is.number))),
		HTMLURL:           ptr(s.webURL(fmt.Sprintf("%s/%s/%d", full, kind, is.number))),
		CommentsURL:       ptr(s.apiURL(fmt.Sprintf("repos/%s/issues/%d/comments", full, is.number))),
		EventsURL:         ptr(s.apiURL(fmt.Sprintf("repos/%s/issues/%d/events", full, is.number))),
		LabelsURL:         ptr(s.apiURL(fmt.Sprintf("repos/%s/issues/%d/labels{/name}", full, is.number))),
		RepositoryURL:     ptr(s.apiURL("repos/" + full)),
		Milestone:         s.ghMilestone(rp, rp.milestones[is.milestone]),
	}
	if len(is.assignees) > 0 {
		out.Assignee = s.ghUser(is.assignees[0])
	}
	if is.state == "closed" {
		out.ClosedBy = s.ghUser(is.closedBy)
	}
	if is.pr != nil {
		out.Draft = ptr(is.pr.draft)
		out.PullRequestLinks = &github.PullRequestLinks{
			URL:      ptr(s.apiURL(fmt.Sprintf("repos/%s/pulls/%d", full, is.number))),
			HTMLURL:  ptr(s.webURL(fmt.Sprintf("%s/pull/%d", full, is.number))),
			DiffURL:  ptr(s.webURL(fmt.Sprintf("%s/pull/%d.diff", full, is.number))),
			PatchURL: ptr(s.webURL(fmt.Sprintf("%s/pull/%d.patch", full, is.number))),
			MergedAt: ts(is.pr.mergedAt),
		}
	}
	return out
}

func (s *Server) ghBranch(rp *repoState, ref, sha, owner string) *github.PullRequestBranch {
	return &github.PullRequestBranch{
		Label: ptr(rp.owner + ":" + ref),
		Ref:   ptr(ref),
		SHA:   ptr(sha),
		Repo:  s.ghRepo(rp),
		User:  s.ghUser(owner),
	}
}

func (s *Server) ghPull(rp *repoState, is *issueState) *github.PullRequest {
	if is.pr == nil {
		return nil
	}
	full := rp.fullName()
	pr := is.pr
	reviewComments := 0
	out := &github.PullRequest{
		ID:                ptr(is.id + 500000000),
		NodeID:            ptr(nodeID("PR", is.id)),
		Number:            ptr(is.number),
		State:             ptr(is.state),
		Locked:            ptr(false),
		Title:             ptr(is.title),
		Body:              strOrNil(is.body),
		CreatedAt:         ts(is.createdAt),
		UpdatedAt:         ts(is.updatedAt),
		ClosedAt:          ts(is.closedAt),
		MergedAt:          ts(pr.mergedAt),
		Labels:            s.ghLabels(rp, is.labels),
		User:              s.ghUser(is.user),
		Draft:             ptr(pr.draft),
		Merged:            ptr(pr.merged),
		MergedBy:          s.ghUser(pr.mergedBy),
		MergeCommitSHA:    strOrNil(pr.mergeCommitSHA),
		Comments:          ptr(len(is.comments)),
		ReviewComments:    ptr(reviewComments),
		Commits:           ptr(len(pr.commits)),
		Additions:         ptr(len(pr.files)),
		Deletions:         ptr(0),
		ChangedFiles:      ptr(len(pr.files)),
		URL:               ptr(s.apiURL(fmt.Sprintf("repos/%s/pulls/%d", full, is.number))),
		HTMLURL:           ptr(s.webURL(fmt.Sprintf("%s/pull/%d", full, is.number))),
		IssueURL:          ptr(s.apiURL(fmt.Sprintf("repos/%s/issues/%d", full, is.number))),
		StatusesURL:       ptr(s.apiURL(fmt.Sprintf("repos/%s/statuses/%s", full, pr.headSHA))),
		DiffURL:           ptr(s.webURL(fmt.Sprintf("%s/pull/%d.diff", full, is.number))),
		PatchURL:          ptr(s.webURL(fmt.Sprintf("%s/pull/%d.patch", full, is.number))),
		CommitsURL:        ptr(s.apiURL(fmt.Sprintf("repos/%s/pulls/%d/commits", full, is.number))),
		CommentsURL:       ptr(s.apiURL(fmt.Sprintf("repos/%s/issues/%d/comments", full, is.number))),
		Assignees:         s.ghUsers(is.assignees),
		Milestone:         s.ghMilestone(rp, rp.milestones[is.milestone]),
		AuthorAssociation: ptr(s.authorAssociation(rp, is.user)),
		Head:              s.ghHead(rp, pr, is.user),
		Base:              s.ghBranch(rp, pr.baseRef, pr.baseSHA, rp.owner),
	}
	if len(is.assignees) > 0 {
		out.Assignee = s.ghUser(is.assignees[0])
	}
	if is.state == "open" {
		out.Mergeable = ptr(true)
		out.Rebaseable = ptr(true)
		if pr.draft {
			out.MergeableState = ptr("draft")
		} else {
			out.MergeableState = ptr("clean")
		}
	}
	out.MaintainerCanModify = ptr(false)
	return out
}

// ghPullRef is the short form GitHub puts in check_run.pull_requests.
func (s *Server) ghPullRef(rp *repoState, is *issueState) *github.PullRequest {
	mini := func(ref, sha string) *github.PullRequestBranch {
		return &github.PullRequestBranch{Ref: ptr(ref), SHA: ptr(sha), Repo: &github.Repository{
			ID: ptr(rp.id), Name: ptr(rp.name), URL: ptr(s.apiURL("repos/" + rp.fullName())),
		}}
	}
	return &github.PullRequest{
		URL:    ptr(s.apiURL(fmt.Sprintf("repos/%s/pulls/%d", rp.fullName(), is.number))),
		ID:     ptr(is.id + 500000000),
		Number: ptr(is.number),
		Head:   mini(is.pr.headRef, is.pr.headSHA),
		Base:   mini(is.pr.baseRef, is.pr.baseSHA),
	}
}

func (s *Server) ghComment(rp *repoState, c *commentState) *github.IssueComment {
	full := rp.fullName()
	kind := "issues"
	if is := rp.issues[c.number]; is != nil && is.pr != nil {
		kind = "pull"
	}
	return &github.IssueComment{
		ID:                ptr(c.id),
		NodeID:            ptr(nodeID("IC", c.id)),
		Body:              ptr(c.body),
		User:              s.ghUser(c.user),
		CreatedAt:         ts(c.createdAt),
		UpdatedAt:         ts(c.updatedAt),
		AuthorAssociation: ptr(s.authorAssociation(rp, c.user)),
		URL:               ptr(s.apiURL(fmt.Sprintf("repos/%s/issues/comments/%d", full, c.id))),
		HTMLURL:           ptr(s.webURL(fmt.Sprintf("%s/%s/%d#issuecomment-%d", full, kind, c.number, c.id))),
		IssueURL:          ptr(s.apiURL(fmt.Sprintf("repos/%s/issues/%d", full, c.number))),
	}
}

func (s *Server) ghReview(rp *repoState, is *issueState, rv *reviewState, webhook bool) *github.PullRequestReview {
	state := rv.state
	if webhook {
		// GitHub's webhook payloads spell review states in lower case,
		// the REST API in upper case.
		state = strings.ToLower(state)
	}
	return &github.PullRequestReview{
		ID:                ptr(rv.id),
		NodeID:            ptr(nodeID("PRR", rv.id)),
		User:              s.ghUser(rv.user),
		Body:              ptr(rv.body),
		SubmittedAt:       ts(rv.submittedAt),
		CommitID:          ptr(rv.commitID),
		HTMLURL:           ptr(s.webURL(fmt.Sprintf("%s/pull/%d#pullrequestreview-%d", rp.fullName(), is.number, rv.id))),
		PullRequestURL:    ptr(s.apiURL(fmt.Sprintf("repos/%s/pulls/%d", rp.fullName(), is.number))),
		State:             ptr(state),
		AuthorAssociation: ptr(s.authorAssociation(rp, rv.user)),
	}
}

func commitEmail(login string) string {
	return strings.TrimSuffix(login, "[bot]") + "@users.noreply.github.com"
}

func (c *commitState) authorEmail() string {
	if c.email != "" {
		return c.email
	}
	return commitEmail(c.author)
}

func (c *commitState) committerLogin() string {
	if c.committer != "" {
		return c.committer
	}
	return c.author
}

func (c *commitState) committerEmail() string {
	if c.committerMail != "" {
		return c.committerMail
	}
	if c.committer != "" {
		return commitEmail(c.committer)
	}
	return c.authorEmail()
}

func (s *Server) ghRepoCommit(rp *repoState, c *commitState) *github.RepositoryCommit {
	// The REST API's author and committer are the users GitHub resolves the
	// git author's and committer's emails to (null when none).
	author := &github.CommitAuthor{Name: ptr(c.author), Email: ptr(c.authorEmail()), Date: ts(c.time)}
	committer := &github.CommitAuthor{Name: ptr(c.committerLogin()), Email: ptr(c.committerEmail()), Date: ts(c.time)}
	parents := make([]*github.Commit, 0, len(c.parents))
	for _, p := range c.parents {
		parents = append(parents, &github.Commit{SHA: ptr(p), URL: ptr(s.apiURL("repos/" + rp.fullName() + "/commits/" + p)),
			HTMLURL: ptr(s.webURL(rp.fullName() + "/commit/" + p))})
	}
	return &github.RepositoryCommit{
		NodeID: ptr("C_" + c.sha[:16]),
		SHA:    ptr(c.sha),
		Commit: &github.Commit{
			Author:       author,
			Committer:    committer,
			Message:      ptr(c.message),
			URL:          ptr(s.apiURL("repos/" + rp.fullName() + "/git/commits/" + c.sha)),
			CommentCount: ptr(0),
		},
		Author:    s.ghUser(s.userByEmail(c.authorEmail())),
		Committer: s.ghUser(s.userByEmail(c.committerEmail())),
		Parents:   parents,
		HTMLURL:   ptr(s.webURL(rp.fullName() + "/commit/" + c.sha)),
		URL:       ptr(s.apiURL("repos/" + rp.fullName() + "/commits/" + c.sha)),
	}
}

func (s *Server) appIDFor(slug string) int64 {
	if slug == s.opts.AppSlug {
		return s.opts.AppID
	}
	return 900000 + s.userID(slug+"[bot]")
}

func (s *Server) ghApp(slug string) *github.App {
	name := slug
	if slug == s.opts.AppSlug {
		name = strings.ToUpper(slug[:1]) + slug[1:]
	}
	return &github.App{
		ID:      ptr(s.appIDFor(slug)),
		Slug:    ptr(slug),
		NodeID:  ptr(nodeID("A", s.appIDFor(slug))),
		Name:    ptr(name),
		HTMLURL: ptr(s.webURL("apps/" + slug)),
	}
}

func (s *Server) ghCheckRun(rp *repoState, cr *checkRunState) *github.CheckRun {
	out := &github.CheckRun{
		ID:          ptr(cr.id),
		NodeID:      ptr(nodeID("CR", cr.id)),
		HeadSHA:     ptr(cr.headSHA),
		ExternalID:  ptr(cr.externalID),
		URL:         ptr(s.apiURL(fmt.Sprintf("repos/%s/check-runs/%d", rp.fullName(), cr.id))),
		HTMLURL:     ptr(checkRunPage(s, rp, cr)),
		DetailsURL:  strOrNil(cr.detailsURL),
		Status:      ptr(cr.status),
		Conclusion:  strOrNil(cr.conclusion),
		StartedAt:   ts(cr.startedAt),
		CompletedAt: ts(cr.completedAt),
		Output: &github.CheckRunOutput{
			Title:            strOrNil(cr.title),
			Summary:          strOrNil(cr.summary),
			Text:             strOrNil(cr.text),
			AnnotationsCount: ptr(0),
			AnnotationsURL:   ptr(s.apiURL(fmt.Sprintf("repos/%s/check-runs/%d/annotations", rp.fullName(), cr.id))),
		},
		Name:       ptr(cr.name),
		CheckSuite: &github.CheckSuite{ID: ptr(suiteIDOf(s, cr))},
		App:        s.ghApp(cr.appSlug),
	}
	out.PullRequests = s.openPullsAt(rp, cr.headSHA)
	if cr.suite != nil && cr.suite.headFork != nil { // a fork's workflow run: none (forks.go)
		out.PullRequests = []*github.PullRequest{}
	}
	return out
}

func (s *Server) suiteID(sha, app string) int64 {
	h := sha1.Sum([]byte(sha + "|" + app))
	var v int64
	for _, b := range h[:4] {
		v = v<<8 | int64(b)
	}
	return 1000000 + v%100000000
}

// openPullsAt lists (short form) the open PRs whose head is sha.
func (s *Server) openPullsAt(rp *repoState, sha string) []*github.PullRequest {
	out := []*github.PullRequest{}
	for _, n := range sortedIssueNumbers(rp) {
		is := rp.issues[n]
		if is.pr != nil && is.state == "open" && is.pr.headSHA == sha && is.pr.headFork == nil { // forks' are left out (forks.go)
			out = append(out, s.ghPullRef(rp, is))
		}
	}
	return out
}

func (s *Server) ghStatus(rp *repoState, st *statusState) *github.RepoStatus {
	return &github.RepoStatus{
		ID:          ptr(st.id),
		NodeID:      ptr(nodeID("SC", st.id)),
		URL:         ptr(s.apiURL(fmt.Sprintf("repos/%s/statuses/%s", rp.fullName(), st.sha))),
		State:       ptr(st.state),
		TargetURL:   strOrNil(st.targetURL),
		Description: strOrNil(st.description),
		Context:     ptr(st.context),
		Creator:     s.ghUser(st.creator),
		CreatedAt:   ts(st.createdAt),
		UpdatedAt:   ts(st.createdAt),
	}
}
