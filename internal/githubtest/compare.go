package githubtest

import (
	"net/http"
	"slices"
	"strings"

	"github.com/google/go-github/v60/github"
)

// Comparing two commits (GET /repos/{owner}/{repo}/compare/{base}...{head}),
// as GitHub does: the commits reachable from head and not from base, oldest
// first; status "identical", "ahead", "behind" or "diverged" (ahead_by and
// behind_by count each side's own commits); and the files changed between
// the merge base and head (a three-dot comparison), each with the change of
// the last commit in the range that touched it. The files are those the
// fake records per commit: the default branch's commits (pushes, merge and
// squash commits, which list their pull request's files) and branches'
// pushed commits; a pull request's own commits record none (its files are
// the pull request's), so a comparison up to a pull request's head lists
// its commits but not its files.

// maxCompareFiles is how many files GitHub lists in a comparison at most.
const maxCompareFiles = 300

// maxCompareCommits is how many commits GitHub lists in a comparison at most
// (without pagination).
const maxCompareCommits = 250

// ancestry is every commit reachable from sha (itself included), by every
// parent.
func ancestry(rp *repoState, sha string) map[string]bool {
	seen := map[string]bool{}
	stack := []string{sha}
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if c == "" || seen[c] {
			continue
		}
		seen[c] = true
		if cm := rp.commits[c]; cm != nil {
			stack = append(stack, cm.parents...)
		}
	}
	return seen
}

// only are the commits reachable from sha and not in other, newest first
// (a walk by first parent, then the others).
func only(rp *repoState, sha string, other map[string]bool) []*commitState {
	var out []*commitState
	seen := map[string]bool{}
	queue := []string{sha}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		if c == "" || seen[c] || other[c] {
			continue
		}
		seen[c] = true
		cm := rp.commits[c]
		if cm == nil {
			continue
		}
		out = append(out, cm)
		queue = append(queue, cm.parents...)
	}
	return out
}

// mergeBase is the nearest commit reachable from both a and b ("" if none):
// the first one a walk back from b finds among a's.
func mergeBase(rp *repoState, a, b string) string {
	fromA := ancestry(rp, a)
	seen := map[string]bool{}
	queue := []string{b}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		if c == "" || seen[c] {
			continue
		}
		seen[c] = true
		if fromA[c] {
			return c
		}
		if cm := rp.commits[c]; cm != nil {
			queue = append(queue, cm.parents...)
		}
	}
	return ""
}

func (s *Server) compareCommits(c *apiCall) {
	rp := c.repo
	base, head, ok := strings.Cut(c.vars["basehead"], "...")
	if !ok {
		base, head, ok = strings.Cut(c.vars["basehead"], "..")
	}
	if !ok || base == "" || head == "" {
		c.notFound()
		return
	}
	baseSHA, okb := s.resolveRef(rp, base)
	headSHA, okh := s.resolveRef(rp, head)
	if !okb || !okh || rp.commits[baseSHA] == nil || rp.commits[headSHA] == nil {
		c.notFound() // GitHub: "No commit found for the ref ..."
		return
	}
	fromBase, fromHead := ancestry(rp, baseSHA), ancestry(rp, headSHA)
	ahead, behind := only(rp, headSHA, fromBase), only(rp, baseSHA, fromHead)
	status := "identical"
	switch {
	case len(ahead) > 0 && len(behind) > 0:
		status = "diverged"
	case len(ahead) > 0:
		status = "ahead"
	case len(behind) > 0:
		status = "behind"
	}
	full := rp.fullName()
	type change struct{ status, sha string }
	changes := map[string]change{}
	var order []string
	for i := len(ahead) - 1; i >= 0; i-- { // oldest first: the last change of a file wins
		cm := ahead[i]
		for _, fs := range []struct {
			status string
			names  []string
		}{{"added", cm.added}, {"modified", cm.changed}, {"removed", cm.removed}} {
			for _, f := range fs.names {
				prev, seen := changes[f]
				st := fs.status
				switch {
				case seen && prev.status == "added" && st == "removed":
					delete(changes, f) // added then removed in the range: no change
					order = slices.DeleteFunc(order, func(x string) bool { return x == f })
					continue
				case seen && prev.status == "added":
					st = "added"
				case seen && prev.status == "removed" && st == "added":
					st = "modified"
				}
				if !seen {
					order = append(order, f)
				}
				changes[f] = change{st, cm.sha}
			}
		}
	}
	slices.Sort(order)
	if len(order) > maxCompareFiles {
		order = order[:maxCompareFiles]
	}
	files := make([]*github.CommitFile, 0, len(order))
	for _, f := range order {
		ch := changes[f]
		add, del := 1, 0
		switch ch.status {
		case "removed":
			add, del = 0, 1
		case "modified":
			add, del = 1, 1
		}
		files = append(files, &github.CommitFile{
			SHA: ptr(blobSHA(headSHA + f)), Filename: ptr(f), Status: ptr(ch.status),
			Additions: ptr(add), Deletions: ptr(del), Changes: ptr(add + del),
			BlobURL:     ptr(s.webURL(full + "/blob/" + headSHA + "/" + f)),
			RawURL:      ptr(s.webURL(full + "/raw/" + headSHA + "/" + f)),
			ContentsURL: ptr(s.apiURL("repos/" + full + "/contents/" + f + "?ref=" + headSHA)),
			Patch:       ptr(filePatch(ch.sha, f)),
		})
	}
	commits := make([]*github.RepositoryCommit, 0, len(ahead))
	for i := len(ahead) - 1; i >= 0 && len(commits) < maxCompareCommits; i-- {
		commits = append(commits, s.ghRepoCommit(rp, ahead[i]))
	}
	mb := mergeBase(rp, baseSHA, headSHA)
	var mbCommit *github.RepositoryCommit
	if cm := rp.commits[mb]; cm != nil {
		mbCommit = s.ghRepoCommit(rp, cm)
	}
	spec := c.vars["basehead"]
	c.json(http.StatusOK, &github.CommitsComparison{
		BaseCommit: s.ghRepoCommit(rp, rp.commits[baseSHA]), MergeBaseCommit: mbCommit,
		Status: ptr(status), AheadBy: ptr(len(ahead)), BehindBy: ptr(len(behind)), TotalCommits: ptr(len(ahead)),
		Commits: commits, Files: files,
		URL:          ptr(s.apiURL("repos/" + full + "/compare/" + spec)),
		HTMLURL:      ptr(s.webURL(full + "/compare/" + spec)),
		PermalinkURL: ptr(s.webURL(full + "/compare/" + rp.owner + ":" + baseSHA[:7] + "..." + rp.owner + ":" + headSHA[:7])),
		DiffURL:      ptr(s.webURL(full + "/compare/" + spec + ".diff")),
		PatchURL:     ptr(s.webURL(full + "/compare/" + spec + ".patch")),
	})
}
