package rules

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func shTask(n int, st State, failing bool, pr int, head string) *Task {
	return &Task{Number: n, Title: fmt.Sprintf("task %d", n), State: st, Failing: failing,
		PRs: []LinkedPR{{Number: pr, Head: head, Open: true}}}
}

// tracked is pull request pr on head closing task t, answered by CheckFor.
func shTracked(pr int, t *Task) HeadAnswer {
	p := &PullRequest{Repo: "o/r", PRFacts: PRFacts{Number: pr, Head: "h", Open: true}, Links: []int{t.Number}}
	return HeadAnswer{Number: pr, Tracked: true, Check: CheckFor(p, []*Task{t})}
}

// shUntracked is pull request pr on head that links no task, answered by
// UntrackedCheck under gate g; refused: an outsider's whose Fixes was refused.
func shUntracked(pr int, author string, refused bool, g GateConfig) HeadAnswer {
	p := &PullRequest{Repo: "o/r", PRFacts: PRFacts{Number: pr, Head: "h", Open: true, Author: User{Login: author, ID: 1}}, CommittersHead: "h"} // who built the head was read: its author alone
	if refused {
		p.Named, p.Refused, p.Outsider = []int{1}, []int{1}, true
	}
	return HeadAnswer{Number: pr, Check: UntrackedCheck(p, g, nil)}
}

func verdict(c Check) string {
	if c.Status == "completed" {
		return c.Conclusion
	}
	return c.Status
}

func TestHeadCheck(t *testing.T) {
	require := GateConfig{Untracked: UntrackedRequire, Exempt: []string{"dependabot[bot]"}}
	allow := GateConfig{Untracked: UntrackedAllow}
	verified := shTracked(1, shTask(10, Verified, false, 1, "h"))
	waiting := shTracked(2, shTask(11, Review, false, 2, "h"))
	failing := shTracked(3, shTask(12, InProgress, true, 3, "h"))
	verified4 := shTracked(4, shTask(13, Verified, false, 4, "h"))
	for _, tc := range []struct {
		name    string
		answers []HeadAnswer
		want    string
		wantFor int
		note    string // in the check's note
	}{
		{"no pull request", nil, "", 0, ""},
		{"one verified", []HeadAnswer{verified}, "success", 1, ""},
		{"an outsider's fork on a verified head", []HeadAnswer{verified, shUntracked(9, "mallory", true, require)}, "success", 1, ""},
		{"the outsider's opened first", []HeadAnswer{shUntracked(0, "mallory", true, require), verified}, "success", 1, ""},
		{"untracked under allow on a waiting head", []HeadAnswer{waiting, shUntracked(9, "carol", false, allow)}, "in_progress", 2, ""},
		{"exempt author on a waiting head", []HeadAnswer{shUntracked(9, "dependabot[bot]", false, require), waiting}, "in_progress", 2, ""},
		{"untracked under require on a failing head", []HeadAnswer{failing, shUntracked(9, "carol", false, require)}, "failure", 3, ""},
		{"two tracked, both verified", []HeadAnswer{verified4, verified}, "success", 1, "#1, #4"},
		{"two tracked, one waiting", []HeadAnswer{verified, waiting}, "in_progress", 1, "#2 is still waiting"},
		{"two tracked, one failing", []HeadAnswer{failing, verified, waiting}, "failure", 1, "#3 does not pass"},
		{"only the outsider's left", []HeadAnswer{shUntracked(9, "mallory", true, require)}, "failure", 9, ""},
		{"only the outsider's left, under allow", []HeadAnswer{shUntracked(9, "mallory", true, allow)}, "failure", 9, ""},
		{"an exempt one and an outsider's", []HeadAnswer{shUntracked(5, "mallory", true, require), shUntracked(9, "dependabot[bot]", false, require)}, "success", 9, ""},
		{"an outsider's and an untracked one under allow", []HeadAnswer{shUntracked(5, "mallory", true, allow), shUntracked(9, "carol", false, allow)}, "success", 9, ""},
		{"two untracked under require", []HeadAnswer{shUntracked(9, "carol", false, require), shUntracked(5, "mallory", false, require)}, "failure", 5, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, n := HeadCheck(tc.answers)
			if got := verdict(c); got != tc.want || n != tc.wantFor {
				t.Fatalf("HeadCheck = %s for #%d, want %s for #%d (%s)", got, n, tc.want, tc.wantFor, c.Note)
			}
			if !strings.Contains(c.Note, tc.note) {
				t.Errorf("note %q does not say %q", c.Note, tc.note)
			}
		})
	}
}

// The tasks of pull requests that share a head are listed once each.
func TestHeadCheckListsEachTaskOnce(t *testing.T) {
	shared := shTask(10, Verified, false, 1, "h")
	shared.PRs = append(shared.PRs, LinkedPR{Number: 2, Head: "h", Open: true})
	a, b := shTracked(1, shared), shTracked(2, shared)
	b.Check.Tasks = append(b.Check.Tasks, CheckTask{Number: 11, State: Review})
	b.Check.Status, b.Check.Conclusion = "in_progress", ""
	c, _ := HeadCheck([]HeadAnswer{a, b})
	var got []int
	for _, t := range c.Tasks {
		got = append(got, t.Number)
	}
	if !slices.Equal(got, []int{10, 11}) || verdict(c) != "in_progress" {
		t.Fatalf("tasks %v (%s), want [10 11] in_progress", got, verdict(c))
	}
}

// Shared heads, at random: tasks in every state the random sequences of
// TestDecideTaskProperties reach, answered by CheckFor on pull requests
// that share one head with pull requests that close no task (outsiders',
// exempt authors', anyone's under require or allow).
//
//   - anyone else's pull request changes nothing while a tracked one is
//     there: the verdict is that of the tracked ones alone;
//   - the verdict passes only if each tracked pull request's passes, fails if
//     one fails, and waits otherwise;
//   - with none tracked, it passes only if one of the others passes alone;
//   - the order the pull requests are listed in changes nothing;
//   - closing one (leaving it out) gives the verdict of those left.
func TestHeadCheckProperties(t *testing.T) {
	var pool, passing []*Task // passing: verified for the head of a pull request it has
	for seed := uint64(1); seed <= 150; seed++ {
		s := newPropSeq(seed)
		var cur *Task
		for range 40 {
			ev, f := s.event(cur)
			if d := DecideTask(cur, ev, f); d.Task != nil {
				cur = d.Task
				if len(cur.PRs) > 0 {
					pool = append(pool, snapshot(cur))
				}
				if cur.State == Verified && !cur.Failing && slices.ContainsFunc(cur.PRs, func(lp LinkedPR) bool { return lp.Open }) {
					passing = append(passing, snapshot(cur))
				}
			}
		}
	}
	if len(pool) < 100 || len(passing) < 10 {
		t.Fatalf("only %d tasks with pull requests, %d verified", len(pool), len(passing))
	}
	r := rand.New(rand.NewPCG(27, 4))
	gates := []GateConfig{{Untracked: UntrackedRequire}, {Untracked: UntrackedAllow}, {Untracked: UntrackedRequire, Exempt: []string{"dependabot[bot]"}}}
	seen := map[string]int{}
	for i := range 5000 {
		g := gates[r.IntN(len(gates))]
		var answers []HeadAnswer
		for n := 1; n <= 1+r.IntN(4); n++ {
			if r.IntN(2) == 0 {
				tk := pool[r.IntN(len(pool))]
				lp := tk.PRs[r.IntN(len(tk.PRs))]
				if r.IntN(2) == 0 {
					tk = passing[r.IntN(len(passing))]
					lp = tk.PRs[slices.IndexFunc(tk.PRs, func(lp LinkedPR) bool { return lp.Open })]
				}
				p := &PullRequest{Repo: "o/r", PRFacts: PRFacts{Number: lp.Number, Head: lp.Head, Open: true}, Links: []int{tk.Number}}
				if r.IntN(4) == 0 {
					p.Head = "another"
				}
				answers = append(answers, HeadAnswer{Number: 100*n + lp.Number, Tracked: true, Check: CheckFor(p, []*Task{tk})})
				continue
			}
			author := []string{"mallory", "carol", "dependabot[bot]"}[r.IntN(3)]
			answers = append(answers, shUntracked(100*n, author, author == "mallory" && r.IntN(2) == 0, g))
		}
		got, _ := HeadCheck(answers)
		v := verdict(got)
		var tracked, others []HeadAnswer
		for _, a := range answers {
			if a.Tracked {
				tracked = append(tracked, a)
			} else {
				others = append(others, a)
			}
		}
		fail := func(format string, args ...any) {
			t.Helper()
			var lines []string
			for _, a := range answers {
				lines = append(lines, fmt.Sprintf("#%d tracked=%v %s", a.Number, a.Tracked, verdict(a.Check)))
			}
			t.Fatalf("case %d: %s\n%s", i, fmt.Sprintf(format, args...), strings.Join(lines, "\n"))
		}
		if len(tracked) > 0 {
			alone, _ := HeadCheck(tracked)
			if verdict(alone) != v {
				fail("the others changed the verdict: %s, %s without them", v, verdict(alone))
			}
			want := "success"
			for _, a := range tracked {
				switch verdict(a.Check) {
				case "failure":
					want = "failure"
				case "in_progress":
					if want == "success" {
						want = "in_progress"
					}
				}
			}
			if v != want {
				fail("verdict %s, want %s", v, want)
			}
		} else {
			any := slices.ContainsFunc(others, func(a HeadAnswer) bool { return verdict(a.Check) == "success" })
			if (v == "success") != any {
				fail("verdict %s with no tracked pull request (one passes alone: %v)", v, any)
			}
		}
		shuffled := slices.Clone(answers)
		r.Shuffle(len(shuffled), func(a, b int) { shuffled[a], shuffled[b] = shuffled[b], shuffled[a] })
		if again, _ := HeadCheck(shuffled); verdict(again) != v || again.Note != got.Note {
			fail("the order changed the verdict: %s, then %s", v, verdict(again))
		}
		if len(answers) > 1 {
			k := r.IntN(len(answers))
			left := slices.Delete(slices.Clone(answers), k, k+1)
			after, _ := HeadCheck(left)
			var tl []HeadAnswer
			for _, a := range left {
				if a.Tracked {
					tl = append(tl, a)
				}
			}
			if len(tl) > 0 {
				alone, _ := HeadCheck(tl)
				if verdict(after) != verdict(alone) {
					fail("after #%d closed: %s, the tracked ones left say %s", answers[k].Number, verdict(after), verdict(alone))
				}
			}
		}
		seen[fmt.Sprintf("%d tracked: %s", min(len(tracked), 2), v)]++
	}
	for _, k := range []string{"0 tracked: success", "0 tracked: failure", "1 tracked: success", "1 tracked: in_progress",
		"1 tracked: failure", "2 tracked: success", "2 tracked: in_progress", "2 tracked: failure"} {
		if seen[k] == 0 {
			t.Errorf("the random shared heads never reach %q: %v", k, seen)
		}
	}
	t.Logf("shared heads: %v", seen)
}
