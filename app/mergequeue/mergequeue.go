// Package mergequeue is countersign's part in GitHub's merge queue. When a
// pull request joins the queue, GitHub builds a merge-group commit on a
// temporary branch, gh-readonly-queue/<base>/pr-<N>-<sha>, sends merge_group
// (checks_requested) and waits for the required checks on that commit,
// countersign/verification among them. Each queue entry has a group of its
// own: the entry's pull request merged onto the group of the entry before it
// (the group's base_sha), so the group answers for its own pull request.
//
// The package holds what does not depend on how countersign is wired: the
// webhook's payload and its head_ref, the verdict on a group given the
// records of its pull request and tasks (pure), the groups tracked per pull
// request (their store keys are package records'), and the small piece of
// GitHub it reads. Package mqdecide (app/mergequeue/decide) decides with it.
package mergequeue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/rules"
)

// The merge_group actions countersign acts on.
const (
	ChecksRequested = "checks_requested"
	Destroyed       = "destroyed"
	// Recheck is countersign's own: the group ahead of a tracked group (the
	// one it is built on) changed its verdict, so the group behind it is
	// decided again from its records.
	Recheck = "recheck"
	// Behind is countersign's own: a group changed its answer or was
	// destroyed, and the groups built on it are to be decided again.
	Behind = "behind"
	// Regroup is countersign's own: a task of a queued pull request
	// changed, and its groups are decided again.
	Regroup = "regroup"
)

// The reasons of a destroyed group (merge_group destroyed).
const (
	Merged      = "merged"
	Invalidated = "invalidated"
	Dequeued    = "dequeued"
)

// RefPrefix begins every merge group's head_ref.
const RefPrefix = "refs/heads/gh-readonly-queue/"

// Event is a merge_group delivery, as far as countersign reads it. The
// fields are those of GitHub's webhook schema (merge-group, and the
// destroyed action's reason: merged, invalidated or dequeued).
type Event struct {
	Action     string `json:"action"`
	Reason     string `json:"reason,omitempty"`
	MergeGroup struct {
		HeadSHA string `json:"head_sha"`
		HeadRef string `json:"head_ref"`
		BaseSHA string `json:"base_sha"`
		BaseRef string `json:"base_ref"`
	} `json:"merge_group"`
	Repository struct {
		FullName string `json:"full_name"`
	} `json:"repository"`
	Installation struct {
		ID int64 `json:"id"`
	} `json:"installation"`
}

// ParseEvent reads a merge_group payload.
func ParseEvent(payload []byte) (Event, error) {
	var e Event
	if err := json.Unmarshal(payload, &e); err != nil {
		return e, fmt.Errorf("parse merge_group payload: %w", err)
	}
	return e, nil
}

// Ref is a merge group's head_ref taken apart.
type Ref struct {
	Base string // the branch the group merges into
	PR   int    // the pull request of the queue entry
	// SHA is the commit named after the pull request's number. GitHub does
	// not document which it is (the branches seen in the wild name the commit
	// the group is built on); countersign checks its form and relies on it
	// for nothing else: the head that was queued is read from GitHub.
	SHA string
}

// ParseHeadRef takes apart refs/heads/gh-readonly-queue/<base>/pr-<N>-<sha>.
// The base may hold slashes (release/1.x); N is a positive decimal number
// without leading zeros; sha is a full commit id (40 or 64 lower-case hex
// digits).
func ParseHeadRef(ref string) (Ref, error) {
	rest, ok := strings.CutPrefix(ref, RefPrefix)
	if !ok {
		return Ref{}, fmt.Errorf("head_ref %q is not under %s", ref, RefPrefix)
	}
	i := strings.LastIndexByte(rest, '/')
	if i <= 0 {
		return Ref{}, fmt.Errorf("head_ref %q names no base branch", ref)
	}
	base, entry := rest[:i], rest[i+1:]
	num, sha, ok := strings.Cut(strings.TrimPrefix(entry, "pr-"), "-")
	if !strings.HasPrefix(entry, "pr-") || !ok {
		return Ref{}, fmt.Errorf("head_ref %q does not end in pr-<number>-<sha>", ref)
	}
	n, err := strconv.Atoi(num)
	if err != nil || n <= 0 || num != strconv.Itoa(n) {
		return Ref{}, fmt.Errorf("head_ref %q: %q is not a pull request number", ref, num)
	}
	if !IsSHA(sha) {
		return Ref{}, fmt.Errorf("head_ref %q: %q is not a commit id", ref, sha)
	}
	if strings.Contains(base, "//") || strings.HasSuffix(base, "/") {
		return Ref{}, fmt.Errorf("head_ref %q: %q is not a branch name", ref, base)
	}
	return Ref{Base: base, PR: n, SHA: sha}, nil
}

// IsSHA reports whether s is a full commit id: 40 (SHA-1) or 64 (SHA-256)
// lower-case hex digits.
func IsSHA(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, r := range s {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') {
			return false
		}
	}
	return true
}

// Entry checks the event's group and returns its head_ref taken apart: the
// head is a commit id and the head_ref's base is the branch of base_ref.
func (e Event) Entry() (Ref, error) {
	g := e.MergeGroup
	if !IsSHA(g.HeadSHA) {
		return Ref{}, fmt.Errorf("merge group head_sha %q is not a commit id", g.HeadSHA)
	}
	r, err := ParseHeadRef(g.HeadRef)
	if err != nil {
		return r, err
	}
	if base := strings.TrimPrefix(g.BaseRef, "refs/heads/"); base != r.Base {
		return r, fmt.Errorf("head_ref %q merges into %q, but base_ref is %q", g.HeadRef, r.Base, g.BaseRef)
	}
	return r, nil
}

// Group is a merge group countersign tracks: from checks_requested until
// destroyed (or the pull request's record shows it closed).
type Group struct {
	HeadSHA string `json:"head_sha"`
	BaseSHA string `json:"base_sha,omitempty"`
	Ref     string `json:"ref"`  // head_ref, without refs/heads/
	Base    string `json:"base"` // the branch it merges into
	// Queued is the pull request's head when the group was built, as GitHub
	// said when asked (GitHub takes a pull request out of the queue when it
	// is pushed to, so it is the head the group merges).
	Queued string    `json:"queued"`
	At     time.Time `json:"at"`
	// Status and Conclusion are what countersign last said on the group.
	Status     string `json:"status,omitempty"`
	Conclusion string `json:"conclusion,omitempty"`
	// OnBranch: countersign saw BaseSHA as the head of the base branch (or
	// as the head of a group GitHub merged): the group carries no change
	// but its own pull request's beyond the branch, whatever the branch
	// does next, so it is not read again.
	OnBranch bool `json:"on_branch,omitempty"`
}

// Passing reports whether the group's check, as last written, passes.
func (g Group) Passing() bool { return g.Status == "completed" && g.Conclusion == "success" }

// Entry is the group as its check names it.
func (g Group) Entry(pr int) rules.QueueEntry {
	return rules.QueueEntry{PR: pr, Ref: g.Ref, Base: g.Base, Head: g.Queued}
}

// MaxGroups bounds the groups tracked per pull request: a pull request has
// one group at a time, but a destroyed delivery may arrive after the
// checks_requested of the group that replaced it, and one may never arrive.
const MaxGroups = 8

// Track returns groups with g in it (replacing a group with its head), the
// oldest dropped beyond MaxGroups, and the heads dropped.
func Track(groups []Group, g Group) ([]Group, []string) {
	out := slices.DeleteFunc(slices.Clone(groups), func(x Group) bool { return x.HeadSHA == g.HeadSHA })
	out = append(out, g)
	var dropped []string
	for len(out) > MaxGroups {
		dropped = append(dropped, out[0].HeadSHA)
		out = out[1:]
	}
	return out, dropped
}

// Forget returns groups without the group with head sha, and whether it was
// there.
func Forget(groups []Group, sha string) ([]Group, bool) {
	out := slices.DeleteFunc(slices.Clone(groups), func(x Group) bool { return x.HeadSHA == sha })
	return out, len(out) != len(groups)
}

// Input is what the verdict on a group depends on.
type Input struct {
	Entry rules.QueueEntry   // the group; Entry.Head is the head that was queued ("" unknown)
	PR    *rules.PullRequest // the record of Entry.PR (nil: there is no such pull request)
	Tasks []*rules.Task      // Tasks[i] is the record of PR.Links[i], nil when there is none
	Gate  rules.GateConfig
	Pins  map[string]int64 // the configuration's pinned logins (rules.Config.Pins)
	// Ahead is what this group is built on (its base_sha, see Resolve);
	// nil when it is built on the head of the base branch.
	Ahead *Ahead
}

// Ahead is what a group is built on (its base_sha) when that is not the
// head of the base branch. A group carries the changes of every entry ahead
// of it, and GitHub may merge them with it: with "Only merge non-failing
// pull requests" unselected, an entry whose group failed is merged when a
// later group passes. So a group passes only when its base_sha is the head
// of the base branch or the head of a group that passes (which holds, in
// turn, for the one that one is built on).
type Ahead struct {
	PR int // the pull request of the group base_sha is the head of (0: no group countersign can name)
	// Status and Conclusion are that group's check, as countersign last
	// wrote it.
	Status     string
	Conclusion string
	// Left is why that group was destroyed without being merged
	// (invalidated, dequeued): this group carries a change that left the
	// queue, and GitHub builds it again without it.
	Left string
	// Unseen: countersign has not been asked about that group yet (its
	// checks_requested has not arrived), or base_sha is no group at all.
	// SHA is base_sha, Branch the base branch and BranchHead its head as
	// read, to say so.
	Unseen     bool
	SHA        string
	Branch     string
	BranchHead string
	// Lost: countersign does not know base_sha. A group found again from
	// GitHub's queue branches after a store loss (Find) has none: the
	// payload that said it is gone.
	Lost bool
}

// Known is what countersign knows of the commit a group is built on
// (base_sha), from its records and, when they say nothing, from GitHub.
type Known struct {
	// Group is the group with head base_sha that countersign tracks (nil:
	// none); GroupPR its pull request.
	Group   *Group
	GroupPR int
	// Gone is the destroyed reason of the group with head base_sha ("": no
	// such group was destroyed); GonePR its pull request.
	Gone   string
	GonePR int
	// Read says BranchHead and QueuePR were read from GitHub: BranchHead is
	// the head of the base branch, QueuePR the pull request whose
	// gh-readonly-queue branch is at base_sha (0: none).
	Read       bool
	BranchHead string
	QueuePR    int
}

// Resolve is what group g is built on, from what countersign knows of its
// base_sha: nil and true when it is the head of the base branch (as seen
// now, or before: g.OnBranch), or the head of a group GitHub merged (its
// changes are on the branch); otherwise the group ahead, and false. need
// says k lacks the GitHub read (k.Read) that would decide it. A group with
// no base_sha (found again from GitHub's queue branches after a store loss,
// whose payload is gone) may be built on any group ahead: it is Lost, and
// waits.
func Resolve(g Group, k Known) (a *Ahead, onBranch, need bool) {
	switch {
	case g.OnBranch:
		return nil, true, false
	case g.BaseSHA == "":
		return &Ahead{Lost: true, Branch: g.Base}, false, false
	case k.Group != nil:
		return &Ahead{PR: k.GroupPR, Status: k.Group.Status, Conclusion: k.Group.Conclusion}, false, false
	case k.Gone == Merged:
		return nil, true, false
	case k.Gone != "":
		return &Ahead{PR: k.GonePR, Left: k.Gone}, false, false
	case !k.Read:
		return nil, false, true
	case k.BranchHead == g.BaseSHA:
		return nil, true, false
	}
	return &Ahead{PR: k.QueuePR, Unseen: true, SHA: g.BaseSHA, Branch: g.Base, BranchHead: k.BranchHead}, false, false
}

// Decide is the countersign/verification check of a merge group. It passes
// only when the pull request is open, countersign's record of it is at the
// head that was queued, every task it closes is verified for that head (or,
// closing none, when gate.untracked or gate.exempt lets it through, as on
// the pull request), and what it is built on (in.Ahead) is the head of the
// base branch or a group that passes. While a task has not yet heard of
// that head, or the record is behind it, or the group ahead has no answer,
// the check waits; anything else fails, saying what is missing: GitHub then
// takes the entry out of the queue. Never a blind pass.
func Decide(in Input) rules.Check {
	return carry(decide(in), in.Entry.PR, in.Ahead)
}

// carry is c, the check of a group of pull request n on its own, given what
// it is built on (a; nil: the head of the base branch): a failure ahead, or
// a group ahead that left the queue, fails it, and a group ahead that has
// no answer yet, or that countersign has not seen, makes it wait.
func carry(c rules.Check, n int, a *Ahead) rules.Check {
	if a == nil || (c.Status == "completed" && c.Conclusion != "success") {
		return c
	}
	if a.Left == "" && !a.Unseen && !a.Lost && a.Status == "completed" && a.Conclusion == "success" {
		return c
	}
	if c.Queue != nil {
		q := *c.Queue
		q.Ahead = a.PR
		if a.PR == 0 {
			q.On = a.SHA
		}
		c.Queue = &q
	}
	switch {
	case a.Lost:
		c.Status, c.Conclusion = "in_progress", ""
		c.Note = fmt.Sprintf("countersign does not know what this group is built on: its records were lost, and it found the group again from GitHub's merge-queue branches, which do not say. "+
			"It may carry the changes of a group ahead of it, so it waits: when GitHub builds it again (a change in the queue) or asks again, it is decided then; "+
			"if nothing comes, GitHub times it out and takes #%d out of the queue, to be queued again.", n)
	case a.Left != "":
		c.Status, c.Conclusion = "completed", "failure"
		c.Note = fmt.Sprintf("This group is built on the group of #%d, which left the queue without being merged (%s): it carries #%d's changes, so GitHub never merges it, and builds #%d's group again without them.",
			a.PR, a.Left, a.PR, n)
	case a.Unseen && a.PR != 0:
		c.Status, c.Conclusion = "in_progress", ""
		c.Note = fmt.Sprintf("This group is built on the group of #%d (%s), queued ahead of #%d, and carries its changes. GitHub has not yet asked countersign about that group: this one waits for it, and is decided again once that group is answered.",
			a.PR, short(a.SHA), n)
	case a.Unseen:
		c.Status, c.Conclusion = "in_progress", ""
		c.Note = fmt.Sprintf("This group is built on %s, which is neither the head of `%s` (%s) nor a merge group countersign has been asked about: a group ahead whose request has not arrived yet, or a branch head that has moved since. It waits for that group's answer; if none comes, GitHub times this group out and takes #%d out of the queue, to be queued again.",
			short(a.SHA), a.Branch, short(a.BranchHead), n)
	case a.Status == "completed":
		c.Status, c.Conclusion = "completed", "failure"
		c.Note = fmt.Sprintf("This group is built on the group of #%d, queued ahead of #%d, which does not pass countersign/verification: it carries #%d's changes, and GitHub may merge them with it. GitHub takes #%d out of the queue; it passes once #%d's tasks are verified or #%d leaves the queue.",
			a.PR, n, a.PR, n, a.PR, a.PR)
	default:
		c.Status, c.Conclusion = "in_progress", ""
		c.Note = fmt.Sprintf("This group is built on the group of #%d, queued ahead of #%d, and carries its changes: it waits for that group, and is decided again once that group has its answer.", a.PR, n)
	}
	return c
}

// decide is the check of a group of its own pull request (see Decide).
func decide(in Input) rules.Check {
	entry := in.Entry
	c := rules.Check{Status: "completed", Conclusion: "failure", Tasks: []rules.CheckTask{}, Queue: &entry}
	pr := in.PR
	switch {
	case pr == nil:
		c.Note = fmt.Sprintf("countersign finds no pull request #%d in this repository, so nothing here is verified.", entry.PR)
		return c
	case !pr.Open:
		c.Note = fmt.Sprintf("#%d is closed: a closed pull request is not merged through the queue.", entry.PR)
		return c
	case entry.Head == "":
		c.Note = fmt.Sprintf("countersign could not tell which head of #%d was queued.", entry.PR)
		return c
	case pr.Head != entry.Head:
		c.Status, c.Conclusion = "in_progress", ""
		c.Note = fmt.Sprintf("#%d was queued at %s, but countersign's record of it is at %s: it checks again once it has taken in the pull request's latest commits.",
			entry.PR, short(entry.Head), short(pr.Head))
		return c
	}
	if len(pr.Links) == 0 {
		u := rules.UntrackedCheck(pr, in.Gate, in.Pins)
		u.Queue = &entry
		return u
	}
	c = rules.CheckFor(pr, in.Tasks)
	c.Queue = &entry
	if c.Status == "completed" && c.Conclusion == "success" {
		return c
	}
	var missing []string
	waiting := false
	for i, n := range pr.Links {
		var t *rules.Task
		if i < len(in.Tasks) {
			t = in.Tasks[i]
		}
		switch {
		case t == nil:
			missing = append(missing, fmt.Sprintf("#%d is not a task countersign tracks", n))
		case !seen(t, pr):
			waiting = true
		case t.State != rules.Verified || t.Failing:
			missing = append(missing, fmt.Sprintf("#%d is `%s`", n, t.State))
		}
	}
	if len(missing) == 0 && waiting {
		c.Status, c.Conclusion = "in_progress", ""
		c.Note = fmt.Sprintf("A task of #%d has not yet taken in the head that was queued: countersign checks again once it has.", entry.PR)
		return c
	}
	c.Status, c.Conclusion = "completed", "failure"
	c.Note = fmt.Sprintf("Not every task #%d closes is verified for the head that was queued: %s. GitHub takes #%d out of the queue; queue it again once they are verified.",
		entry.PR, strings.Join(missing, ", "), entry.PR)
	return c
}

// seen reports whether task t has taken in pull request pr at its head.
func seen(t *rules.Task, pr *rules.PullRequest) bool {
	for _, lp := range t.PRs {
		if lp.Number == pr.Number {
			return lp.Head == pr.Head && (lp.Open || lp.Merged)
		}
	}
	return false
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// GitHub is what the merge queue reads of GitHub.
type GitHub interface {
	// PullHead is pull request n's head and whether it is open; ErrGone when
	// there is no such pull request.
	PullHead(ctx context.Context, repo string, n int) (head string, open bool, err error)
	// QueueBranches are the branches under gh-readonly-queue/ and their
	// commits (full ref -> sha).
	QueueBranches(ctx context.Context, repo string) (map[string]string, error)
	// FirstParent is the first parent of commit sha ("" when it has none,
	// or there is no such commit any more).
	FirstParent(ctx context.Context, repo, sha string) (string, error)
}

// ErrGone says a pull request does not exist.
var ErrGone = errors.New("no such pull request")

// Find lists the groups GitHub holds for pull request n, from its queue
// branches: how countersign tracks them again when its records are lost.
// What each group is built on (its base_sha, which the lost payload said) is
// read as the first parent of the group's commit: GitHub builds a group's
// commit on it (a merge whose first parent it is, or a squashed commit on
// it). A group whose commit is something else (a rebased pull request's
// last commit, whose first parent is another of its commits) names a base
// that is neither the branch's head nor a group's, and waits (Resolve); a
// group whose commit cannot be read has no BaseSHA, and waits too. One
// request per group found.
func Find(ctx context.Context, gh GitHub, repo string, n int) ([]Group, error) {
	branches, err := gh.QueueBranches(ctx, repo)
	if err != nil {
		return nil, err
	}
	var out []Group
	for _, ref := range slices.Sorted(maps.Keys(branches)) {
		r, err := ParseHeadRef(ref)
		if err != nil || r.PR != n || !IsSHA(branches[ref]) {
			continue
		}
		base, err := gh.FirstParent(ctx, repo, branches[ref])
		if err != nil {
			return nil, err
		}
		if !IsSHA(base) {
			base = ""
		}
		out = append(out, Group{HeadSHA: branches[ref], BaseSHA: base, Ref: strings.TrimPrefix(ref, "refs/heads/"), Base: r.Base})
	}
	return out, nil
}

// Staged is a group's check that one decision writes: Depth is how many
// groups ahead of it the decision decided before it (0: the group the
// decision is about), Passing whether the check passes.
type Staged struct {
	Depth   int
	Passing bool
}

// WriteOrder orders the group checks one decision writes so that GitHub,
// which reads each as it is written, never sees a group pass while a group
// ahead of it does not: first the checks that do not pass, the last in line
// first, then those that pass, the first in line first. (A cmp function
// for slices.SortStableFunc.)
func WriteOrder(a, b Staged) int {
	switch {
	case a.Passing != b.Passing:
		if a.Passing {
			return 1
		}
		return -1
	case a.Passing:
		return a.Depth - b.Depth
	}
	return b.Depth - a.Depth
}
