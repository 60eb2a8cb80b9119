package rules

import (
	"fmt"
	"slices"
	"testing"
)

// Deliveries arrive in any order (docs/design.md, Deliveries in any order).
// The rules see a burst of a task's events in the order the adapters hand
// them over; the adapters keep two promises, modelled here: a command the
// rules refuse asking for a recheck (Decision.Recheck) is decided again after
// what GitHub already shows (the events of the burst that happened before it)
// is taken in; and a review of a head the task does not know yet is decided
// after the pull request as GitHub shows it (its push). Events taken in
// early come again with their own delivery, and change nothing then. The
// state after every order of a burst is the state of the in-order run.

// burstEvent is one event of a burst, in the order it happened on GitHub.
type burstEvent struct {
	ev    Event
	actor string
}

// permuteBase is a task in review: alice's pull request #12 on head h1, with
// typecheck and test passed and lint still running.
func permuteBase(t *testing.T, cfg Config, draft bool) (*Task, *PRFacts) {
	t.Helper()
	f := Facts{Config: cfg, Ask: Known(Answers{Person: Person{Eligible: true}, TeamSize: 4})}
	open := Event{Kind: IssueOpened, Actor: u("carol"), At: fxAt(0), Issue: IssueFacts{Repo: "acme/widgets", Number: 1, Title: "Login form", Author: u("carol"), Assignees: []User{u("alice")}}}
	task := DecideTask(nil, open, f).Task
	pr := &PRFacts{Number: 12, Author: u("alice"), Head: "h1", Draft: draft, Open: true, Pushers: []User{u("alice")},
		Runs: []CIRun{
			{Name: "typecheck", ID: 1, State: "completed", Conclusion: "success", App: "github-actions", Made: MadeByJob, At: fxAt(1)},
			{Name: "test", ID: 2, State: "completed", Conclusion: "success", App: "github-actions", Made: MadeByJob, At: fxAt(1)},
			{Name: "lint", ID: 3, State: "in_progress", App: "github-actions", Made: MadeByJob, At: fxAt(1)},
		}}
	linked := Event{Kind: PRLinked, Actor: u("alice"), At: fxAt(2), Issue: IssueFacts{Repo: "acme/widgets", Number: 1}, PR: copyPR(pr)}
	task = DecideTask(task, linked, f).Task
	return task, pr
}

// playBurst hands the burst's events to the rules in order (indexes into
// burst, which is in GitHub's order), keeping the adapters' promises.
func playBurst(task *Task, burst []burstEvent, order []int, cfg Config) *Task {
	applied := map[int]bool{}
	var decide func(i int)
	decide = func(i int) {
		e := burst[i]
		f := Facts{Config: cfg, Ask: Known(Answers{Person: Person{Eligible: true}, TeamSize: 4})}
		if e.ev.Kind == PRReviewed && e.ev.Review.Head != "" {
			if lp := task.pr(e.ev.PR.Number); lp != nil && lp.Head != e.ev.Review.Head {
				// A review of a head the record lacks: its push, on GitHub
				// already, is taken in first (app/decide/reviews.go).
				for j := 0; j < i; j++ {
					if !applied[j] && burst[j].ev.Kind == PRPushed && burst[j].ev.PR.Head == e.ev.Review.Head {
						decide(j)
					}
				}
			}
		}
		d := DecideTask(task, e.ev, f)
		if d.Recheck {
			// GitHub read once: what happened before the command is taken in
			// first, then the command decided again (app/decide/recheck.go).
			took := false
			for j := 0; j < i; j++ {
				if !applied[j] && burst[j].ev.Kind != Commented {
					decide(j)
					took = true
				}
			}
			if took {
				d = DecideTask(task, e.ev, f)
			}
		}
		if d.Task != nil {
			task = d.Task
		}
		applied[i] = true
	}
	for _, i := range order {
		if applied[i] {
			// Its delivery comes after it was taken in: decided again, it must
			// change nothing that counts.
			before := task.Clone()
			f := Facts{Config: cfg, Ask: Known(Answers{Person: Person{Eligible: true}, TeamSize: 4})}
			if d := DecideTask(task, burst[i].ev, f); d.Task != nil {
				task = d.Task
			}
			if task.State != before.State || !slices.EqualFunc(task.Approvals, before.Approvals, func(a, b Approval) bool { return a.By.Is(b.By) && a.Head == b.Head }) {
				panic(fmt.Sprintf("event %d taken in twice changed the task: %s -> %s", i, before.State, task.State))
			}
			continue
		}
		decide(i)
	}
	return task
}

func permutationsOf(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range permutationsOf(n - 1) {
		for i := 0; i <= len(p); i++ {
			out = append(out, append(append(append([]int{}, p[:i]...), n-1), p[i:]...))
		}
	}
	return out
}

// outcome is what must not depend on the order: the state, who approved
// the heads the task counts, who verified, and the attempt's standing.
func outcome(t *Task) string {
	// Only approvals that count are compared: an approval of a head the
	// pull request had already left when it was taken in is dropped, one
	// taken in before the push is kept, counting for nothing.
	var approvals []string
	for _, a := range t.Approvals {
		if lp := t.pr(a.PR); lp == nil || lp.Head != a.Head {
			continue
		}
		approvals = append(approvals, a.By.Login+"@"+a.Head)
	}
	slices.Sort(approvals)
	heads := ""
	for _, p := range t.PRs {
		heads += fmt.Sprintf("#%d@%s ", p.Number, p.Head)
	}
	return fmt.Sprintf("state=%s approvals=%v verifier=%s failing=%v attempt=%d heads=%s", t.State, approvals, t.Verifier.Login, t.Failing, t.Attempt, heads)
}

func TestBurstPermutationsReachTheInOrderState(t *testing.T) {
	for _, named := range []bool{false, true} {
		cfg := DefaultConfig()
		if named {
			cfg.Contracts.Checks = namedChecks()
		}
		lintDone := func(pr *PRFacts, at int) *PRFacts {
			c := copyPR(pr)
			c.Runs, _ = MergeRun(c.Runs, CIRun{Name: "lint", ID: 3, State: "completed", Conclusion: "success", App: "github-actions", Made: MadeByJob, At: fxAt(at)})
			return c
		}
		review := func(pr *PRFacts, head string, at int) burstEvent {
			return burstEvent{ev: Event{Kind: PRReviewed, Actor: u("dave"), At: fxAt(at), Issue: IssueFacts{Repo: "acme/widgets", Number: 1}, PR: copyPR(pr),
				Review: &ReviewFacts{Reviewer: u("dave"), State: "approved", Head: head}}}
		}
		verify := func(at int) burstEvent {
			return burstEvent{ev: Event{Kind: Commented, Actor: u("bob"), At: fxAt(at), CommentID: int64(100 + at), Issue: IssueFacts{Repo: "acme/widgets", Number: 1},
				Commands: ParseCommands("/verify")}}
		}
		checked := func(pr *PRFacts, at int) burstEvent {
			return burstEvent{ev: Event{Kind: PRChecked, Actor: u("ci"), At: fxAt(at), Issue: IssueFacts{Repo: "acme/widgets", Number: 1}, PR: lintDone(pr, at)}}
		}
		bursts := []struct {
			name  string
			draft bool
			make  func(pr *PRFacts) []burstEvent
		}{
			{"approve, then /verify", false, func(pr *PRFacts) []burstEvent {
				done := lintDone(pr, 3)
				return []burstEvent{checked(pr, 3), review(done, "h1", 10), verify(11)}
			}},
			{"approve, last CI run, then /verify", false, func(pr *PRFacts) []burstEvent {
				return []burstEvent{review(pr, "h1", 10), checked(pr, 11), verify(12)}
			}},
			{"ready, then approve", true, func(pr *PRFacts) []burstEvent {
				ready := copyPR(pr)
				ready.Draft = false
				return []burstEvent{checked(pr, 3), {ev: Event{Kind: PRReady, Actor: u("alice"), At: fxAt(10), Issue: IssueFacts{Repo: "acme/widgets", Number: 1}, PR: lintDone(ready, 3)}},
					review(lintDone(ready, 3), "h1", 11)}
			}},
			{"push, then approve the new head, then /verify", false, func(pr *PRFacts) []burstEvent {
				pushed := copyPR(pr)
				pushed.Head = "h2"
				pushed.Runs = lintDone(&PRFacts{Runs: nil}, 10).Runs[:0]
				for _, r := range lintDone(pr, 10).Runs {
					r.ID += 10
					pushed.Runs, _ = MergeRun(pushed.Runs, r)
				}
				return []burstEvent{{ev: Event{Kind: PRPushed, Actor: u("alice"), At: fxAt(10), Issue: IssueFacts{Repo: "acme/widgets", Number: 1}, PR: pushed}},
					review(pushed, "h2", 11), verify(12)}
			}},
			{"approve, then push", false, func(pr *PRFacts) []burstEvent {
				pushed := copyPR(pr)
				pushed.Head = "h2"
				return []burstEvent{review(pr, "h1", 10), {ev: Event{Kind: PRPushed, Actor: u("alice"), At: fxAt(11), Issue: IssueFacts{Repo: "acme/widgets", Number: 1}, PR: pushed}}}
			}},
		}
		for _, b := range bursts {
			t.Run(fmt.Sprintf("%s (named checks %v)", b.name, named), func(t *testing.T) {
				base, pr := permuteBase(t, cfg, b.draft)
				burst := b.make(pr)
				inOrder := make([]int, len(burst))
				for i := range inOrder {
					inOrder[i] = i
				}
				want := outcome(playBurst(base.Clone(), burst, inOrder, cfg))
				for _, order := range permutationsOf(len(burst)) {
					if got := outcome(playBurst(base.Clone(), burst, order, cfg)); got != want {
						t.Errorf("order %v: %s\n              in order: %s", order, got, want)
					}
				}
			})
		}
	}
}
