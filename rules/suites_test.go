package rules

import (
	"strings"
	"testing"
)

// The whole CI (WholeCI) with check suites: it has concluded only when every
// suite on the head has (GitHub Actions: one per workflow run, in_progress
// until its last job), an App's empty suite blocks nothing, the latest run of
// each name counts, and a job skipped after a failure is no pass.
func TestWholeCIWithSuites(t *testing.T) {
	const wf = "https://github.com/acme/widgets/actions/runs/"
	run := func(name, state, conclusion string, suite int64, id int64) CIRun {
		return CIRun{Name: name, ID: id, State: state, Conclusion: conclusion, App: "github-actions", Made: MadeByJob, Suite: suite,
			URL: wf + "77" + string(rune('0'+suite%10)) + "/job/1"}
	}
	suite := func(id int64, status, conclusion string, runs int) CISuite {
		return CISuite{ID: id, App: "github-actions", Status: status, Conclusion: conclusion, Runs: runs}
	}
	for _, tc := range []struct {
		name   string
		runs   []CIRun
		suites []CISuite
		want   Result
		detail []string // parts of the detail
	}{
		{"build green, test (needs: build) not created: the workflow run still runs",
			[]CIRun{run("build", "completed", "success", 1, 10)}, []CISuite{suite(1, "in_progress", "", 1)},
			ResultPending, []string{"`build` passed, waiting for CI to finish", "workflow run 771 still running"}},
		{"build and test green, the workflow run completed",
			[]CIRun{run("build", "completed", "success", 1, 10), run("test", "completed", "success", 1, 11)}, []CISuite{suite(1, "completed", "success", 2)},
			ResultPass, []string{"`build`, `test` passed", "workflow run 771 completed"}},
		{"an App's empty suite blocks nothing",
			[]CIRun{run("build", "completed", "success", 1, 10)},
			[]CISuite{suite(1, "completed", "success", 1), {ID: 2, App: "octo-linter", Status: "queued"}},
			ResultPass, []string{"`build` passed"}},
		{"a queued suite with runs is pending",
			[]CIRun{run("build", "completed", "success", 1, 10)}, []CISuite{suite(1, "completed", "success", 1), {ID: 3, App: "buildkite", Status: "queued", Runs: 1}},
			ResultPending, []string{"check suite 3 of buildkite still running"}},
		{"an in-progress suite with no run yet is pending",
			[]CIRun{run("build", "completed", "success", 1, 10)}, []CISuite{suite(1, "completed", "success", 1), suite(2, "in_progress", "", 0)},
			ResultPending, []string{"check suite 2 of github-actions still running"}},
		{"a failed job fails at once, its workflow run still running",
			[]CIRun{run("build", "completed", "failure", 1, 10)}, []CISuite{suite(1, "in_progress", "", 1)},
			ResultFail, []string{"`build`: failure"}},
		{"test skipped after build failed; build passed in another workflow run: no pass",
			[]CIRun{run("build", "completed", "success", 2, 20), run("test", "completed", "skipped", 1, 11)},
			[]CISuite{suite(1, "completed", "failure", 2), suite(2, "completed", "success", 1)},
			ResultFail, []string{"`test`: skipped after a failure in workflow run 771 (failure)"}},
		{"failed job re-run: the suite runs again, the old skipped dependent waits",
			[]CIRun{run("build", "completed", "success", 1, 12), run("test", "completed", "skipped", 1, 11)},
			[]CISuite{suite(1, "in_progress", "", 2)},
			ResultPending, []string{"workflow run 771 still running"}},
		{"failed job re-run to pass, its dependent re-run to pass: a pass",
			[]CIRun{run("build", "completed", "success", 1, 12), run("test", "completed", "success", 1, 13)},
			[]CISuite{suite(1, "completed", "success", 2)},
			ResultPass, []string{"`build`, `test` passed"}},
		{"a job skipped by its condition in a workflow run that passed neither blocks nor passes",
			[]CIRun{run("build", "completed", "success", 1, 10), run("deploy", "completed", "skipped", 1, 11)},
			[]CISuite{suite(1, "completed", "success", 2)},
			ResultPass, []string{"`build` passed", "`deploy` skipped"}},
		{"a commit status counts as before, beside the suites",
			[]CIRun{run("build", "completed", "success", 1, 10), {Name: "ci/jenkins", Status: true, State: "pending", Creator: User{ID: 9, Login: "jenkins"}}},
			[]CISuite{suite(1, "completed", "success", 1)},
			ResultPending, []string{"`ci/jenkins` pending"}},
		{"no suite read: the runs alone, as before",
			[]CIRun{run("build", "completed", "success", 1, 10)}, nil,
			ResultPass, []string{"`build` passed"}},
		{"only an empty suite and no run: nothing has reported",
			nil, []CISuite{{ID: 2, App: "octo-linter", Status: "queued"}},
			ResultPending, []string{noCIReported}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, detail, _, _ := wholeCIResult(tc.runs, tc.suites, " on #2", nil)
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

// Named criteria (contracts.checks) keep their meaning: suites change
// nothing there, and a named run that does not exist yet is pending.
func TestNamedChecksIgnoreSuites(t *testing.T) {
	f := fxFacts("")
	f.Config.Contracts.Checks = map[string][]string{ActUnitTest: {"test"}}
	d := &decider{f: f, t: &Task{}}
	c := Criterion{Activity: ActUnitTest}
	decide := d.checkedBy(c)
	p := &LinkedPR{Runs: []CIRun{{Name: "test", State: "completed", Conclusion: "success", App: "github-actions", Made: MadeByJob, Suite: 1}},
		Suites: []CISuite{{ID: 1, App: "github-actions", Status: "in_progress", Runs: 1}}}
	if r, detail, _, _ := decide(p, ""); r != ResultPass {
		t.Fatalf("named `test` passed in a running workflow run: %s (%s), want pass", r, detail)
	}
	p.Runs = nil
	if r, detail, _, _ := decide(p, ""); r != ResultPending || !strings.Contains(detail, "no `test` run yet") {
		t.Fatalf("no `test` run: %s (%s), want pending", r, detail)
	}
}

// TrimSuites keeps what can block: the empty suites go, running ones
// outlive completed ones past the bound.
func TestTrimSuites(t *testing.T) {
	var in []CISuite
	for i := range maxSuites + 5 {
		in = append(in, CISuite{ID: int64(i + 1), App: "a", Status: "completed", Conclusion: "success", Runs: 1})
	}
	in = append(in, CISuite{ID: 1000, App: "a", Status: "in_progress", Runs: 1}, CISuite{ID: 1001, App: "b", Status: "queued"})
	out := TrimSuites(in)
	if len(out) != maxSuites {
		t.Fatalf("%d suites kept, want %d", len(out), maxSuites)
	}
	running := false
	for i, s := range out {
		if s.Empty() {
			t.Fatalf("kept an empty suite %+v", s)
		}
		if i > 0 && out[i-1].ID >= s.ID {
			t.Fatalf("not sorted by id: %v", out)
		}
		running = running || s.ID == 1000
	}
	if !running {
		t.Fatal("the running suite was dropped")
	}
}
