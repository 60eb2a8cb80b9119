package githubtest

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/google/go-github/v60/github"
)

// User actions change the state and send the webhooks GitHub would send,
// with the acting user as sender (type "User"; "Bot" for logins ending in
// "[bot]"). Misuse (unknown repository, issue, ...) is logged, recorded
// for Err, and the action returns zero values.

// StatusCreator is the sender of the status events of SetStatus.
const StatusCreator = "ci-bot"

// Commit is a commit of a pull request.
type Commit struct {
	Author string // default: the PR author
	// AuthorEmail is the git author's email (default: the author's
	// users.noreply.github.com address); GitHub resolves it to a user by
	// the users' verified emails (SetEmails).
	AuthorEmail string
	// Committer is who committed it (default: the author), with
	// CommitterEmail (default: the committer's noreply address).
	Committer      string
	CommitterEmail string
	Message        string // default: the PR title
	// Files are paths the commit touches; they join the PR's changed files.
	Files []string
	// Contents are files the commit writes (path -> content): they join the
	// PR's changed files, and the contents API serves them at this commit and
	// its descendants on the PR.
	Contents map[string]string
	// Removed are paths the commit deletes (a commit pushed to the default
	// branch with PushBranch, such as a revert: RevertDefault).
	Removed []string
}

// PROptions describes a pull request for OpenPR.
type PROptions struct {
	Title string
	Body  string
	Draft bool
	// Commits of the PR; default one commit by the author.
	Commits []Commit
	// Files changed by the PR: "added" if absent from the default branch,
	// "modified" otherwise.
	Files []string
	// RemovedFiles are changed files with status "removed".
	RemovedFiles []string
	// HeadRef is the head branch; default "<user>-patch-<number>".
	HeadRef string
	// Assignees of the PR when it is opened (a coding agent assigns its PR to
	// the person who set it to work).
	Assignees []string
	// ForkOf: the head branch is in this user's fork of the repository
	// (made on first use), pushed there by its owner, who need not be the
	// pull request's author: anyone may open a pull request from any fork's
	// branch ("compare across forks"). The push is the fork's: no activity
	// or push webhook in the repository.
	ForkOf string
}

func (s *Server) actRepo(what, repo string) *repoState {
	rp := s.repoByName(repo)
	if rp == nil {
		s.misuse("%s: unknown repository %q", what, repo)
	}
	return rp
}

func (s *Server) actIssue(what, repo string, n int) (*repoState, *issueState) {
	rp := s.actRepo(what, repo)
	if rp == nil {
		return nil, nil
	}
	is := rp.issues[n]
	if is == nil {
		s.misuse("%s: %s#%d does not exist", what, repo, n)
		return nil, nil
	}
	return rp, is
}

func (s *Server) actPR(what, repo string, n int) (*repoState, *issueState) {
	rp, is := s.actIssue(what, repo, n)
	if is != nil && is.pr == nil {
		s.misuse("%s: %s#%d is not a pull request", what, repo, n)
		return nil, nil
	}
	return rp, is
}

// ---- issues ----

// OpenIssue opens an issue (issues.opened) and returns its number.
func (s *Server) OpenIssue(repo, user, title, body string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.actRepo("OpenIssue", repo)
	if rp == nil {
		return 0
	}
	return s.createIssue(rp, user, title, body, nil, nil, 0).number
}

// EditIssue sets the title ("" keeps it) and body of issue n
// (issues.edited, or pull_request.edited for a PR, with "changes").
func (s *Server) EditIssue(repo string, n int, user, title, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, is := s.actIssue("EditIssue", repo, n)
	if is == nil {
		return
	}
	var t *string
	if title != "" {
		t = &title
	}
	s.editIssue(rp, is, user, t, &body)
}

// CloseIssue closes issue n with stateReason "completed" (default) or
// "not_planned" (issues.closed).
func (s *Server) CloseIssue(repo string, n int, user, stateReason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, is := s.actIssue("CloseIssue", repo, n)
	if is == nil {
		return
	}
	if stateReason != "" && stateReason != "completed" && stateReason != "not_planned" {
		s.misuse("CloseIssue: bad state reason %q", stateReason)
		return
	}
	s.closeIssue(rp, is, user, stateReason)
}

// DeleteIssue deletes issue n, as an admin does (or as converting it to a
// discussion does): issues.deleted carries the issue as it was; the issue
// and its comments are gone, and the REST API answers 410 Gone for it.
func (s *Server) DeleteIssue(repo string, n int, user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, is := s.actIssue("DeleteIssue", repo, n)
	if is == nil {
		return
	}
	if is.pr != nil {
		s.misuse("DeleteIssue: %s#%d is a pull request; GitHub does not delete those", repo, n)
		return
	}
	s.emitIssue(rp, is, "deleted", user, issueExtra{})
	for _, id := range is.comments {
		delete(s.comments, id)
	}
	delete(rp.issues, n)
	if rp.deleted == nil {
		rp.deleted = map[int]bool{}
	}
	rp.deleted[n] = true
}

// TransferIssue transfers issue n to repository to (one the fake knows), as
// someone with write permission on both does: the issue is opened there
// with a new number (issues.opened; the labels whose names exist there, its
// assignees and comments come along), issues.transferred is sent to the old
// repository, whose API now redirects the old number (301). It returns the
// new number.
func (s *Server) TransferIssue(repo string, n int, user, to string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, is := s.actIssue("TransferIssue", repo, n)
	if is == nil {
		return 0
	}
	dst := s.actRepo("TransferIssue", to)
	if dst == nil {
		return 0
	}
	if is.pr != nil {
		s.misuse("TransferIssue: %s#%d is a pull request", repo, n)
		return 0
	}
	old := s.ghIssue(rp, is)
	moved := s.newIssue(dst, is.user, is.title, is.body)
	moved.assignees = append([]string(nil), is.assignees...)
	moved.comments = is.comments
	for _, id := range is.comments {
		if cm := s.comments[id]; cm != nil {
			cm.repo, cm.number = dst, moved.number
		}
	}
	for _, l := range is.labels {
		for _, dl := range dst.labels {
			if strings.EqualFold(dl.name, l.name) {
				moved.labels = append(moved.labels, dl)
			}
		}
	}
	delete(rp.issues, n)
	if rp.moved == nil {
		rp.moved = map[int]string{}
	}
	rp.moved[n] = s.apiURL(fmt.Sprintf("repos/%s/issues/%d", dst.fullName(), moved.number))
	s.emit(rp, "issues", "transferred", user, withFields{&github.IssuesEvent{
		Action: ptr("transferred"), Issue: old, Repo: s.ghRepo(rp), Sender: s.ghUser(user), Installation: s.ghInstallation(rp.installation),
	}, map[string]any{"changes": map[string]any{"new_issue": s.ghIssue(dst, moved), "new_repository": s.ghRepo(dst)}}})
	s.emit(dst, "issues", "opened", user, withFields{&github.IssuesEvent{
		Action: ptr("opened"), Issue: s.ghIssue(dst, moved), Repo: s.ghRepo(dst), Sender: s.ghUser(user), Installation: s.ghInstallation(dst.installation),
	}, map[string]any{"changes": map[string]any{"old_issue": old, "old_repository": s.ghRepo(rp)}}})
	return moved.number
}

// ReopenIssue reopens issue n (issues.reopened, state_reason "reopened").
func (s *Server) ReopenIssue(repo string, n int, user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rp, is := s.actIssue("ReopenIssue", repo, n); is != nil {
		s.reopenIssue(rp, is, user)
	}
}

// Assign adds assignees (one issues.assigned per new assignee).
func (s *Server) Assign(repo string, n int, actor string, users ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rp, is := s.actIssue("Assign", repo, n); is != nil {
		s.addAssignees(rp, is, actor, users)
	}
}

// Unassign removes assignees (one issues.unassigned per removed assignee).
func (s *Server) Unassign(repo string, n int, actor string, users ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rp, is := s.actIssue("Unassign", repo, n); is != nil {
		s.removeAssignees(rp, is, actor, users)
	}
}

// AddLabels puts labels on issue n (one issues.labeled per new label),
// creating missing repository labels (label.created).
func (s *Server) AddLabels(repo string, n int, actor string, names ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rp, is := s.actIssue("AddLabels", repo, n); is != nil {
		s.addLabels(rp, is, actor, names)
	}
}

// RemoveLabel takes a label off issue n (issues.unlabeled).
func (s *Server) RemoveLabel(repo string, n int, actor, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rp, is := s.actIssue("RemoveLabel", repo, n); is != nil {
		if !s.removeLabel(rp, is, actor, name) {
			s.misuse("RemoveLabel: %s#%d has no label %q", repo, n, name)
		}
	}
}

// RenameLabel renames repository label name to newName, as actor does on the
// repository's Labels page (label.edited with changes.name.from). It is a
// misuse if the label does not exist or newName is taken.
func (s *Server) RenameLabel(repo, actor, name, newName string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repoByName(repo)
	if rp == nil {
		s.misuse("RenameLabel: unknown repository %q", repo)
		return
	}
	l := rp.label(name)
	if l == nil {
		s.misuse("RenameLabel: %s has no label %q", repo, name)
		return
	}
	if other := rp.label(newName); other != nil && other != l {
		s.misuse("RenameLabel: %s already has a label %q", repo, newName)
		return
	}
	from := l.name
	l.name = newName
	s.emitLabel(rp, l, "edited", actor, map[string]any{"name": map[string]string{"from": from}})
}

// DeleteLabel deletes repository label name, as actor does on the
// repository's Labels page: it leaves every issue that carried it
// (label.deleted; GitHub sends no issues.unlabeled for it).
func (s *Server) DeleteLabel(repo, actor, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repoByName(repo)
	if rp == nil {
		s.misuse("DeleteLabel: unknown repository %q", repo)
		return
	}
	l := rp.label(name)
	if l == nil {
		s.misuse("DeleteLabel: %s has no label %q", repo, name)
		return
	}
	rp.dropLabel(l)
	s.emitLabel(rp, l, "deleted", actor, nil)
}

// SetMilestone sets the milestone of issue n (issues.milestoned), or clears
// it with 0 (issues.demilestoned).
func (s *Server) SetMilestone(repo string, n int, actor string, milestone int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rp, is := s.actIssue("SetMilestone", repo, n); is != nil {
		if err := s.setMilestone(rp, is, actor, milestone); err != nil {
			s.misuse("SetMilestone: %v", err)
		}
	}
}

// ---- comments ----

// Comment comments on issue or PR n (issue_comment.created) and returns the
// comment id.
func (s *Server) Comment(repo string, n int, user, body string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, is := s.actIssue("Comment", repo, n)
	if is == nil {
		return 0
	}
	return s.addComment(rp, is, user, body).id
}

func (s *Server) actComment(what, repo string, id int64) (*repoState, *commentState) {
	rp := s.actRepo(what, repo)
	if rp == nil {
		return nil, nil
	}
	c := s.comments[id]
	if c == nil || c.repo != rp {
		s.misuse("%s: no comment %d in %s", what, id, repo)
		return nil, nil
	}
	return rp, c
}

// EditComment changes a comment's body (issue_comment.edited with
// changes.body.from).
func (s *Server) EditComment(repo string, id int64, user, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rp, c := s.actComment("EditComment", repo, id); c != nil {
		s.editComment(rp, c, user, body)
	}
}

// DeleteComment deletes a comment (issue_comment.deleted).
func (s *Server) DeleteComment(repo string, id int64, user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rp, c := s.actComment("DeleteComment", repo, id); c != nil {
		s.deleteComment(rp, c, user)
	}
}

// ---- pull requests ----

func (s *Server) addPRFile(rp *repoState, pr *prState, name, status string) {
	name = strings.Trim(name, "/")
	if name == "" {
		return
	}
	if status == "" {
		status = "added"
		if _, ok := rp.files[name]; ok {
			status = "modified"
		}
	}
	for i, f := range pr.files {
		if f.filename == name {
			pr.files[i].status = status
			return
		}
	}
	pr.files = append(pr.files, prFile{filename: name, status: status})
}

func (s *Server) addPRCommits(rp *repoState, is *issueState, commits []Commit) {
	pr := is.pr
	parent := pr.headSHA
	for _, c := range commits {
		author, msg := c.Author, c.Message
		if author == "" {
			author = is.user
		}
		if msg == "" {
			msg = is.title
		}
		cm := s.newCommit(rp, author, msg, parent)
		cm.email, cm.committer, cm.committerMail = c.AuthorEmail, c.Committer, c.CommitterEmail
		for _, f := range c.Files {
			s.addPRFile(rp, pr, f, "")
		}
		if pc := rp.commits[parent]; pc != nil && len(pc.files) > 0 || len(c.Contents) > 0 {
			cm.files = map[string]string{}
			if pc != nil {
				maps.Copy(cm.files, pc.files)
			}
			for _, f := range slices.Sorted(maps.Keys(c.Contents)) {
				cm.files[strings.Trim(f, "/")] = c.Contents[f]
				s.addPRFile(rp, pr, strings.Trim(f, "/"), "")
			}
		}
		pr.commits = append(pr.commits, cm)
		parent = cm.sha
	}
	pr.headSHA = parent
}

// OpenPR opens a pull request against the default branch
// (pull_request.opened) and returns its number and head sha.
func (s *Server) OpenPR(repo, user string, o PROptions) (int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.actRepo("OpenPR", repo)
	if rp == nil {
		return 0, ""
	}
	return s.openPR(rp, user, rp.defaultBranch, rp.headSHA, o)
}

// openPR opens a pull request of user's onto branch base, whose head is
// baseSHA, with o's commits and files on top (pull_request.opened); the
// author pushed its branch. It returns its number and head sha. Call with
// s.mu held.
func (s *Server) openPR(rp *repoState, user, base, baseSHA string, o PROptions) (int, string) {
	title := o.Title
	if title == "" {
		title = "Update"
	}
	is := s.newIssue(rp, user, title, o.Body)
	pr := &prState{headRef: o.HeadRef, baseRef: base, baseSHA: baseSHA, headSHA: baseSHA, draft: o.Draft}
	if pr.headRef == "" {
		pr.headRef = fmt.Sprintf("%s-patch-%d", strings.TrimSuffix(user, "[bot]"), is.number)
	}
	is.pr = pr
	is.assignees = append([]string(nil), o.Assignees...)
	for _, f := range o.Files {
		s.addPRFile(rp, pr, f, "")
	}
	for _, f := range o.RemovedFiles {
		s.addPRFile(rp, pr, f, "removed")
	}
	commits := o.Commits
	if len(commits) == 0 {
		commits = []Commit{{Author: user, Message: title}}
	}
	if o.ForkOf != "" {
		pr.headFork = s.forkOf(rp, o.ForkOf)
	}
	s.addPRCommits(rp, is, commits)
	if pr.headFork == nil {
		s.recordActivity(rp, pr.headRef, "branch_creation", user, "", pr.headSHA) // the author pushed the branch
	}
	if base != rp.defaultBranch { // built on another branch: what it merges there is its own commits' changes
		for i, f := range pr.files {
			pr.files[i].patch = filePatch(pr.headSHA, f.filename)
		}
		s.stacks.built[fmt.Sprintf("%s#%d", rp.fullName(), is.number)] = base
	}
	s.emitPull(rp, is, "opened", user, nil)
	return is.number, pr.headSHA
}

// EditPR sets the title ("" keeps it) and body of PR n (pull_request.edited).
func (s *Server) EditPR(repo string, n int, user, title, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, is := s.actPR("EditPR", repo, n)
	if is == nil {
		return
	}
	var t *string
	if title != "" {
		t = &title
	}
	s.editIssue(rp, is, user, t, &body)
}

// ReadyForReview marks draft PR n ready (pull_request.ready_for_review).
func (s *Server) ReadyForReview(repo string, n int, user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, is := s.actPR("ReadyForReview", repo, n)
	if is == nil || !is.pr.draft {
		return
	}
	is.pr.draft = false
	s.touch(is)
	s.emitPull(rp, is, "ready_for_review", user, nil)
}

// ConvertToDraft makes PR n a draft (pull_request.converted_to_draft).
func (s *Server) ConvertToDraft(repo string, n int, user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, is := s.actPR("ConvertToDraft", repo, n)
	if is == nil || is.pr.draft {
		return
	}
	is.pr.draft = true
	s.touch(is)
	s.emitPull(rp, is, "converted_to_draft", user, nil)
}

// Push adds commits to PR n (pull_request.synchronize with before/after,
// sent by the PR author) and returns the new head sha.
func (s *Server) Push(repo string, n int, commits ...Commit) string {
	return s.PushAs(repo, n, "", commits...)
}

// PushAs is Push by pusher ("": the PR author): the account that pushed is
// the synchronize webhook's sender, whoever the commits name as their author
// and committer (git identities that may belong to no account: the REST
// API's author and committer are then null).
func (s *Server) PushAs(repo string, n int, pusher string, commits ...Commit) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, is := s.actPR("Push", repo, n)
	if is == nil {
		return ""
	}
	if pusher == "" {
		pusher = is.user
	}
	if is.state != "open" {
		s.misuse("Push: %s#%d is closed", repo, n)
		return ""
	}
	if len(commits) == 0 {
		commits = []Commit{{}}
	}
	before := is.pr.headSHA
	s.addPRCommits(rp, is, commits)
	s.touch(is)
	after := is.pr.headSHA
	s.recordActivity(rp, is.pr.headRef, "push", pusher, before, after)
	s.emitPull(rp, is, "synchronize", pusher, func(ev *github.PullRequestEvent) {
		ev.Before, ev.After = ptr(before), ptr(after)
	})
	s.dequeue(rp, n, is.user, "dequeued") // a push takes a pull request out of the merge queue
	return after
}

// MergePR merges open, non-draft PR n: pull_request.closed (merged), a push
// to the default branch, then issues.closed (sender: the merger,
// state_reason "completed") for each open issue its body closes with a
// closing keyword ("Fixes #12", "closes owner/repo#12", "resolves <url>").
// It returns the merge commit sha.
func (s *Server) MergePR(repo string, n int, user string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, is := s.actPR("MergePR", repo, n)
	if is == nil {
		return ""
	}
	if is.state != "open" || is.pr.draft {
		s.misuse("MergePR: %s#%d is not an open, ready pull request", repo, n)
		return ""
	}
	pr := is.pr
	before := rp.headSHA
	mc := s.newCommit(rp, user, fmt.Sprintf("Merge pull request #%d from %s/%s\n\n%s", n, rp.owner, pr.headRef, is.title), before)
	mc.parents = append(mc.parents, pr.headSHA)
	for _, f := range pr.files {
		if f.status == "added" {
			mc.added = append(mc.added, f.filename)
		} else {
			mc.changed = append(mc.changed, f.filename)
		}
	}
	rp.headSHA = mc.sha
	s.recordActivity(rp, rp.defaultBranch, "pr_merge", user, before, mc.sha)
	t := now()
	pr.merged, pr.mergedAt, pr.mergedBy, pr.mergeCommitSHA = true, t, user, mc.sha
	is.state, is.closedAt, is.closedBy, is.updatedAt = "closed", t, user, t
	s.emitPull(rp, is, "closed", user, nil)
	s.emitPush(rp, user, before, mc)
	for _, num := range closingRefs(rp, is.body) {
		if target := rp.issues[num]; target != nil && target.pr == nil && target.state == "open" {
			s.closeIssue(rp, target, user, "completed")
		}
	}
	return mc.sha
}

// ClosePR closes PR n without merging (pull_request.closed, merged false).
func (s *Server) ClosePR(repo string, n int, user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rp, is := s.actPR("ClosePR", repo, n); is != nil {
		s.closeIssue(rp, is, user, "")
		s.dequeue(rp, n, user, "dequeued")
	}
}

// ReopenPR reopens closed, unmerged PR n (pull_request.reopened).
func (s *Server) ReopenPR(repo string, n int, user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rp, is := s.actPR("ReopenPR", repo, n); is != nil {
		s.reopenIssue(rp, is, user)
	}
}

// Review submits a review on PR n: state "APPROVED", "CHANGES_REQUESTED"
// or "COMMENTED" (pull_request_review.submitted; like GitHub, the webhook
// spells the state in lower case, the REST API in upper case). As on
// GitHub, authors cannot approve or request changes on their own PR.
// It returns the review id.
func (s *Server) Review(repo string, n int, user, state, body string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, is := s.actPR("Review", repo, n)
	if is == nil {
		return 0
	}
	state = strings.ToUpper(state)
	switch state {
	case "APPROVE":
		state = "APPROVED"
	case "REQUEST_CHANGES":
		state = "CHANGES_REQUESTED"
	case "COMMENT":
		state = "COMMENTED"
	}
	if state != "APPROVED" && state != "CHANGES_REQUESTED" && state != "COMMENTED" {
		s.misuse("Review: bad state %q", state)
		return 0
	}
	if state != "COMMENTED" && strings.EqualFold(user, is.user) {
		s.misuse("Review: %s cannot %s their own pull request %s#%d", user, strings.ToLower(state), repo, n)
		return 0
	}
	rv := &reviewState{id: s.newID(), user: user, state: state, body: body, commitID: is.pr.headSHA, submittedAt: now()}
	is.pr.reviews = append(is.pr.reviews, rv)
	s.touch(is)
	s.emit(rp, "pull_request_review", "submitted", user, &github.PullRequestReviewEvent{
		Action: ptr("submitted"), Review: s.ghReview(rp, is, rv, true), PullRequest: s.ghPull(rp, is),
		Repo: s.ghRepo(rp), Sender: s.ghUser(user), Installation: s.ghInstallation(rp.installation),
	})
	return rv.id
}

// DismissReview dismisses review id of pull request n, as user (someone with
// write permission) would: only an APPROVED or CHANGES_REQUESTED review can
// be dismissed; its state becomes DISMISSED and pull_request_review.dismissed
// is sent, carrying the review (its author, its commit) and user as sender.
func (s *Server) DismissReview(repo string, n int, id int64, user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, is := s.actPR("DismissReview", repo, n)
	if is == nil {
		return
	}
	for _, rv := range is.pr.reviews {
		if rv.id != id {
			continue
		}
		if rv.state != "APPROVED" && rv.state != "CHANGES_REQUESTED" {
			s.misuse("DismissReview: review %d of %s#%d is %s; only an approval or a request for changes can be dismissed", id, repo, n, rv.state)
			return
		}
		rv.state = "DISMISSED"
		s.touch(is)
		s.emit(rp, "pull_request_review", "dismissed", user, &github.PullRequestReviewEvent{
			Action: ptr("dismissed"), Review: s.ghReview(rp, is, rv, true), PullRequest: s.ghPull(rp, is),
			Repo: s.ghRepo(rp), Sender: s.ghUser(user), Installation: s.ghInstallation(rp.installation),
		})
		return
	}
	s.misuse("DismissReview: no review %d on %s#%d", id, repo, n)
}

// ---- other apps' CI ----

func (s *Server) actSHA(what string, rp *repoState, sha string) bool {
	if _, ok := rp.commits[sha]; !ok {
		s.misuse("%s: no commit %q in %s", what, sha, rp.fullName())
		return false
	}
	return true
}

// DefaultCIApp is the App CheckRun reports as when none is named: a CI
// service's App. GitHub Actions' check runs are its jobs (StartWorkflow):
// one CheckRun makes as the App github-actions outside a workflow run is
// one created through the Checks API (a workflow's token can), which no
// job made.
const DefaultCIApp = "ci"

// CheckRun reports a check run of another app (appSlug, default
// DefaultCIApp) on sha. If that app has a run with this name on sha that
// is not completed, it is updated (check_run.completed when it completes);
// otherwise a run is created (check_run.created, then check_run.completed
// if created completed). status "" means "completed" when conclusion is
// set, else "queued". check_run.pull_requests lists the open PRs whose head
// is sha. The sender is "<appSlug>[bot]". It returns the run id.
func (s *Server) CheckRun(repo, sha, name, status, conclusion, appSlug string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.actRepo("CheckRun", repo)
	if rp == nil || !s.actSHA("CheckRun", rp, sha) {
		return 0
	}
	if appSlug == "" {
		appSlug = DefaultCIApp
	}
	if status == "" {
		status = "queued"
		if conclusion != "" {
			status = "completed"
		}
	}
	if !checkStatuses[status] || (conclusion != "" && !checkConclusions[conclusion]) || (status == "completed") != (conclusion != "") {
		s.misuse("CheckRun: bad status/conclusion %q/%q", status, conclusion)
		return 0
	}
	sender := appSlug + "[bot]"
	for i := len(rp.checkRuns) - 1; i >= 0; i-- {
		cr := rp.checkRuns[i]
		if cr.headSHA == sha && cr.name == name && cr.appSlug == appSlug && cr.status != "completed" {
			cr.status, cr.conclusion = status, conclusion
			if status == "completed" {
				cr.completedAt = now()
				s.emitCheckRun(rp, cr, "completed", sender)
			}
			return cr.id
		}
	}
	cr := &checkRunState{headSHA: sha, name: name, status: status, conclusion: conclusion, appSlug: appSlug}
	s.createCheckRun(rp, cr, sender)
	return cr.id
}

// CheckSuiteCompleted sends check_suite.completed for appSlug's suite on
// sha (default DefaultCIApp) and returns the suite id.
func (s *Server) CheckSuiteCompleted(repo, sha, appSlug, conclusion string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.actRepo("CheckSuiteCompleted", repo)
	if rp == nil || !s.actSHA("CheckSuiteCompleted", rp, sha) {
		return 0
	}
	if appSlug == "" {
		appSlug = DefaultCIApp
	}
	branch := rp.defaultBranch
	for _, n := range sortedIssueNumbers(rp) {
		if is := rp.issues[n]; is.pr != nil && is.state == "open" && is.pr.headSHA == sha && is.pr.headFork == nil {
			branch = is.pr.headRef
			break
		}
	}
	id := s.suiteID(sha, appSlug)
	t := now()
	s.emit(rp, "check_suite", "completed", appSlug+"[bot]", &github.CheckSuiteEvent{
		Action: ptr("completed"),
		CheckSuite: &github.CheckSuite{
			ID: ptr(id), NodeID: ptr(nodeID("CS", id)), HeadBranch: ptr(branch), HeadSHA: ptr(sha),
			URL:    ptr(s.apiURL(fmt.Sprintf("repos/%s/check-suites/%d", rp.fullName(), id))),
			Status: ptr("completed"), Conclusion: ptr(conclusion), CreatedAt: ts(t), UpdatedAt: ts(t),
			App: s.ghApp(appSlug), PullRequests: s.openPullsAt(rp, sha),
		},
		Repo: s.ghRepo(rp), Sender: s.ghUser(appSlug + "[bot]"), Installation: s.ghInstallation(rp.installation),
	})
	return id
}

// SetStatus sets a commit status (state pending, success, error or
// failure) on sha, created by StatusCreator, and sends the status event.
// It returns the status id.
func (s *Server) SetStatus(repo, sha, context, state, targetURL string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.actRepo("SetStatus", repo)
	if rp == nil || !s.actSHA("SetStatus", rp, sha) {
		return 0
	}
	if !statusStates[state] {
		s.misuse("SetStatus: bad state %q", state)
		return 0
	}
	return s.createStatus(rp, StatusCreator, sha, state, context, targetURL, "").id
}

// SetStatusBy sets a commit status as SetStatus does, created by user (with
// their own token: anyone with write access can).
func (s *Server) SetStatusBy(repo, sha, user, context, state, targetURL string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.actRepo("SetStatusBy", repo)
	if rp == nil || !s.actSHA("SetStatusBy", rp, sha) {
		return 0
	}
	if !statusStates[state] || user == "" {
		s.misuse("SetStatusBy: bad state %q or no user", state)
		return 0
	}
	return s.createStatus(rp, user, sha, state, context, targetURL, "").id
}

// ---- milestones ----

// CreateMilestone creates an open milestone (milestone.created) and returns
// its number.
func (s *Server) CreateMilestone(repo, user, title string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.actRepo("CreateMilestone", repo)
	if rp == nil {
		return 0
	}
	return s.createMilestone(rp, user, title, "", "open").number
}

func (s *Server) actMilestone(what, repo string, number int) (*repoState, *milestoneState) {
	rp := s.actRepo(what, repo)
	if rp == nil {
		return nil, nil
	}
	m := rp.milestones[number]
	if m == nil {
		s.misuse("%s: no milestone %d in %s", what, number, repo)
		return nil, nil
	}
	return rp, m
}

// CloseMilestone closes a milestone (milestone.closed).
func (s *Server) CloseMilestone(repo string, number int, user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rp, m := s.actMilestone("CloseMilestone", repo, number); m != nil {
		s.setMilestoneState(rp, m, user, "closed")
	}
}

// ReopenMilestone reopens a milestone (milestone.opened).
func (s *Server) ReopenMilestone(repo string, number int, user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rp, m := s.actMilestone("ReopenMilestone", repo, number); m != nil {
		s.setMilestoneState(rp, m, user, "open")
	}
}

// DeleteMilestone deletes a milestone (milestone.deleted). Its issues and
// pull requests lose it silently, as on GitHub: no issues.demilestoned is
// sent for them (a deleted label is not unlabeled from each issue either).
func (s *Server) DeleteMilestone(repo string, number int, user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, m := s.actMilestone("DeleteMilestone", repo, number)
	if m == nil {
		return
	}
	s.emitMilestone(rp, m, "deleted", user, nil)
	delete(rp.milestones, number)
	for _, is := range rp.issues {
		if is.milestone == number {
			is.milestone = 0
		}
	}
}

// ---- default branch ----

// PushDefault commits files (path -> content) to the default branch and
// sends a push event for refs/heads/main with commits[].added/modified.
// It returns the new head sha.
func (s *Server) PushDefault(repo, user string, files map[string]string) string {
	return s.pushDefault(repo, user, files, nil)
}

// RemoveDefault commits the removal of paths from the default branch and
// sends a push event with commits[].removed. It returns the new head sha.
func (s *Server) RemoveDefault(repo, user string, paths ...string) string {
	return s.pushDefault(repo, user, nil, paths)
}

func (s *Server) pushDefault(repo, user string, files map[string]string, remove []string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.actRepo("PushDefault", repo)
	if rp == nil {
		return ""
	}
	paths := make([]string, 0, len(files)+len(remove))
	for p := range files {
		paths = append(paths, strings.Trim(p, "/"))
	}
	for _, p := range remove {
		paths = append(paths, strings.Trim(p, "/"))
	}
	sort.Strings(paths)
	before := rp.headSHA
	verb := "Update "
	if len(files) == 0 {
		verb = "Remove "
	}
	c := s.newCommit(rp, user, verb+strings.Join(paths, ", "), before)
	for _, p := range remove {
		p = strings.Trim(p, "/")
		if _, ok := rp.files[p]; ok {
			delete(rp.files, p)
			c.removed = append(c.removed, p)
		}
	}
	sort.Strings(c.removed)
	for p, content := range files {
		p = strings.Trim(p, "/")
		if _, ok := rp.files[p]; ok {
			c.changed = append(c.changed, p)
		} else {
			c.added = append(c.added, p)
		}
		rp.files[p] = content
	}
	sort.Strings(c.added)
	sort.Strings(c.changed)
	rp.headSHA = c.sha
	s.recordActivity(rp, rp.defaultBranch, "push", user, before, c.sha)
	s.emitPush(rp, user, before, c)
	return c.sha
}

func (s *Server) emitPush(rp *repoState, user, before string, c *commitState) {
	author := &github.CommitAuthor{Name: ptr(user), Email: ptr(commitEmail(user)), Login: ptr(user)}
	hc := &github.HeadCommit{
		ID: ptr(c.sha), TreeID: ptr(blobSHA("tree:" + c.sha)), Distinct: ptr(true), Message: ptr(c.message),
		Timestamp: ts(c.time), URL: ptr(s.webURL(rp.fullName() + "/commit/" + c.sha)),
		Author: author, Committer: author,
		Added: append([]string{}, c.added...), Removed: append([]string{}, c.removed...), Modified: append([]string{}, c.changed...),
	}
	s.emit(rp, "push", "", user, &github.PushEvent{
		Ref: ptr("refs/heads/" + rp.defaultBranch), Before: ptr(before), After: ptr(c.sha),
		Created: ptr(false), Deleted: ptr(false), Forced: ptr(false),
		Compare: ptr(s.webURL(fmt.Sprintf("%s/compare/%s...%s", rp.fullName(), before[:12], c.sha[:12]))),
		Commits: []*github.HeadCommit{hc}, HeadCommit: hc,
		Repo: s.ghPushRepo(rp), Pusher: &github.CommitAuthor{Name: ptr(user), Email: ptr(commitEmail(user))},
		Sender: s.ghUser(user), Installation: s.ghInstallation(rp.installation),
	})
}
