package githubtest

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/google/go-github/v60/github"
)

// The merge queue, as GitHub runs it: each entry gets a merge-group commit
// (the entry's pull request merged onto the group of the entry before it, or
// onto the base branch) on gh-readonly-queue/<base>/pr-<N>-<sha>, sha being
// the commit the group is built on, and merge_group checks_requested asks
// for the required checks on it. Taking an entry out (DequeuePR, a push to
// its pull request) destroys its group (reason dequeued) and rebuilds the
// groups behind it (destroyed, reason invalidated, then checks_requested).

// queueEntry is one pull request in a repository's merge queue.
type queueEntry struct {
	number  int
	headSHA string // the group's commit
	baseSHA string // the commit it is built on
	ref     string // gh-readonly-queue/<base>/pr-<N>-<baseSHA>
	sender  string // who queued it
}

// QueueGroup is a merge group as the fake holds it.
type QueueGroup struct {
	PR      int
	HeadSHA string
	BaseSHA string
	Ref     string // without refs/heads/
}

// EnqueuePR adds open, ready pull request n to the merge queue: its group
// commit is made and merge_group checks_requested sent (sender: user). It
// returns the group's head sha.
func (s *Server) EnqueuePR(repo string, n int, user string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, is := s.actPR("EnqueuePR", repo, n)
	if is == nil {
		return ""
	}
	if is.state != "open" || is.pr.draft {
		s.misuse("EnqueuePR: %s#%d is not an open, ready pull request", repo, n)
		return ""
	}
	for _, e := range rp.queue {
		if e.number == n {
			s.misuse("EnqueuePR: %s#%d is queued already", repo, n)
			return ""
		}
	}
	e := &queueEntry{number: n, sender: user}
	rp.queue = append(rp.queue, e)
	s.buildGroup(rp, len(rp.queue)-1)
	return e.headSHA
}

// DequeuePR takes pull request n out of the merge queue (user removes it):
// its group is destroyed (reason dequeued) and the groups behind it are
// rebuilt. It returns whether n was queued.
func (s *Server) DequeuePR(repo string, n int, user string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.actRepo("DequeuePR", repo)
	return rp != nil && s.dequeue(rp, n, user, "dequeued")
}

// MergeQueueHead merges the group at the head of the queue as GitHub does
// once its required checks pass (see MergeQueueThrough). It returns the
// merged pull request's number (0 when the queue is empty).
func (s *Server) MergeQueueHead(repo, user string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.actRepo("MergeQueueHead", repo)
	if rp == nil || len(rp.queue) == 0 {
		return 0
	}
	n := rp.queue[0].number
	s.mergeThrough(rp, 0, user)
	return n
}

// MergeQueueThrough merges pull request n's group and every group ahead of
// it, as GitHub does when n's group passes its required checks (with "Only
// merge non-failing pull requests" unselected, even when a group ahead of
// it failed; a group carries the changes of every entry ahead of it): the
// base branch is fast-forwarded to n's group commit, each merged pull
// request is closed as merged (its merge commit is its group's), and each
// merged group is destroyed (reason merged). The groups behind n's stay as
// they are: they are built on the new head of the base branch. It returns
// whether n was queued.
func (s *Server) MergeQueueThrough(repo string, n int, user string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.actRepo("MergeQueueThrough", repo)
	if rp == nil {
		return false
	}
	for i, e := range rp.queue {
		if e.number == n {
			s.mergeThrough(rp, i, user)
			return true
		}
	}
	return false
}

// mergeThrough merges the groups of rp's queue up to entry k (see
// MergeQueueThrough). Call with s.mu held.
func (s *Server) mergeThrough(rp *repoState, k int, user string) {
	merged := append([]*queueEntry(nil), rp.queue[:k+1]...)
	rp.queue = rp.queue[k+1:]
	before := rp.headSHA
	rp.headSHA = merged[k].headSHA
	for _, e := range merged {
		s.emitMergeGroup(rp, e, "destroyed", "merged", user)
	}
	t := now()
	for _, e := range merged {
		is := rp.issues[e.number]
		pr := is.pr
		pr.merged, pr.mergedAt, pr.mergedBy, pr.mergeCommitSHA = true, t, user, e.headSHA
		is.state, is.closedAt, is.closedBy, is.updatedAt = "closed", t, user, t
		s.emitPull(rp, is, "closed", user, nil)
	}
	s.emitPush(rp, user, before, rp.commits[rp.headSHA])
	for _, e := range merged {
		for _, num := range closingRefs(rp, rp.issues[e.number].body) {
			if target := rp.issues[num]; target != nil && target.pr == nil && target.state == "open" {
				s.closeIssue(rp, target, user, "completed")
			}
		}
	}
}

// MergeQueue lists the groups of repo's merge queue, first in line first.
func (s *Server) MergeQueue(repo string) []QueueGroup {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repoByName(repo)
	if rp == nil {
		return nil
	}
	var out []QueueGroup
	for _, e := range rp.queue {
		out = append(out, QueueGroup{PR: e.number, HeadSHA: e.headSHA, BaseSHA: e.baseSHA, Ref: e.ref})
	}
	return out
}

// dequeue takes n out of rp's queue; reason is the destroyed action's.
func (s *Server) dequeue(rp *repoState, n int, user, reason string) bool {
	for i, e := range rp.queue {
		if e.number != n {
			continue
		}
		rp.queue = append(rp.queue[:i:i], rp.queue[i+1:]...)
		s.emitMergeGroup(rp, e, "destroyed", reason, user)
		for j := i; j < len(rp.queue); j++ {
			s.emitMergeGroup(rp, rp.queue[j], "destroyed", "invalidated", user)
			s.buildGroup(rp, j)
		}
		return true
	}
	return false
}

// buildGroup makes the group commit of entry i and asks for its checks.
func (s *Server) buildGroup(rp *repoState, i int) {
	e := rp.queue[i]
	is := rp.issues[e.number]
	e.baseSHA = rp.headSHA
	if i > 0 {
		e.baseSHA = rp.queue[i-1].headSHA
	}
	c := s.newCommit(rp, e.sender, fmt.Sprintf("Merge pull request #%d from %s/%s\n\n%s", e.number, rp.owner, is.pr.headRef, is.title), e.baseSHA)
	c.parents = append(c.parents, is.pr.headSHA)
	for _, f := range is.pr.files {
		if f.status == "added" {
			c.added = append(c.added, f.filename)
		} else {
			c.changed = append(c.changed, f.filename)
		}
	}
	e.headSHA = c.sha
	e.ref = fmt.Sprintf("gh-readonly-queue/%s/pr-%d-%s", rp.defaultBranch, e.number, e.baseSHA)
	s.emitMergeGroup(rp, e, "checks_requested", "", e.sender)
}

// mergeGroupEvent is merge_group's payload (GitHub's webhook schema:
// webhook-merge-group-checks-requested and -destroyed).
type mergeGroupEvent struct {
	Action       string               `json:"action"`
	Reason       string               `json:"reason,omitempty"`
	MergeGroup   mergeGroupPayload    `json:"merge_group"`
	Repo         *github.Repository   `json:"repository"`
	Organization *github.Organization `json:"organization,omitempty"`
	Sender       *github.User         `json:"sender"`
	Installation *github.Installation `json:"installation"`
}

type mergeGroupPayload struct {
	HeadSHA    string             `json:"head_sha"`
	HeadRef    string             `json:"head_ref"`
	BaseSHA    string             `json:"base_sha"`
	BaseRef    string             `json:"base_ref"`
	HeadCommit *github.HeadCommit `json:"head_commit"`
}

func (s *Server) emitMergeGroup(rp *repoState, e *queueEntry, action, reason, sender string) {
	c := rp.commits[e.headSHA]
	author := &github.CommitAuthor{Name: ptr(c.author), Email: ptr(commitEmail(c.author))}
	ev := &mergeGroupEvent{Action: action, Reason: reason,
		MergeGroup: mergeGroupPayload{HeadSHA: e.headSHA, HeadRef: "refs/heads/" + e.ref, BaseSHA: e.baseSHA, BaseRef: "refs/heads/" + rp.defaultBranch,
			HeadCommit: &github.HeadCommit{ID: ptr(c.sha), TreeID: ptr(blobSHA("tree:" + c.sha)), Message: ptr(c.message), Timestamp: ts(c.time),
				Author: author, Committer: author}},
		Repo: s.ghRepo(rp), Sender: s.ghUser(sender), Installation: s.ghInstallation(rp.installation)}
	if s.isOrg(rp.owner) {
		ev.Organization = &github.Organization{Login: ptr(rp.owner), ID: ptr(s.userID(rp.owner))}
	}
	s.emit(rp, "merge_group", action, sender, ev)
}

// listMatchingRefs is GET /repos/{owner}/{repo}/git/matching-refs/{ref}:
// the branches whose full name (refs/heads/...) begins with refs/{ref}: the
// default branch, open pull requests' head branches and the merge queue's.
func (s *Server) listMatchingRefs(c *apiCall) {
	prefix := "refs/" + c.vars["ref"]
	refs := map[string]string{"refs/heads/" + c.repo.defaultBranch: c.repo.headSHA}
	for _, is := range c.repo.issues {
		if is.pr != nil && is.state == "open" {
			refs["refs/heads/"+is.pr.headRef] = is.pr.headSHA
		}
	}
	for _, e := range c.repo.queue {
		refs["refs/heads/"+e.ref] = e.headSHA
	}
	names := make([]string, 0, len(refs))
	for name := range refs {
		if strings.HasPrefix(name, prefix) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	out := make([]*github.Reference, 0, len(names))
	for _, name := range names {
		out = append(out, &github.Reference{Ref: ptr(name), NodeID: ptr("REF_" + base64.RawURLEncoding.EncodeToString([]byte(name))),
			URL: ptr(s.apiURL(fmt.Sprintf("repos/%s/git/%s", c.repo.fullName(), name))),
			Object: &github.GitObject{Type: ptr("commit"), SHA: ptr(refs[name]),
				URL: ptr(s.apiURL(fmt.Sprintf("repos/%s/git/commits/%s", c.repo.fullName(), refs[name])))}})
	}
	c.json(http.StatusOK, out)
}
