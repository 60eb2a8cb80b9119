package githubtest

import (
	"sort"
	"strings"
	"time"
)

// ---- seeding (no webhooks) ----

// AddRepo creates the public repository fullName ("owner/name", default
// branch "main" with one commit) in installation installationID, creating
// the installation (on the owner's account) if needed. Calling it again
// moves the repository to installationID.
func (s *Server) AddRepo(fullName string, installationID int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	owner, name, ok := strings.Cut(strings.TrimSpace(fullName), "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		s.misuse("AddRepo: bad repository name %q", fullName)
		return
	}
	if installationID <= 0 {
		s.misuse("AddRepo(%s): installation id must be positive", fullName)
		return
	}
	if s.installations[installationID] == nil {
		s.installations[installationID] = &installationState{id: installationID, account: owner, createdAt: now()}
	}
	if rp := s.repoByName(fullName); rp != nil {
		rp.installation = installationID
		return
	}
	rp := &repoState{
		id: s.newID(), owner: owner, name: name, installation: installationID, defaultBranch: "main",
		createdAt: now(), perms: map[string]string{}, files: map[string]string{},
		issues: map[int]*issueState{}, milestones: map[int]*milestoneState{}, commits: map[string]*commitState{},
	}
	rp.headSHA = s.newCommit(rp, owner, "Initial commit", "").sha
	s.repos[strings.ToLower(fullName)] = rp
}

var roles = map[string]bool{"admin": true, "maintain": true, "write": true, "triage": true, "read": true, "none": true}

// SetPermission gives user a role on repo: admin, maintain, write, triage,
// read or none.
func (s *Server) SetPermission(repo, user, perm string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repoByName(repo)
	if rp == nil {
		s.misuse("SetPermission: unknown repository %q", repo)
		return
	}
	perm = strings.ToLower(perm)
	if !roles[perm] {
		s.misuse("SetPermission(%s, %s): unknown permission %q", repo, user, perm)
		return
	}
	rp.perms[strings.ToLower(user)] = perm
	s.rememberLogin(user)
}

func (s *Server) rememberLogin(login string) {
	if s.loginSpelling == nil {
		s.loginSpelling = map[string]string{}
	}
	if _, ok := s.loginSpelling[strings.ToLower(login)]; !ok {
		s.loginSpelling[strings.ToLower(login)] = login
	}
}

// RenameUser renames account old to new, as GitHub does: the account keeps
// its id, its permissions and team memberships, and everything it wrote or was
// assigned now shows the new login. Both logins name the account from then
// on (tests use either).
func (s *Server) RenameUser(old, new string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.userID(old)
	s.userIDs[strings.ToLower(new)] = id
	if s.currentLogin == nil {
		s.currentLogin = map[int64]string{}
	}
	s.currentLogin[id] = new
	if s.loginSpelling != nil {
		s.loginSpelling[strings.ToLower(new)] = new
	}
	for _, rp := range s.repos {
		if p, ok := rp.perms[strings.ToLower(old)]; ok {
			rp.perms[strings.ToLower(new)] = p
			delete(rp.perms, strings.ToLower(old))
		}
	}
	for _, t := range s.teams {
		for i, m := range t.members {
			if strings.EqualFold(m, old) {
				t.members[i] = new
			}
		}
	}
}

// ClaimLogin gives login to a new account, as GitHub lets anyone sign up with
// a login its former holder gave up (see RenameUser): from then on login names
// the new account, with a new id and no permissions.
func (s *Server) ClaimLogin(login string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var max int64 = 100
	for _, id := range s.userIDs {
		if id > max && id < 41000000 {
			max = id
		}
	}
	s.userIDs[strings.ToLower(login)] = max + 1
	if s.loginSpelling != nil {
		s.loginSpelling[strings.ToLower(login)] = login
	}
}

// AddTeam creates team org/slug if needed and adds members to it.
func (s *Server) AddTeam(org, slug string, members ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := strings.ToLower(org + "/" + slug)
	t := s.teams[key]
	if t == nil {
		t = &teamState{id: s.newID(), org: org, slug: slug}
		s.teams[key] = t
	}
	for _, m := range members {
		dup := false
		for _, x := range t.members {
			dup = dup || strings.EqualFold(x, m)
		}
		if !dup && m != "" {
			t.members = append(t.members, m)
		}
	}
}

// SetFile sets a file on the default branch (no commit, no webhook; use
// PushDefault for a push).
func (s *Server) SetFile(repo, path, content string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repoByName(repo)
	if rp == nil {
		s.misuse("SetFile: unknown repository %q", repo)
		return
	}
	rp.files[strings.Trim(path, "/")] = content
}

// AddLabel creates a repository label without a webhook (color "" means
// "ededed"). It does nothing if the label exists.
func (s *Server) AddLabel(repo, name, color, description string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repoByName(repo)
	if rp == nil {
		s.misuse("AddLabel: unknown repository %q", repo)
		return
	}
	if rp.label(name) != nil {
		return
	}
	if color == "" {
		color = defaultLabelColor
	}
	rp.labels = append(rp.labels, &labelState{id: s.newID(), name: name, color: strings.TrimPrefix(strings.ToLower(color), "#"), description: description})
}

// ---- inspection ----

// IssueView is a snapshot of an issue or pull request.
type IssueView struct {
	ID             int64 // GitHub's id of the issue (not its number)
	Number         int
	IsPR           bool
	Title          string
	Body           string
	User           string
	State          string // open | closed
	StateReason    string // completed | not_planned | reopened | ""
	ClosedBy       string
	Labels         []string // sorted
	Assignees      []string // in assignment order
	Milestone      int      // 0 if none
	MilestoneTitle string
	Comments       []CommentView
	CreatedAt      time.Time
	UpdatedAt      time.Time

	// Pull requests only.
	Draft    bool
	Merged   bool
	MergedBy string
	HeadRef  string
	HeadSHA  string
	BaseRef  string
	Reviews  []ReviewView
}

// CommentView is a snapshot of an issue comment.
type CommentView struct {
	ID        int64
	User      string
	Body      string
	HTMLURL   string // its address on the web, as the API gives it
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ReviewView is a snapshot of a pull request review.
type ReviewView struct {
	ID       int64
	User     string
	State    string // APPROVED | CHANGES_REQUESTED | COMMENTED
	Body     string
	CommitID string
}

// LabelView is a repository label.
type LabelView struct {
	Name        string
	Color       string
	Description string
}

// CheckRunView is a snapshot of a check run.
type CheckRunView struct {
	ID          int64
	Name        string
	HeadSHA     string
	Status      string
	Conclusion  string
	Title       string
	Summary     string
	Text        string
	DetailsURL  string
	ExternalID  string
	App         string // app slug
	StartedAt   time.Time
	CompletedAt time.Time
}

// StatusView is a commit status.
type StatusView struct {
	ID          int64
	SHA         string
	Context     string
	State       string
	TargetURL   string
	Description string
	Creator     string
}

// MilestoneView is a snapshot of a milestone.
type MilestoneView struct {
	Number       int
	Title        string
	Description  string
	State        string
	OpenIssues   int
	ClosedIssues int
}

func (s *Server) issueState(repo string, n int) (*repoState, *issueState) {
	rp := s.repoByName(repo)
	if rp == nil {
		return nil, nil
	}
	return rp, rp.issues[n]
}

func labelNames(ls []*labelState) []string {
	out := make([]string, 0, len(ls))
	for _, l := range ls {
		out = append(out, l.name)
	}
	sort.Strings(out)
	return out
}

func (s *Server) commentViews(rp *repoState, is *issueState) []CommentView {
	out := []CommentView{}
	for _, cm := range s.issueComments(rp, is) {
		out = append(out, CommentView{ID: cm.id, User: cm.user, Body: cm.body, HTMLURL: s.ghComment(rp, cm).GetHTMLURL(),
			CreatedAt: cm.createdAt, UpdatedAt: cm.updatedAt})
	}
	return out
}

// Issue returns a snapshot of issue (or PR) n of repo.
func (s *Server) Issue(repo string, n int) (IssueView, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, is := s.issueState(repo, n)
	if is == nil {
		return IssueView{}, false
	}
	v := IssueView{ID: is.id,
		Number: is.number, IsPR: is.pr != nil, Title: is.title, Body: is.body, User: is.user,
		State: is.state, StateReason: is.stateReason, ClosedBy: is.closedBy,
		Labels: labelNames(is.labels), Assignees: append([]string{}, is.assignees...),
		Milestone: is.milestone, Comments: s.commentViews(rp, is),
		CreatedAt: is.createdAt, UpdatedAt: is.updatedAt,
	}
	if m := rp.milestones[is.milestone]; m != nil {
		v.MilestoneTitle = m.title
	}
	if pr := is.pr; pr != nil {
		v.Draft, v.Merged, v.MergedBy = pr.draft, pr.merged, pr.mergedBy
		v.HeadRef, v.HeadSHA, v.BaseRef = pr.headRef, pr.headSHA, pr.baseRef
		for _, rv := range pr.reviews {
			v.Reviews = append(v.Reviews, ReviewView{ID: rv.id, User: rv.user, State: rv.state, Body: rv.body, CommitID: rv.commitID})
		}
	}
	return v, true
}

// IssueNumbers lists the numbers of repo's issues and PRs, ascending.
func (s *Server) IssueNumbers(repo string) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repoByName(repo)
	if rp == nil {
		return nil
	}
	return sortedIssueNumbers(rp)
}

// Comments returns the comments of issue (or PR) n, oldest first.
func (s *Server) Comments(repo string, n int) []CommentView {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, is := s.issueState(repo, n)
	if is == nil {
		return nil
	}
	return s.commentViews(rp, is)
}

// Labels returns the sorted label names of issue (or PR) n.
func (s *Server) Labels(repo string, n int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, is := s.issueState(repo, n)
	if is == nil {
		return nil
	}
	return labelNames(is.labels)
}

// RepoLabels returns repo's labels in creation order.
func (s *Server) RepoLabels(repo string) []LabelView {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repoByName(repo)
	if rp == nil {
		return nil
	}
	out := []LabelView{}
	for _, l := range rp.labels {
		out = append(out, LabelView{Name: l.name, Color: l.color, Description: l.description})
	}
	return out
}

// CheckRuns returns every check run on sha (all apps), oldest first.
func (s *Server) CheckRuns(repo, sha string) []CheckRunView {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repoByName(repo)
	if rp == nil {
		return nil
	}
	out := []CheckRunView{}
	for _, cr := range sortedRuns(rp, sha) {
		out = append(out, CheckRunView{
			ID: cr.id, Name: cr.name, HeadSHA: cr.headSHA, Status: cr.status, Conclusion: cr.conclusion,
			Title: cr.title, Summary: cr.summary, Text: cr.text, DetailsURL: cr.detailsURL, ExternalID: cr.externalID,
			App: cr.appSlug, StartedAt: cr.startedAt, CompletedAt: cr.completedAt,
		})
	}
	return out
}

// Statuses returns every commit status set on sha, oldest first.
func (s *Server) Statuses(repo, sha string) []StatusView {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repoByName(repo)
	if rp == nil {
		return nil
	}
	out := []StatusView{}
	for _, st := range rp.statuses {
		if st.sha == sha {
			out = append(out, StatusView{ID: st.id, SHA: st.sha, Context: st.context, State: st.state,
				TargetURL: st.targetURL, Description: st.description, Creator: st.creator})
		}
	}
	return out
}

// Milestone returns a snapshot of milestone number of repo.
func (s *Server) Milestone(repo string, number int) (MilestoneView, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repoByName(repo)
	if rp == nil || rp.milestones[number] == nil {
		return MilestoneView{}, false
	}
	m := s.ghMilestone(rp, rp.milestones[number])
	return MilestoneView{Number: number, Title: m.GetTitle(), Description: m.GetDescription(), State: m.GetState(),
		OpenIssues: m.GetOpenIssues(), ClosedIssues: m.GetClosedIssues()}, true
}

// File returns a file of repo's default branch.
func (s *Server) File(repo, path string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repoByName(repo)
	if rp == nil {
		return "", false
	}
	v, ok := rp.files[strings.Trim(path, "/")]
	return v, ok
}

// HeadSHA returns the head commit of repo's default branch.
func (s *Server) HeadSHA(repo string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rp := s.repoByName(repo); rp != nil {
		return rp.headSHA
	}
	return ""
}
