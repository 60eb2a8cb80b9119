package rules

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// Whose a workflow run on a pull request's head is: its head branch and
// repository must be the pull request's own; unknown on either side counts.
func TestOtherHead(t *testing.T) {
	for _, tc := range []struct {
		name                            string
		headRepo, headRef, repo, branch string
		want                            bool
	}{
		{"the pull request's own branch", "acme/widgets", "login", "acme/widgets", "login", false},
		{"owner's case differs: the same repository", "Acme/Widgets", "login", "acme/widgets", "login", false},
		{"a fork's branch of the same name", "acme/widgets", "login", "mallory/widgets", "login", true},
		{"the tracked pull request is a fork's, the run the base repository's", "alice/widgets", "login", "acme/widgets", "login", true},
		{"a push of the commit to another branch", "acme/widgets", "login", "acme/widgets", "wip", true},
		{"branch names are case sensitive", "acme/widgets", "login", "acme/widgets", "Login", true},
		{"the run's head repository unknown (a deleted fork): counts", "acme/widgets", "login", "", "login", false},
		{"the run's branch unknown: counts", "acme/widgets", "login", "mallory/widgets", "", false},
		{"the pull request's head unknown: counts", "", "", "mallory/widgets", "login", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := OtherHead(tc.headRepo, tc.headRef, tc.repo, tc.branch); got != tc.want {
				t.Fatalf("OtherHead(%q, %q, %q, %q) = %v, want %v", tc.headRepo, tc.headRef, tc.repo, tc.branch, got, tc.want)
			}
		})
	}
}

// inSuite is r in check suite id.
func inSuite(r CIRun, id int64) CIRun {
	r.Suite = id
	return r
}

// Runs of two workflow runs are kept apart; which count is decided later.
func TestMergeRunPerSuite(t *testing.T) {
	mine := inSuite(done("test", 10, "failure", 5), 1)
	theirs := inSuite(done("test", 20, "success", 9), 2)
	for _, tc := range []struct {
		name    string
		runs    []CIRun
		r       CIRun
		want    []CIRun
		changed bool
	}{
		{"another suite's later run of the name is kept beside it", []CIRun{mine}, theirs, []CIRun{mine, theirs}, true},
		{"an earlier one too, sorted by suite", []CIRun{theirs}, mine, []CIRun{mine, theirs}, true},
		{"a re-run in the same suite replaces it", []CIRun{mine, theirs}, inSuite(done("test", 11, "success", 7), 1),
			[]CIRun{inSuite(done("test", 11, "success", 7), 1), theirs}, true},
		{"the same check run, its suite learnt since, replaces it", []CIRun{checkRun("test", 10, "in_progress", "", 5)}, mine,
			[]CIRun{mine}, true},
		{"the same check run, completed, is not undone by a late delivery", []CIRun{mine}, inSuite(checkRun("test", 10, "in_progress", "", 5), 1),
			[]CIRun{mine}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := MergeRun(tc.runs, tc.r)
			if !reflect.DeepEqual(got, tc.want) || changed != tc.changed {
				t.Fatalf("MergeRun = %+v, %v\nwant      %+v, %v", got, changed, tc.want, tc.changed)
			}
		})
	}
}

func TestCountedRuns(t *testing.T) {
	mine := inSuite(done("test", 10, "failure", 5), 1)
	theirs := inSuite(done("test", 20, "success", 9), 2)
	own := []CISuite{{ID: 1, App: ActionsApp, Status: "completed", Head: SuiteOwn}}
	other := append(slices.Clone(own), CISuite{ID: 2, App: ActionsApp, Status: "completed", Head: SuiteOther})
	again := []CISuite{{ID: 1, App: ActionsApp, Status: "completed", Head: SuiteOwn, Workflow: 71, WorkflowID: 500},
		{ID: 2, App: ActionsApp, Status: "completed", Head: SuiteOwn, Workflow: 72, WorkflowID: 500}}
	for _, tc := range []struct {
		name   string
		runs   []CIRun
		suites []CISuite
		want   []CIRun
	}{
		{"the latest of a name counts, across suites of one workflow (a workflow run again, as on reopening)", []CIRun{mine, theirs}, again, []CIRun{theirs}},
		{"a suite of unknown workflow supersedes nothing: both count", []CIRun{mine, theirs}, own, []CIRun{mine, theirs}},
		{"another head's workflow run counts for nothing: the own failure stands", []CIRun{mine, theirs}, other, []CIRun{mine}},
		{"unknown whose: it counts, beside the other", []CIRun{mine, theirs}, nil, []CIRun{mine, theirs}},
		{"another App's run of the name counts beside it", []CIRun{mine, otherApp(inSuite(done("test", 30, "success", 9), 3))}, own,
			[]CIRun{mine, otherApp(inSuite(done("test", 30, "success", 9), 3))}},
		{"a status of the name counts beside it", []CIRun{mine, commitStatus("test", 40, "success", 9)}, other,
			[]CIRun{mine, commitStatus("test", 40, "success", 9)}},
		{"only another head's runs: nothing counts", []CIRun{theirs}, other, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := CountedRuns(tc.runs, tc.suites); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("CountedRuns = %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// When the suites, and whose each workflow run is, must be read.
func TestCIReadDue(t *testing.T) {
	whole := DefaultConfig().Contracts
	named := ContractConfig{Checks: map[string][]string{ActUnitTest: {"test"}}}
	own := func(ids ...int64) []CISuite {
		var out []CISuite
		for _, id := range ids {
			out = append(out, CISuite{ID: id, App: ActionsApp, Status: "completed", Head: SuiteOwn})
		}
		return out
	}
	listed := []CISuite{{ID: 1, App: ActionsApp, Status: "completed"}, {ID: 2, App: ActionsApp, Status: "in_progress"}} // read, whose unknown
	for _, tc := range []struct {
		name   string
		cfg    ContractConfig
		runs   []CIRun
		suites []CISuite
		want   CIRead
	}{
		{"nothing yet", whole, nil, nil, CIRead{}},
		{"a run still going", whole, []CIRun{inSuite(checkRun("build", 1, "in_progress", "", 1), 1)}, nil, CIRead{}},
		{"every run passed: the suites say whether a job is to come", whole, []CIRun{inSuite(done("build", 1, "success", 1), 1)}, nil,
			CIRead{Suites: true}},
		{"only a status: the suites too", whole, []CIRun{commitStatus("ci/jenkins", 1, "success", 1)}, nil, CIRead{Suites: true}},
		{"a failure of a workflow run whose head is unknown: whose is it?", whole, []CIRun{inSuite(done("test", 1, "failure", 1), 2)}, own(1),
			CIRead{Suites: true, Whose: true}},
		{"a failure of a workflow run listed, whose unknown: whose is it?", whole, []CIRun{inSuite(done("test", 1, "failure", 1), 2)}, listed,
			CIRead{Suites: true, Whose: true}},
		{"a failure of the pull request's own workflow run: nothing to read", whole, []CIRun{inSuite(done("test", 1, "failure", 1), 1)}, own(1),
			CIRead{}},
		{"a failure of another App's run: no workflow run to read", whole, []CIRun{otherApp(inSuite(done("test", 1, "failure", 1), 7))}, nil,
			CIRead{}},
		{"a later run of a name another suite ran, whose unknown", whole,
			[]CIRun{inSuite(done("test", 1, "failure", 1), 1), inSuite(checkRun("test", 2, "queued", "", 2), 2)}, own(1),
			CIRead{Suites: true, Whose: true}},
		{"an earlier one, still the latest counted is whose unknown", whole,
			[]CIRun{inSuite(done("test", 2, "success", 9), 2), inSuite(done("test", 1, "failure", 1), 1)}, own(1),
			CIRead{Suites: true, Whose: true}},
		{"both suites known: only the green moment's read", whole,
			[]CIRun{inSuite(done("test", 1, "success", 1), 1), inSuite(done("test", 2, "success", 2), 2)}, own(1, 2),
			CIRead{Suites: true}},
		{"another head's run is out of the count: nothing blocks, the green moment", whole,
			[]CIRun{inSuite(done("test", 1, "success", 1), 1), inSuite(done("test", 2, "failure", 2), 2)},
			append(own(1), CISuite{ID: 2, App: ActionsApp, Status: "completed", Head: SuiteOther}), CIRead{Suites: true}},
		{"a distrusted run's failure counts for nothing: whose it is matters not", ContractConfig{Apps: map[string]string{"test": "buildkite"}},
			[]CIRun{inSuite(done("test", 1, "failure", 1), 2)}, nil, CIRead{Suites: true}},
		{"named checks: every run passed needs no suites", named, []CIRun{inSuite(done("test", 1, "success", 1), 1)}, nil, CIRead{}},
		{"named checks: a named run's failure, whose unknown", named, []CIRun{inSuite(done("test", 1, "failure", 1), 1)}, nil,
			CIRead{Suites: true, Whose: true}},
		{"named checks: an unnamed run's failure asks nothing", named, []CIRun{inSuite(done("lint", 1, "failure", 1), 1)}, nil, CIRead{}},
		{"named checks: a named run of two suites, whose unknown", named,
			[]CIRun{inSuite(done("test", 1, "failure", 1), 1), inSuite(done("test", 2, "success", 2), 2)}, own(1),
			CIRead{Suites: true, Whose: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := CIReadDue(tc.cfg, tc.runs, tc.suites); got != tc.want {
				t.Fatalf("CIReadDue = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// A workflow run waiting to start (concurrency group) is pending though its
// suite looks like an App's empty one; another head's workflow run counts
// for nothing and the detail says it was ignored.
func TestWholeCIWithWorkflowRuns(t *testing.T) {
	build := inSuite(done("build", 1, "success", 1), 1)
	completed := CISuite{ID: 1, App: ActionsApp, Status: "completed", Conclusion: "success", Runs: 1, Workflow: 71, WorkflowStatus: "completed", Head: SuiteOwn}
	for _, tc := range []struct {
		name   string
		runs   []CIRun
		suites []CISuite
		want   Result
		detail []string
	}{
		{"a workflow run pending in its concurrency group", []CIRun{build},
			[]CISuite{completed, {ID: 2, App: ActionsApp, Status: "queued", Workflow: 72, WorkflowStatus: "pending", Head: SuiteOwn}},
			ResultPending, []string{"workflow run 72 still running"}},
		{"a workflow run queued with no job yet", []CIRun{build},
			[]CISuite{completed, {ID: 2, App: ActionsApp, Status: "queued", Workflow: 72, WorkflowStatus: "queued", Head: SuiteOwn}},
			ResultPending, []string{"workflow run 72 still running"}},
		{"github-actions' empty suite (no workflow run) blocks nothing", []CIRun{build},
			[]CISuite{completed, {ID: 2, App: ActionsApp, Status: "queued", Head: SuiteOwn}},
			ResultPass, []string{"`build` passed", "workflow run 71 completed"}},
		{"another head's workflow run, still running, blocks nothing", []CIRun{build},
			[]CISuite{completed, {ID: 2, App: ActionsApp, Status: "in_progress", Runs: 1, Workflow: 72, WorkflowStatus: "in_progress", Head: SuiteOther}},
			ResultPass, []string{"`build` passed", "workflow run 72 ignored"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, detail, _, _ := wholeCIResult(CountedRuns(tc.runs, tc.suites), tc.suites, " on #2", nil)
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

// Past the bound, another head's suites go first.
func TestTrimSuitesDropsOtherHeadsFirst(t *testing.T) {
	var in []CISuite
	for i := range maxSuites {
		in = append(in, CISuite{ID: int64(i + 1), App: ActionsApp, Status: "in_progress", Runs: 1, Head: SuiteOther})
	}
	in = append(in, CISuite{ID: 1000, App: ActionsApp, Status: "completed", Runs: 1, Head: SuiteOwn},
		CISuite{ID: 1001, App: ActionsApp, Status: "queued", Workflow: 9, WorkflowStatus: "pending"})
	out := TrimSuites(in)
	if len(out) != maxSuites || !slices.ContainsFunc(out, func(s CISuite) bool { return s.ID == 1000 }) ||
		!slices.ContainsFunc(out, func(s CISuite) bool { return s.ID == 1001 }) {
		t.Fatalf("kept %v: the own completed suite and the waiting workflow run must outlive other heads'", out)
	}
}
