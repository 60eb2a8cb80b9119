package rules

import (
	"reflect"
	"strings"
	"testing"
)

// A workflow's token (GITHUB_TOKEN) can create a check run of any name and
// conclusion (checks: write) and post a commit status of any context
// (statuses: write) on any commit of the repository: the check run is the
// App github-actions', as a job's is, in one of its suites on the commit;
// the status is github-actions[bot]'s, whoever's workflow ran. Neither
// counts, and neither erases a result that does.

// made is r with how it was made known.
func made(r CIRun, how string) CIRun {
	r.Made = how
	return r
}

// actionsBot is the account a workflow's token posts statuses as.
var actionsBot = User{ID: 41898282, Login: GitHubActionsBot}

// mergeAll merges runs in order, as deliveries record them.
func mergeAll(runs ...CIRun) []CIRun {
	var out []CIRun
	for _, r := range runs {
		out, _ = MergeRun(out, r)
	}
	return out
}

func TestMergeRunKeepsWhatAWorkflowTokenMayHaveMade(t *testing.T) {
	jobFailed := inSuite(done("test", 10, "failure", 5), 1)
	forged := made(inSuite(done("test", 11, "success", 7), 1), "")
	ciFailed := commitStatus("ci/build", 20, "failure", 5)
	botPassed := statusBy("ci/build", 21, "success", 7, actionsBot)
	for _, tc := range []struct {
		name string
		runs []CIRun
		want []CIRun
	}{
		{"a later run of the name in the same suite, not known to be a job's, is kept beside the job's",
			[]CIRun{jobFailed, forged}, []CIRun{jobFailed, forged}},
		{"known to be jobs both (a re-run): the later replaces the earlier",
			[]CIRun{jobFailed, made(forged, MadeByJob)}, []CIRun{made(forged, MadeByJob)}},
		{"what is known of how a run was made outlives a later delivery of it",
			[]CIRun{made(inSuite(checkRun("test", 11, "in_progress", "", 7), 1), MadeByToken), forged}, []CIRun{made(forged, MadeByToken)}},
		{"learning how an unchanged run was made is a change",
			[]CIRun{forged, made(forged, MadeByToken)}, []CIRun{made(forged, MadeByToken)}},
		{"another creator's status of the context is kept beside it",
			[]CIRun{ciFailed, botPassed}, []CIRun{ciFailed, botPassed}},
		{"the same creator's later status replaces its earlier one",
			[]CIRun{ciFailed, commitStatus("ci/build", 22, "success", 9)}, []CIRun{commitStatus("ci/build", 22, "success", 9)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mergeAll(tc.runs...); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("MergeRun = %+v\nwant      %+v", got, tc.want)
			}
		})
	}
}

func TestCountedRunsKeepsSourcesApart(t *testing.T) {
	own := []CISuite{{ID: 1, App: ActionsApp, Status: "completed", Head: SuiteOwn, Workflow: 71}}
	jobFailed := inSuite(done("test", 10, "failure", 5), 1)
	tokenPassed := made(inSuite(done("test", 11, "success", 7), 1), MadeByToken)
	for _, tc := range []struct {
		name string
		runs []CIRun
		want []CIRun
	}{
		{"a token's later pass does not hide the job's failure", []CIRun{jobFailed, tokenPassed}, []CIRun{jobFailed, tokenPassed}},
		{"a run not known yet competes with the job's (and is ignored until known)", []CIRun{jobFailed, made(tokenPassed, "")},
			[]CIRun{made(tokenPassed, "")}},
		{"a github-actions[bot] status does not hide the CI service's failure",
			[]CIRun{commitStatus("ci/build", 20, "failure", 5), statusBy("ci/build", 21, "success", 7, actionsBot)},
			[]CIRun{commitStatus("ci/build", 20, "failure", 5), statusBy("ci/build", 21, "success", 7, actionsBot)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := CountedRuns(tc.runs, own); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("CountedRuns = %+v\nwant          %+v", got, tc.want)
			}
		})
	}
}

func TestDistrustWhatAWorkflowTokenMade(t *testing.T) {
	listed := ContractConfig{StatusCreators: []string{"GitHub-Actions[bot]"}}
	others := ContractConfig{StatusCreators: []string{"jenkins"}}
	pinned := ContractConfig{Apps: map[string]string{"test": ActionsApp}}
	for _, tc := range []struct {
		name string
		cfg  ContractConfig
		run  CIRun
		want string // "" trusted, else a part of the reason
	}{
		{"a job's check run counts", pinned, made(done("test", 1, "success", 1), MadeByJob), ""},
		{"one a workflow's token created does not, pinned App or not", pinned, made(done("test", 1, "success", 1), MadeByToken), "by no job of a workflow run"},
		{"nor does its failure", DefaultConfig().Contracts, made(done("test", 1, "failure", 1), MadeByToken), "Checks API"},
		{"a pass not known to be a job's waits", pinned, made(done("test", 1, "success", 1), ""), "not yet known to be a job"},
		{"a failure not known to be a job's counts (a failure is never hidden by a guess)", pinned, made(done("test", 1, "failure", 1), ""), ""},
		{"a run still going not known to be a job's blocks", pinned, made(checkRun("test", 1, "in_progress", "", 1), ""), ""},
		{"the jobs unreadable (no Actions permission): counts as listed", pinned, made(done("test", 1, "success", 1), MadeUnchecked), ""},
		{"another App's run needs no job", DefaultConfig().Contracts, otherApp(made(done("test", 1, "success", 1), "")), ""},
		{"github-actions[bot]'s status does not count", DefaultConfig().Contracts, statusBy("ci/build", 1, "success", 1, actionsBot),
			"a workflow's token"},
		{"known by its login, whatever the id", DefaultConfig().Contracts, statusBy("ci/build", 1, "success", 1, User{Login: "GitHub-Actions[bot]"}),
			"not listed in contracts.status_creators"},
		{"unless contracts.status_creators lists it", listed, statusBy("ci/build", 1, "success", 1, actionsBot), ""},
		{"status_creators naming others leaves it out", others, statusBy("ci/build", 1, "success", 1, actionsBot), "not one of contracts.status_creators"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Distrust(tc.cfg, tc.run, nil)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("Distrust = %q, want %q", got, tc.want)
			}
		})
	}
}

// Through DecideTask: a named criterion and the whole CI.
func TestWorkflowTokenResultsThroughDecide(t *testing.T) {
	jobFailed := inSuite(done("test", 7, "failure", 50), 1)
	forged := made(inSuite(done("test", 8, "success", 55), 1), "")
	ciFailed := commitStatus("ci/build", 9, "failure", 50)
	botPassed := statusBy("ci/build", 10, "success", 55, actionsBot)
	for _, tc := range []struct {
		name   string
		whole  bool
		facts  func(*Facts)
		runs   []CIRun
		key    string
		result Result
		detail []string
	}{
		{name: "named: a token's pass beside the job's failure fails", runs: mergeAll(append(fxRuns(), jobFailed, made(forged, MadeByToken))...),
			key: "unit-test", result: ResultFail, detail: []string{"`test`: failure"}},
		{name: "named: a pass not known to be a job's is pending, and says why", runs: mergeAll(append(fxRuns(), jobFailed, forged)...),
			key: "unit-test", result: ResultPending, detail: []string{"no `test` run yet", "`test` (success) ignored: not yet known to be a job of a workflow run"}},
		{name: "named: a token's pass alone is no run", runs: mergeAll(append(fxRuns(), made(forged, MadeByToken))...),
			key: "unit-test", result: ResultPending, detail: []string{"no `test` run yet", "ignored: created through the Checks API"}},
		{name: "named: a re-run job's pass passes", runs: mergeAll(append(fxRuns(), made(jobFailed, MadeByJob), made(forged, MadeByJob))...),
			key: "unit-test", result: ResultPass, detail: []string{"`test` passed"}},
		{name: "named: github-actions[bot]'s pass does not hide the CI's failing status",
			facts: func(f *Facts) { f.Config.Contracts.Checks["unit-test"] = []string{"ci/build"} },
			runs:  mergeAll(append(fxRuns(), ciFailed, botPassed)...), key: "unit-test", result: ResultFail, detail: []string{"`ci/build`: failure"}},
		{name: "whole CI: github-actions[bot]'s pass does not hide the CI's failing status", whole: true,
			runs: mergeAll(done("build", 1, "success", 1), ciFailed, botPassed), key: "ci", result: ResultFail, detail: []string{"`ci/build`: failure"}},
		{name: "whole CI: github-actions[bot]'s pass alone is ignored, and says why", whole: true,
			runs: mergeAll(botPassed), key: "ci", result: ResultPending, detail: []string{"ignored: posted by @github-actions[bot] (a workflow's token"}},
		{name: "whole CI: github-actions[bot] listed in contracts.status_creators counts", whole: true,
			facts: func(f *Facts) { f.Config.Contracts.StatusCreators = []string{GitHubActionsBot} },
			runs:  mergeAll(botPassed), key: "ci", result: ResultPass, detail: []string{"`ci/build` passed"}},
		{name: "whole CI: a token's pass beside the job's failure fails", whole: true,
			runs: mergeAll(jobFailed, made(forged, MadeByToken)), key: "ci", result: ResultFail, detail: []string{"`test`: failure"}},
		{name: "whole CI: a token's run alone is no pass", whole: true,
			runs: mergeAll(made(forged, MadeByToken)), key: "ci", result: ResultPending, detail: []string{"no CI run has reported", "by no job of a workflow run"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := fxFacts("ci")
			if tc.whole {
				f = wholeFacts()
			}
			if tc.facts != nil {
				tc.facts(&f)
			}
			_, nt := ciChecked(t, f, tc.runs)
			c := criterionOf(t, nt, tc.key)
			if c.Result != tc.result {
				t.Errorf("%s: result %q, want %q (detail %q)", tc.key, c.Result, tc.result, c.Detail)
			}
			for _, p := range tc.detail {
				if !strings.Contains(c.Detail, p) {
					t.Errorf("%s: detail %q lacks %q", tc.key, c.Detail, p)
				}
			}
		})
	}
}

func TestJobsRead(t *testing.T) {
	whole := DefaultConfig().Contracts
	named := ContractConfig{Checks: map[string][]string{ActUnitTest: {"test"}}}
	own := []CISuite{{ID: 1, App: ActionsApp, Status: "completed", Conclusion: "success", Head: SuiteOwn, Workflow: 71, WorkflowID: 9, WorkflowStatus: "completed"}}
	running := []CISuite{{ID: 1, App: ActionsApp, Status: "in_progress", Head: SuiteOwn, Workflow: 71, WorkflowID: 9, WorkflowStatus: "in_progress"}}
	pass := inSuite(done("test", 1, "success", 1), 1)
	for _, tc := range []struct {
		name   string
		cfg    ContractConfig
		runs   []CIRun
		suites []CISuite
		due    CIRead
		jobs   bool
	}{
		{"a pass not known to be a job's: the suites, then the jobs (whose each is with them)", whole, []CIRun{made(pass, "")}, nil, CIRead{Suites: true, Jobs: true}, true},
		{"the suites read, all done: the jobs now", whole, []CIRun{made(pass, "")}, own, CIRead{Suites: true, Jobs: true}, true},
		{"the whole CI still running: no jobs yet", whole, []CIRun{made(pass, "")}, running, CIRead{Suites: true, Jobs: true}, false},
		{"named: the jobs even while a suite runs", named, []CIRun{made(pass, "")}, running, CIRead{Suites: true, Jobs: true}, true},
		{"a job's pass: no jobs to read", whole, []CIRun{made(pass, MadeByJob)}, own, CIRead{Suites: true}, false},
		{"a token's pass: known, nothing to read", named, []CIRun{made(pass, MadeByToken)}, own, CIRead{}, false},
		{"a trusted failure decides without the jobs", whole, []CIRun{made(pass, ""), otherApp(done("lint", 2, "failure", 2))}, own,
			CIRead{}, false},
		{"an unknown failure decides too (it counts until known)", whole, []CIRun{made(pass, ""), inSuite(done("lint", 2, "failure", 2), 1)}, own,
			CIRead{}, false},
		{"another run still going: no pass yet, no jobs", whole, []CIRun{made(pass, ""), inSuite(checkRun("lint", 2, "queued", "", 2), 1)}, own,
			CIRead{}, false},
		{"another App's pass needs no jobs", whole, []CIRun{otherApp(made(pass, ""))}, nil, CIRead{Suites: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := CIReadDue(tc.cfg, tc.runs, tc.suites); got != tc.due {
				t.Errorf("CIReadDue = %+v, want %+v", got, tc.due)
			}
			if got := JobsDue(tc.cfg, tc.runs, tc.suites); got != tc.jobs {
				t.Errorf("JobsDue = %v, want %v", got, tc.jobs)
			}
		})
	}
}
