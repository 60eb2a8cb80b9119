package githubtest

import (
	"fmt"
	"strings"

	"github.com/google/go-github/v60/github"
)

// Pull requests on a commit another pull request already has as its head.
// A check run belongs to a commit, not to a pull request: every pull request
// whose head is that commit shows the same check runs. Two ways to get
// there, as on GitHub:
//   - from a fork: anyone who can read a public repository can fork it and
//     open a pull request from the fork's branch, and a fork holds every
//     commit of its parent, so its head can be any commit of the base
//     repository. The pull request's head.repo is the fork. The Checks API
//     looks for pull requests only in the repository where a check run was
//     created: check_run.pull_requests and check_suite.pull_requests leave a
//     fork's pull requests out (state.go, openPullsAt).
//   - from the same branch, against another base (say a release branch):
//     GitHub allows one open pull request per head and base.

// forkState is a user's fork of a repository: only what a pull request's
// head.repo shows of it.
type forkState struct {
	id    int64
	owner string
}

// SharedPROptions are the options of OpenPRAt.
type SharedPROptions struct {
	Title string
	Body  string
	Draft bool
	// Fork: the head branch is in the user's fork of the repository (made
	// on first use), not in the repository itself.
	Fork bool
	// HeadRef is the head branch; default the branch of the pull request
	// whose head is sha, else "<user>-patch-<number>".
	HeadRef string
	// Base is the branch it merges into; default the default branch.
	Base string
}

// OpenPRAt opens a pull request (pull_request.opened, sender user) whose head
// is sha, an existing commit of repo that is the head of an earlier pull
// request: its commits and changed files are that pull request's. It
// returns its number.
func (s *Server) OpenPRAt(repo, user, sha string, o SharedPROptions) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.actRepo("OpenPRAt", repo)
	if rp == nil || !s.actSHA("OpenPRAt", rp, sha) {
		return 0
	}
	var from *prState
	for _, n := range sortedIssueNumbers(rp) {
		if is := rp.issues[n]; is.pr != nil && is.pr.headSHA == sha {
			from = is.pr
			break
		}
	}
	if from == nil {
		s.misuse("OpenPRAt: no pull request of %s has %s as its head", repo, sha)
		return 0
	}
	base := o.Base
	if base == "" {
		base = rp.defaultBranch
	}
	ref := o.HeadRef
	if ref == "" && o.Fork {
		ref = from.headRef
	}
	for _, n := range sortedIssueNumbers(rp) {
		is := rp.issues[n]
		if ref != "" && is.pr != nil && is.state == "open" && is.pr.headFork == nil && !o.Fork &&
			is.pr.headRef == ref && is.pr.baseRef == base {
			s.misuse("OpenPRAt: a pull request for %s into %s is open already (#%d)", ref, base, n)
			return 0
		}
	}
	title := o.Title
	if title == "" {
		title = "Update"
	}
	is := s.newIssue(rp, user, title, o.Body)
	pr := &prState{headRef: ref, headSHA: sha, baseRef: base, baseSHA: from.baseSHA, draft: o.Draft,
		commits: append([]*commitState(nil), from.commits...), files: append([]prFile(nil), from.files...)}
	if o.Fork {
		pr.headFork = s.forkOf(rp, user)
	}
	if pr.headRef == "" {
		pr.headRef = fmt.Sprintf("%s-patch-%d", strings.TrimSuffix(user, "[bot]"), is.number)
	}
	is.pr = pr
	s.emitPull(rp, is, "opened", user, nil)
	return is.number
}

// forkOf is user's fork of rp, made on first use (guarded by s.mu).
func (s *Server) forkOf(rp *repoState, user string) *forkState {
	key := strings.ToLower(user + "/" + rp.fullName())
	if s.forks == nil {
		s.forks = map[string]*forkState{}
	}
	if f := s.forks[key]; f != nil {
		return f
	}
	f := &forkState{id: s.newID(), owner: user}
	s.forks[key] = f
	return f
}

// ghHead is pull request pr's head branch as the API shows it: in a fork,
// head.repo is the fork (owned by the user, fork: true) and the label names
// the fork's owner.
func (s *Server) ghHead(rp *repoState, pr *prState, user string) *github.PullRequestBranch {
	b := s.ghBranch(rp, pr.headRef, pr.headSHA, user)
	f := pr.headFork
	if f == nil {
		return b
	}
	full := f.owner + "/" + rp.name
	b.Label = ptr(f.owner + ":" + pr.headRef)
	b.User = s.ghUser(f.owner)
	b.Repo = s.ghRepo(rp)
	b.Repo.ID, b.Repo.NodeID, b.Repo.FullName = ptr(f.id), ptr(nodeID("R", f.id)), ptr(full)
	b.Repo.Owner, b.Repo.Fork = s.ghUser(f.owner), ptr(true)
	b.Repo.HTMLURL, b.Repo.URL, b.Repo.CloneURL = ptr(s.webURL(full)), ptr(s.apiURL("repos/"+full)), ptr(s.webURL(full+".git"))
	return b
}
