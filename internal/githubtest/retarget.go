package githubtest

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/go-github/v60/github"
)

// Branches and base changes, as GitHub does them.
//
// A pull request's files and commits are what it would merge into its base:
// GitHub compares the head with the merge base of head and base (a three-dot
// comparison). A pull request stacked on a branch lists only its own commits
// and files; changing its base to the default branch adds whatever the old
// base holds that the default branch does not (pull_request.edited with
// changes.base). A branch whose commits were merged with a merge commit adds
// nothing then (the merge base moved up to them). A squash merge puts the same
// content on the default branch as a new commit: the old commits are not the
// default branch's, so a pull request stacked on the squashed branch lists
// them and their files after its base changes, as on GitHub, although merging
// it would bring none of that content again.

// stacks is the fake's record of branches and base changes.
type stacks struct {
	branches map[string]*stackBranch // "owner/repo:ref": branches made with CreateBranch
	built    map[string]string       // "owner/repo#n": the branch a pull request was opened on
	carried  map[string]*carriedState
	landed   map[string]string // "owner/repo:ref": "merge" or "squash", a merged pull request's head branch
}

// stackBranch is a branch off the default branch: its commits and the files
// they change.
type stackBranch struct {
	sha     string
	commits []*commitState
	files   []prFile
}

// carriedState is what a pull request lists because of its base: the
// commits and files of the branch it was built on, which its current base
// does not hold.
type carriedState struct {
	commits []string          // shas
	files   map[string]prFile // filename -> the pull request's own entry before the carry (status "" if none)
}

func (st *stacks) init() {
	if st.branches == nil {
		st.branches = map[string]*stackBranch{}
		st.built = map[string]string{}
		st.carried = map[string]*carriedState{}
		st.landed = map[string]string{}
	}
}

// filePatch is the patch the fake shows for a change of name by commit sha.
func filePatch(sha, name string) string {
	return fmt.Sprintf("@@ -0,0 +1 @@\n+%s %s", sha[:7], name)
}

// CreateBranch creates branch ref off the default branch holding commits
// (made by user unless a commit names its author) and returns its head sha.
// No webhook is sent: countersign acts on pushes to the default branch only.
func (s *Server) CreateBranch(repo, user, ref string, commits ...Commit) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.actRepo("CreateBranch", repo)
	if rp == nil {
		return ""
	}
	s.stacks.init()
	b := &stackBranch{sha: rp.headSHA}
	for _, c := range commits {
		author := c.Author
		if author == "" {
			author = user
		}
		msg := c.Message
		if msg == "" {
			msg = "Work on " + ref
		}
		cm := s.newCommit(rp, author, msg, b.sha)
		cm.email, cm.committer, cm.committerMail = c.AuthorEmail, c.Committer, c.CommitterEmail
		for _, f := range append(append([]string(nil), c.Files...), slices.Sorted(maps.Keys(c.Contents))...) {
			f = strings.Trim(f, "/")
			status := "added"
			if _, ok := rp.files[f]; ok {
				status = "modified"
			}
			b.files = setFile(b.files, prFile{filename: f, status: status, patch: filePatch(cm.sha, f)})
		}
		b.commits = append(b.commits, cm)
		b.sha = cm.sha
	}
	s.stacks.branches[rp.fullName()+":"+ref] = b
	return b.sha
}

// setFile puts f in files, replacing the entry of the same name.
func setFile(files []prFile, f prFile) []prFile {
	for i := range files {
		if files[i].filename == f.filename {
			files[i] = f
			return files
		}
	}
	return append(files, f)
}

// branch is branch ref of rp: one made with CreateBranch, or the head branch
// of a pull request (its commits and files: of the first pull request opened
// from it, what a pull request stacked on it was built on); nil if there is
// none.
func (s *Server) branch(rp *repoState, ref string) *stackBranch {
	if b := s.stacks.branches[rp.fullName()+":"+ref]; b != nil {
		return b
	}
	for _, n := range sortedIssueNumbers(rp) {
		is := rp.issues[n]
		if is.pr != nil && is.pr.headRef == ref {
			b := &stackBranch{sha: is.pr.headSHA, commits: is.pr.commits}
			for _, f := range is.pr.files {
				f.patch = f.patchOf(is.number) // the same change, listed in another pull request
				b.files = append(b.files, f)
			}
			return b
		}
	}
	return nil
}

// OpenPROn opens a pull request whose base is branch base (a branch made
// with CreateBranch, or another pull request's head branch): it is built on
// that branch's head and lists only its own commits and files
// (pull_request.opened). It returns its number and head sha.
func (s *Server) OpenPROn(repo, user, base string, o PROptions) (int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.actRepo("OpenPROn", repo)
	if rp == nil {
		return 0, ""
	}
	s.stacks.init()
	b := s.branch(rp, base)
	if b == nil {
		s.misuse("OpenPROn: %s has no branch %q", repo, base)
		return 0, ""
	}
	return s.openPR(rp, user, base, b.sha, o)
}

// EditPRBase changes the base of open pull request n to branch newBase, as
// user (pull_request.edited with changes.base.ref.from and
// changes.base.sha.from). Its commits and files are worked out again against
// the new base: a pull request built on a branch that the new base does not
// hold (not merged into it with a merge commit) lists that branch's commits
// and files too; back on that branch, only its own.
func (s *Server) EditPRBase(repo string, n int, user, newBase string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, is := s.actPR("EditPRBase", repo, n)
	if is == nil {
		return
	}
	if is.state != "open" {
		s.misuse("EditPRBase: %s#%d is closed", repo, n)
		return
	}
	s.retarget(rp, is, user, newBase)
}

// retarget is EditPRBase with s.mu held.
func (s *Server) retarget(rp *repoState, is *issueState, user, newBase string) {
	s.stacks.init()
	pr := is.pr
	newSHA := rp.headSHA
	if newBase != rp.defaultBranch {
		b := s.branch(rp, newBase)
		if b == nil {
			s.misuse("EditPRBase: %s has no branch %q", rp.fullName(), newBase)
			return
		}
		newSHA = b.sha
	}
	key := fmt.Sprintf("%s#%d", rp.fullName(), is.number)
	// Forget what the old base made it carry.
	if c := s.stacks.carried[key]; c != nil {
		pr.commits = slices.DeleteFunc(pr.commits, func(cm *commitState) bool { return slices.Contains(c.commits, cm.sha) })
		for name, own := range c.files {
			pr.files = slices.DeleteFunc(pr.files, func(f prFile) bool { return f.filename == name })
			if own.status != "" {
				pr.files = append(pr.files, own)
			}
		}
		delete(s.stacks.carried, key)
	}
	// Carry what the branch it was built on holds that the new base does not.
	if built := s.stacks.built[key]; built != "" && built != newBase && s.stacks.landed[rp.fullName()+":"+built] != "merge" {
		if b := s.branch(rp, built); b != nil {
			c := &carriedState{files: map[string]prFile{}}
			var commits []*commitState
			for _, cm := range b.commits {
				c.commits = append(c.commits, cm.sha)
				commits = append(commits, cm)
			}
			pr.commits = append(commits, pr.commits...)
			for _, bf := range b.files {
				own := prFile{}
				i := slices.IndexFunc(pr.files, func(f prFile) bool { return f.filename == bf.filename })
				if i >= 0 {
					own = pr.files[i]
					bf.patch = strings.TrimSpace(bf.patch + "\n" + own.patch)
					if bf.status == "added" && own.status == "removed" {
						continue // added below, removed above: nothing to merge
					}
				}
				c.files[bf.filename] = own
				pr.files = setFile(pr.files, bf)
			}
			s.stacks.carried[key] = c
		}
	}
	from, fromSHA := pr.baseRef, pr.baseSHA
	pr.baseRef, pr.baseSHA = newBase, newSHA
	s.touch(is)
	s.emitPull(rp, is, "edited", user, func(ev *github.PullRequestEvent) {
		ev.Changes = &github.EditChange{Base: &github.EditBase{Ref: &github.EditRef{From: ptr(from)}, SHA: &github.EditSHA{From: ptr(fromSHA)}}}
	})
}

// MergeStacked merges open pull request n by method "merge" (a merge commit:
// its commits become the default branch's) or "squash" (one new commit with
// the same content), as MergeMethod, then deletes its head branch as
// DeleteMergedBranch does: like GitHub, every open pull request whose base
// was that branch has its base changed to the default branch. It returns the
// new commit's sha.
func (s *Server) MergeStacked(repo string, n int, user, method string) string {
	sha := s.MergeMethod(repo, n, user, method)
	if sha == "" {
		return ""
	}
	s.mu.Lock()
	_, is := s.actPR("MergeStacked", repo, n)
	ref := ""
	if is != nil {
		ref = is.pr.headRef
	}
	s.mu.Unlock()
	if ref != "" {
		s.DeleteMergedBranch(repo, user, ref)
	}
	return sha
}

// MergeMethod merges open pull request n by method "merge" (a merge commit:
// its commits become the default branch's) or "squash" (one new commit with
// the same content), as MergePR, and keeps its head branch. It returns the
// new commit's sha.
func (s *Server) MergeMethod(repo string, n int, user, method string) string {
	sha := s.MergePR(repo, n, user)
	if sha == "" {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, is := s.actPR("MergeMethod", repo, n)
	if is == nil {
		return ""
	}
	s.stacks.init()
	ref := is.pr.headRef
	switch method {
	case "squash":
		if c := rp.commits[sha]; c != nil {
			c.parents = c.parents[:1] // one parent: the old commits are not the default branch's
		}
		s.stacks.landed[rp.fullName()+":"+ref] = "squash"
	case "merge":
		s.stacks.landed[rp.fullName()+":"+ref] = "merge"
	default:
		s.misuse("MergeMethod: unknown method %q", method)
	}
	return sha
}

// DeleteMergedBranch is user's deletion of branch ref, the head branch of a
// merged pull request: like GitHub, every open pull request whose base was
// that branch has its base changed to the default branch
// (pull_request.edited with changes.base, sent as user), in the order of
// their numbers.
func (s *Server) DeleteMergedBranch(repo, user, ref string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.actRepo("DeleteMergedBranch", repo)
	if rp == nil {
		return
	}
	s.stacks.init()
	var upper []*issueState
	for _, o := range rp.issues {
		if o.pr != nil && o.state == "open" && o.pr.baseRef == ref {
			upper = append(upper, o)
		}
	}
	slices.SortFunc(upper, func(a, b *issueState) int { return a.number - b.number })
	for _, o := range upper {
		s.retarget(rp, o, user, rp.defaultBranch)
	}
}
