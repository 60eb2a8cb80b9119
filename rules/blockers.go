package rules

import (
	"fmt"
	"slices"
	"strings"
)

// This file decides what blocks a task (docs/design.md, Dependencies): the
// issues GitHub says block it ("blocked by") and its sub-issues (there is no
// nesting: a sub-issue is a dependency link). A blocker that is a task blocks
// until it is verified; a blocker that is no task blocks until it is closed
// as completed; a blocker closed as not planned, deleted or transferred stops
// blocking. A cycle of tasks blocks every task in it until a lead breaks it.

// LinkKind says how GitHub links a blocker to the task.
type LinkKind string

// The links countersign reads.
const (
	LinkBlockedBy LinkKind = "blocked-by" // GitHub's issue dependency: the task is blocked by it
	LinkSubIssue  LinkKind = "sub-issue"  // a sub-issue of the task
)

// IssueStatus is where an issue that is no task stands, as far as blocking
// goes (GitHub's state and state_reason, or what became of it).
type IssueStatus string

// The statuses of an issue that is no task.
const (
	IssueOpen        IssueStatus = "open"
	IssueCompleted   IssueStatus = "completed"   // closed as completed
	IssueNotPlanned  IssueStatus = "not-planned" // closed as not planned (or as a duplicate)
	IssueDeleted     IssueStatus = "deleted"
	IssueTransferred IssueStatus = "transferred"
)

// IssueStatusOf is the status of an issue GitHub shows in state ("open",
// "closed") with state_reason ("completed", "not_planned", "duplicate", "").
func IssueStatusOf(state, reason string) IssueStatus {
	if state != "closed" {
		return IssueOpen
	}
	switch reason {
	case "not_planned", "duplicate":
		return IssueNotPlanned
	}
	return IssueCompleted
}

// Blocker is one issue that blocks the task, or did: how it is linked, and
// where it stood when last heard of.
type Blocker struct {
	Repo   string   `json:"repo"`
	Number int      `json:"number"`
	Title  string   `json:"title,omitempty"`
	Via    LinkKind `json:"via"`
	// Task: the blocker is a task countersign tracks; State is its state and
	// Closed says a lead closed it unverified (as not planned).
	Task   bool  `json:"task,omitempty"`
	State  State `json:"state,omitempty"`
	Closed bool  `json:"closed,omitempty"`
	// Issue is a blocker's status when it is no task, or when its issue is
	// gone (deleted, transferred) whether or not it was a task.
	Issue IssueStatus `json:"issue,omitempty"`
}

// Key is the blocker's ordering key, as a task's (TaskKey).
func (b Blocker) Key() string { return TaskKey(b.Repo, b.Number) }

// Gone reports whether the blocker's issue was deleted or transferred.
func (b Blocker) Gone() bool { return b.Issue == IssueDeleted || b.Issue == IssueTransferred }

// Blocks reports whether the blocker keeps the task from being verified.
func (b Blocker) Blocks() bool {
	switch {
	case b.Gone():
		return false
	case b.Task:
		return b.State != Verified && !b.Closed
	}
	return b.Issue != IssueCompleted && b.Issue != IssueNotPlanned
}

// Status says where the blocker stands, for people: "`in-progress`",
// "open (no task)", "closed as not planned".
func (b Blocker) Status() string {
	switch {
	case b.Issue == IssueDeleted:
		return "deleted"
	case b.Issue == IssueTransferred:
		return "transferred"
	case b.Task && b.Closed && b.State != Verified:
		return "closed as not planned"
	case b.Task:
		return "`" + string(b.State) + "`"
	case b.Issue == IssueCompleted:
		return "closed as completed (no task)"
	case b.Issue == IssueNotPlanned:
		return "closed as not planned"
	}
	return "open (no task)"
}

// Why says why a blocker that no longer blocks does not: "" when it blocks.
func (b Blocker) Why() string {
	switch {
	case b.Blocks():
		return ""
	case b.Gone(), b.Issue == IssueNotPlanned, b.Task && b.Closed && b.State != Verified:
		return b.Status() + ": it stops blocking"
	}
	return b.Status()
}

// Ref names the blocker as seen from a task of repo: "#3", or "owner/name#3"
// in another repository.
func (b Blocker) Ref(repo string) string { return IssueRef(repo, b.Repo, b.Number) }

// IssueRef names issue n of repo as seen from a task of from.
func IssueRef(from, repo string, n int) string {
	if strings.EqualFold(from, repo) {
		return fmt.Sprintf("#%d", n)
	}
	return fmt.Sprintf("%s#%d", repo, n)
}

// Describe names the blocker with its status and link, for people.
func (b Blocker) Describe(repo string) string {
	s := b.Ref(repo) + " (" + b.Status()
	if b.Via == LinkSubIssue {
		s += ", a sub-issue"
	}
	return s + ")"
}

// Links are a task's blockers as they are now, and the cycle of tasks it is
// in (keys, starting with the task's own; nil when it is in none).
type Links struct {
	Blockers []Blocker `json:"blockers,omitempty"`
	Cycle    []string  `json:"cycle,omitempty"`
}

// LinkChange is a change of one link GitHub reported (a dependency added or
// removed, a sub-issue added or removed), or news of one blocker (Update: its
// status changed).
type LinkChange struct {
	Blocker Blocker `json:"blocker"`
	Removed bool    `json:"removed,omitempty"`
	Update  bool    `json:"update,omitempty"`
}

// ApplyLink is blockers with change applied (a new slice; blockers is not
// modified): an added link is added (or its blocker's status refreshed), a
// removed link removed, an update changes the status of a blocker already
// there and adds none. A blocker linked both ways (blocked by and a
// sub-issue) is kept once per link.
func ApplyLink(blockers []Blocker, change LinkChange) []Blocker {
	out := slices.Clone(blockers)
	b := change.Blocker
	same := func(x Blocker) bool { return x.Key() == b.Key() && (change.Update || x.Via == b.Via) }
	if change.Removed {
		return slices.DeleteFunc(out, same)
	}
	found := false
	for i := range out {
		if same(out[i]) {
			via, title := out[i].Via, out[i].Title
			out[i] = b
			out[i].Via = via
			if b.Title == "" {
				out[i].Title = title
			}
			found = true
		}
	}
	if !found && !change.Update {
		out = append(out, b)
	}
	return out
}

// MaxBlockers bounds the blockers a task keeps: GitHub allows 50 "blocked
// by" links and 100 sub-issues per issue; past this, the rest are not read.
const MaxBlockers = 150

// Waits are the task's blockers that block it now.
func (t *Task) Waits() []Blocker {
	var out []Blocker
	for _, b := range t.Blockers {
		if b.Blocks() {
			out = append(out, b)
		}
	}
	return out
}

// WaitList names the blockers that block the task, each with its status.
func (t *Task) WaitList() string {
	var parts []string
	for _, b := range t.Waits() {
		parts = append(parts, b.Describe(t.Repo))
	}
	return strings.Join(parts, ", ")
}

// CycleText shows the task's cycle as refs joined by arrows, back to the
// task ("" when it is in none).
func (t *Task) CycleText() string {
	if len(t.Cycle) == 0 {
		return ""
	}
	var parts []string
	for _, k := range append(slices.Clone(t.Cycle), t.Cycle[0]) {
		repo, n, ok := SplitTaskKey(k)
		if !ok {
			parts = append(parts, k)
			continue
		}
		parts = append(parts, IssueRef(t.Repo, repo, n))
	}
	return strings.Join(parts, " → ")
}

// SplitTaskKey splits a TaskKey into its repository and number.
func SplitTaskKey(key string) (string, int, bool) {
	i := strings.LastIndexByte(key, '#')
	if i <= 0 {
		return "", 0, false
	}
	var n int
	if _, err := fmt.Sscanf(key[i+1:], "%d", &n); err != nil || n <= 0 || fmt.Sprint(n) != key[i+1:] {
		return "", 0, false
	}
	return key[:i], n, true
}

// FindCycle finds a cycle of blocking links through start: next(k) are the
// keys of the tasks that block task k. It returns the cycle's keys from start
// (start first, each blocked by the next, the last blocked by start), the
// shortest one found breadth first, or nil. At most limit tasks are visited:
// a cycle through more is not found.
func FindCycle(start string, next func(string) []string, limit int) []string {
	parent := map[string]string{}
	queue := []string{start}
	visited := 1
	for len(queue) > 0 {
		k := queue[0]
		queue = queue[1:]
		for _, n := range next(k) {
			if n == start {
				path := []string{k}
				for p := k; p != start; {
					p = parent[p]
					path = append(path, p)
				}
				slices.Reverse(path)
				return path
			}
			if _, seen := parent[n]; seen || visited >= limit {
				continue
			}
			parent[n] = k
			visited++
			queue = append(queue, n)
		}
	}
	return nil
}

// MaxCycleSearch bounds the tasks FindCycle visits for one task.
const MaxCycleSearch = 200

// sameCycle reports whether a and b are the same cycle (the same tasks, in
// the same order, from any start).
func sameCycle(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 {
		return true
	}
	i := slices.Index(b, a[0])
	if i < 0 {
		return false
	}
	return slices.Equal(a, append(slices.Clone(b[i:]), b[:i]...))
}

// SameLinks reports whether a task's links say the same as l: the same
// blockers with the same statuses and the same cycle.
func (t *Task) SameLinks(l Links) bool {
	return slices.Equal(t.Blockers, l.Blockers) && sameCycle(t.Cycle, l.Cycle)
}

// setLinks takes in the task's links as they are now (docs/design.md,
// Dependencies): the history says what changed, and when the last blocker
// stops blocking the card says the task is unblocked and whoever was refused
// a /verify for it is told, once.
func (d *decider) setLinks(l Links) {
	t := d.t
	if len(l.Blockers) > MaxBlockers {
		l.Blockers = l.Blockers[:MaxBlockers]
	}
	if t.SameLinks(l) {
		return
	}
	wasWaiting := len(t.Waits()) > 0
	old := t.Blockers
	find := func(list []Blocker, b Blocker) (Blocker, bool) {
		i := slices.IndexFunc(list, func(x Blocker) bool { return x.Key() == b.Key() && x.Via == b.Via })
		if i < 0 {
			return Blocker{}, false
		}
		return list[i], true
	}
	for _, b := range l.Blockers {
		was, ok := find(old, b)
		switch {
		case !ok && b.Blocks():
			d.note(fmt.Sprintf("now waits for %s", b.Describe(t.Repo)))
		case !ok:
			d.note(fmt.Sprintf("linked to %s, which does not block it: %s", b.Ref(t.Repo), b.Why()))
		case was.Blocks() && !b.Blocks():
			d.note(fmt.Sprintf("%s no longer blocks it: %s", b.Ref(t.Repo), b.Why()))
		case !was.Blocks() && b.Blocks():
			d.note(fmt.Sprintf("waits again for %s", b.Describe(t.Repo)))
		}
	}
	for _, b := range old {
		if _, ok := find(l.Blockers, b); !ok {
			d.note(fmt.Sprintf("%s removed: no longer a blocker", linkName(b, t.Repo)))
		}
	}
	switch {
	case len(l.Cycle) > 0 && !sameCycle(t.Cycle, l.Cycle):
		t.Blockers, t.Cycle = l.Blockers, l.Cycle
		d.note(fmt.Sprintf("dependency cycle: %s: no task in it can be verified until a lead breaks it", t.CycleText()))
	case len(l.Cycle) == 0 && len(t.Cycle) > 0:
		d.note(fmt.Sprintf("dependency cycle %s broken", t.CycleText()))
	}
	t.Blockers, t.Cycle = l.Blockers, l.Cycle
	d.dirty()
	if wasWaiting && len(t.Waits()) == 0 {
		d.note("unblocked: no blocker is left")
		if len(t.Waiting) > 0 {
			d.notice(t.Number, Notice{Kind: NoticeUnblocked, Mentions: Logins(t.Waiting), State: t.State})
			t.Waiting = nil
		}
	}
}

// linkName names a link: "dependency on #3", "sub-issue #3".
func linkName(b Blocker, repo string) string {
	if b.Via == LinkSubIssue {
		return "sub-issue " + b.Ref(repo)
	}
	return "dependency on " + b.Ref(repo)
}

// maxWaiting bounds Task.Waiting.
const maxWaiting = 10

// blocked refuses /verify c while a blocker blocks the task, naming each,
// and remembers who asked so that they are told when it is unblocked.
func (d *decider) blocked(c Command) bool {
	t := d.t
	waits := t.Waits()
	if len(waits) == 0 {
		return false
	}
	why := fmt.Sprintf("#%d is blocked by %s. /verify works once every blocker is verified (an issue that is no task: closed as completed).", t.Number, t.WaitList())
	if len(t.Cycle) > 0 {
		why += fmt.Sprintf(" It is in a dependency cycle (%s): a lead breaks it by removing a link, or overrides.", t.CycleText())
	}
	d.refuse(c, why)
	if !containsUser(t.Waiting, d.actor()) && len(t.Waiting) < maxWaiting {
		t.Waiting = append(t.Waiting, d.actor())
		d.changed = true
	}
	return true
}

// overridden is what a lead's override bypasses among the blockers, for the
// history ("" when nothing blocks).
func (d *decider) overridden() string {
	if w := d.t.WaitList(); w != "" {
		return " (overriding blockers: " + w + ")"
	}
	return ""
}
