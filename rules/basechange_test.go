package rules

import (
	"slices"
	"strings"
	"testing"
)

// withMerges is task t (a fixture) whose pull request #12 merges m, approved
// as merging m.
func withMerges(t *Task, m string) *Task {
	for i := range t.PRs {
		t.PRs[i].Merges = m
	}
	for i := range t.Approvals {
		if t.Approvals[i].PR != 0 {
			t.Approvals[i].Merges = m
		}
	}
	return t
}

// fxRetarget is #12's base changing from "stack" to "main" (head h1 as
// before); it now merges m, with changes files no one approved.
func fxRetarget(m string, changes int) Event {
	ev := fxPREvent(PRRetargeted, fxHead, false)
	ev.PR.Merges = m
	ev.Retarget = &Retarget{From: "stack", To: "main", Changes: changes}
	return ev
}

// The base-change decision (DESIGN §2, the review, completed, verified ->
// review row): only a base change that brings changes no one approved makes
// what was approved and verified stale.
func TestBaseChange(t *testing.T) {
	cases := []struct {
		name     string
		state    State
		was      string // what #12 merged (and was approved as merging)
		ev       Event
		want     State
		changed  bool   // the record changes
		why      string // in the history's last entry
		verified bool   // the verifier is kept
	}{
		{name: "verified, brings a change", state: Verified, was: "m1", ev: fxRetarget("m2", 1), want: Review, changed: true,
			why: "#12's base changed from stack to main, bringing 1 change no one approved: approvals and verification are stale"},
		{name: "verified, brings three", state: Verified, was: "m1", ev: fxRetarget("m2", 3), want: Review, changed: true,
			why: "bringing 3 changes no one approved"},
		{name: "completed, brings a change", state: Completed, was: "m1", ev: fxRetarget("m2", 2), want: Review, changed: true,
			why: "#12's base changed from stack to main"},
		{name: "verified, merges the same", state: Verified, was: "m1", ev: fxRetarget("m1", 0), want: Verified, verified: true},
		{name: "completed, merges the same", state: Completed, was: "m1", ev: fxRetarget("m1", 0), want: Completed},
		{name: "review, brings a change", state: Review, was: "m1", ev: fxRetarget("m2", 1), want: Review, changed: true},
		{name: "in progress, brings a change: a new attempt", state: InProgress, was: "m1", ev: fxRetarget("m2", 1), want: Review, changed: true},
		{name: "a record from before fingerprints: a base change is judged stale", state: Verified, was: "", ev: fxRetarget("m2", 1), want: Review, changed: true},
		{name: "a base change seen late, through another event", state: Verified, was: "m1",
			ev: func() Event { ev := fxPREvent(PRLinked, fxHead, false); ev.PR.Merges = "m2"; return ev }(), want: Review, changed: true,
			why: "#12 now merges changes no one approved (its base changed)"},
		{name: "an event that read nothing keeps what is known", state: Verified, was: "m1",
			ev: fxPREvent(PRLinked, fxHead, false), want: Verified, verified: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			task := withMerges(fxTask(c.state, true), c.was)
			d := decide(t, task, c.ev, fxFacts("dave"))
			if (d.Task != nil) != c.changed {
				t.Fatalf("record changed = %v, want %v", d.Task != nil, c.changed)
			}
			got := task
			if d.Task != nil {
				got = d.Task
			}
			if got.State != c.want {
				t.Fatalf("state %s, want %s\n%s", got.State, c.want, fmtHistory(got.History))
			}
			if c.why != "" && !strings.Contains(got.History[len(got.History)-1].Why, c.why) {
				t.Fatalf("history says %q, want %q", got.History[len(got.History)-1].Why, c.why)
			}
			if c.verified != !got.Verifier.IsZero() && c.state == Verified {
				t.Fatalf("verifier %v, kept = %v", got.Verifier, c.verified)
			}
			if c.changed && c.state == Verified && (got.Verifier != User{} || !got.VerifiedAt.IsZero()) {
				t.Fatalf("verification kept after a stale base change: %v", got.Verifier)
			}
			if c.changed {
				if len(d.Refresh) == 0 || d.Refresh[0] != fxPR {
					t.Fatalf("refresh %v, want #12's check worked out again", d.Refresh)
				}
			}
		})
	}
}

// An approval counts for the head and what it merged: back on what was
// approved (a base change, then back), it counts again; the verification
// does not come back.
func TestBaseChangeThenBack(t *testing.T) {
	task := withMerges(fxTask(Verified, true), "m1")
	d := decide(t, task, fxRetarget("m2", 1), fxFacts("dave"))
	if d.Task == nil || d.Task.State != Review {
		t.Fatalf("after the first change: %+v", d.Task)
	}
	back := fxRetarget("m1", 1)
	back.Retarget.From, back.Retarget.To = "main", "stack"
	d2 := decide(t, d.Task, back, fxFacts("dave"))
	if d2.Task == nil || d2.Task.State != Completed {
		t.Fatalf("back on what was approved: %+v", d2.Task)
	}
	if !d2.Task.Verifier.IsZero() {
		t.Fatalf("verification came back: %v", d2.Task.Verifier)
	}

	// Two changes in a row, neither back: no approval covers it.
	d3 := decide(t, d.Task, fxRetarget("m3", 2), fxFacts("dave"))
	got := d.Task
	if d3.Task != nil {
		got = d3.Task
	}
	if got.State != Review {
		t.Fatalf("after two changes: %s", got.State)
	}
}

// An approval given while the pull request merged m2 counts for m2 only.
func TestApprovalRecordsWhatItMerged(t *testing.T) {
	task := withMerges(fxTask(Review, true), "m2")
	d := decide(t, task, fxReview("carol", "approved", fxHead, ""), fxFacts("carol"))
	if d.Task == nil || d.Task.State != Completed {
		t.Fatalf("approval: %+v", d.Task)
	}
	if a := d.Task.Approvals[len(d.Task.Approvals)-1]; a.Merges != "m2" {
		t.Fatalf("approval records %q, want m2", a.Merges)
	}
	d2 := decide(t, d.Task, fxRetarget("m3", 1), fxFacts("dave"))
	if d2.Task == nil || d2.Task.State != Review {
		t.Fatalf("after a base change that brings a change: %+v", d2.Task)
	}
	// The same reviewer approves the same head again within the same second
	// (GitHub's times are whole seconds): it approves what it merges now, so
	// it counts; it is not the earlier approval taken in twice.
	d3 := decide(t, d2.Task, fxReview("carol", "approved", fxHead, ""), fxFacts("carol"))
	if d3.Task == nil || d3.Task.State != Completed {
		t.Fatalf("a new approval of what it merges after the base change: %+v", d3.Task)
	}
}

// What a file list fingerprints, and which changes a base change brings.
func TestNewChanges(t *testing.T) {
	p := func(s string) *string { return &s }
	a1 := MergeEntry("added", "", "b1", p("+a"))
	b1 := MergeEntry("added", "", "b2", p("+b"))
	b2 := MergeEntry("modified", "", "b2", p("+x\n+b"))
	bin := MergeEntry("modified", "", "b3", nil)
	if a1 == b1 || b1 == b2 || !strings.HasPrefix(bin, unseenPrefix) {
		t.Fatalf("entries: %s %s %s %s", a1, b1, b2, bin)
	}
	if MergeEntry("added", "", "other-blob", p("+a")) != a1 {
		t.Fatal("a change shown with a patch is judged by its patch, not the head's blob")
	}
	cases := []struct {
		name      string
		was, now  map[string]string
		accounted map[string]string
		want      []string
	}{
		{"the same", map[string]string{"a": a1}, map[string]string{"a": a1}, nil, nil},
		{"a new file", map[string]string{"a": a1}, map[string]string{"a": a1, "b": b1}, nil, []string{"b"}},
		{"another patch of the same file", map[string]string{"b": b1}, map[string]string{"b": b2}, nil, []string{"b"}},
		{"a file no longer merged", map[string]string{"a": a1, "b": b1}, map[string]string{"a": a1}, nil, []string{"b"}},
		{"a file without a patch is never the same", map[string]string{"c": bin}, map[string]string{"c": bin}, nil, []string{"c"}},
		{"a new file a merged pull request put on the base", map[string]string{"a": a1}, map[string]string{"a": a1, "b": b1},
			map[string]string{"b": b1}, nil},
		{"a merged pull request's other change of that file accounts for nothing", map[string]string{"a": a1}, map[string]string{"a": a1, "b": b2},
			map[string]string{"b": b1}, []string{"b"}},
		{"nothing read before", nil, map[string]string{"a": a1}, nil, []string{"a"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var acc func(f, e string) bool
			if c.accounted != nil {
				acc = func(f, e string) bool { return c.accounted[f] == e }
			}
			got := NewChanges(c.was, c.now, acc)
			if strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Fatalf("new changes %v, want %v", got, c.want)
			}
		})
	}
	if MergesOf(map[string]string{"a": a1, "b": b1}) != MergesOf(map[string]string{"b": b1, "a": a1}) ||
		MergesOf(map[string]string{"a": a1}) == MergesOf(map[string]string{"a": a1, "b": b1}) {
		t.Fatal("MergesOf must fingerprint the whole list, in any order")
	}
}

// A stack's upper pull request whose base changes when the lower one merges
// goes through Fanout to its tasks as a retarget, linked or not.
func TestFanoutRetarget(t *testing.T) {
	old := &PullRequest{Repo: fxRepo, PRFacts: PRFacts{Number: fxPR, Open: true, Head: fxHead}, Links: []int{7}}
	cur := &PullRequest{Repo: fxRepo, PRFacts: PRFacts{Number: fxPR, Open: true, Head: fxHead}, Links: []int{7, 8}}
	got := Fanout(old, cur, PRRetargeted)
	want := []TaskEvent{{7, PRRetargeted}, {8, PRLinked}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("fanout %v, want %v", got, want)
	}
}

// The random sequences reach base changes that make a completed or verified
// task stale, and ones that bring nothing new to a completed or verified task.
func TestDecideTaskPropertiesReachBaseChanges(t *testing.T) {
	stale, kept := 0, 0
	for seed := uint64(1); seed <= 500; seed++ {
		s := newPropSeq(seed)
		var cur *Task
		for range 60 {
			ev, f := s.event(cur)
			d := DecideTask(cur, ev, f)
			if ev.Kind == PRRetargeted && cur != nil && (cur.State == Completed || cur.State == Verified) {
				if d.Task != nil && d.Task.State == Review && strings.Contains(d.Task.History[len(d.Task.History)-1].Why, "base changed") {
					stale++
				} else if d.Task == nil || d.Task.State == cur.State {
					kept++
				}
			}
			if d.Task != nil {
				cur = d.Task
			}
		}
	}
	if stale == 0 || kept == 0 {
		t.Fatalf("base changes reached: %d stale, %d kept", stale, kept)
	}
	t.Logf("base changes on completed or verified tasks: %d stale, %d kept", stale, kept)
}

// A review given while the pull request had another base than the one
// recorded now saw other changes: its approval is not counted, and the
// reviewer is told to approve again.
func TestApprovalOnAnotherBaseNotCounted(t *testing.T) {
	task := withMerges(fxTask(Review, true), "m2")
	ev := fxReview("carol", "approved", fxHead, "")
	ev.Review.OtherBase = "stack"
	d := decide(t, task, ev, fxFacts("carol"))
	if d.Task == nil || d.Task.State != Review {
		t.Fatalf("approval on another base: %+v", d.Task)
	}
	if len(d.Task.Approvals) != 0 {
		t.Fatalf("approvals %+v", d.Task.Approvals)
	}
	if n := noticeOf(d, NoticeIgnored); n == nil || !strings.Contains(n.Reason, "approve it again") {
		t.Fatalf("notice %+v", n)
	}
}

// Which excused changes a base no longer holds: those changed on it since the
// merged commit, or all of them when the commit left the branch or the
// comparison cannot tell.
func TestUndone(t *testing.T) {
	e := Excuse{PR: 3, Merge: "abc", Files: []string{"b.go", "a.go"}}
	cases := []struct {
		name  string
		since Since
		want  []string
	}{
		{"nothing pushed since", Since{Status: "identical"}, nil},
		{"other files pushed since", Since{Status: "ahead", Files: []string{"README.md"}}, nil},
		{"one reverted", Since{Status: "ahead", Files: []string{"README.md", "a.go"}}, []string{"a.go"}},
		{"both reverted", Since{Status: "ahead", Files: []string{"b.go", "a.go"}}, []string{"a.go", "b.go"}},
		{"the commit left the branch (force push)", Since{Status: "diverged", Files: []string{"README.md"}}, []string{"a.go", "b.go"}},
		{"the branch went back before it", Since{Status: "behind"}, []string{"a.go", "b.go"}},
		{"unknown status", Since{}, []string{"a.go", "b.go"}},
		{"too many files to tell", Since{Status: "ahead", Files: []string{"README.md"}, Truncated: true}, []string{"a.go", "b.go"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Undone(e, c.since); strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Fatalf("undone %v, want %v", got, c.want)
			}
		})
	}
}

// What approvals of a pull request cover: its changes less the excused ones.
func TestApproved(t *testing.T) {
	changes := map[string]string{"a.go": "1", "b.go": "2", "c.go": "3"}
	cases := []struct {
		name    string
		excused []Excuse
		want    string
	}{
		{"none excused", nil, "a.go,b.go,c.go"},
		{"one excused", []Excuse{{PR: 3, Files: []string{"b.go"}}}, "a.go,c.go"},
		{"two pull requests' changes excused", []Excuse{{PR: 3, Files: []string{"b.go"}}, {PR: 4, Files: []string{"a.go", "z.go"}}}, "c.go"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Approved(changes, c.excused)
			keys := make([]string, 0, len(got))
			for f := range got {
				keys = append(keys, f)
			}
			slices.Sort(keys)
			if strings.Join(keys, ",") != c.want {
				t.Fatalf("approved %v, want %s", keys, c.want)
			}
		})
	}
	if len(changes) != 3 {
		t.Fatal("Approved changed its argument")
	}
}

// The base did not change but no longer holds what excused the pull
// request's changes (a revert pushed to it): as for a base change that
// brings changes, approvals and verification are stale, and the history
// says why.
func TestBaseUndone(t *testing.T) {
	undone := func(m string, changes int) Event {
		ev := fxRetarget(m, changes)
		ev.Retarget = &Retarget{From: "main", To: "main", Changes: changes, Undone: 9}
		return ev
	}
	cases := []struct {
		name    string
		state   State
		ev      Event
		want    State
		changed bool
		why     string
	}{
		{"verified, a revert brings a change back", Verified, undone("m2", 1), Review, true,
			"#12's base main no longer holds what #9 merged into it, so #12 brings 1 change no one approved: approvals and verification are stale"},
		{"completed, two changes", Completed, undone("m2", 2), Review, true, "so #12 brings 2 changes no one approved"},
		{"verified, merges what was approved", Verified, undone("m1", 0), Verified, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			task := withMerges(fxTask(c.state, true), "m1")
			d := decide(t, task, c.ev, fxFacts("dave"))
			if (d.Task != nil) != c.changed {
				t.Fatalf("record changed = %v, want %v", d.Task != nil, c.changed)
			}
			got := task
			if d.Task != nil {
				got = d.Task
			}
			if got.State != c.want {
				t.Fatalf("state %s, want %s\n%s", got.State, c.want, fmtHistory(got.History))
			}
			if c.why != "" && !strings.Contains(got.History[len(got.History)-1].Why, c.why) {
				t.Fatalf("history says %q, want %q", got.History[len(got.History)-1].Why, c.why)
			}
		})
	}
}
