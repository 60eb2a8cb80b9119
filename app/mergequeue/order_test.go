package mergequeue

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/rules"
)

// What a group is built on, and the answer it carries (DESIGN §2: a group
// passes only if its base_sha is the head of the base branch or the head
// of a group that passes).

const branchSHA = "0000000000000000000000000000000000000b0b"

func headOf(i int) string { return fmt.Sprintf("%039d%d", 0, i+1) }

func TestResolve(t *testing.T) {
	g := Group{HeadSHA: headOf(1), BaseSHA: headOf(0), Base: "main"}
	onBranch := g
	onBranch.OnBranch = true
	found := g
	found.BaseSHA = ""
	passing := &Group{HeadSHA: headOf(0), Status: "completed", Conclusion: "success"}
	pending := &Group{HeadSHA: headOf(0), Status: "in_progress"}
	for _, tc := range []struct {
		name           string
		g              Group
		k              Known
		want           *Ahead
		onBranch, need bool
	}{
		{"seen on the branch before: not read again", onBranch, Known{}, nil, true, false},
		{"found after a store loss, no base known: not the branch, it waits", found, Known{},
			&Ahead{Lost: true, Branch: "main"}, false, false},
		{"found after a store loss, whatever else is known", found, Known{Read: true, BranchHead: headOf(0)},
			&Ahead{Lost: true, Branch: "main"}, false, false},
		{"a tracked group that passes", g, Known{Group: passing, GroupPR: 7},
			&Ahead{PR: 7, Status: "completed", Conclusion: "success"}, false, false},
		{"a tracked group with no answer yet", g, Known{Group: pending, GroupPR: 7},
			&Ahead{PR: 7, Status: "in_progress"}, false, false},
		{"a group GitHub merged: on the branch", g, Known{Gone: Merged, GonePR: 7}, nil, true, false},
		{"a group that left the queue", g, Known{Gone: Dequeued, GonePR: 7}, &Ahead{PR: 7, Left: Dequeued}, false, false},
		{"nothing recorded: GitHub must be read", g, Known{}, nil, false, true},
		{"the head of the base branch", g, Known{Read: true, BranchHead: headOf(0)}, nil, true, false},
		{"a queue group not yet asked about", g, Known{Read: true, BranchHead: branchSHA, QueuePR: 7},
			&Ahead{PR: 7, Unseen: true, SHA: headOf(0), Branch: "main", BranchHead: branchSHA}, false, false},
		{"neither: an unknown commit, or the branch moved", g, Known{Read: true, BranchHead: branchSHA},
			&Ahead{Unseen: true, SHA: headOf(0), Branch: "main", BranchHead: branchSHA}, false, false},
	} {
		a, on, need := Resolve(tc.g, tc.k)
		if on != tc.onBranch || need != tc.need || (a == nil) != (tc.want == nil) || (a != nil && *a != *tc.want) {
			t.Errorf("%s: Resolve = %+v, %v, %v; want %+v, %v, %v", tc.name, a, on, need, tc.want, tc.onBranch, tc.need)
		}
	}
}

// groupInput is the input of group i of a chain (pull request 10+i, its one
// task verified or in review), built on ahead.
func groupInput(i int, verified bool, ahead *Ahead) Input {
	head := "1111111111111111111111111111111111111111"
	pr := &rules.PullRequest{Repo: "acme/widgets", Links: []int{100 + i}, PRFacts: rules.PRFacts{Number: 10 + i, Head: head, Open: true}}
	state := rules.Review
	if verified {
		state = rules.Verified
	}
	task := &rules.Task{Repo: "acme/widgets", Number: 100 + i, State: state, PRs: []rules.LinkedPR{{Number: 10 + i, Head: head, Open: true}}}
	return Input{Entry: rules.QueueEntry{PR: 10 + i, Ref: "gh-readonly-queue/main/pr-" + fmt.Sprint(10+i) + "-" + headOf(i-1), Base: "main", Head: head},
		PR: pr, Tasks: []*rules.Task{task}, Ahead: ahead}
}

func TestDecideCarriesTheGroupAhead(t *testing.T) {
	for _, tc := range []struct {
		name               string
		verified           bool
		ahead              *Ahead
		status, conclusion string
		note               string
		aheadPR            int
		on                 string
	}{
		{"on the branch", true, nil, "completed", "success", "", 0, ""},
		{"ahead passes", true, &Ahead{PR: 7, Status: "completed", Conclusion: "success"}, "completed", "success", "", 0, ""},
		{"ahead fails", true, &Ahead{PR: 7, Status: "completed", Conclusion: "failure"}, "completed", "failure", "does not pass", 7, ""},
		{"ahead has no answer yet", true, &Ahead{PR: 7, Status: "in_progress"}, "in_progress", "", "waits for that group", 7, ""},
		{"ahead not yet asked about", true, &Ahead{PR: 7, Unseen: true, SHA: headOf(0)}, "in_progress", "", "GitHub has not yet asked countersign about that group", 7, ""},
		{"ahead unknown", true, &Ahead{Unseen: true, SHA: headOf(0), Branch: "main", BranchHead: branchSHA}, "in_progress", "",
			"neither the head of `main` (000000000000) nor a merge group countersign has been asked about", 0, headOf(0)},
		{"ahead left the queue", true, &Ahead{PR: 7, Left: Dequeued}, "completed", "failure", "left the queue without being merged (dequeued)", 7, ""},
		{"what it is built on is not known (found again after a store loss)", true, &Ahead{Lost: true, Branch: "main"}, "in_progress", "",
			"countersign does not know what this group is built on", 0, ""},
		{"its own task unverified comes first", false, &Ahead{PR: 7, Unseen: true, SHA: headOf(0)}, "completed", "failure", "#101 is `review`", 0, ""},
	} {
		c := Decide(groupInput(1, tc.verified, tc.ahead))
		if c.Status != tc.status || c.Conclusion != tc.conclusion || !strings.Contains(c.Note, tc.note) {
			t.Errorf("%s: %s/%s %q; want %s/%s noting %q", tc.name, c.Status, c.Conclusion, c.Note, tc.status, tc.conclusion, tc.note)
			continue
		}
		if c.Queue == nil || c.Queue.Ahead != tc.aheadPR || c.Queue.On != tc.on {
			t.Errorf("%s: queue entry %+v, want ahead #%d on %q", tc.name, c.Queue, tc.aheadPR, tc.on)
		}
	}
}

// The order of deliveries, modelled: a chain of groups, group 0 built on
// the base branch's head and group i on group i-1, decided as mqdecide
// decides them (app/mergequeue/decide/ahead.go): one decision at a time,
// under the repository's merge-queue key, in the order deliveries reach
// that key; a decision that changes a group's answer, or takes in its
// destruction, decides again the groups behind it in the same commit, and
// writes their checks in WriteOrder. GitHub's merge_group deliveries arrive
// in every possible order, interleaved every possible way with a task of a
// queued pull request changing (its pull request's key then queues a
// regroup), an entry leaving the queue, or GitHub merging the first group
// once it passes. Every reachable state is visited, and GitHub's view is
// checked after each check run written: no group passes while a group
// ahead of it does not (merged ones aside); once every delivery is decided
// each group has its final answer.

type event struct {
	kind string // requested, regroup, dequeued, merged
	g    int
}

type mgroup struct {
	status, conclusion string
	onBranch           bool
}

type world struct {
	n        int
	verified []bool
	has      []bool
	grp      []mgroup
	gh       []string // GitHub's view: the last check written on each group
	gone     []string
	behind   [][]bool // behind[a][b]: b recorded behind a
	merged   bool     // GitHub merged group 0: the branch is at its head
	queue    []event  // the merge-queue key's deliveries, in order
	arrived  []bool   // group i's checks_requested has arrived
	extra    []event  // what else happens, once each, at any moment
	bad      error    // GitHub showed a group passing while one ahead did not
}

func (w *world) clone() *world {
	c := *w
	c.verified = slices.Clone(w.verified)
	c.has = slices.Clone(w.has)
	c.grp = slices.Clone(w.grp)
	c.gh = slices.Clone(w.gh)
	c.gone = slices.Clone(w.gone)
	c.behind = make([][]bool, w.n)
	for i := range w.n {
		c.behind[i] = slices.Clone(w.behind[i])
	}
	c.queue = slices.Clone(w.queue)
	c.arrived = slices.Clone(w.arrived)
	c.extra = slices.Clone(w.extra)
	return &c
}

func (w *world) key() string {
	return fmt.Sprintf("%v|%v|%v|%v|%v|%v|%v|%v|%v|%v", w.verified, w.has, w.grp, w.gh, w.gone, w.behind, w.merged, w.queue, w.arrived, w.extra)
}

func (w *world) passing(i int) bool {
	return w.has[i] && w.grp[i].status == "completed" && w.grp[i].conclusion == "success"
}

// check is group i's check as mqdecide works it out from w.
func (w *world) check(i int) (rules.Check, bool) {
	base := branchSHA
	if i > 0 {
		base = headOf(i - 1)
	}
	g := Group{HeadSHA: headOf(i), BaseSHA: base, Base: "main", OnBranch: w.has[i] && w.grp[i].onBranch}
	var k Known
	if i > 0 {
		switch {
		case w.has[i-1]:
			k.Group, k.GroupPR = &Group{Status: w.grp[i-1].status, Conclusion: w.grp[i-1].conclusion}, 10+i-1
		case w.gone[i-1] != "":
			k.Gone, k.GonePR = w.gone[i-1], 10+i-1
		}
	}
	a, onBranch, need := Resolve(g, k)
	if need {
		k.Read, k.BranchHead = true, branchSHA
		if w.merged {
			k.BranchHead = headOf(0)
		}
		if i > 0 && w.gone[i-1] == "" {
			k.QueuePR = 10 + i - 1 // its gh-readonly-queue branch exists
		}
		a, onBranch, _ = Resolve(g, k)
	}
	return Decide(groupInput(i, w.verified[i], a)), onBranch
}

// write is one check a decision writes.
type write struct {
	g     int
	depth int
	check string
}

func label(c rules.Check) string {
	if c.Status == "completed" {
		return c.Conclusion
	}
	return c.Status
}

// answer records check c on group i (decided at depth) and, when it
// changed, decides again the groups behind it, in the same decision.
func (w *world) answer(i int, c rules.Check, onBranch bool, depth int, out *[]write) {
	changed := !w.has[i] || w.grp[i].status != c.Status || w.grp[i].conclusion != c.Conclusion
	*out = append(*out, write{i, depth, label(c)})
	w.has[i] = true
	w.grp[i] = mgroup{c.Status, c.Conclusion, w.grp[i].onBranch || onBranch}
	if changed {
		w.cascade(i, depth+1, out)
	}
}

// cascade decides again the groups recorded behind group i.
func (w *world) cascade(i, depth int, out *[]write) {
	for b := range w.n {
		if !w.behind[i][b] {
			continue
		}
		if w.gone[i] != "" {
			w.behind[i][b] = false
		}
		if w.has[b] {
			c, onBranch := w.check(b)
			if w.grp[b].status != c.Status || w.grp[b].conclusion != c.Conclusion {
				w.answer(b, c, onBranch, depth, out)
			}
		}
	}
}

// decide takes the next delivery of the merge-queue key, and writes its
// checks on GitHub one at a time, in WriteOrder.
func (w *world) decide() {
	ev := w.queue[0]
	w.queue = w.queue[1:]
	i := ev.g
	var out []write
	switch ev.kind {
	case "requested":
		if w.gone[i] != "" {
			return
		}
		c, onBranch := w.check(i)
		if !onBranch && i > 0 {
			w.behind[i-1][i] = true
		}
		w.answer(i, c, onBranch, 0, &out)
	case "regroup":
		if w.has[i] {
			c, onBranch := w.check(i)
			if w.grp[i].status != c.Status || w.grp[i].conclusion != c.Conclusion {
				w.answer(i, c, onBranch, 0, &out)
			}
		}
	case "dequeued", "merged":
		if w.gone[i] != "" {
			return
		}
		w.gone[i] = ev.kind
		w.has[i] = false
		if i > 0 {
			w.behind[i-1][i] = false
		}
		w.cascade(i, 1, &out)
	}
	slices.SortStableFunc(out, func(a, b write) int {
		return WriteOrder(Staged{a.depth, a.check == "success"}, Staged{b.depth, b.check == "success"})
	})
	for _, x := range out {
		w.gh[x.g] = x.check
		if err := w.safe(); err != nil && w.bad == nil {
			w.bad = fmt.Errorf("while writing the checks of one decision: %w", err)
		}
	}
}

// happen is extra event x happening: a task reopened (its pull request's
// key queues a regroup when a group of it is tracked), or an entry taken out
// of the queue by someone (destroyed, dequeued, is delivered).
func (w *world) happen(x event) {
	switch x.kind {
	case "reopen":
		w.verified[x.g] = false
		if w.has[x.g] {
			w.queue = append(w.queue, event{kind: "regroup", g: x.g})
		}
	case "dequeued":
		w.queue = append(w.queue, x)
	}
}

// safe reports a group that GitHub sees passing while it sees a group ahead
// of it not passing (merged ones aside).
func (w *world) safe() error {
	for i := 1; i < w.n; i++ {
		if w.gh[i] != "success" || w.gone[i] != "" {
			continue
		}
		for j := 0; j < i; j++ {
			if w.gh[j] != "success" && w.gone[j] != "merged" {
				return fmt.Errorf("GitHub sees group %d pass while group %d ahead of it is %q (gone %q)", i, j, w.gh[j], w.gone[j])
			}
		}
	}
	return nil
}

// explore visits every state reachable from w; final checks each state in
// which everything has happened and been decided. It returns the number of
// states visited.
func explore(t *testing.T, w *world, final func(*world) error, allowMerge bool) int {
	seen := map[string]bool{}
	var visit func(w *world, path []string) bool
	step := func(c *world, path []string, what string) bool { return visit(c, append(slices.Clip(path), what)) }
	visit = func(w *world, path []string) bool {
		k := w.key()
		if seen[k] {
			return true
		}
		seen[k] = true
		if err := w.safe(); err != nil || w.bad != nil {
			t.Errorf("%v %v after: %s", err, w.bad, strings.Join(path, ", "))
			return false
		}
		done := len(w.queue) == 0 && len(w.extra) == 0
		if len(w.queue) > 0 {
			c := w.clone()
			c.decide()
			if !step(c, path, fmt.Sprintf("decide %s %d", w.queue[0].kind, w.queue[0].g)) {
				return false
			}
		}
		for i := range w.n {
			if !w.arrived[i] {
				done = false
				c := w.clone()
				c.arrived[i] = true
				c.queue = append(c.queue, event{kind: "requested", g: i})
				if !step(c, path, fmt.Sprintf("checks_requested %d arrives", i)) {
					return false
				}
			}
		}
		for j, x := range w.extra {
			c := w.clone()
			c.extra = slices.Delete(c.extra, j, j+1)
			c.happen(x)
			if !step(c, path, fmt.Sprintf("%s %d", x.kind, x.g)) {
				return false
			}
		}
		if allowMerge && !w.merged && w.passing(0) {
			// GitHub merges group 0 once it passes: the branch moves to
			// its head, and destroyed (merged) is delivered.
			c := w.clone()
			c.merged = true
			c.queue = append(c.queue, event{kind: "merged", g: 0})
			if !step(c, path, "GitHub merges group 0") {
				return false
			}
		}
		if done {
			if err := final(w); err != nil {
				t.Errorf("%v after: %s", err, strings.Join(path, ", "))
				return false
			}
		}
		return true
	}
	visit(w, nil)
	return len(seen)
}

// wantFinal: each group not destroyed has answered, success exactly when
// it and every group ahead of it (merged ones aside) is verified and in the
// queue, failure otherwise.
func wantFinal(w *world) error {
	ok := true
	for i := range w.n {
		if w.gone[i] != "" {
			ok = ok && w.gone[i] == "merged"
			continue
		}
		ok = ok && w.verified[i]
		want := "failure"
		if ok {
			want = "success"
		}
		if !w.has[i] || w.grp[i].status != "completed" || w.grp[i].conclusion != want {
			return fmt.Errorf("group %d ends %v (tracked %v), want %s", i, w.grp[i], w.has[i], want)
		}
	}
	return nil
}

func TestDeliveryOrders(t *testing.T) {
	for _, tc := range []struct {
		name     string
		verified []bool
		extra    []event
		merge    bool
	}{
		{name: "two groups, A verified", verified: []bool{true, true}},
		{name: "two groups, A unverified", verified: []bool{false, true}},
		{name: "two groups, B unverified", verified: []bool{true, false}},
		{name: "three groups, all verified", verified: []bool{true, true, true}},
		{name: "three groups, A unverified", verified: []bool{false, true, true}},
		{name: "three groups, B unverified", verified: []bool{true, false, true}},
		{name: "three groups, C unverified", verified: []bool{true, true, false}},
		{name: "two groups, A's task reopened", verified: []bool{true, true}, extra: []event{{kind: "reopen", g: 0}}},
		{name: "three groups, A's task reopened", verified: []bool{true, true, true}, extra: []event{{kind: "reopen", g: 0}}},
		{name: "three groups, B's task reopened", verified: []bool{true, true, true}, extra: []event{{kind: "reopen", g: 1}}},
		{name: "two groups, A dequeued", verified: []bool{true, true}, extra: []event{{kind: "dequeued", g: 0}}},
		{name: "three groups, A unverified and dequeued", verified: []bool{false, true, true}, extra: []event{{kind: "dequeued", g: 0}}},
		{name: "three groups, B dequeued", verified: []bool{true, true, true}, extra: []event{{kind: "dequeued", g: 1}}},
		{name: "two groups, A merged by GitHub once it passes", verified: []bool{true, true}, merge: true},
		{name: "three groups, A merged by GitHub once it passes", verified: []bool{true, true, true}, merge: true},
		{name: "three groups, A merged, C unverified", verified: []bool{true, true, false}, merge: true},
		{name: "three groups, A merged, B's task reopened", verified: []bool{true, true, true}, merge: true, extra: []event{{kind: "reopen", g: 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := len(tc.verified)
			w := &world{n: n, verified: slices.Clone(tc.verified), has: make([]bool, n), grp: make([]mgroup, n), gh: make([]string, n), gone: make([]string, n),
				behind: make([][]bool, n), arrived: make([]bool, n), extra: slices.Clone(tc.extra)}
			for i := range n {
				w.behind[i] = make([]bool, n)
			}
			states := explore(t, w, wantFinal, tc.merge)
			t.Logf("%d states", states)
		})
	}
}

// A group found again from GitHub's queue branches after a store loss: the
// payload that said its base_sha is gone, and it is read again as the first
// parent of the group's commit. Its pull request's tasks verified, it passes
// only when that is the head of the base branch or of a group that passes:
// built on an unverified group ahead (which GitHub, with "Only merge
// non-failing pull requests" unselected, merges with it), it fails; on a
// commit it cannot name, or when its commit could not be read, it waits.
func TestFoundGroupIsBuiltOnItsFirstParent(t *testing.T) {
	ref := RefPrefix + "main/pr-11-" + headOf(0)
	failing := &Group{HeadSHA: headOf(0), Status: "completed", Conclusion: "failure"}
	passing := &Group{HeadSHA: headOf(0), Status: "completed", Conclusion: "success"}
	for _, tc := range []struct {
		name               string
		parent             string // the first parent of the group's commit ("": unreadable)
		k                  Known  // what countersign knows of it once read
		status, conclusion string
	}{
		{"built on an unverified group ahead", headOf(0), Known{Group: failing, GroupPR: 10}, "completed", "failure"},
		{"built on a group ahead that passes", headOf(0), Known{Group: passing, GroupPR: 10}, "completed", "success"},
		{"built on the head of the base branch", headOf(0), Known{Read: true, BranchHead: headOf(0)}, "completed", "success"},
		{"built on a commit it cannot name", headOf(0), Known{Read: true, BranchHead: branchSHA}, "in_progress", ""},
		{"its commit could not be read", "", Known{Read: true, BranchHead: headOf(0)}, "in_progress", ""},
	} {
		gh := &fakeGitHub{refs: map[string]string{ref: headOf(1)}, parents: map[string]string{headOf(1): tc.parent}}
		found, err := Find(context.Background(), gh, "acme/widgets", 11)
		if err != nil || len(found) != 1 {
			t.Fatalf("%s: Find = %+v, %v", tc.name, found, err)
		}
		a, onBranch, need := Resolve(found[0], tc.k)
		if need {
			t.Fatalf("%s: Resolve asks for a read it was given", tc.name)
		}
		in := groupInput(1, true, a)
		if onBranch {
			in.Ahead = nil
		}
		c := Decide(in)
		if c.Status != tc.status || c.Conclusion != tc.conclusion {
			t.Errorf("%s: %s/%s %q; want %s/%s", tc.name, c.Status, c.Conclusion, c.Note, tc.status, tc.conclusion)
		}
	}
}
