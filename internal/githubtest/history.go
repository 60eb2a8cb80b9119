package githubtest

import (
	"slices"

	"github.com/google/go-github/v60/github"
)

// ForcePush moves PR n's head back to sha, one of its earlier commits (a
// force-push of the head branch to an older commit): the commits after it
// leave the pull request, and pull_request.synchronize (before/after) is sent
// by pusher ("": the PR author).
func (s *Server) ForcePush(repo string, n int, pusher, sha string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, is := s.actPR("ForcePush", repo, n)
	if is == nil {
		return
	}
	if pusher == "" {
		pusher = is.user
	}
	if is.state != "open" {
		s.misuse("ForcePush: %s#%d is closed", repo, n)
		return
	}
	i := slices.IndexFunc(is.pr.commits, func(c *commitState) bool { return c.sha == sha })
	if i < 0 {
		s.misuse("ForcePush: %s is not a commit of %s#%d", sha, repo, n)
		return
	}
	before := is.pr.headSHA
	is.pr.commits = is.pr.commits[:i+1]
	is.pr.headSHA = sha
	s.touch(is)
	s.recordActivity(rp, is.pr.headRef, "force_push", pusher, before, sha)
	s.emitPull(rp, is, "synchronize", pusher, func(ev *github.PullRequestEvent) {
		ev.Before, ev.After = ptr(before), ptr(sha)
	})
}

// PushWhileClosed adds commits to the head branch of closed, unmerged PR n
// as GitHub sees it: a closed pull request does not follow its branch, so no
// webhook is sent; reopening it (ReopenPR) brings the new head in, in
// pull_request.reopened, whose sender is whoever reopens. It returns the new
// head sha.
func (s *Server) PushWhileClosed(repo string, n int, commits ...Commit) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, is := s.actPR("PushWhileClosed", repo, n)
	if is == nil {
		return ""
	}
	if is.state == "open" || is.pr.merged {
		s.misuse("PushWhileClosed: %s#%d is not closed unmerged", repo, n)
		return ""
	}
	if len(commits) == 0 {
		commits = []Commit{{}}
	}
	before := is.pr.headSHA
	s.addPRCommits(rp, is, commits)
	s.recordActivity(rp, is.pr.headRef, "push", is.user, before, is.pr.headSHA)
	return is.pr.headSHA
}
