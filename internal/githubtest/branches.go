package githubtest

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/go-github/v60/github"
)

// Branches pushed before any pull request is opened from them, and the
// repository activity GitHub records for every push (GET
// /repos/{owner}/{repo}/activity, api_activity.go): who pushed, to which
// ref, from which sha to which.

// zeroSHA is the sha GitHub gives a ref that does not exist (a push that
// creates a branch has it as before, one that deletes it as after).
const zeroSHA = "0000000000000000000000000000000000000000"

// branchState is a branch pushed with PushBranch.
type branchState struct {
	ref     string // the branch's name
	head    string
	commits []*commitState // its commits since it left the default branch, oldest first
	files   []string       // the files they touch
}

// activityState is one entry of the repository activity.
type activityState struct {
	id            int64
	before, after string
	ref           string // refs/heads/<branch>
	kind          string // push, force_push, branch_creation, branch_deletion, pr_merge, merge_queue_merge
	actor         string
	at            time.Time
}

// recordActivity adds what actor did to ref (a branch name or a full ref) to
// the repository's activity. Call with s.mu held.
func (s *Server) recordActivity(rp *repoState, ref, kind, actor, before, after string) {
	if !strings.HasPrefix(ref, "refs/") {
		ref = "refs/heads/" + ref
	}
	if before == "" {
		before = zeroSHA
	}
	rp.activity = append(rp.activity, &activityState{id: s.newID(), before: before, after: after, ref: ref, kind: kind, actor: actor, at: now()})
}

// PushBranch pushes commits (authored by pusher unless they say otherwise)
// to branch ref of repo as pusher, as `git push` does: the branch is created
// from the default branch's head if it does not exist. GitHub records the
// push in the repository activity (branch_creation or push) and sends a push
// webhook whose sender and pusher are pusher. Pushed to the head branch of an
// open pull request, it is a push to that pull request too
// (pull_request.synchronize, sent by pusher). Pushed to the default branch,
// the commits land on it (pushToDefault). It returns the branch's new head.
func (s *Server) PushBranch(repo, ref, pusher string, commits ...Commit) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.actRepo("PushBranch", repo)
	if rp == nil {
		return ""
	}
	ref = strings.TrimPrefix(ref, "refs/heads/")
	if ref == "" {
		s.misuse("PushBranch: no branch named for %s", repo)
		return ""
	}
	if len(commits) == 0 {
		commits = []Commit{{}}
	}
	if ref == rp.defaultBranch {
		return s.pushToDefault(rp, pusher, commits)
	}
	for _, is := range rp.issues {
		if is.pr != nil && is.state == "open" && is.pr.headRef == ref {
			before := is.pr.headSHA
			for i := range commits {
				if commits[i].Author == "" {
					commits[i].Author = pusher
				}
			}
			s.addPRCommits(rp, is, commits)
			s.touch(is)
			s.recordActivity(rp, ref, "push", pusher, before, is.pr.headSHA)
			s.emitBranchPush(rp, ref, pusher, before, is.pr.commits[len(is.pr.commits)-len(commits):], false)
			s.emitPull(rp, is, "synchronize", pusher, func(ev *github.PullRequestEvent) {
				ev.Before, ev.After = ptr(before), ptr(is.pr.headSHA)
			})
			return is.pr.headSHA
		}
	}
	if rp.branches == nil {
		rp.branches = map[string]*branchState{}
	}
	br := rp.branches[ref]
	created := br == nil
	if created {
		br = &branchState{ref: ref, head: rp.headSHA}
		rp.branches[ref] = br
	}
	before, parent := br.head, br.head
	var added []*commitState
	for _, c := range commits {
		author, msg := c.Author, c.Message
		if author == "" {
			author = pusher
		}
		if msg == "" {
			msg = "Update " + ref
		}
		cm := s.newCommit(rp, author, msg, parent)
		cm.email, cm.committer, cm.committerMail = c.AuthorEmail, c.Committer, c.CommitterEmail
		cm.added = append([]string(nil), c.Files...)
		for _, f := range c.Files {
			if !containsString(br.files, f) {
				br.files = append(br.files, f)
			}
		}
		added = append(added, cm)
		parent = cm.sha
	}
	br.commits = append(br.commits, added...)
	br.head = parent
	kind := "push"
	if created {
		kind, before = "branch_creation", zeroSHA
	}
	s.recordActivity(rp, ref, kind, pusher, before, br.head)
	s.emitBranchPush(rp, ref, pusher, before, added, created)
	return br.head
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// emitBranchPush sends the push webhook of pusher's push of commits to branch
// ref (before: the sha it moved from, zeroSHA when the push created it). A
// push of no commits moves the branch to at (a commit already in the
// repository), when given.
func (s *Server) emitBranchPush(rp *repoState, ref, pusher, before string, commits []*commitState, created bool, at ...*commitState) {
	after := before
	var head *commitState
	switch {
	case len(commits) > 0:
		head = commits[len(commits)-1]
		after = head.sha
	case len(at) > 0 && at[0] != nil:
		head = at[0]
		after = head.sha
	}
	s.emitRefPush(rp, ref, pusher, before, after, commits, head, created, false)
}

// emitRefPush sends the push webhook of pusher's move of branch ref from
// before to after, bringing commits (new to the repository), its head commit
// head (nil: none, a branch moved to the default branch's head).
func (s *Server) emitRefPush(rp *repoState, ref, pusher, before, after string, commits []*commitState, head *commitState, created, forced bool) {
	headCommit := func(c *commitState, distinct bool) *github.HeadCommit {
		author := &github.CommitAuthor{Name: ptr(c.author), Email: ptr(c.authorEmail()), Login: ptr(c.author)}
		committer := &github.CommitAuthor{Name: ptr(c.committerLogin()), Email: ptr(c.committerEmail()), Login: ptr(c.committerLogin())}
		return &github.HeadCommit{
			ID: ptr(c.sha), TreeID: ptr(blobSHA("tree:" + c.sha)), Distinct: ptr(distinct), Message: ptr(c.message),
			Timestamp: ts(c.time), URL: ptr(s.webURL(rp.fullName() + "/commit/" + c.sha)),
			Author: author, Committer: committer,
			Added: append([]string{}, c.added...), Removed: append([]string{}, c.removed...), Modified: append([]string{}, c.changed...),
		}
	}
	list := []*github.HeadCommit{}
	for _, c := range commits {
		list = append(list, headCommit(c, true))
	}
	var hc *github.HeadCommit
	if head != nil {
		hc = headCommit(head, len(commits) > 0)
	}
	compare := s.webURL(fmt.Sprintf("%s/compare/%s...%s", rp.fullName(), before[:12], after[:12]))
	if created {
		compare = s.webURL(fmt.Sprintf("%s/compare/%s", rp.fullName(), ref))
	}
	s.emit(rp, "push", "", pusher, &github.PushEvent{
		Ref: ptr("refs/heads/" + ref), Before: ptr(before), After: ptr(after),
		Created: ptr(created), Deleted: ptr(false), Forced: ptr(forced),
		BaseRef: nil, Compare: ptr(compare),
		Commits: list, HeadCommit: hc,
		Repo: s.ghPushRepo(rp), Pusher: &github.CommitAuthor{Name: ptr(pusher), Email: ptr(commitEmail(pusher))},
		Sender: s.ghUser(pusher), Installation: s.ghInstallation(rp.installation),
	})
}

// OpenPRFrom opens user's pull request from branch ref, pushed earlier with
// PushBranch (by anyone), against the default branch (pull_request.opened,
// sent by user): its commits are the branch's. o's Commits, Files and HeadRef
// are ignored. It returns the pull request's number and head.
func (s *Server) OpenPRFrom(repo, user, ref string, o PROptions) (int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.actRepo("OpenPRFrom", repo)
	if rp == nil {
		return 0, ""
	}
	br := rp.branches[strings.TrimPrefix(ref, "refs/heads/")]
	if br == nil || len(br.commits) == 0 {
		s.misuse("OpenPRFrom: %s has no pushed branch %q", repo, ref)
		return 0, ""
	}
	title := o.Title
	if title == "" {
		title = "Update " + br.ref
	}
	is := s.newIssue(rp, user, title, o.Body)
	pr := &prState{headRef: br.ref, baseRef: rp.defaultBranch, baseSHA: rp.headSHA, headSHA: br.head, draft: o.Draft}
	pr.commits = append(pr.commits, br.commits...)
	for _, f := range br.files {
		s.addPRFile(rp, pr, f, "")
	}
	is.pr = pr
	is.assignees = append([]string(nil), o.Assignees...)
	delete(rp.branches, br.ref) // from now on its pushes are the pull request's
	s.emitPull(rp, is, "opened", user, nil)
	return is.number, pr.headSHA
}

// CopyBranch is user's `git push origin from:to`: branch to is created at
// branch from's head, carrying the same commits (pushed earlier, maybe by
// someone else), as GitHub records it: a branch_creation by user in the
// repository activity of to (nothing names who pushed the commits, on from),
// and a push webhook (created, no commits: none is new to the repository;
// head_commit is the commit the branch points at) sent by user. It returns
// the new branch's head.
func (s *Server) CopyBranch(repo, user, from, to string) string {
	return s.CopyBranchAt(repo, user, from, to, "")
}

// CopyBranchAt is user's `git push origin SHA:refs/heads/TO`: branch to is
// created at sha, one of the commits of branch from ("": its head),
// carrying from's commits up to sha, as CopyBranch does. It returns the new
// branch's head.
func (s *Server) CopyBranchAt(repo, user, from, to, sha string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.actRepo("CopyBranch", repo)
	if rp == nil {
		return ""
	}
	src := rp.branches[strings.TrimPrefix(from, "refs/heads/")]
	to = strings.TrimPrefix(to, "refs/heads/")
	if src == nil || to == "" || to == rp.defaultBranch || rp.branches[to] != nil {
		s.misuse("CopyBranch: no branch %q, or %q exists", from, to)
		return ""
	}
	upto := len(src.commits)
	if sha != "" {
		upto = 0
		for i, c := range src.commits {
			if c.sha == sha {
				upto = i + 1
			}
		}
		if upto == 0 {
			s.misuse("CopyBranchAt: %s is not a commit of branch %q", sha, from)
			return ""
		}
	}
	commits := append([]*commitState(nil), src.commits[:upto]...)
	br := &branchState{ref: to, head: commits[len(commits)-1].sha, commits: commits}
	for _, c := range commits {
		for _, f := range c.added {
			if !containsString(br.files, f) {
				br.files = append(br.files, f)
			}
		}
	}
	rp.branches[to] = br
	s.recordActivity(rp, to, "branch_creation", user, zeroSHA, br.head)
	s.emitBranchPush(rp, to, user, zeroSHA, nil, true, commits[len(commits)-1])
	return br.head
}

// BranchCommits are the shas of the commits of branch ref pushed with
// PushBranch (since it left the default branch), oldest first; nil when
// there is no such branch (or a pull request was opened from it).
func (s *Server) BranchCommits(repo, ref string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repoByName(repo)
	if rp == nil {
		return nil
	}
	br := rp.branches[strings.TrimPrefix(ref, "refs/heads/")]
	if br == nil {
		return nil
	}
	out := make([]string, 0, len(br.commits))
	for _, c := range br.commits {
		out = append(out, c.sha)
	}
	return out
}

// ForcePushBranch is pusher's `git push --force origin SHA:REF` on branch
// ref pushed with PushBranch: the branch moves back to sha, one of its
// commits, or to the default branch's head when sha is "" (the commits after
// it leave the branch, not the repository's history). GitHub records a
// force_push in the repository activity and sends a push webhook (forced, no
// commits) sent by pusher. It returns the branch's new head.
func (s *Server) ForcePushBranch(repo, ref, pusher, sha string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.actRepo("ForcePushBranch", repo)
	if rp == nil {
		return ""
	}
	ref = strings.TrimPrefix(ref, "refs/heads/")
	br := rp.branches[ref]
	if br == nil {
		s.misuse("ForcePushBranch: %s has no pushed branch %q", repo, ref)
		return ""
	}
	keep, at := 0, (*commitState)(nil)
	if sha != "" {
		keep = slices.IndexFunc(br.commits, func(c *commitState) bool { return c.sha == sha }) + 1
		if keep == 0 {
			s.misuse("ForcePushBranch: %s is not a commit of branch %q", sha, ref)
			return ""
		}
		at = br.commits[keep-1]
	}
	before := br.head
	br.commits = br.commits[:keep]
	br.head, br.files = rp.headSHA, nil
	if at != nil {
		br.head = at.sha
	}
	for _, c := range br.commits {
		for _, f := range c.added {
			if !containsString(br.files, f) {
				br.files = append(br.files, f)
			}
		}
	}
	s.recordActivity(rp, ref, "force_push", pusher, before, br.head)
	s.emitRefPush(rp, ref, pusher, before, br.head, nil, at, false, true)
	return br.head
}

// pushToDefault is PushBranch to the default branch: each commit goes on top
// of it, adding or modifying its Files and deleting its Removed ones; GitHub
// records a push in the repository activity and sends a push webhook (each
// commit's added, modified and removed files) sent by pusher. The files open
// pull requests list do not change (they are compared with the merge base of
// their head and base, which this push does not move). It returns the
// branch's new head. Call with s.mu held.
func (s *Server) pushToDefault(rp *repoState, pusher string, commits []Commit) string {
	before := rp.headSHA
	var added []*commitState
	for _, c := range commits {
		author, msg := c.Author, c.Message
		if author == "" {
			author = pusher
		}
		if msg == "" {
			msg = "Update " + rp.defaultBranch
		}
		cm := s.newCommit(rp, author, msg, rp.headSHA)
		cm.email, cm.committer, cm.committerMail = c.AuthorEmail, c.Committer, c.CommitterEmail
		for _, f := range c.Removed {
			f = strings.Trim(f, "/")
			delete(rp.files, f)
			cm.removed = append(cm.removed, f)
		}
		for _, f := range append(append([]string(nil), c.Files...), slices.Sorted(maps.Keys(c.Contents))...) {
			f = strings.Trim(f, "/")
			if _, ok := rp.files[f]; ok || s.onDefault(rp, f) {
				cm.changed = append(cm.changed, f)
			} else {
				cm.added = append(cm.added, f)
			}
			if content, ok := c.Contents[f]; ok {
				rp.files[f] = content
			}
		}
		slices.Sort(cm.added)
		slices.Sort(cm.changed)
		slices.Sort(cm.removed)
		rp.headSHA = cm.sha
		added = append(added, cm)
	}
	s.recordActivity(rp, rp.defaultBranch, "push", pusher, before, rp.headSHA)
	s.emitRefPush(rp, rp.defaultBranch, pusher, before, rp.headSHA, added, added[len(added)-1], false, false)
	return rp.headSHA
}

// onDefault reports whether a commit on the default branch added or changed
// file f after it was last removed there (merged pull requests' files
// included, which the repository's contents do not hold).
func (s *Server) onDefault(rp *repoState, f string) bool {
	for sha := rp.headSHA; sha != ""; {
		cm := rp.commits[sha]
		if cm == nil {
			return false
		}
		if slices.Contains(cm.removed, f) {
			return false
		}
		if slices.Contains(cm.added, f) || slices.Contains(cm.changed, f) {
			return true
		}
		if len(cm.parents) == 0 {
			return false
		}
		sha = cm.parents[0]
	}
	return false
}

// RevertDefault is user's `git revert SHA` pushed to the default branch
// (PushBranch): one commit that undoes commit sha of the default branch (a
// merged pull request's merge or squash commit), deleting the files it added,
// bringing back those it removed and changing again those it modified. It
// returns the default branch's new head.
func (s *Server) RevertDefault(repo, user, sha string) string {
	s.mu.Lock()
	rp := s.actRepo("RevertDefault", repo)
	var cm *commitState
	if rp != nil {
		cm = rp.commits[sha]
	}
	if cm == nil {
		if rp != nil {
			s.misuse("RevertDefault: %s has no commit %s", repo, sha)
		}
		s.mu.Unlock()
		return ""
	}
	subject, _, _ := strings.Cut(cm.message, "\n")
	c := Commit{Author: user, Message: fmt.Sprintf("Revert %q\n\nThis reverts commit %s.", subject, sha),
		Removed: append([]string(nil), cm.added...), Files: append(append([]string(nil), cm.changed...), cm.removed...)}
	branch := rp.defaultBranch
	s.mu.Unlock()
	return s.PushBranch(repo, branch, user, c)
}
