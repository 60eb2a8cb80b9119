package rules

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// checkRun is a check run of name, completed with conclusion (or in state
// when conclusion is one of the non-completed statuses), started at minute min.
func checkRun(name string, id int64, state, conclusion string, min int) CIRun {
	return CIRun{Name: name, ID: id, State: state, Conclusion: conclusion, URL: fmt.Sprintf("https://ci.example/runs/%d", id), At: fxAt(min),
		App: "github-actions", Made: MadeByJob}
}

// otherApp is r created by another App than GitHub Actions.
func otherApp(r CIRun) CIRun {
	r.App = "travis-ci"
	return r
}

func done(name string, id int64, conclusion string, min int) CIRun {
	return checkRun(name, id, "completed", conclusion, min)
}

func commitStatus(name string, id int64, state string, min int) CIRun {
	return CIRun{Name: name, Status: true, ID: id, State: state, URL: fmt.Sprintf("https://ci.example/status/%d", id), At: fxAt(min),
		Creator: fxCI}
}

// statusBy is a commit status posted by creator.
func statusBy(name string, id int64, state string, min int, creator User) CIRun {
	r := commitStatus(name, id, state, min)
	r.Creator = creator
	return r
}

// appRun is a completed check run created by the App slug ("" unknown).
func appRun(name string, id int64, conclusion, slug string) CIRun {
	r := done(name, id, conclusion, 50)
	r.App = slug
	return r
}

// fxCI is the account a CI service posts commit statuses as.
var fxCI = User{ID: 900, Login: "ci-bot"}

func TestCIRunResult(t *testing.T) {
	tests := []struct {
		name    string
		run     CIRun
		result  Result
		outcome string
	}{
		// Check runs: only a completed run has a say; success passes; four
		// conclusions fail; anything else is pending (docs/design.md, Verification contracts).
		{"check queued", CIRun{State: "queued"}, ResultPending, "queued"},
		{"check in_progress", CIRun{State: "in_progress"}, ResultPending, "in_progress"},
		{"check requested", CIRun{State: "requested"}, ResultPending, "requested"},
		{"check waiting", CIRun{State: "waiting"}, ResultPending, "waiting"},
		{"check pending", CIRun{State: "pending"}, ResultPending, "pending"},
		{"check no state", CIRun{}, ResultPending, ""},
		{"check success", CIRun{State: "completed", Conclusion: "success"}, ResultPass, "success"},
		{"check failure", CIRun{State: "completed", Conclusion: "failure"}, ResultFail, "failure"},
		{"check timed_out", CIRun{State: "completed", Conclusion: "timed_out"}, ResultFail, "timed_out"},
		{"check cancelled", CIRun{State: "completed", Conclusion: "cancelled"}, ResultFail, "cancelled"},
		{"check action_required", CIRun{State: "completed", Conclusion: "action_required"}, ResultFail, "action_required"},
		{"check neutral", CIRun{State: "completed", Conclusion: "neutral"}, ResultPending, "neutral"},
		{"check skipped", CIRun{State: "completed", Conclusion: "skipped"}, ResultPending, "skipped"},
		{"check stale", CIRun{State: "completed", Conclusion: "stale"}, ResultPending, "stale"},
		{"check startup_failure", CIRun{State: "completed", Conclusion: "startup_failure"}, ResultPending, "startup_failure"},
		{"check completed without conclusion", CIRun{State: "completed"}, ResultPending, "completed"},
		{"check conclusion before completion does not count", CIRun{State: "in_progress", Conclusion: "failure"}, ResultPending, "in_progress"},
		{"check success is case sensitive", CIRun{State: "completed", Conclusion: "SUCCESS"}, ResultPending, "SUCCESS"},
		// Commit statuses: success passes, failure and error fail, anything else is pending.
		{"status success", CIRun{Status: true, State: "success"}, ResultPass, "success"},
		{"status failure", CIRun{Status: true, State: "failure"}, ResultFail, "failure"},
		{"status error", CIRun{Status: true, State: "error"}, ResultFail, "error"},
		{"status pending", CIRun{Status: true, State: "pending"}, ResultPending, "pending"},
		{"status no state", CIRun{Status: true}, ResultPending, ""},
		{"status ignores a conclusion", CIRun{Status: true, State: "pending", Conclusion: "success"}, ResultPending, "pending"},
		{"status completed is no status state", CIRun{Status: true, State: "completed", Conclusion: "success"}, ResultPending, "completed"},
		{"status timed_out is no status state", CIRun{Status: true, State: "timed_out"}, ResultPending, "timed_out"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.run.Result(); got != tc.result {
				t.Errorf("Result() = %q, want %q", got, tc.result)
			}
			if got := tc.run.Outcome(); got != tc.outcome {
				t.Errorf("Outcome() = %q, want %q", got, tc.outcome)
			}
		})
	}
}

func TestMergeRun(t *testing.T) {
	lint := done("lint", 10, "success", 5)
	test := done("test", 20, "failure", 5)
	tests := []struct {
		name    string
		runs    []CIRun
		r       CIRun
		want    []CIRun
		changed bool
	}{
		{"first run", nil, lint, []CIRun{lint}, true},
		{"new name, kept sorted", []CIRun{test}, lint, []CIRun{lint, test}, true},
		{"new name sorts last", []CIRun{lint}, test, []CIRun{lint, test}, true},
		{"newer run of the name replaces it (a re-run)", []CIRun{lint, test},
			done("test", 21, "success", 9), []CIRun{lint, done("test", 21, "success", 9)}, true},
		{"older run of the name is ignored (a late delivery)", []CIRun{lint, done("test", 21, "success", 9)},
			test, []CIRun{lint, done("test", 21, "success", 9)}, false},
		{"older run with a higher id is still older", []CIRun{lint, test},
			done("test", 99, "success", 1), []CIRun{lint, test}, false},
		{"the same run again changes nothing", []CIRun{lint, test}, test, []CIRun{lint, test}, false},
		{"the same run, completed since, replaces it", []CIRun{lint, checkRun("test", 20, "in_progress", "", 5)},
			test, []CIRun{lint, test}, true},
		{"equal time: the higher id wins", []CIRun{lint, test},
			done("test", 21, "success", 5), []CIRun{lint, done("test", 21, "success", 5)}, true},
		{"equal time: a lower id loses", []CIRun{lint, done("test", 21, "success", 5)},
			test, []CIRun{lint, done("test", 21, "success", 5)}, false},
		{"a status and a check run of one name are kept apart", []CIRun{test},
			commitStatus("test", 30, "success", 9), []CIRun{test, commitStatus("test", 30, "success", 9)}, true},
		{"a status sorts after the check run of its name", []CIRun{commitStatus("test", 30, "success", 9)},
			test, []CIRun{test, commitStatus("test", 30, "success", 9)}, true},
		{"a newer status replaces the status only", []CIRun{test, commitStatus("test", 30, "pending", 6)},
			commitStatus("test", 31, "success", 9), []CIRun{test, commitStatus("test", 31, "success", 9)}, true},
		{"an older status is ignored", []CIRun{test, commitStatus("test", 31, "success", 9)},
			commitStatus("test", 30, "pending", 6), []CIRun{test, commitStatus("test", 31, "success", 9)}, false},
		{"names are case sensitive", []CIRun{test}, done("Test", 40, "success", 9),
			[]CIRun{done("Test", 40, "success", 9), test}, true},
		// GitHub keeps the latest check run per App and name: another App's
		// later `test` is a run of its own, never a re-run of this one.
		{"another App's run of the name is kept beside it", []CIRun{lint, test}, otherApp(done("test", 41, "success", 9)),
			[]CIRun{lint, test, otherApp(done("test", 41, "success", 9))}, true},
		{"another App's run sorts after by App", []CIRun{lint, otherApp(done("test", 41, "success", 9))}, test,
			[]CIRun{lint, test, otherApp(done("test", 41, "success", 9))}, true},
		{"a newer run of the same App replaces only its own", []CIRun{lint, test, otherApp(done("test", 41, "failure", 9))},
			otherApp(done("test", 42, "success", 10)), []CIRun{lint, test, otherApp(done("test", 42, "success", 10))}, true},
	}
	t.Run("a late delivery of a run's earlier state does not undo its completion", func(t *testing.T) {
		got, changed := MergeRun([]CIRun{lint, test}, checkRun("test", 20, "in_progress", "", 5))
		if changed || got[1].State != "completed" {
			t.Errorf("regression: CIRun.newer (rules/ci.go:60-65) lets a run supersede itself (same id and start: ID >= ID), so MergeRun replaces completed/failure with a late in_progress delivery of the same check run: the criterion goes back to pending; app/ci.go's re-read merges the recorded (stale) run over the fresh one the same way (got %+v, changed %v)", got[1], changed)
		}
	})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := slices.Clone(tc.runs)
			got, changed := MergeRun(tc.runs, tc.r)
			if !reflect.DeepEqual(got, tc.want) || changed != tc.changed {
				t.Errorf("MergeRun = %+v, %v\nwant      %+v, %v", got, changed, tc.want, tc.changed)
			}
			if !reflect.DeepEqual(tc.runs, before) {
				t.Errorf("MergeRun modified its input: %+v, was %+v", tc.runs, before)
			}
		})
	}
}

func TestMergeRunCap(t *testing.T) {
	full := func() []CIRun {
		var runs []CIRun
		for i := range maxRuns {
			runs = append(runs, done(fmt.Sprintf("r%03d", i), int64(1000+i), "success", 10+i))
		}
		return runs
	}
	t.Run("a new name past the cap drops the oldest", func(t *testing.T) {
		runs := full()
		before := slices.Clone(runs)
		got, changed := MergeRun(runs, done("zzz", 1, "success", 500))
		if !changed || len(got) != maxRuns {
			t.Fatalf("changed %v, %d runs; want true, %d", changed, len(got), maxRuns)
		}
		if got[0].Name != "r001" || got[len(got)-1].Name != "zzz" {
			t.Errorf("first %q, last %q: want r000 (the oldest) dropped and zzz kept", got[0].Name, got[len(got)-1].Name)
		}
		if !reflect.DeepEqual(runs, before) {
			t.Error("MergeRun modified its input")
		}
	})
	t.Run("the oldest goes whatever its name", func(t *testing.T) {
		runs := full()
		runs[50].At = fxAt(0) // r050 is the oldest now
		got, _ := MergeRun(runs, done("aaa", 1, "success", 500))
		if len(got) != maxRuns || slices.ContainsFunc(got, func(r CIRun) bool { return r.Name == "r050" }) || got[0].Name != "aaa" || got[1].Name != "r000" {
			t.Errorf("got %d runs starting %q, %q; want r050 dropped, aaa first", len(got), got[0].Name, got[1].Name)
		}
	})
	t.Run("equal times: the lowest id goes", func(t *testing.T) {
		runs := full()
		for i := range runs {
			runs[i].At = fxAt(1)
		}
		got, _ := MergeRun(runs, done("zzz", 5000, "success", 1))
		if len(got) != maxRuns || got[0].Name != "r001" {
			t.Errorf("got %d runs starting %q, want r000 (lowest id) dropped", len(got), got[0].Name)
		}
	})
	t.Run("past the cap a failure outlives older passes", func(t *testing.T) {
		// A matrix of more than maxRuns jobs whose first job failed: the
		// failure is what the whole CI must see, not the 100 passes after it.
		runs := full()
		runs[0].Conclusion = "failure"
		runs[1].State, runs[1].Conclusion = "in_progress", ""
		got, changed := MergeRun(runs, done("zzz", 1, "success", 500))
		if !changed || len(got) != maxRuns {
			t.Fatalf("changed %v, %d runs; want true, %d", changed, len(got), maxRuns)
		}
		if got[0].Name != "r000" || got[1].Name != "r001" || got[2].Name != "r003" {
			t.Errorf("kept %q, %q, %q first; want r000 (failed) and r001 (in progress) kept, r002 (the oldest pass) dropped", got[0].Name, got[1].Name, got[2].Name)
		}
		if res, detail, _, _ := wholeCIResult(got, nil, "", nil); res != ResultFail {
			t.Errorf("the whole CI over the runs kept is %s (%s), want fail", res, detail)
		}
	})
	t.Run("a failure older than all at the cap is kept over a pass", func(t *testing.T) {
		got, changed := MergeRun(full(), done("new", 1, "failure", 0))
		if !changed || len(got) != maxRuns || !slices.ContainsFunc(got, func(r CIRun) bool { return r.Name == "new" }) || got[0].Name != "new" || got[1].Name != "r001" {
			t.Errorf("changed %v, %d runs starting %q, %q; want the failure kept and r000 (the oldest pass) dropped", changed, len(got), got[0].Name, got[1].Name)
		}
	})
	t.Run("a replacement at the cap drops nothing", func(t *testing.T) {
		got, changed := MergeRun(full(), done("r000", 9999, "failure", 600))
		if !changed || len(got) != maxRuns || got[0].Conclusion != "failure" {
			t.Errorf("changed %v, %d runs, first %+v", changed, len(got), got[0])
		}
	})
	t.Run("a run older than all at the cap changes nothing", func(t *testing.T) {
		runs := full()
		got, changed := MergeRun(runs, done("new", 1, "success", 0))
		if !reflect.DeepEqual(got, runs) {
			t.Errorf("got %d runs, want the input unchanged", len(got))
		}
		if changed {
			t.Error("regression: MergeRun (rules/ci.go:78-93) appends a new name, then drops that same run as the oldest, and still reports changed=true for a list equal to its input")
		}
	})
}

func TestMatchCheck(t *testing.T) {
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"test", "test", true},
		{"test", "Test", false},
		{"test", "tests", false},
		{"test", "unit-test", false},
		{"test", "test (ubuntu)", false},
		{"test", "", false},
		{"", "", true},
		{"*", "", true},
		{"*", "anything at all", true},
		{"test*", "test", true},
		{"test*", "test-race", true},
		{"test*", "unit-test", false},
		{"*test", "unit-test", true},
		{"*test", "test", true},
		{"*test", "tests", false},
		{"*test*", "a test run", true},
		{"*test*", "tset", false},
		{"test (*)", "test (ubuntu-latest, 1.22)", true},
		{"test (*)", "test ()", true},
		{"test (*)", "test", false},
		{"test (*)", "test (", false},
		{"test (*)", "test (ubuntu", false},
		{"test (*)", "lint (ubuntu)", false},
		{"ci/*/test", "ci/linux/test", true},
		{"ci/*/test", "ci/linux/lint", false},
		{"ci/*/test", "ci//test", true},
		{"ci/*/test", "ci/test", false},
		{"a*b*c", "abc", true},
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "acb", false},
		{"a*b*c", "abcbc", true},
		{"a*b*c", "abcb", false},
		{"a**b", "ab", true},
		{"a**b", "aXXb", true},
		{"*-*-*", "x-y-z", true},
		{"*-*-*", "x-y", false},
		{"ab*ba", "aba", false},
		{"ab*ba", "abba", true},
		{"a*a", "a", false},
		{"a*a", "aa", true},
		{"e2e (*) / *", "e2e (chrome) / shard 1", true},
		{"e2e (*) / *", "e2e (chrome)", false},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%q~%q", tc.pattern, tc.name), func(t *testing.T) {
			if got := MatchCheck(tc.pattern, tc.name); got != tc.want {
				t.Errorf("MatchCheck(%q, %q) = %v, want %v", tc.pattern, tc.name, got, tc.want)
			}
		})
	}
}

func TestRelevantRuns(t *testing.T) {
	cfg := mappedConfig().Contracts
	cfg.Checks = map[string][]string{"lint": {"lint", "golangci-lint"}, "unit-test": {"test (*)"}}
	runs := []CIRun{
		done("deploy", 1, "failure", 1),
		done("golangci-lint", 2, "success", 1),
		done("lint", 3, "success", 1),
		commitStatus("lint", 4, "success", 1),
		done("test", 5, "success", 1),
		done("test (ubuntu)", 6, "success", 1),
	}
	got := RelevantRuns(cfg, runs)
	var names []string
	for _, r := range got {
		names = append(names, fmt.Sprintf("%s/%v", r.Name, r.Status))
	}
	want := []string{"golangci-lint/false", "lint/false", "lint/true", "test (ubuntu)/false"}
	if !slices.Equal(names, want) {
		t.Errorf("RelevantRuns = %v, want %v", names, want)
	}
	if RelevantRuns(cfg, nil) != nil || RelevantRuns(ContractConfig{Checks: map[string][]string{}}, runs) != nil {
		t.Error("no runs, or no checks mapped: want none")
	}
	if got := RelevantRuns(DefaultConfig().Contracts, runs); !slices.Equal(got, runs) {
		t.Errorf("contracts.checks unset: RelevantRuns = %v, want every run", got)
	}
}

// ciTask is an in-progress task whose draft pull request #12 (head h1)
// changes a Go file: its contract asks for typecheck, lint and unit-test, and
// a failure in progress moves nothing.
func ciTask(f Facts) *Task {
	task := fxTaskBare(InProgress, true)
	task.PRs[0].Runs = fxRuns()
	d := &decider{f: f, t: task, ev: Event{At: fxAt(0)}}
	d.ensureContract()
	task.PRs[0].Criteria = d.fileCriteria([]string{"internal/form.go"})
	d.recontract("")
	d.evaluate()
	return task
}

// ciChecked decides CI results runs on ciTask's draft pull request, and
// returns the decision and the task as it is after it.
func ciChecked(t *testing.T, f Facts, runs []CIRun) (Decision, *Task) {
	t.Helper()
	task := ciTask(f)
	ev := fxPREvent(PRChecked, fxHead, true)
	ev.Actor = u("ci")
	ev.PR.Runs = runs
	d := decide(t, task, ev, f)
	if d.Task == nil {
		return d, task
	}
	return d, d.Task
}

func criterionOf(t *testing.T, task *Task, key string) Criterion {
	t.Helper()
	if task == nil || task.Contract == nil {
		t.Fatalf("no contract")
	}
	for _, c := range task.Contract.Criteria {
		if c.Key() == key {
			return c
		}
	}
	t.Fatalf("no criterion %s in %+v", key, task.Contract.Criteria)
	return Criterion{}
}

// TestCIResultThroughDecide checks what CI runs on a linked pull request's
// head say of a criterion, through DecideTask (ciResult, criterionResult).
func TestCIResultThroughDecide(t *testing.T) {
	checks := func(m map[string][]string) func(*Facts) {
		return func(f *Facts) {
			f.Config.Contracts.Checks = m
		}
	}
	matrix := checks(map[string][]string{"typecheck": {"typecheck"}, "lint": {"lint"}, "unit-test": {"test (*)"}})
	several := checks(map[string][]string{"typecheck": {"typecheck"}, "lint": {"lint"}, "unit-test": {"test", "race"}})
	tests := []struct {
		name   string
		facts  func(*Facts)
		runs   []CIRun
		key    string
		result Result
		detail []string // phrases the detail contains
		url    string
	}{
		{name: "no test run yet: pending, naming it", runs: fxRuns(), key: "unit-test", result: ResultPending,
			detail: []string{"no `test` run yet on #12 (h1)"}},
		{name: "test queued: pending, saying so", runs: append(fxRuns(), checkRun("test", 7, "queued", "", 50)),
			key: "unit-test", result: ResultPending, detail: []string{"`test` queued on #12 (h1)"}},
		{name: "test passed", runs: append(fxRuns(), done("test", 7, "success", 50)),
			key: "unit-test", result: ResultPass, detail: []string{"`test` passed on #12 (h1)"}, url: "https://ci.example/runs/7"},
		{name: "test failed: fail, with its URL", runs: append(fxRuns(), done("test", 7, "failure", 50)),
			key: "unit-test", result: ResultFail, detail: []string{"`test`: failure on #12 (h1)"}, url: "https://ci.example/runs/7"},
		{name: "test timed out", runs: append(fxRuns(), done("test", 7, "timed_out", 50)),
			key: "unit-test", result: ResultFail, detail: []string{"timed_out"}, url: "https://ci.example/runs/7"},
		{name: "test neutral: pending", runs: append(fxRuns(), done("test", 7, "neutral", 50)),
			key: "unit-test", result: ResultPending, detail: []string{"`test` neutral"}},
		{name: "a failing commit status counts", runs: append(fxRuns(), commitStatus("test", 7, "error", 50)),
			key: "unit-test", result: ResultFail, detail: []string{"`test`: error"}, url: "https://ci.example/status/7"},
		{name: "a check run and a status of one name: both must pass",
			runs: append(fxRuns(), done("test", 7, "success", 50), commitStatus("test", 8, "pending", 50)),
			key:  "unit-test", result: ResultPending, detail: []string{"`test` pending"}},
		{name: "runs no check counts are ignored", runs: append(fxRuns(), done("deploy", 7, "failure", 50)),
			key: "unit-test", result: ResultPending, detail: []string{"no `test` run yet"}},
		{name: "lint failed on the head: fail", runs: []CIRun{done("lint", 1, "failure", 50), done("typecheck", 2, "success", 1)},
			key: "lint", result: ResultFail, detail: []string{"`lint`: failure on #12 (h1)"}, url: "https://ci.example/runs/1"},
		{name: "several patterns, all passed", facts: several,
			runs: append(fxRuns(), done("race", 8, "success", 60), done("test", 7, "success", 50)),
			key:  "unit-test", result: ResultPass, detail: []string{"`test`", "`race`", "passed on #12 (h1)"}, url: "https://ci.example/runs/8"},
		{name: "several patterns, one missing: pending, naming it", facts: several,
			runs: append(fxRuns(), done("test", 7, "success", 50)),
			key:  "unit-test", result: ResultPending, detail: []string{"no `race` run yet on #12 (h1)"}},
		{name: "several patterns, one failing: fail with its URL", facts: several,
			runs: append(fxRuns(), done("race", 8, "cancelled", 60), done("test", 7, "success", 50)),
			key:  "unit-test", result: ResultFail, detail: []string{"`race`: cancelled"}, url: "https://ci.example/runs/8"},
		{name: "several patterns, a failure beats a missing run", facts: several,
			runs: append(fxRuns(), done("race", 8, "failure", 60)),
			key:  "unit-test", result: ResultFail, detail: []string{"`race`: failure"}, url: "https://ci.example/runs/8"},
		{name: "matrix: every job passed", facts: matrix,
			runs: append(fxRuns(), done("test (linux)", 7, "success", 50), done("test (macos)", 8, "success", 55)),
			key:  "unit-test", result: ResultPass, detail: []string{"`test (linux)`", "`test (macos)`"}, url: "https://ci.example/runs/8"},
		{name: "matrix: one job failing fails it", facts: matrix,
			runs: append(fxRuns(), done("test (linux)", 7, "success", 50), done("test (macos)", 8, "failure", 55),
				done("test (windows)", 9, "success", 55)),
			key: "unit-test", result: ResultFail, detail: []string{"`test (macos)`: failure"}, url: "https://ci.example/runs/8"},
		{name: "matrix: one job running keeps it pending", facts: matrix,
			runs: append(fxRuns(), done("test (linux)", 7, "success", 50), checkRun("test (macos)", 8, "in_progress", "", 55)),
			key:  "unit-test", result: ResultPending, detail: []string{"`test (macos)` in_progress"}},
		{name: "matrix: a plain test run is not a job of it", facts: matrix,
			runs: append(fxRuns(), done("test", 7, "success", 50)),
			key:  "unit-test", result: ResultPending, detail: []string{"no `test (*)` run yet"}},
		// Trusted sources (docs/design.md, Verification contracts, issue 11 item 8).
		{name: "a builder's success status ticks nothing, and says why",
			runs: append(fxRuns(), statusBy("test", 7, "success", 50, u("alice"))),
			key:  "unit-test", result: ResultPending, detail: []string{"no `test` run yet", "`test` (success) ignored: posted by @alice, who built this task"}},
		{name: "a co-builder's (the PR author's) status is ignored too",
			runs: append(fxRuns(), statusBy("test", 7, "success", 50, u("dave"))),
			key:  "unit-test", result: ResultPending, detail: []string{"posted by @dave, who built this task"}},
		{name: "a builder is known by id, whatever the login says",
			runs: append(fxRuns(), statusBy("test", 7, "success", 50, User{ID: 1002, Login: "alice-renamed"})),
			key:  "unit-test", result: ResultPending, detail: []string{"@alice-renamed, who built this task"}},
		{name: "a builder's failing status fails nothing either",
			runs: append(fxRuns(), statusBy("test", 7, "failure", 50, u("alice"))),
			key:  "unit-test", result: ResultPending, detail: []string{"ignored"}},
		{name: "a non-builder's status counts",
			runs: append(fxRuns(), statusBy("test", 7, "success", 50, u("erin"))),
			key:  "unit-test", result: ResultPass, detail: []string{"`test` passed"}, url: "https://ci.example/status/7"},
		{name: "a status of unknown origin is ignored",
			runs: append(fxRuns(), statusBy("test", 7, "success", 50, User{})),
			key:  "unit-test", result: ResultPending, detail: []string{"posted by an unknown account"}},
		{name: "status_creators pins who may post",
			facts: func(f *Facts) { f.Config.Contracts.StatusCreators = []string{"ci-bot"} },
			runs:  append(fxRuns(), statusBy("test", 7, "success", 50, u("erin"))),
			key:   "unit-test", result: ResultPending, detail: []string{"posted by @erin, not one of contracts.status_creators"}},
		{name: "status_creators: a listed creator counts",
			facts: func(f *Facts) { f.Config.Contracts.StatusCreators = []string{"CI-Bot"} },
			runs:  append(fxRuns(), commitStatus("test", 7, "success", 50)),
			key:   "unit-test", result: ResultPass, url: "https://ci.example/status/7"},
		{name: "status_creators: even a listed builder's status is ignored",
			facts: func(f *Facts) { f.Config.Contracts.StatusCreators = []string{"alice"} },
			runs:  append(fxRuns(), statusBy("test", 7, "success", 50, u("alice"))),
			key:   "unit-test", result: ResultPending, detail: []string{"who built this task"}},
		{name: "a check run of no known App is ignored",
			runs: append(fxRuns(), appRun("test", 7, "success", "")),
			key:  "unit-test", result: ResultPending, detail: []string{"created by no known GitHub App"}},
		{name: "contracts.apps pins the App of a check name",
			facts: func(f *Facts) { f.Config.Contracts.Apps = map[string]string{"test": "github-actions"} },
			runs:  append(fxRuns(), appRun("test", 7, "success", "my-own-app")),
			key:   "unit-test", result: ResultPending, detail: []string{"`test` (success) ignored: created by the App my-own-app, not github-actions (contracts.apps)"}},
		{name: "contracts.apps: the pinned App counts",
			facts: func(f *Facts) { f.Config.Contracts.Apps = map[string]string{"test": "github-actions"} },
			runs:  append(fxRuns(), done("test", 7, "success", 50)),
			key:   "unit-test", result: ResultPass, url: "https://ci.example/runs/7"},
		{name: "contracts.apps patterns pin a matrix",
			facts: func(f *Facts) {
				f.Config.Contracts.Checks["unit-test"] = []string{"test (*)"}
				f.Config.Contracts.Apps = map[string]string{"test (*)": "github-actions"}
			},
			runs: append(fxRuns(), done("test (linux)", 7, "success", 50), appRun("test (macos)", 8, "success", "evil")),
			key:  "unit-test", result: ResultPass, detail: []string{"`test (linux)` passed", "`test (macos)` (success) ignored"}, url: "https://ci.example/runs/7"},
		{name: "an untrusted failure does not hide a trusted pass",
			runs: append(fxRuns(), done("test", 7, "success", 50), statusBy("test", 8, "failure", 50, u("alice"))),
			key:  "unit-test", result: ResultPass, detail: []string{"`test` passed", "ignored: posted by @alice"}, url: "https://ci.example/runs/7"},
		{name: "no check maps to the activity: unchecked",
			facts: checks(map[string][]string{"typecheck": {"typecheck"}, "unit-test": {"test"}}),
			runs:  append(fxRuns(), done("test", 7, "success", 50)),
			key:   "lint", result: ResultUnchecked, detail: []string{"no CI check counts for it"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := fxFacts("ci")
			if tc.facts != nil {
				tc.facts(&f)
			}
			d, nt := ciChecked(t, f, tc.runs)
			if nt.State != InProgress || len(noticesOf(d)) != 0 || nt.FailedAttempts != 0 {
				t.Errorf("state %s, notices %v, failed attempts %d: a draft in progress records CI only", nt.State, noticeKinds(d), nt.FailedAttempts)
			}
			c := criterionOf(t, nt, tc.key)
			if c.Result != tc.result || c.URL != tc.url {
				t.Errorf("%s: result %q, url %q; want %q, %q (detail %q)", tc.key, c.Result, c.URL, tc.result, tc.url, c.Detail)
			}
			for _, p := range tc.detail {
				if !strings.Contains(c.Detail, p) {
					t.Errorf("%s: detail %q lacks %q", tc.key, c.Detail, p)
				}
			}
			for _, r := range nt.pr(fxPR).Runs {
				if r.Name == "deploy" {
					t.Errorf("an uncounted run was kept: %+v", r)
				}
			}
		})
	}
}

// TestCIResultSeveralPRs: a criterion is checked on every open pull request's head.
func TestCIResultSeveralPRs(t *testing.T) {
	two := func(runs12, runs13 []CIRun) *Task {
		task := ciTask(fxFacts(""))
		task.PRs = append(task.PRs, LinkedPR{Number: 13, Author: u("dave"), Head: "k1", Draft: true, Open: true, Runs: runs13})
		task.PRs[0].Runs = runs12
		return task
	}
	pass := append(fxRuns(), done("test", 7, "success", 50))
	fail := append(fxRuns(), done("test", 8, "failure", 60))
	tests := []struct {
		name         string
		runs12       []CIRun
		runs13       []CIRun
		result       Result
		detail       []string
		url          string
		unlinkedOpen bool
	}{
		{name: "both pass", runs12: pass, runs13: pass, result: ResultPass,
			detail: []string{"on #12 (h1)", "on #13 (k1)"}, url: "https://ci.example/runs/7"},
		{name: "one pending: pending, naming where", runs12: pass, runs13: fxRuns(), result: ResultPending,
			detail: []string{"no `test` run yet on #13 (k1)"}},
		{name: "one failing: fail, naming where", runs12: pass, runs13: fail, result: ResultFail,
			detail: []string{"`test`: failure on #13 (k1)"}, url: "https://ci.example/runs/8"},
		{name: "failing first, pending second: fail", runs12: fail, runs13: fxRuns(), result: ResultFail,
			detail: []string{"`test`: failure on #12 (h1)"}, url: "https://ci.example/runs/8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			task := two(tc.runs12, tc.runs13)
			ev := fxEvent(IssueLabeled, "lead")
			ev.Label = "bug" // any event re-evaluates
			d := decide(t, task, ev, fxFacts("lead"))
			nt := d.Task
			if nt == nil {
				nt = task
			}
			c := criterionOf(t, nt, "unit-test")
			if c.Result != tc.result || c.URL != tc.url {
				t.Errorf("result %q, url %q; want %q, %q (detail %q)", c.Result, c.URL, tc.result, tc.url, c.Detail)
			}
			for _, p := range tc.detail {
				if !strings.Contains(c.Detail, p) {
					t.Errorf("detail %q lacks %q", c.Detail, p)
				}
			}
		})
	}
	t.Run("merged PR's runs count when none is open", func(t *testing.T) {
		task := ciTask(fxFacts(""))
		task.PRs[0].Open, task.PRs[0].Merged = false, true
		task.PRs[0].Runs = fail
		ev := fxEvent(IssueLabeled, "lead")
		ev.Label = "bug"
		d := decide(t, task, ev, fxFacts("lead"))
		if c := criterionOf(t, d.Task, "unit-test"); c.Result != ResultFail {
			t.Errorf("unit-test %+v, want fail from the merged PR's head", c)
		}
	})
	t.Run("an unlinked PR's runs do not count", func(t *testing.T) {
		task := two(pass, fail)
		task.PRs[1].Open = false
		ev := fxEvent(IssueLabeled, "lead")
		ev.Label = "bug"
		d := decide(t, task, ev, fxFacts("lead"))
		nt := d.Task
		if nt == nil {
			nt = task
		}
		if c := criterionOf(t, nt, "unit-test"); c.Result != ResultPass || strings.Contains(c.Detail, "#13") {
			t.Errorf("unit-test %+v, want pass from #12 only", c)
		}
	})
}

// wfSuite is the check suite of own workflow run run (suite id) of workflow
// wf, as read with the workflow runs.
func wfSuite(id, wf, run int64, status, conclusion string, runs int) CISuite {
	return CISuite{ID: id, App: ActionsApp, Status: status, Conclusion: conclusion, Runs: runs, Workflow: run,
		WorkflowStatus: status, WorkflowID: wf, Head: SuiteOwn}
}

// GitHub Actions names a job's check run by the job alone: two workflows can
// each have a job `test`. Only a later run of the same workflow supersedes a
// job's run (a re-run, or the workflow run again); another workflow's job of
// the name stands beside it. A workflow run whose suite completed without
// passing (held for approval, startup failure, a failure no run shows) keeps
// the whole CI from passing, unless the workflow ran again since (issue 27,
// second review).
func TestWholeCIPerWorkflow(t *testing.T) {
	const ci, e2e = 501, 502 // workflow ids
	e2eFailed := inSuite(done("test", 10, "failure", 5), 1)
	ciPassed := inSuite(done("test", 20, "success", 9), 2)
	both := []CISuite{wfSuite(1, e2e, 71, "completed", "failure", 1), wfSuite(2, ci, 72, "completed", "success", 1)}
	for _, tc := range []struct {
		name    string
		runs    []CIRun
		suites  []CISuite
		counted []CIRun // CountedRuns
		want    Result  // the whole CI
		detail  []string
	}{
		{"same job name in two workflows: E2E's failure is not hidden by CI's later pass",
			[]CIRun{e2eFailed, ciPassed}, both, []CIRun{e2eFailed, ciPassed},
			ResultFail, []string{"`test`: failure"}},
		{"two workflows, both passed",
			[]CIRun{inSuite(done("test", 10, "success", 5), 1), ciPassed},
			[]CISuite{wfSuite(1, e2e, 71, "completed", "success", 1), wfSuite(2, ci, 72, "completed", "success", 1)},
			[]CIRun{inSuite(done("test", 10, "success", 5), 1), ciPassed},
			ResultPass, []string{"`test`, `test` passed"}},
		{"a later run of the same workflow (run again, or dispatched on the branch) supersedes",
			[]CIRun{e2eFailed, inSuite(done("test", 20, "success", 9), 2)},
			[]CISuite{wfSuite(1, ci, 71, "completed", "failure", 1), wfSuite(2, ci, 72, "completed", "success", 1)},
			[]CIRun{inSuite(done("test", 20, "success", 9), 2)},
			ResultPass, []string{"`test` passed"}},
		{"a later run of the same workflow still running: pending",
			[]CIRun{e2eFailed, inSuite(checkRun("test", 20, "in_progress", "", 9), 2)},
			[]CISuite{wfSuite(1, ci, 71, "completed", "failure", 1), wfSuite(2, ci, 72, "in_progress", "", 1)},
			[]CIRun{inSuite(checkRun("test", 20, "in_progress", "", 9), 2)},
			ResultPending, []string{"`test` in_progress"}},
		{"the workflow unknown (not read, or no Actions permission): each workflow run apart, the failure stands",
			[]CIRun{e2eFailed, ciPassed}, nil, []CIRun{e2eFailed, ciPassed},
			ResultFail, []string{"`test`: failure"}},
		{"a re-run in the same workflow run supersedes, the workflow unknown",
			[]CIRun{inSuite(done("test", 11, "success", 7), 1)}, nil, []CIRun{inSuite(done("test", 11, "success", 7), 1)},
			ResultPass, []string{"`test` passed"}},
		{"a workflow run awaiting approval (no job) is pending, whatever else passed",
			[]CIRun{otherApp(done("DCO", 30, "success", 9))},
			[]CISuite{wfSuite(1, ci, 71, "completed", "action_required", 0)},
			[]CIRun{otherApp(done("DCO", 30, "success", 9))},
			ResultPending, []string{"workflow run 71 awaiting approval"}},
		{"a workflow run that failed to start (invalid workflow) fails",
			[]CIRun{otherApp(done("DCO", 30, "success", 9))},
			[]CISuite{wfSuite(1, ci, 71, "completed", "startup_failure", 0)},
			[]CIRun{otherApp(done("DCO", 30, "success", 9))},
			ResultFail, []string{"workflow run 71", "startup_failure"}},
		{"a workflow run that failed with no failing job known fails",
			[]CIRun{inSuite(done("build", 10, "success", 5), 1)},
			[]CISuite{wfSuite(1, ci, 71, "completed", "failure", 2)},
			[]CIRun{inSuite(done("build", 10, "success", 5), 1)},
			ResultFail, []string{"workflow run 71", "failure"}},
		{"a cancelled workflow run fails",
			[]CIRun{inSuite(done("build", 10, "success", 5), 1)},
			[]CISuite{wfSuite(1, ci, 71, "completed", "cancelled", 1)},
			[]CIRun{inSuite(done("build", 10, "success", 5), 1)},
			ResultFail, []string{"workflow run 71", "cancelled"}},
		{"a workflow run awaiting approval, then approved and run again to pass: a pass",
			[]CIRun{inSuite(done("build", 10, "success", 5), 2)},
			[]CISuite{wfSuite(1, ci, 71, "completed", "action_required", 0), wfSuite(2, ci, 72, "completed", "success", 1)},
			[]CIRun{inSuite(done("build", 10, "success", 5), 2)},
			ResultPass, []string{"`build` passed"}},
		{"a failed workflow run whose failed job is re-run: the re-run's result decides (pending while it runs)",
			[]CIRun{inSuite(checkRun("test", 11, "queued", "", 7), 1)},
			[]CISuite{wfSuite(1, ci, 71, "completed", "failure", 1)},
			[]CIRun{inSuite(checkRun("test", 11, "queued", "", 7), 1)},
			ResultPending, []string{"`test` queued"}},
		{"another head's workflow run awaiting approval blocks nothing",
			[]CIRun{inSuite(done("build", 10, "success", 5), 2)},
			[]CISuite{{ID: 1, App: ActionsApp, Status: "completed", Conclusion: "action_required", Workflow: 71, WorkflowID: ci, Head: SuiteOther},
				wfSuite(2, ci, 72, "completed", "success", 1)},
			[]CIRun{inSuite(done("build", 10, "success", 5), 2)},
			ResultPass, []string{"`build` passed"}},
		{"an earlier workflow run does not supersede a later one",
			[]CIRun{inSuite(done("test", 20, "success", 9), 1), inSuite(done("test", 10, "failure", 5), 2)},
			[]CISuite{wfSuite(1, ci, 71, "completed", "success", 1), wfSuite(2, ci, 72, "completed", "failure", 1)},
			[]CIRun{inSuite(done("test", 20, "success", 9), 1)},
			ResultFail, []string{"workflow run 72", "failure"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			counted := CountedRuns(tc.runs, tc.suites)
			if !reflect.DeepEqual(counted, tc.counted) {
				t.Errorf("CountedRuns = %+v\nwant %+v", counted, tc.counted)
			}
			got, detail, _, _ := wholeCIResult(counted, tc.suites, " on #2", nil)
			if got != tc.want {
				t.Fatalf("result %s, want %s (%s)", got, tc.want, detail)
			}
			for _, p := range tc.detail {
				if !strings.Contains(detail, p) {
					t.Errorf("detail %q lacks %q", detail, p)
				}
			}
		})
	}
}

// A named criterion (contracts.checks) whose name two workflows run counts
// the latest run of it in each workflow: all must pass.
func TestNamedCheckInTwoWorkflows(t *testing.T) {
	const ci, e2e = 501, 502
	suites := []CISuite{wfSuite(1, e2e, 71, "completed", "failure", 1), wfSuite(2, ci, 72, "completed", "success", 1)}
	for _, tc := range []struct {
		name string
		runs []CIRun
		want Result
	}{
		{"one workflow's `test` failed: fail", []CIRun{inSuite(done("test", 10, "failure", 5), 1), inSuite(done("test", 20, "success", 9), 2)}, ResultFail},
		{"both passed", []CIRun{inSuite(done("test", 10, "success", 5), 1), inSuite(done("test", 20, "success", 9), 2)}, ResultPass},
		{"one still running: pending", []CIRun{inSuite(checkRun("test", 10, "in_progress", "", 5), 1), inSuite(done("test", 20, "success", 9), 2)}, ResultPending},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, detail, _, _ := ciResult([]string{"test"}, CountedRuns(tc.runs, suites), " on #2", nil)
			if got != tc.want {
				t.Fatalf("result %s, want %s (%s)", got, tc.want, detail)
			}
		})
	}
}

// Whose a workflow run is, and of which workflow, is read when it matters:
// a completed own-looking suite that did not pass may be another head's (a
// fork pull request's on the same commit, held for approval), and a suite
// read before its workflow was known says nothing of which workflow it is.
func TestCIReadDueWorkflows(t *testing.T) {
	whole := DefaultConfig().Contracts
	pass := []CIRun{inSuite(done("build", 1, "success", 1), 1)}
	for _, tc := range []struct {
		name   string
		runs   []CIRun
		suites []CISuite
		want   CIRead
	}{
		{"a suite held for approval, whose unknown: whose is it?", pass,
			[]CISuite{wfSuite(1, 501, 71, "completed", "success", 1), {ID: 2, App: ActionsApp, Status: "completed", Conclusion: "action_required"}},
			CIRead{Suites: true, Whose: true}},
		{"a suite held for approval, known to be the pull request's own: the green moment's read only", pass,
			[]CISuite{wfSuite(1, 501, 71, "completed", "success", 1), wfSuite(2, 501, 72, "completed", "action_required", 0)},
			CIRead{Suites: true}},
		{"the own workflow run held for approval, a later suite not known: it may be the workflow run again", []CIRun{inSuite(done("build", 1, "success", 1), 2)},
			[]CISuite{wfSuite(1, 501, 71, "completed", "action_required", 0), {ID: 2, App: ActionsApp, Status: "completed", Conclusion: "success", Runs: 1}},
			CIRead{Suites: true, Whose: true}},
		{"another head's workflow run held for approval, the rest known: the green moment's read only", pass,
			[]CISuite{wfSuite(1, 501, 71, "completed", "success", 1), {ID: 2, App: ActionsApp, Status: "completed", Conclusion: "action_required", Workflow: 72, WorkflowID: 501, Head: SuiteOther}},
			CIRead{Suites: true}},
		{"another App's failed suite: no workflow run to read", pass,
			[]CISuite{wfSuite(1, 501, 71, "completed", "success", 1), {ID: 2, App: "travis-ci", Status: "completed", Conclusion: "failure", Runs: 1}},
			CIRead{Suites: true}},
		{"a suite whose head was read but not its workflow: read again", []CIRun{inSuite(done("test", 1, "failure", 1), 1)},
			[]CISuite{{ID: 1, App: ActionsApp, Status: "completed", Conclusion: "failure", Runs: 1, Workflow: 71, WorkflowStatus: "completed", Head: SuiteOwn}},
			CIRead{Suites: true, Whose: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := CIReadDue(whole, tc.runs, tc.suites); got != tc.want {
				t.Fatalf("CIReadDue = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestRunsUnseen(t *testing.T) {
	failed := CISuite{ID: 5, App: "ci", Status: "completed", Conclusion: "failure", Runs: 3}
	pass := func(name string, id int64) CIRun {
		return CIRun{Name: name, ID: id, State: "completed", Conclusion: "success", App: "ci", Suite: 5}
	}
	fail := CIRun{Name: "test", ID: 3, State: "completed", Conclusion: "failure", App: "ci", Suite: 5}
	for _, tc := range []struct {
		name   string
		runs   []CIRun
		suites []CISuite
		want   bool
	}{
		{"a failed suite with runs not yet delivered", []CIRun{pass("typecheck", 1)}, []CISuite{failed}, true},
		{"the failing run known: nothing to read", []CIRun{pass("typecheck", 1), fail}, []CISuite{failed}, false},
		{"every run known, none failing (the suite says more than its runs): nothing to read", []CIRun{pass("a", 1), pass("b", 2), pass("c", 4)}, []CISuite{failed}, false},
		{"a suite that passed", []CIRun{pass("typecheck", 1)}, []CISuite{{ID: 5, App: "ci", Status: "completed", Conclusion: "success", Runs: 3}}, false},
		{"a suite still running", []CIRun{pass("typecheck", 1)}, []CISuite{{ID: 5, App: "ci", Status: "in_progress", Runs: 3}}, false},
		{"a failed suite with no run (failed to start)", nil, []CISuite{{ID: 5, App: ActionsApp, Status: "completed", Conclusion: "startup_failure"}}, false},
		{"another head's failed suite", []CIRun{pass("typecheck", 1)}, []CISuite{{ID: 5, App: ActionsApp, Status: "completed", Conclusion: "failure", Runs: 3, Workflow: 9, Head: SuiteOther}}, false},
		{"a status is no run of the suite", []CIRun{{Name: "ci/build", Status: true, State: "success", Suite: 5}}, []CISuite{failed}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RunsUnseen(tc.runs, tc.suites); got != tc.want {
				t.Errorf("RunsUnseen = %v, want %v", got, tc.want)
			}
		})
	}
}
