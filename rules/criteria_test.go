package rules

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// The contract upkeep inside DecideTask (docs/design.md, Verification contracts): contracts written and
// rewritten, criteria results from CI runs and approvals, failed attempts,
// flaky runs re-run green, the contradiction check, /contract and the
// contract's say in /verify.

// ---------------------------------------------------------------------------
// Fixtures.

// fxFilesTask is fxTask with a pull request whose changed files are files, and
// runs on its head (fxRuns when none): the contract asks for what the files
// call for, evaluated.
func fxFilesTask(s State, runs []CIRun, files ...string) *Task {
	return fxFilesTaskWith(fxFacts(""), s, runs, files...)
}

// fxFilesTaskWith is fxFilesTask evaluated with facts f.
func fxFilesTaskWith(f Facts, s State, runs []CIRun, files ...string) *Task {
	task := fxTaskBare(s, true)
	if runs == nil {
		runs = fxRuns()
	}
	task.PRs[0].Runs = runs
	d := &decider{f: f, t: task, ev: Event{At: fxAt(0)}}
	d.ensureContract()
	task.PRs[0].Criteria = d.fileCriteria(files)
	d.recontract("")
	d.evaluate()
	return task
}

// green are runs that pass typecheck, lint and unit-test.
func green() []CIRun { return append(fxRuns(), done("test", 3, "success", 2)) }

// lintFailed are runs on which lint failed (run 40, minute 50).
func lintFailed() []CIRun {
	return []CIRun{done("lint", 40, "failure", 50), done("typecheck", 2, "success", 1)}
}

// lintRerun are runs on which a re-run of lint (run 41, minute 60) passed.
func lintRerun() []CIRun {
	return []CIRun{done("lint", 41, "success", 60), done("typecheck", 2, "success", 1)}
}

// prEv is an event of pull request #12 by dave with these runs.
func prEv(kind EventKind, head string, draft bool, runs []CIRun) Event {
	ev := fxPREvent(kind, head, draft)
	ev.PR.Runs = runs
	return ev
}

// checked is a CI event on #12 (ready, head h1) with these runs.
func checked(runs []CIRun) Event {
	ev := prEv(PRChecked, fxHead, false, runs)
	ev.Actor = u("ci")
	return ev
}

func withFiles(ev Event, files ...string) Event {
	if files == nil {
		files = []string{}
	}
	ev.PR.Files = files
	return ev
}

func withBody(ev Event, body string) Event {
	ev.PR.Body = body
	return ev
}

// pr13 makes ev an event of pull request #13 (head k1) by dave.
func pr13(ev Event) Event {
	ev.PR.Number, ev.PR.Head = 13, "k1"
	return ev
}

// fxText is a comment by actor with its text (checked for contradictions).
func fxText(actor, body string) Event {
	ev := fxComment(actor, body)
	ev.Text = body
	return ev
}

func keysOf(task *Task) []string {
	if task == nil || task.Contract == nil {
		return nil
	}
	return contractKeys(*task.Contract)
}

// after is the record a decision leaves: the new one, or old when unchanged.
func after(old *Task, d Decision) *Task {
	if d.Task != nil {
		return d.Task
	}
	return old
}

// deepCopy is a copy of t that shares nothing with it.
func deepCopy(t *testing.T, task *Task) *Task {
	t.Helper()
	b, err := json.Marshal(task)
	if err != nil {
		t.Fatal(err)
	}
	var c Task
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

// beat is one event of a sequence, with what its decision must look like.
type beat struct {
	ev    Event
	facts func(*Facts) // on top of fxFacts(ev.Actor) and the sequence's
	want  want
}

// play decides the beats in order, each on the record the last left, each
// a minute after the last (from minute 100), and checks each decision. It
// fails if a decision changes its input, however deep.
func play(t *testing.T, task *Task, cfg func(*Facts), beats ...beat) *Task {
	t.Helper()
	for i, b := range beats {
		ev := b.ev
		ev.At = fxAt(100 + i)
		if ev.CommentID != 0 {
			ev.CommentID = int64(900 + i) // each comment is a new one
		}
		f := fxFacts(ev.Actor.Login)
		if cfg != nil {
			cfg(&f)
		}
		if b.facts != nil {
			b.facts(&f)
		}
		var before *Task
		if task != nil {
			before = deepCopy(t, task)
		}
		d := decide(t, task, ev, f)
		if task != nil && !reflect.DeepEqual(deepCopy(t, task), before) {
			t.Fatalf("beat %d (%s): DecideTask modified its input", i, ev.Kind)
		}
		if !t.Run(beatName(ev.Kind, i), func(t *testing.T) { checkDecision(t, task, ev, d, b.want) }) {
			t.FailNow()
		}
		task = after(task, d)
	}
	return task
}

// beatName names beat i of a sequence: "pr-checked#a".
func beatName(k EventKind, i int) string {
	return strings.ReplaceAll(string(k), ".", "-") + "#" + string(rune('a'+i))
}

// ---------------------------------------------------------------------------
// Writing the contract.

func TestContractWhenTracked(t *testing.T) {
	opened := func(title, body string) Event {
		ev := fxEvent(IssueOpened, "lead")
		ev.Issue.Title, ev.Issue.Body = title, body
		return ev
	}
	tests := []struct {
		name   string
		ev     Event
		typ    ContractType
		why    string
		keys   []string
		expect []string
	}{
		{"advisory from the title", opened("Investigate slow API", ""), Advisory, `"investigate" in the title`, []string{}, nil},
		{"verifiable", opened("Login form", ""), Verifiable, "no advisory or skip words", []string{"typecheck", "lint"}, nil},
		{"skip from the title", opened("Fix typo in README", ""), Skip, `"typo" in the title`, []string{"typecheck", "lint"}, nil},
		{"advisory from the body", opened("Slow checkout", "Please research why."), Advisory, `"research" in the body`, []string{}, nil},
		{"files the body names add criteria", opened("Login form", "Change `src/api/users.go`."), Verifiable, "no advisory or skip words",
			[]string{"typecheck", "lint", "unit-test", "e2e:deferred"}, []string{"src/api/users.go"}},
		{"first tracked on another event", fxIssueEvent(IssueAssigned, "lead", func(e *Event) {
			e.Issue.Title, e.Issue.Assignees = "Plan the migration", us("alice")
		}), Advisory, `"plan" in the title`, []string{}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := decide(t, nil, tc.ev, fxFacts(tc.ev.Actor.Login))
			if d.Task == nil || d.Task.Contract == nil {
				t.Fatalf("no contract: %+v", d.Task)
			}
			c := d.Task.Contract
			if c.Type != tc.typ || c.Why != tc.why || c.From != "auto" || !c.At.Equal(tc.ev.At) {
				t.Errorf("contract %s (%s) from %s at %v; want %s (%s) from auto at %v", c.Type, c.Why, c.From, c.At, tc.typ, tc.why, tc.ev.At)
			}
			if got := keysOf(d.Task); !slices.Equal(got, tc.keys) {
				t.Errorf("criteria %v, want %v", got, tc.keys)
			}
			if !slices.Equal(c.Expected, tc.expect) {
				t.Errorf("expected files %v, want %v", c.Expected, tc.expect)
			}
			if len(effectsOf(d, EffectSyncCard)) != 1 {
				t.Errorf("effects %+v: want the card written", d.Effects)
			}
			if len(d.Task.History) != 1+len(tc.ev.Issue.Assignees) {
				t.Errorf("history %s: writing the first contract is no history of its own", fmtHistory(d.Task.History))
			}
		})
	}
	t.Run("the first contract's criteria have results", func(t *testing.T) {
		d := decide(t, nil, opened("Login form", ""), fxFacts("lead"))
		for _, c := range d.Task.Contract.Criteria {
			if c.Result != ResultUnchecked {
				t.Errorf("regression: rules/decide.go:40-42 (DecideTask) returns before d.evaluate() for IssueOpened: criterion %s has result %q (shown as pending ⏳ on the card), want %q (no pull request); the next unrelated event then rewrites the record and the card", c.Key(), c.Result, ResultUnchecked)
			}
		}
	})
	t.Run("first tracked on another event: evaluated", func(t *testing.T) {
		ev := fxIssueEvent(IssueLabeled, "lead", nil)
		ev.Label = "bug"
		d := decide(t, nil, ev, fxFacts("lead"))
		for _, c := range d.Task.Contract.Criteria {
			if c.Result != ResultUnchecked || !strings.Contains(c.Detail, "no pull request") {
				t.Errorf("criterion %s: %s (%s), want unchecked: no pull request", c.Key(), c.Result, c.Detail)
			}
		}
	})
}

func TestContractLegacyRecord(t *testing.T) {
	legacy := func(s State, withPR bool) *Task {
		task := fxTaskBare(s, withPR)
		for i := range task.PRs {
			task.PRs[i].Runs = fxRuns()
		}
		return task
	}
	labeled := fxIssueEvent(IssueLabeled, "lead", func(e *Event) { e.Label = "bug"; e.Issue.Title = "" })
	tests := []struct {
		name string
		task *Task
		ev   Event
		want want
		typ  ContractType
		res  Result
	}{
		{"unrelated label: a contract from the recorded title", legacy(Review, true), labeled,
			want{state: Review}, Verifiable, ResultPass},
		{"no PR: unchecked", legacy(Completed, false), labeled, want{state: Completed}, Verifiable, ResultUnchecked},
		{"advisory from the event's title", legacy(Assigned, false),
			fxIssueEvent(IssueLabeled, "lead", func(e *Event) { e.Label = "bug"; e.Issue.Title = "Investigate login form" }),
			want{state: Assigned}, Advisory, ""},
		{"a CI event", legacy(InProgress, true), prEv(PRChecked, fxHead, true, fxRuns()), want{state: InProgress}, Verifiable, ResultPass},
		{"a command", legacy(Completed, true), fxComment("bob", "/verify"),
			want{state: Verified, steps: []step{{Verified, "/verify"}}, labels: lbl(Verified)}, Verifiable, ResultPass},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := decide(t, tc.task, tc.ev, fxFacts(tc.ev.Actor.Login))
			checkDecision(t, tc.task, tc.ev, d, tc.want)
			if d.Task == nil || d.Task.Contract == nil {
				t.Fatalf("no contract after the event: %+v", d)
			}
			if d.Task.Contract.Type != tc.typ {
				t.Errorf("type %s, want %s", d.Task.Contract.Type, tc.typ)
			}
			for _, c := range d.Task.Contract.Criteria {
				if c.Result != tc.res {
					t.Errorf("criterion %s: %s (%s), want %s", c.Key(), c.Result, c.Detail, tc.res)
				}
			}
			if len(effectsOf(d, EffectSyncCard)) != 1 {
				t.Error("the card must show the new contract")
			}
		})
	}
}

func TestContractIssueEdited(t *testing.T) {
	edited := func(title, body string) Event {
		return fxIssueEvent(IssueEdited, "lead", func(e *Event) { e.Issue.Title, e.Issue.Body = title, body })
	}
	leadSet := func(s State) *Task {
		task := fxTask(s, false)
		task.Contract.Type, task.Contract.From, task.Contract.Criteria = Skip, "lead", task.Contract.Criteria[:2]
		return task
	}
	contract := func(typ ContractType, keys ...string) func(t *testing.T, d Decision) {
		return func(t *testing.T, d Decision) {
			t.Helper()
			if d.Task.Contract.Type != typ || !slices.Equal(keysOf(d.Task), keys) {
				t.Errorf("contract %s %v, want %s %v", d.Task.Contract.Type, keysOf(d.Task), typ, keys)
			}
		}
	}
	var tests []eventCase
	for _, s := range []State{Pending, Assigned} {
		tests = append(tests,
			eventCase{name: string(s) + "/title now advisory: rewritten, noted", task: fxTask(s, false),
				ev: edited("Investigate the login form", ""),
				want: want{state: s, steps: []step{{s, "contract: type verifiable → advisory; − typecheck, − lint (issue edited by @lead)"}},
					check: func(t *testing.T, d Decision) {
						contract(Advisory)(t, d)
						if d.Task.Title != "Investigate the login form" || d.Task.Contract.From != "auto" || !strings.Contains(d.Task.Contract.Why, "investigate") {
							t.Errorf("title %q, contract %+v", d.Task.Title, d.Task.Contract)
						}
					}}},
			eventCase{name: string(s) + "/body names a file: criteria added, noted", task: fxTask(s, false),
				ev: edited("Login form", "Fix `src/api/users.go` please"),
				want: want{state: s, steps: []step{{s, "contract: + unit-test, + e2e:deferred (issue edited by @lead)"}},
					check: func(t *testing.T, d Decision) {
						contract(Verifiable, "typecheck", "lint", "unit-test", "e2e:deferred")(t, d)
						if !slices.Equal(d.Task.Contract.Expected, []string{"src/api/users.go"}) {
							t.Errorf("expected %v", d.Task.Contract.Expected)
						}
					}}},
			eventCase{name: string(s) + "/body names a doc file: expected files kept, no note", task: fxTask(s, false),
				ev: edited("Login form", "See docs/form.md"),
				want: want{state: s, check: func(t *testing.T, d Decision) {
					contract(Verifiable, "typecheck", "lint")(t, d)
					if !slices.Equal(d.Task.Contract.Expected, []string{"docs/form.md"}) {
						t.Errorf("expected %v", d.Task.Contract.Expected)
					}
				}}},
			eventCase{name: string(s) + "/edit that changes nothing: nothing", task: fxTask(s, false),
				ev: edited("Login form", "Please make it work."), want: want{nothing: true}},
			eventCase{name: string(s) + "/type set by a lead: kept", task: leadSet(s),
				ev: edited("Investigate the login form", "Fix `src/api/users.go`"),
				want: want{state: s, check: func(t *testing.T, d Decision) {
					contract(Skip, "typecheck", "lint")(t, d)
					if d.Task.Contract.From != "lead" || d.Task.Title != "Investigate the login form" {
						t.Errorf("contract %+v, title %q", d.Task.Contract, d.Task.Title)
					}
				}}},
		)
	}
	for _, s := range []State{InProgress, Review, Completed, Verified} {
		for _, withPR := range []bool{false, true} {
			name := string(s) + "/work started: contract kept"
			if withPR {
				name += " (PR)"
			}
			task := fxTask(s, withPR)
			tests = append(tests, eventCase{name: name, task: task, ev: edited("Investigate the login form", "Fix `src/api/users.go`"),
				want: want{state: s, check: func(t *testing.T, d Decision) {
					if !reflect.DeepEqual(d.Task.Contract, task.Contract) || d.Task.Title != "Investigate the login form" {
						t.Errorf("contract %+v, title %q; want the contract unchanged, the title new", d.Task.Contract, d.Task.Title)
					}
				}}})
		}
	}
	tests = append(tests, eventCase{name: "pending/title-only edit (no body): the old body's files are forgotten",
		task: func() *Task {
			task := fxTask(Pending, false)
			task.Contract.Expected = []string{"src/api/users.go"}
			return task
		}(),
		ev:   edited("Login form", ""),
		want: want{state: Pending, check: contract(Verifiable, "typecheck", "lint")}})
	runEventCases(t, tests)
}

// ---------------------------------------------------------------------------
// Criteria from the pull requests' files.

func TestContractPRFiles(t *testing.T) {
	criteria := func(keys ...string) func(t *testing.T, d Decision) {
		return func(t *testing.T, d Decision) {
			t.Helper()
			if got := keysOf(d.Task); !slices.Equal(got, keys) {
				t.Errorf("criteria %v, want %v", got, keys)
			}
		}
	}
	tests := []eventCase{
		{name: "in-progress/draft PR's Go file: + unit-test, pending", task: fxTask(InProgress, true),
			ev: withFiles(fxPREvent(PRChecked, fxHead, true), "internal/form.go", "README.md"),
			want: want{state: InProgress, steps: []step{{InProgress, "contract: + unit-test (the files #12 changes)"}},
				check: func(t *testing.T, d Decision) {
					criteria("typecheck", "lint", "unit-test")(t, d)
					c := criterionOf(t, d.Task, "unit-test")
					if c.Result != ResultPending || !strings.Contains(c.Detail, "no `test` run yet") || !slices.Equal(c.Files, []string{"internal/form.go"}) ||
						c.Description != "Unit tests pass (internal/form.go)" {
						t.Errorf("unit-test %+v", c)
					}
					if !slices.Equal(d.Task.Contract.Expected, nil) {
						t.Errorf("expected files %v: a PR's files are not the issue's", d.Task.Contract.Expected)
					}
				}}},
		{name: "assigned/PR opened with a component: + unit-test, + critic", task: fxTask(Assigned, false),
			ev: withFiles(fxPREvent(PRLinked, fxHead, true), "web/Button.tsx"),
			want: want{state: InProgress, steps: []step{{Assigned, "contract: + unit-test, + critic:frontend-critic (the files #12 changes)"}, {InProgress, "#12 opened"}},
				labels: lbl(InProgress), assign: nil,
				check: func(t *testing.T, d Decision) {
					criteria("typecheck", "lint", "unit-test", "critic:frontend-critic")(t, d)
					if c := criterionOf(t, d.Task, "critic:frontend-critic"); c.Result != ResultPending || c.Detail != "waiting for a counted approval" {
						t.Errorf("critic %+v", c)
					}
				}}},
		{name: "in-progress/docs only: no criteria more, nothing to rewrite", task: fxTask(InProgress, true),
			ev: withFiles(fxPREvent(PRChecked, fxHead, true), "docs/form.md", "README.md"),
			want: want{state: InProgress, check: func(t *testing.T, d Decision) {
				if d.Task != nil || len(d.Effects) != 0 {
					t.Errorf("docs-only files changed the record (%v) or caused effects %+v", d.Task != nil, d.Effects)
				}
			}}},
		{name: "in-progress/an API file: deferred e2e, not blocking", task: fxTask(InProgress, true),
			ev: withFiles(prEv(PRChecked, fxHead, true, green()), "src/api/users.go"),
			want: want{state: InProgress, steps: []step{{InProgress, "contract: + unit-test, + e2e:deferred"}},
				check: func(t *testing.T, d Decision) {
					if c := criterionOf(t, d.Task, "e2e:deferred"); c.Result != ResultDeferred || !strings.Contains(c.Detail, "integration check") {
						t.Errorf("e2e %+v", c)
					}
					if c := criterionOf(t, d.Task, "unit-test"); c.Result != ResultPass {
						t.Errorf("unit-test %+v", c)
					}
					if b := Blocking(d.Task); len(b) != 0 {
						t.Errorf("blocking %v, want none", b)
					}
				}}},
		{name: "in-progress/files not read (nil): the PR's criteria are kept",
			task: fxFilesTask(InProgress, nil, "internal/form.go"),
			ev:   prEv(PRChecked, fxHead, true, green()),
			want: want{state: InProgress, check: func(t *testing.T, d Decision) {
				criteria("typecheck", "lint", "unit-test")(t, d)
				if c := criterionOf(t, d.Task, "unit-test"); c.Result != ResultPass {
					t.Errorf("unit-test %+v", c)
				}
			}}},
		{name: "in-progress/a push that no longer changes Go files: − unit-test",
			task: fxFilesTask(InProgress, nil, "internal/form.go"),
			ev:   withFiles(fxPREvent(PRPushed, "h2", true), "docs/form.md"),
			want: want{state: InProgress, steps: []step{{InProgress, "contract: − unit-test (the files #12 changes)"}},
				check: criteria("typecheck", "lint")}},
		{name: "in-progress/a second PR's files are merged in",
			task: fxFilesTask(InProgress, nil, "internal/form.go"),
			ev:   pr13(withFiles(fxPREvent(PRLinked, "k1", true), "internal/store.go")),
			want: want{state: InProgress, check: func(t *testing.T, d Decision) {
				criteria("typecheck", "lint", "unit-test")(t, d)
				c := criterionOf(t, d.Task, "unit-test")
				if !slices.Equal(c.Files, []string{"internal/form.go", "internal/store.go"}) || c.Description != "Unit tests pass (internal/form.go, internal/store.go)" {
					t.Errorf("unit-test %+v, want both PRs' files", c)
				}
				if !strings.Contains(c.Detail, "#12") || !strings.Contains(c.Detail, "#13") {
					t.Errorf("unit-test detail %q, want both PRs", c.Detail)
				}
			}}},
		{name: "in-progress/a second PR's new criteria are noted",
			task: fxFilesTask(InProgress, nil, "internal/form.go"),
			ev:   pr13(withFiles(fxPREvent(PRLinked, "k1", true), "internal/auth/token.go")),
			want: want{state: InProgress, steps: []step{{InProgress, "contract: + critic:security-critic (the files #13 changes)"}},
				check: criteria("typecheck", "lint", "unit-test", "critic:security-critic")}},
		{name: "in-progress/unlinking the PR drops its criteria",
			task: fxFilesTask(InProgress, nil, "internal/form.go", "web/Button.tsx"),
			ev:   fxPREvent(PRUnlinked, fxHead, true),
			want: want{state: InProgress, steps: []step{{InProgress, "#12 no longer closes this task"},
				{InProgress, "contract: − unit-test, − critic:frontend-critic (#12 no longer closes it)"}},
				check: func(t *testing.T, d Decision) {
					criteria("typecheck", "lint")(t, d)
					for _, c := range d.Task.Contract.Criteria {
						if c.Result != ResultUnchecked {
							t.Errorf("%s: %s, want unchecked (no pull request left)", c.Key(), c.Result)
						}
					}
				}}},
		{name: "review/the open PR unlinked: the merged one's criteria count again",
			task: func() *Task {
				task := fxFilesTask(Review, green(), "internal/form.go")
				task.PRs[0].Open, task.PRs[0].Merged = false, true
				d := &decider{f: fxFacts(""), t: task, ev: Event{At: fxAt(0)}}
				task.PRs = append(task.PRs, LinkedPR{Number: 13, Author: u("dave"), Head: "k1", Open: true, Runs: green(),
					Criteria: d.fileCriteria([]string{"web/Button.tsx"})})
				d.recontract("")
				d.evaluate()
				return task
			}(),
			ev: pr13(fxPREvent(PRUnlinked, "k1", false)),
			want: want{state: Review, steps: []step{{Review, "#13 no longer closes this task"},
				{Review, "contract: − critic:frontend-critic (#13 no longer closes it)"}},
				check: func(t *testing.T, d Decision) {
					criteria("typecheck", "lint", "unit-test")(t, d)
					if c := criterionOf(t, d.Task, "unit-test"); !slices.Equal(c.Files, []string{"internal/form.go"}) || c.Result != ResultPass || !strings.Contains(c.Detail, "#12") {
						t.Errorf("unit-test %+v, want #12's", c)
					}
				}}},
		{name: "review/merged: its criteria stand",
			task: fxFilesTask(Review, green(), "internal/form.go"),
			ev: func() Event {
				e := prEv(PRMerged, fxHead, false, green())
				e.PR.Open, e.PR.Merged = false, true
				return e
			}(),
			want: want{state: Review, steps: []step{{Review, "#12 merged with no approval of its head"}}, check: func(t *testing.T, d Decision) {
				criteria("typecheck", "lint", "unit-test")(t, d)
				if c := criterionOf(t, d.Task, "unit-test"); c.Result != ResultPass {
					t.Errorf("unit-test %+v", c)
				}
			}}},
	}
	runEventCases(t, tests)
}

func TestContractPRFilesSequence(t *testing.T) {
	t.Run("two PRs merged, one unlinked", func(t *testing.T) {
		task := play(t, fxTask(Assigned, false), nil,
			beat{ev: withFiles(fxPREvent(PRLinked, fxHead, true), "internal/form.go"),
				want: want{state: InProgress, steps: []step{{Assigned, "contract: + unit-test (the files #12 changes)"}, {InProgress, "#12 opened"}}, labels: lbl(InProgress)}},
			beat{ev: pr13(withFiles(fxPREvent(PRLinked, "k1", true), "internal/store.go", "web/Button.tsx")),
				want: want{state: InProgress, steps: []step{{InProgress, "contract: + critic:frontend-critic (the files #13 changes)"}}}},
			beat{ev: withFiles(fxPREvent(PRUnlinked, fxHead, true)),
				want: want{state: InProgress, steps: []step{{InProgress, "#12 no longer closes this task"}}}},
		)
		c := criterionOf(t, task, "unit-test")
		if !slices.Equal(c.Files, []string{"internal/store.go", "web/Button.tsx"}) {
			t.Errorf("unit-test files %v, want #13's only", c.Files)
		}
		if !slices.Equal(keysOf(task), []string{"typecheck", "lint", "unit-test", "critic:frontend-critic"}) {
			t.Errorf("criteria %v", keysOf(task))
		}
	})
	t.Run("skip contract: files add nothing", func(t *testing.T) {
		task := fxTaskBare(Assigned, false)
		task.Title = "Fix typo in the login form"
		task = fxContracted(task)
		task = play(t, task, nil,
			beat{ev: withFiles(prEv(PRLinked, fxHead, true, nil), "internal/form.go", "web/Button.tsx", "src/api/x.go"),
				want: want{state: InProgress, steps: []step{{InProgress, "#12 opened"}}, labels: lbl(InProgress)}},
		)
		if task.Contract.Type != Skip || !slices.Equal(keysOf(task), []string{"typecheck", "lint"}) {
			t.Errorf("contract %s %v, want skip with typecheck and lint only", task.Contract.Type, keysOf(task))
		}
		if len(task.PRs[0].Criteria) == 0 {
			t.Error("the PR's own criteria are still recorded (a lead may make it verifiable)")
		}
	})
}

// ---------------------------------------------------------------------------
// Failed attempts.

func TestContractFailedAttempt(t *testing.T) {
	failed := func(attempts int) func(t *testing.T, d Decision) {
		return func(t *testing.T, d Decision) {
			t.Helper()
			nt := d.Task
			if nt.FailedAttempts != attempts || nt.Attempt != 2 || !nt.Failing {
				t.Errorf("failed attempts %d, attempt %d, failing %v; want %d, 2, true", nt.FailedAttempts, nt.Attempt, nt.Failing, attempts)
			}
			if len(nt.Failures) != 1 {
				t.Fatalf("failures %+v, want one", nt.Failures)
			}
			f := nt.Failures[0]
			if f.Attempt != 1 || f.PR != fxPR || f.Head != fxHead || !f.At.Equal(fxAt(100)) || !strings.Contains(f.Reason, "lint (`lint`: failure on #12 (h1))") {
				t.Errorf("failure %+v", f)
			}
			n := noticeOf(d, NoticeFailed)
			if n == nil {
				t.Fatal("no failed notice")
			}
			if len(n.Criteria) != 1 || n.Criteria[0].Key() != "lint" || n.Criteria[0].URL != "https://ci.example/runs/40" ||
				n.PR != fxPR || n.Head != fxHead || n.State != InProgress || n.FailedAttempts != attempts ||
				!slices.Equal(n.Mentions, []string{"alice"}) || !strings.Contains(n.Reason, "lint") {
				t.Errorf("failed notice %+v", n)
			}
			for _, e := range effectsOf(d, EffectNotice) {
				if e.Notice.Kind == NoticeFailed && e.Number != fxIssue {
					t.Errorf("failed notice on #%d, want the task", e.Number)
				}
			}
			if !slices.Contains(d.Refresh, fxPR) {
				t.Errorf("refresh %v: the verification check of #12 must fail", d.Refresh)
			}
			if c := criterionOf(t, nt, "lint"); c.Attempt != 1 {
				t.Errorf("lint failed in attempt %d, want 1", c.Attempt)
			}
		}
	}
	with := func(s State, mod func(*Task)) *Task {
		task := fxTask(s, true)
		mod(task)
		return task
	}
	recorded := func(t *testing.T, d Decision) {
		t.Helper()
		nt := d.Task
		if c := criterionOf(t, nt, "lint"); c.Result != ResultFail {
			t.Errorf("lint %+v, want fail", c)
		}
		if nt.FailedAttempts != 0 || len(nt.Failures) != 0 || nt.Attempt != 1 {
			t.Errorf("failed attempts %d, failures %v, attempt %d: a failure in progress is no failed attempt", nt.FailedAttempts, nt.Failures, nt.Attempt)
		}
	}
	tests := []eventCase{
		{name: "review/lint failed: back to in-progress", task: fxTask(Review, true), ev: checked(lintFailed()),
			want: want{state: InProgress, steps: []step{{InProgress, "failed attempt: lint (`lint`: failure on #12 (h1))"}},
				labels: lbl(InProgress), notices: []NoticeKind{NoticeFailed}, check: failed(1)}},
		{name: "completed/lint failed: back to in-progress", task: fxTask(Completed, true), ev: checked(lintFailed()),
			want: want{state: InProgress, steps: []step{{InProgress, "failed attempt: lint"}},
				labels: lbl(InProgress), notices: []NoticeKind{NoticeFailed}, check: failed(1)}},
		{name: "review/third failed attempt: escalated", task: with(Review, func(t *Task) { t.FailedAttempts = 2 }), ev: checked(lintFailed()),
			want: want{state: InProgress, steps: []step{{InProgress, "failed attempt"}, {InProgress, "escalated to the leads: 0 rejections, 3 failed attempts"}},
				labels: lbl(InProgress, LabelEscalated), notices: []NoticeKind{NoticeFailed, NoticeEscalated}, check: func(t *testing.T, d Decision) {
					failed(3)(t, d)
					if n := noticeOf(d, NoticeEscalated); !slices.Equal(n.Mentions, fxLeads) {
						t.Errorf("escalation mentions %v, want the leads", n.Mentions)
					}
				}}},
		{name: "review/failed_attempts: 1 escalates at once", task: fxTask(Review, true), ev: checked(lintFailed()),
			facts: func(f *Facts) { f.Config.Escalation.FailedAttempts = 1 },
			want: want{state: InProgress, steps: []step{{InProgress, "failed attempt"}, {InProgress, "escalated"}},
				labels: lbl(InProgress, LabelEscalated), notices: []NoticeKind{NoticeFailed, NoticeEscalated}}},
		{name: "review/already escalated: not again", task: with(Review, func(t *Task) { t.FailedAttempts, t.Escalated = 5, true }),
			ev: checked(lintFailed()),
			want: want{state: InProgress, steps: []step{{InProgress, "failed attempt"}}, labels: lbl(InProgress, LabelEscalated),
				notices: []NoticeKind{NoticeFailed}}},
		{name: "in-progress (draft)/lint failed: recorded only", task: fxTask(InProgress, true),
			ev: prEv(PRChecked, fxHead, true, lintFailed()), want: want{state: InProgress, check: recorded}},
		{name: "in-progress (ready, changes requested)/lint failed: recorded only",
			task: with(InProgress, func(t *Task) { t.PRs[0].Draft = false }),
			ev:   checked(lintFailed()), want: want{state: InProgress, check: recorded}},
		{name: "verified/lint failed on a re-run: recorded only", task: fxTask(Verified, true),
			ev: checked(lintFailed()), want: want{state: Verified, check: recorded}},
		{name: "review/lint re-running: pending, no move", task: fxTask(Review, true),
			ev: checked([]CIRun{checkRun("lint", 41, "in_progress", "", 60), done("typecheck", 2, "success", 1)}),
			want: want{state: Review, check: func(t *testing.T, d Decision) {
				if c := criterionOf(t, d.Task, "lint"); c.Result != ResultPending || !strings.Contains(c.Detail, "`lint` in_progress") {
					t.Errorf("lint %+v", c)
				}
			}}},
		{name: "review/a failing run no check counts: nothing", task: fxTask(Review, true),
			ev: checked(append(fxRuns(), done("deploy", 9, "failure", 50))), want: want{nothing: true}},
		{name: "in-progress/marked ready with lint failing: a failed attempt at once",
			task: func() *Task {
				task := fxTask(InProgress, true)
				task.PRs[0].Runs = lintFailed()
				d := &decider{f: fxFacts(""), t: task, ev: Event{At: fxAt(50)}}
				d.evaluate()
				return task
			}(),
			ev: prEv(PRReady, fxHead, false, lintFailed()),
			want: want{state: InProgress, steps: []step{{Review, "#12 ready for review"}, {InProgress, "failed attempt: lint"}},
				labels: nil, notices: []NoticeKind{NoticeFailed}}},
	}
	runEventCases(t, tests)
}

func TestContractFailedAttemptSeveralPRs(t *testing.T) {
	task := fxTask(Review, true)
	task.PRs = append(task.PRs, LinkedPR{Number: 13, Author: u("dave"), Head: "k1", Open: true, Runs: fxRuns()})
	ev := pr13(checked(lintFailed()))
	d := decide(t, task, ev, fxFacts("ci"))
	checkDecision(t, task, ev, d, want{state: InProgress, steps: []step{{InProgress, "failed attempt: lint (`lint`: failure on #13 (k1))"}},
		labels: lbl(InProgress), notices: []NoticeKind{NoticeFailed}})
	n := noticeOf(d, NoticeFailed)
	if n == nil {
		t.Fatal("no failed notice")
	}
	if n.PR != 13 || n.Head != "k1" {
		t.Errorf("regression: rules/criteria.go:334-336 (failAttempt) records and notices the failure on prs[0] (#%d at %s) whatever pull request failed: lint failed on #13 at k1; the notice reads \"failed its contract on #12 at `h1`\"", n.PR, n.Head)
	}
}

// ---------------------------------------------------------------------------
// A flaky run re-run green on the same commits.

func TestContractGreenAgain(t *testing.T) {
	failedOnce := beat{ev: checked(lintFailed()),
		want: want{state: InProgress, steps: []step{{InProgress, "failed attempt"}}, labels: lbl(InProgress), notices: []NoticeKind{NoticeFailed}}}
	t.Run("review: re-run green on the same head goes back to review", func(t *testing.T) {
		task := play(t, fxTask(Review, true), nil, failedOnce,
			beat{ev: checked(lintRerun()),
				want: want{state: Review, steps: []step{{Review, "CI passed again on the same commits"}}, labels: lbl(Review)}},
		)
		if task.Failing || task.FailedAttempts != 1 || task.Attempt != 2 {
			t.Errorf("failing %v, failed attempts %d, attempt %d", task.Failing, task.FailedAttempts, task.Attempt)
		}
		if c := criterionOf(t, task, "lint"); c.Result != ResultPass || c.URL != "https://ci.example/runs/41" || c.Attempt != 2 {
			t.Errorf("lint %+v", c)
		}
	})
	t.Run("completed: re-run green goes back to completed, the approval of that head stands", func(t *testing.T) {
		play(t, fxTask(Completed, true), nil, failedOnce,
			beat{ev: checked(lintRerun()),
				want: want{state: Completed, steps: []step{{Review, "CI passed again"}, {Completed, "approved by @carol on #12"}}, labels: lbl(Completed)}},
			beat{ev: fxComment("bob", "/verify"),
				want: want{state: Verified, steps: []step{{Verified, "/verify"}}, labels: lbl(Verified)}},
		)
	})
	t.Run("still running: stays in progress", func(t *testing.T) {
		play(t, fxTask(Review, true), nil, failedOnce,
			beat{ev: checked([]CIRun{checkRun("lint", 41, "queued", "", 60), done("typecheck", 2, "success", 1)}),
				want: want{state: InProgress}},
			beat{ev: checked(lintRerun()), want: want{state: Review, steps: []step{{Review, "CI passed again"}}, labels: lbl(Review)}},
		)
	})
	t.Run("a critic still pending does not hold it back", func(t *testing.T) {
		play(t, fxFilesTask(Review, green(), "web/Button.tsx"), nil,
			beat{ev: checked(append(lintFailed(), done("test", 3, "success", 2))),
				want: want{state: InProgress, steps: []step{{InProgress, "failed attempt"}}, labels: lbl(InProgress), notices: []NoticeKind{NoticeFailed}}},
			beat{ev: checked(append(lintRerun(), done("test", 3, "success", 2))),
				want: want{state: Review, steps: []step{{Review, "CI passed again"}}, labels: lbl(Review)}},
		)
	})
	t.Run("a new criterion pending (test not run yet) holds it back", func(t *testing.T) {
		play(t, fxTask(Review, true), nil, failedOnce,
			beat{ev: withFiles(checked(lintRerun()), "internal/form.go"),
				want: want{state: InProgress, steps: []step{{InProgress, "contract: + unit-test"}}}},
		)
	})
	t.Run("converted to draft: stays in progress", func(t *testing.T) {
		play(t, fxTask(Review, true), nil, failedOnce,
			beat{ev: prEv(PRDraft, fxHead, true, lintFailed()), want: want{state: InProgress}},
			beat{ev: prEv(PRChecked, fxHead, true, lintRerun()), want: want{state: InProgress}},
		)
	})
	t.Run("new commits after the failure: review, failure cleared", func(t *testing.T) {
		task := play(t, fxTask(Review, true), nil, failedOnce,
			beat{ev: prEv(PRPushed, "h2", false, []CIRun{checkRun("lint", 50, "queued", "", 70), checkRun("typecheck", 51, "queued", "", 70)}),
				want: want{state: Review, steps: []step{{Review, "new commits on #12"}}, labels: lbl(Review)}},
			beat{ev: prEv(PRChecked, "h2", false, []CIRun{done("lint", 50, "success", 70), done("typecheck", 51, "success", 70)}),
				want: want{state: Review}},
		)
		if task.Failing {
			t.Error("still failing after a new attempt")
		}
	})
	t.Run("green on new commits the failure did not see: nothing to undo", func(t *testing.T) {
		// The CI event tells of a head the task has not seen pushed: it is not the failed commits.
		play(t, fxTask(Review, true), nil, failedOnce,
			beat{ev: prEv(PRChecked, "h2", false, []CIRun{done("lint", 50, "success", 70), done("typecheck", 51, "success", 70)}),
				want: want{state: InProgress}},
		)
	})
	t.Run("a rejection after the failure is not undone by green runs", func(t *testing.T) {
		task := play(t, fxTask(Completed, true), nil, failedOnce,
			beat{ev: checked(lintRerun()),
				want: want{state: Completed, steps: []step{{Review, "CI passed again"}, {Completed, "approved by @carol"}}, labels: lbl(Completed)}},
			beat{ev: fxComment("bob", "/reject the form does not submit"),
				want: want{state: InProgress, steps: []step{{InProgress, "/reject: the form does not submit"}}, labels: lbl(InProgress), notices: []NoticeKind{NoticeRejected}}},
			beat{ev: checked([]CIRun{done("lint", 42, "success", 80), done("typecheck", 2, "success", 1)}),
				want: want{state: InProgress}},
		)
		if !task.Failing {
			t.Error("the rejection's failure was cleared")
		}
	})
	t.Run("a rejection after the failure (record without rejected heads)", func(t *testing.T) {
		task := fxTask(InProgress, true)
		task.PRs[0].Draft, task.Failing, task.Attempt, task.FailedAttempts = false, true, 3, 2
		task.PRs[0].Runs = lintFailed()
		task.Failures = []Failure{{Attempt: 1, At: fxAt(50), PR: fxPR, Head: fxHead, Reason: "lint"}}
		task.Rejections = []Rejection{{By: u("bob"), At: fxAt(60), Reason: "no", Attempt: 2}}
		(&decider{f: fxFacts(""), t: task, ev: Event{At: fxAt(50)}}).evaluate()
		play(t, task, nil, beat{ev: checked(lintRerun()), want: want{state: InProgress}})
	})
	t.Run("a rejection before the failure does not hold it back", func(t *testing.T) {
		task := fxTask(Review, true)
		task.Rejections = []Rejection{{By: u("bob"), At: fxAt(10), Reason: "no", Attempt: 1}}
		task.RejectedHeads = []string{"h0"}
		play(t, task, nil, failedOnce,
			beat{ev: checked(lintRerun()), want: want{state: Review, steps: []step{{Review, "CI passed again"}}, labels: lbl(Review)}})
	})
	t.Run("changes requested after the failure are not undone by green runs", func(t *testing.T) {
		task := play(t, fxTask(Review, true), nil, failedOnce,
			beat{ev: fxReview("carol", "changes_requested", fxHead, "the form does not submit"),
				want: want{state: InProgress, steps: []step{{InProgress, "changes requested by @carol on #12: the form does not submit"}}}},
		)
		d := decide(t, task, checked(lintRerun()), fxFacts("ci"))
		if after(task, d).State != InProgress {
			t.Error("regression: rules/criteria.go:353-375 (greenAgain) only looks for a rejection since the failure: carol's changes_requested review of the failed head (h1), given while the task was in-progress, is dropped without a trace, and the re-run green sends the same commits back to review (\"CI passed again on the same commits\")")
		}
	})
}

// ---------------------------------------------------------------------------
// /verify and the contract.

func withCritics() Facts {
	f := fxFacts("")
	f.Config.Contracts.Critics = map[string][]string{"frontend-critic": {"erin"}}
	return f
}

func noUnitChecks() Facts {
	f := fxFacts("")
	f.Config.Contracts.Checks = map[string][]string{"typecheck": {"typecheck"}, "lint": {"lint"}}
	return f
}

// refusedFor checks that the decision refused a command with a reason that
// says each of phrases.
func refusedFor(phrases ...string) func(t *testing.T, d Decision) {
	return func(t *testing.T, d Decision) {
		t.Helper()
		r := refusalReason(d)
		for _, p := range phrases {
			if !strings.Contains(r, p) {
				t.Errorf("refusal %q lacks %q", r, p)
			}
		}
	}
}

func TestContractVerify(t *testing.T) {
	completed := func(runs []CIRun, files ...string) *Task { return fxFilesTask(Completed, runs, files...) }
	critics := func(f *Facts) { f.Config.Contracts.Critics = map[string][]string{"frontend-critic": {"erin"}} }
	advisory := func(s State) *Task {
		task := fxTaskBare(s, false)
		task.Title = "Investigate slow login"
		return fxContracted(task)
	}
	staleFail := func() *Task {
		// A record whose criterion failed while it stood completed (e.g. decided before contracts.checks counted the run).
		task := completed(green(), "internal/form.go")
		task.PRs[0].Runs = append(fxRuns(), done("test", 9, "failure", 50))
		for i, c := range task.Contract.Criteria {
			if c.Activity == ActUnitTest {
				task.Contract.Criteria[i].Result, task.Contract.Criteria[i].Detail = ResultFail, "`test`: failure on #12 (h1)"
				task.Contract.Criteria[i].URL = "https://ci.example/runs/9"
			}
		}
		return task
	}
	tests := []eventCase{
		{name: "unit-test pending: refused, naming it", task: completed(nil, "internal/form.go"), ev: fxComment("bob", "/verify"),
			want: want{state: Completed, notices: []NoticeKind{NoticeRefused},
				check: refusedFor("contract is not met yet", "unit-test pending (no `test` run yet on #12 (h1))")}},
		{name: "unit-test running: refused, naming it",
			task: completed(append(fxRuns(), checkRun("test", 3, "in_progress", "", 2)), "internal/form.go"), ev: fxComment("bob", "/verify"),
			want: want{state: Completed, notices: []NoticeKind{NoticeRefused}, check: refusedFor("unit-test pending (`test` in_progress")}},
		{name: "unit-test failing: refused, naming it (and the failure sends it back)", task: staleFail(), ev: fxComment("bob", "/verify"),
			want: want{state: InProgress, steps: []step{{InProgress, "failed attempt: unit-test"}}, labels: lbl(InProgress),
				notices: []NoticeKind{NoticeRefused, NoticeFailed}, check: refusedFor("unit-test fail (`test`: failure on #12 (h1))")}},
		{name: "critic pending: refused, naming it", task: fxFilesTaskWith(withCritics(), Completed, green(), "web/Button.tsx"), ev: fxComment("bob", "/verify"),
			facts: critics,
			want:  want{state: Completed, notices: []NoticeKind{NoticeRefused}, check: refusedFor("critic:frontend-critic pending (waiting for an approval by @erin)")}},
		{name: "every criterion passed: verified", task: completed(green(), "internal/form.go"), ev: fxComment("bob", "/verify"),
			want: want{state: Verified, steps: []step{{Verified, "/verify"}}, labels: lbl(Verified)}},
		{name: "deferred e2e and unchecked criteria do not block", task: fxFilesTaskWith(noUnitChecks(), Completed, fxRuns(), "src/api/users.go"), ev: fxComment("bob", "/verify"),
			facts: func(f *Facts) { f.Config = noUnitChecks().Config },
			want: want{state: Verified, steps: []step{{Verified, "/verify"}}, labels: lbl(Verified), check: func(t *testing.T, d Decision) {
				if c := criterionOf(t, d.Task, "unit-test"); c.Result != ResultUnchecked || !strings.Contains(c.Detail, "contracts.checks") {
					t.Errorf("unit-test %+v, want unchecked", c)
				}
				if c := criterionOf(t, d.Task, "e2e:deferred"); c.Result != ResultDeferred {
					t.Errorf("e2e %+v, want deferred", c)
				}
			}}},
		{name: "no PR: unchecked criteria, verified", task: fxTask(Completed, false), ev: fxComment("bob", "/verify"),
			want: want{state: Verified, steps: []step{{Verified, "/verify"}}, labels: lbl(Verified)}},
		{name: "advisory: a non-lead's /verify refused", task: advisory(Completed), ev: fxComment("bob", "/verify"),
			want: want{state: Completed, notices: []NoticeKind{NoticeRefused}, check: refusedFor("advisory", "only a lead's /verify")}},
		{name: "advisory: a lead's /verify accepted", task: advisory(Completed), ev: fxComment("lead", "/verify reviewed the write-up"),
			want: want{state: Verified, steps: []step{{Verified, "/verify: reviewed the write-up"}}, labels: lbl(Verified)}},
		{name: "advisory: a lead who built it still may not", task: func() *Task {
			task := advisory(Completed)
			task.Builders = append(task.Builders, MemberOf(u("lead"), "assignee"))
			return task
		}(), ev: fxComment("lead", "/verify"),
			want: want{state: Completed, notices: []NoticeKind{NoticeRefused}, check: refusedFor("built this task")}},
	}
	runEventCases(t, tests)
}

func TestContractCritics(t *testing.T) {
	critics := func(f *Facts) { f.Config.Contracts.Critics = map[string][]string{"frontend-critic": {"erin"}} }
	erinCritic := func(f *Facts) { known(*f).Critics = []string{"frontend-critic"} }
	critic := func(res Result, detail string) func(t *testing.T, d Decision) {
		return func(t *testing.T, d Decision) {
			t.Helper()
			if c := criterionOf(t, d.Task, "critic:frontend-critic"); c.Result != res || c.Detail != detail {
				t.Errorf("critic %s (%s), want %s (%s)", c.Result, c.Detail, res, detail)
			}
		}
	}
	t.Run("configured reviewers: pending until one of them approves", func(t *testing.T) {
		play(t, fxFilesTask(Review, green(), "web/Button.tsx"), critics,
			beat{ev: fxReview("carol", "approved", fxHead, ""),
				want: want{state: Completed, steps: []step{{Completed, "approved by @carol on #12"}}, labels: lbl(Completed),
					check: critic(ResultPending, "waiting for an approval by @erin")}},
			beat{ev: fxComment("bob", "/verify"), want: want{state: Completed, notices: []NoticeKind{NoticeRefused}}},
			beat{ev: fxReview("erin", "approved", fxHead, ""), facts: erinCritic,
				want: want{state: Completed, check: critic(ResultPass, "approved by @erin on #12")}},
			beat{ev: fxComment("bob", "/verify"), want: want{state: Verified, steps: []step{{Verified, "/verify"}}, labels: lbl(Verified)}},
		)
	})
	t.Run("a reviewer of another critic does not meet it", func(t *testing.T) {
		play(t, fxFilesTask(Review, green(), "web/Button.tsx"), critics,
			beat{ev: fxReview("erin", "approved", fxHead, ""), facts: func(f *Facts) { known(*f).Critics = []string{"security-critic"} },
				want: want{state: Completed, steps: []step{{Completed, "approved by @erin"}}, labels: lbl(Completed),
					check: critic(ResultPending, "waiting for an approval by @erin")}},
		)
	})
	t.Run("no configured reviewers: any counted approval", func(t *testing.T) {
		play(t, fxFilesTask(Review, green(), "web/Button.tsx"), nil,
			beat{ev: fxReview("dave", "approved", fxHead, ""),
				want: want{state: Review, steps: []step{{Review, "not counted"}}, notices: []NoticeKind{NoticeIgnored},
					check: critic(ResultPending, "waiting for a counted approval")}},
			beat{ev: fxReview("carol", "approved", fxHead, ""),
				want: want{state: Completed, steps: []step{{Completed, "approved by @carol"}}, labels: lbl(Completed),
					check: critic(ResultPass, "approved by @carol on #12")}},
		)
	})
	t.Run("new commits: the approval of the old head no longer meets it", func(t *testing.T) {
		play(t, fxFilesTask(Completed, green(), "web/Button.tsx"), nil,
			beat{ev: prEv(PRPushed, "h2", false, nil),
				want: want{state: Review, steps: []step{{Review, "stale"}}, labels: lbl(Review), check: critic(ResultPending, "waiting for a counted approval")}},
		)
	})
	t.Run("/approve meets it on a task with no PR", func(t *testing.T) {
		task := fxTaskBare(Review, false)
		task.Contract = &Contract{Type: Verifiable, From: "auto", Criteria: []Criterion{{Activity: ActCritic, Critic: "frontend-critic", Description: "frontend-critic approves"}}}
		play(t, task, nil,
			beat{ev: fxComment("carol", "/approve"),
				want: want{state: Completed, steps: []step{{Completed, "/approve by @carol"}}, labels: lbl(Completed), check: critic(ResultPass, "approved by @carol")}},
		)
	})
}

// ---------------------------------------------------------------------------
// The contradiction check.

func TestContractContradiction(t *testing.T) {
	const says = "Done. Deploying it needs human sign-off though."
	contradiction := func(where int) func(t *testing.T, d Decision) {
		return func(t *testing.T, d Decision) {
			t.Helper()
			var n *Notice
			for _, e := range effectsOf(d, EffectNotice) {
				if e.Notice.Kind == NoticeContradiction {
					n = e.Notice
					if e.Number != where {
						t.Errorf("contradiction notice on #%d, want #%d", e.Number, where)
					}
				}
			}
			if n == nil {
				t.Fatal("no contradiction notice")
			}
			wantPR := where
			if where == fxIssue {
				wantPR = 0
			}
			if n.Contradiction == nil || n.Contradiction.Phrase != "needs human" || n.Contradiction.Line != says || n.PR != wantPR || !n.State.Valid() {
				t.Errorf("notice %+v (contradiction %+v)", n, n.Contradiction)
			}
		}
	}
	readyTask := func(failing bool) *Task {
		task := fxTask(InProgress, true)
		task.PRs[0].Draft, task.Failing = false, failing
		return task
	}
	contradicted := func() *Task {
		task := readyTask(false)
		task.PRs[0].Contradiction = &Contradiction{Phrase: "needs human", Line: says}
		return task
	}
	refused := step{InProgress, `claim of completion refused: it also says "needs human"`}
	tests := []eventCase{
		{name: "assigned/opened ready with the phrase: in progress only", task: fxTask(Assigned, false),
			ev: withBody(fxPREvent(PRLinked, fxHead, false), says),
			want: want{state: InProgress, steps: []step{{Assigned, `claim of completion refused: it also says "needs human"`}, {InProgress, "#12 opened"}},
				labels: lbl(InProgress), notices: []NoticeKind{NoticeContradiction}, check: contradiction(fxPR)}},
		{name: "pending/opened ready with the phrase: in progress only, dave assigned", task: fxTask(Pending, false),
			ev: withBody(fxPREvent(PRLinked, fxHead, false), says),
			want: want{state: InProgress, steps: []step{{Pending, "claim of completion refused"}, {Assigned, "#12 opened"}, {InProgress, "#12 opened"}},
				labels: lbl(InProgress), assign: []string{"dave"}, notices: []NoticeKind{NoticeContradiction}, check: contradiction(fxPR)}},
		{name: "assigned/opened as a draft with the phrase: no claim, no notice", task: fxTask(Assigned, false),
			ev:   withBody(fxPREvent(PRLinked, fxHead, true), says),
			want: want{state: InProgress, steps: []step{{InProgress, "#12 opened"}}, labels: lbl(InProgress)}},
		{name: "in-progress/marked ready with the phrase: refused", task: fxTask(InProgress, true),
			ev:   withBody(fxPREvent(PRReady, fxHead, false), says),
			want: want{state: InProgress, steps: []step{refused}, notices: []NoticeKind{NoticeContradiction}, check: contradiction(fxPR)}},
		{name: "in-progress/push that resubmits, with the phrase: refused", task: readyTask(true),
			ev:   withBody(fxPREvent(PRPushed, "h2", false), says),
			want: want{state: InProgress, steps: []step{refused}, notices: []NoticeKind{NoticeContradiction}, check: contradiction(fxPR)}},
		{name: "in-progress/phrase taken out of the body: review", task: contradicted(),
			ev:   fxPREvent(PRLinked, fxHead, false),
			want: want{state: Review, steps: []step{{Review, "#12's description edited"}}, labels: lbl(Review)}},
		{name: "in-progress/body edited, the phrase still there: nothing new", task: contradicted(),
			ev: withBody(fxPREvent(PRLinked, fxHead, false), "Changed the wording.\n\n"+says), want: want{state: InProgress}},
		{name: "in-progress/the phrase quoted or in code is no contradiction", task: fxTask(InProgress, true),
			ev:   withBody(fxPREvent(PRReady, fxHead, false), "> it needs human review, they said\n\n```\nneeds human\n```\nDone."),
			want: want{state: Review, steps: []step{{Review, "#12 ready for review"}}, labels: lbl(Review)}},
		{name: "in-progress/configured phrases replace the defaults", task: fxTask(InProgress, true),
			ev:    withBody(fxPREvent(PRReady, fxHead, false), says+"\nTODO: later"),
			facts: func(f *Facts) { f.Config.Contracts.Contradictions = []string{"todo"} },
			want:  want{state: InProgress, steps: []step{{InProgress, `it also says "todo"`}}, notices: []NoticeKind{NoticeContradiction}}},
		{name: "review/the phrase added to the body: no claim, no move", task: fxTask(Review, true),
			ev: withBody(fxPREvent(PRLinked, fxHead, false), says), want: want{state: Review}},
		{name: "in-progress/submit with the phrase in the comment: refused", task: fxTask(InProgress, false),
			ev:   fxText("alice", "/submit all done\nIt needs human sign-off though."),
			want: want{state: InProgress, steps: []step{refused}, notices: []NoticeKind{NoticeContradiction}}},
		{name: "in-progress/submit without it: review", task: fxTask(InProgress, false),
			ev:   fxText("alice", "/submit all done"),
			want: want{state: Review, steps: []step{{Review, "/submit: all done"}}, labels: lbl(Review)}},
	}
	runEventCases(t, tests)
	t.Run("submit refusal quotes the comment's line, on the task", func(t *testing.T) {
		ev := fxText("alice", "/submit all done\n"+says)
		d := decide(t, fxTask(InProgress, false), ev, fxFacts("alice"))
		contradiction(fxIssue)(t, d)
	})
	t.Run("opened ready with the phrase, then the body edited clean", func(t *testing.T) {
		play(t, fxTask(Assigned, false), nil,
			beat{ev: withBody(fxPREvent(PRLinked, fxHead, false), says),
				want: want{state: InProgress, steps: []step{{Assigned, "claim of completion refused"}, {InProgress, "#12 opened"}},
					labels: lbl(InProgress), notices: []NoticeKind{NoticeContradiction}}},
			beat{ev: withBody(fxPREvent(PRLinked, fxHead, false), "Done."),
				want: want{state: Review, steps: []step{{Review, "#12's description edited"}}, labels: lbl(Review)}},
			beat{ev: withBody(fxPREvent(PRLinked, fxHead, false), "Done."), want: want{nothing: true}},
		)
	})
	t.Run("the phrase put in and taken out again does not resubmit rejected commits", func(t *testing.T) {
		task := play(t, fxTask(Completed, true), nil,
			beat{ev: fxComment("bob", "/reject the form does not submit"),
				want: want{state: InProgress, steps: []step{{InProgress, "/reject"}}, labels: lbl(InProgress), notices: []NoticeKind{NoticeRejected}}},
			beat{ev: withBody(fxPREvent(PRLinked, fxHead, false), says), want: want{state: InProgress}},
		)
		d := decide(t, task, withBody(fxPREvent(PRLinked, fxHead, false), "Done."), fxFacts("dave"))
		if after(task, d).State != InProgress {
			t.Error("regression: rules/decide.go:397-398 (progress, lifted) treats any removal of a contradiction as a resubmission (lifted), even when no claim was refused and the head is one a verifier rejected (RejectedHeads) or the attempt failed: adding \"needs human\" to the body and removing it sends the rejected commits h1 back to review, so they can be approved and verified without a new attempt")
		}
	})
	t.Run("the phrase put in and taken out again is no new failed attempt", func(t *testing.T) {
		task := play(t, fxTask(Review, true), nil,
			beat{ev: checked(lintFailed()), want: want{state: InProgress, steps: []step{{InProgress, "failed attempt"}}, labels: lbl(InProgress), notices: []NoticeKind{NoticeFailed}}},
			beat{ev: withBody(prEv(PRLinked, fxHead, false, lintFailed()), says), want: want{state: InProgress}},
		)
		d := decide(t, task, prEv(PRLinked, fxHead, false, lintFailed()), fxFacts("dave"))
		if nt := after(task, d); nt.FailedAttempts != 1 {
			t.Errorf("regression: rules/decide.go:397-398 (progress, lifted): removing a phrase no claim was refused for resubmits the failed commits, and evaluate counts a second failed attempt (failed attempts %d, want 1; 3 such edits escalate)", nt.FailedAttempts)
		}
	})
}

// ---------------------------------------------------------------------------
// /contract.

func TestContractCommand(t *testing.T) {
	withFilesPR := func(s State) *Task { return fxFilesTask(s, green(), "internal/form.go", "web/Button.tsx") }
	contract := func(typ ContractType, keys ...string) func(t *testing.T, d Decision) {
		return func(t *testing.T, d Decision) {
			t.Helper()
			c := d.Task.Contract
			if c.Type != typ || !slices.Equal(keysOf(d.Task), keys) {
				t.Errorf("contract %s %v, want %s %v", c.Type, keysOf(d.Task), typ, keys)
			}
			if c.From != "lead" || !strings.Contains(c.Why, "@lead") || !c.At.Equal(fxAt(100)) {
				t.Errorf("contract from %q why %q at %v, want the lead's", c.From, c.Why, c.At)
			}
			if len(effectsOf(d, EffectSyncCard)) != 1 {
				t.Error("the card must show the new contract")
			}
		}
	}
	tests := []eventCase{
		{name: "non-lead: refused", task: withFilesPR(InProgress), ev: fxComment("bob", "/contract advisory"),
			want: want{state: InProgress, notices: []NoticeKind{NoticeRefused}, check: func(t *testing.T, d Decision) {
				if r := refusalReason(d); !strings.Contains(r, "only a lead") {
					t.Errorf("refusal %q", r)
				}
				if d.Task.Contract.Type != Verifiable {
					t.Errorf("type %s", d.Task.Contract.Type)
				}
			}}},
		{name: "builder: refused", task: withFilesPR(InProgress), ev: fxComment("alice", "/contract skip"),
			want: want{state: InProgress, notices: []NoticeKind{NoticeRefused}}},
		{name: "bad type: refused", task: withFilesPR(InProgress), ev: fxComment("lead", "/contract manual"),
			want: want{state: InProgress, notices: []NoticeKind{NoticeRefused}, check: func(t *testing.T, d Decision) {
				if r := refusalReason(d); !strings.Contains(r, "`/contract verifiable`, `/contract advisory` or `/contract skip`") {
					t.Errorf("refusal %q", r)
				}
			}}},
		{name: "no type: refused", task: withFilesPR(InProgress), ev: fxComment("lead", "/contract"),
			want: want{state: InProgress, notices: []NoticeKind{NoticeRefused}}},
		{name: "advisory: criteria gone, noted", task: withFilesPR(InProgress), ev: fxComment("lead", "/contract advisory"),
			want: want{state: InProgress, steps: []step{{InProgress, "contract type verifiable → advisory by lead @lead"}},
				check: contract(Advisory)}},
		{name: "any case, with words after", task: withFilesPR(InProgress), ev: fxComment("lead", "/contract Advisory it is research"),
			want: want{state: InProgress, steps: []step{{InProgress, "verifiable → advisory"}}, check: contract(Advisory)}},
		{name: "skip: typecheck and lint only, whatever the files", task: withFilesPR(Review), ev: fxComment("lead", "/contract skip"),
			want: want{state: Review, steps: []step{{Review, "contract type verifiable → skip by lead @lead"}},
				check: contract(Skip, "typecheck", "lint")}},
		{name: "verifiable: the files' criteria come back", task: func() *Task {
			task := withFilesPR(InProgress)
			task.Contract.Type, task.Contract.From, task.Contract.Criteria = Skip, "lead", task.Contract.Criteria[:2]
			return task
		}(), ev: fxComment("lead", "/contract verifiable"),
			want: want{state: InProgress, steps: []step{{InProgress, "contract type skip → verifiable by lead @lead"}},
				check: contract(Verifiable, "typecheck", "lint", "unit-test", "critic:frontend-critic")}},
		{name: "the type it already has, set by a lead: nothing new", task: func() *Task {
			task := fxTask(InProgress, true)
			task.Contract.From = "lead"
			return task
		}(), ev: fxComment("lead", "/contract verifiable"),
			want: want{state: InProgress, check: func(t *testing.T, d Decision) {
				if len(effectsOf(d, EffectSyncCard)) != 0 {
					t.Error("card rewritten for nothing")
				}
			}}},
		{name: "advisory in completed: a non-lead can no longer verify", task: withFilesPR(Completed), ev: fxComment("lead", "/contract advisory\n/verify"),
			want: want{state: Verified, steps: []step{{Completed, "→ advisory"}, {Verified, "/verify"}}, labels: lbl(Verified)}},
	}
	runEventCases(t, tests)

	t.Run("set by a lead: a later issue edit and PR files do not change it", func(t *testing.T) {
		task := play(t, fxTask(Assigned, false), nil,
			beat{ev: fxComment("lead", "/contract advisory"),
				want: want{state: Assigned, steps: []step{{Assigned, "contract type verifiable → advisory by lead @lead"}}}},
			beat{ev: fxIssueEvent(IssueEdited, "lead", func(e *Event) { e.Issue.Title, e.Issue.Body = "Login form", "Fix `src/login.go`" }),
				want: want{nothing: true}},
			beat{ev: withFiles(fxPREvent(PRLinked, fxHead, false), "internal/form.go"),
				want: want{state: Review, steps: []step{{InProgress, "#12 opened"}, {Review, "#12 opened"}}, labels: lbl(Review)}},
			beat{ev: fxReview("carol", "approved", fxHead, ""),
				want: want{state: Completed, steps: []step{{Completed, "approved by @carol"}}, labels: lbl(Completed)}},
			beat{ev: fxComment("bob", "/verify"), want: want{state: Completed, notices: []NoticeKind{NoticeRefused}}},
			beat{ev: fxComment("lead", "/verify"), want: want{state: Verified, steps: []step{{Verified, "/verify"}}, labels: lbl(Verified)}},
		)
		if task.Contract.Type != Advisory || len(task.Contract.Criteria) != 0 || task.Contract.From != "lead" {
			t.Errorf("contract %+v", task.Contract)
		}
	})
}

// ---------------------------------------------------------------------------
// Found wanting (each skipped test shows a bug; see its message).

func TestContractBugs(t *testing.T) {
	const says = "Done. Deploying it needs human sign-off though."
	t.Run("a contradiction notice says the state the task is left in", func(t *testing.T) {
		for _, s := range []State{Pending, Assigned} {
			d := decide(t, fxTask(s, false), withBody(fxPREvent(PRLinked, fxHead, false), says), fxFacts("dave"))
			n := noticeOf(d, NoticeContradiction)
			if n == nil || d.Task.State != InProgress {
				t.Fatalf("notice %+v, state %s", n, d.Task.State)
			}
			if n.State != d.Task.State {
				t.Errorf("regression: rules/criteria.go:381 (contradicted) takes State before rules/decide.go:387-388 (progress) advances the task: a ready PR with %q opened on a %s task leaves it in-progress, but the notice says State %q (\"#7 stays `%s`\")", "needs human", s, n.State, n.State)
			}
		}
	})
	t.Run("/verify in the comment that changes the contract is judged on the new criteria", func(t *testing.T) {
		task := fxFilesTask(Completed, nil, "internal/form.go") // no test run: unit-test would be pending
		task.Contract.Type, task.Contract.From, task.Contract.Criteria = Skip, "lead", task.Contract.Criteria[:2]
		d := decide(t, task, fxComment("lead", "/contract verifiable\n/verify"), fxFacts("lead"))
		if d.Task.State == Verified {
			c := criterionOf(t, d.Task, "unit-test")
			t.Errorf("regression: rules/criteria.go:76-90 (setContract) gives criteria new to the contract no result (%q), and commands run before evaluate (rules/decide.go:71 then 77): /verify after /contract verifiable is accepted while unit-test is %s (%s)", "", c.Result, c.Detail)
		}
	})
	t.Run("/verify on a legacy record is judged on evaluated criteria", func(t *testing.T) {
		task := fxTaskBare(Completed, true)
		task.PRs[0].Runs = lintFailed()
		d := decide(t, task, fxComment("bob", "/verify"), fxFacts("bob"))
		if d.Task.State == Verified {
			t.Errorf("regression: rules/criteria.go:21-32 (ensureContract) writes a legacy record's contract without results and commands run before evaluate (rules/decide.go:71 then 77): /verify is accepted while lint %s on #12 (Blocking sees result \"\"), and the task stays verified with a failing criterion", criterionOf(t, d.Task, "lint").Result)
		}
	})
	t.Run("/verify right after contracts.critics is configured is judged on the new config", func(t *testing.T) {
		task := fxFilesTask(Completed, green(), "web/Button.tsx") // carol's approval met the critic: no reviewers configured then
		f := withCritics()
		known(f).Person = fxPerson("bob")
		d := decide(t, task, fxComment("bob", "/verify"), f)
		if d.Task.State == Verified {
			t.Errorf("regression: commands run before evaluate (rules/decide.go:71 then 77): /verify is judged on results worked out with the previous event's config; critic:frontend-critic is %s now and the task is verified anyway", criterionOf(t, d.Task, "critic:frontend-critic").Result)
		}
	})
	t.Run("a redelivered PR event with docs-only files changes nothing", func(t *testing.T) {
		ev := withFiles(fxPREvent(PRChecked, fxHead, true), "docs/form.md")
		task := deepCopy(t, after(fxTask(InProgress, true), decide(t, fxTask(InProgress, true), ev, fxFacts("dave")))) // stored and loaded
		d := decide(t, task, ev, fxFacts("dave"))
		if d.Task != nil {
			t.Error("regression: rules/criteria.go:54 (fileCriteria) returns an empty, non-nil slice for files that call for nothing; rules/decide.go:333 (pullRequest) compares the PR record with reflect.DeepEqual, and the stored record's nil (omitempty) differs from it: every such event, redelivered too, rewrites the record and the task card")
		}
	})
	t.Run("a documentation file named after a login is documentation", func(t *testing.T) {
		d := decide(t, fxTask(InProgress, true), withFiles(fxPREvent(PRChecked, fxHead, true), "docs/login.md"), fxFacts("dave"))
		if keys := keysOf(after(fxTask(InProgress, true), d)); !slices.Equal(keys, []string{"typecheck", "lint"}) {
			t.Errorf("regression: rules/contract_rules.yml (security rule, pattern \"**/*{login,...,session,...}*\") matches docs/login.md, though the file says \"Documentation (*.md, docs/) matches nothing here\": criteria %v", keys)
		}
	})
}
