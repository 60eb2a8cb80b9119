package rules

import (
	"slices"
	"strings"
	"testing"
)

// This file tests a repository without contracts.checks: its CI counts as it
// is (WholeCI), whatever it calls its runs.

// wholeCI sets facts f to a repository without contracts.checks.
func wholeCI(f *Facts) { f.Config.Contracts.Checks = nil }

// wholeFacts are fxFacts for a repository without contracts.checks.
func wholeFacts() Facts {
	f := fxFacts("")
	wholeCI(&f)
	return f
}

func criterionKeys(cs []Criterion) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.Key())
	}
	return out
}

func TestDefaultConfigIsWholeCI(t *testing.T) {
	if !DefaultConfig().Contracts.WholeCI() {
		t.Fatal("the default configuration maps contracts.checks; want it unset")
	}
	if (ContractConfig{Checks: map[string][]string{}}).WholeCI() {
		t.Fatal("contracts.checks given empty is the whole CI; want it to map no activity")
	}
}

// TestWholeCIContract: one ci criterion stands for the activities CI
// checks; deferred e2e, critics and the contract types are as with named runs.
func TestWholeCIContract(t *testing.T) {
	critics := DefaultConfig().Contracts
	critics.Rules, critics.DefaultRules = []FileRule{{Files: []string{"web/**"}, Critics: []string{"ux"}, E2E: TimingDeferred}}, false
	e2eNow := DefaultConfig().Contracts
	e2eNow.Rules, e2eNow.DefaultRules = []FileRule{{Files: []string{"api/**"}, UnitTest: true, E2E: TimingImmediate}}, false
	for _, tc := range []struct {
		name  string
		cfg   ContractConfig
		title string
		files []string
		want  []string
	}{
		{"verifiable, no files", DefaultConfig().Contracts, "Login form", nil, []string{"ci"}},
		{"verifiable, Go files (unit-test folded)", DefaultConfig().Contracts, "Login form", []string{"internal/form.go"}, []string{"ci"}},
		{"immediate e2e folded", e2eNow, "Users API", []string{"api/users.go"}, []string{"ci"}},
		{"deferred e2e and critics stay", critics, "Button", []string{"web/button.tsx"}, []string{"ci", "e2e:deferred", "critic:ux"}},
		{"skip: ci only", DefaultConfig().Contracts, "Fix a typo in the readme", []string{"README.md"}, []string{"ci"}},
		{"advisory: none", DefaultConfig().Contracts, "Investigate slow login", []string{"internal/form.go"}, []string{}},
		{"named runs: as before", mappedConfig().Contracts, "Login form", []string{"internal/form.go"}, []string{"typecheck", "lint", "unit-test"}},
		{"nothing named: the activities stay (the verifier checks them)", ContractConfig{Checks: map[string][]string{}, DefaultRules: true},
			"Login form", []string{"internal/form.go"}, []string{"typecheck", "lint", "unit-test"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := GenerateContract(tc.cfg, ContractInput{Title: tc.title, Changed: tc.files})
			if got := criterionKeys(c.Criteria); !slices.Equal(got, tc.want) {
				t.Fatalf("criteria %v, want %v", got, tc.want)
			}
		})
	}
}

// TestWholeCIResultThroughDecide: what the runs on a linked pull request's
// head say of the ci criterion, through DecideTask.
func TestWholeCIResultThroughDecide(t *testing.T) {
	build := func(conclusion string) CIRun { return done("build", 7, conclusion, 50) }
	tests := []struct {
		name   string
		facts  func(*Facts)
		runs   []CIRun
		result Result
		detail []string // phrases the detail contains
		url    string
	}{
		{name: "no run at all: pending, saying none reported", runs: []CIRun{}, result: ResultPending,
			detail: []string{"no CI run has reported on #12 (h1) yet"}},
		{name: "the only run, build, passed", runs: []CIRun{build("success")}, result: ResultPass,
			detail: []string{"`build` passed on #12 (h1)"}, url: "https://ci.example/runs/7"},
		{name: "build failed: fail, with its URL", runs: []CIRun{build("failure")}, result: ResultFail,
			detail: []string{"`build`: failure on #12 (h1)"}, url: "https://ci.example/runs/7"},
		{name: "build timed out", runs: []CIRun{build("timed_out")}, result: ResultFail, detail: []string{"timed_out"}, url: "https://ci.example/runs/7"},
		{name: "build cancelled", runs: []CIRun{build("cancelled")}, result: ResultFail, detail: []string{"cancelled"}, url: "https://ci.example/runs/7"},
		{name: "build needs action", runs: []CIRun{build("action_required")}, result: ResultFail, detail: []string{"action_required"}, url: "https://ci.example/runs/7"},
		{name: "build queued: pending", runs: []CIRun{checkRun("build", 7, "queued", "", 50)}, result: ResultPending,
			detail: []string{"`build` queued on #12 (h1)"}},
		{name: "one of two running: pending, naming it", runs: []CIRun{done("lint", 1, "success", 1), checkRun("test (ubuntu-latest, 1.22)", 8, "in_progress", "", 50)},
			result: ResultPending, detail: []string{"`test (ubuntu-latest, 1.22)` in_progress"}},
		{name: "every run passed: each named", runs: []CIRun{done("lint", 1, "success", 1), done("test (ubuntu-latest, 1.22)", 8, "success", 55)},
			result: ResultPass, detail: []string{"`lint`, `test (ubuntu-latest, 1.22)` passed on #12 (h1)"}, url: "https://ci.example/runs/8"},
		{name: "a failure among passes fails it", runs: []CIRun{done("lint", 1, "success", 1), done("deploy preview", 8, "failure", 55)},
			result: ResultFail, detail: []string{"`deploy preview`: failure"}, url: "https://ci.example/runs/8"},
		{name: "a skipped job neither blocks nor passes", runs: []CIRun{build("success"), done("release", 8, "skipped", 55)},
			result: ResultPass, detail: []string{"`build` passed", "`release` skipped"}, url: "https://ci.example/runs/7"},
		{name: "a neutral run neither blocks nor passes", runs: []CIRun{build("success"), done("coverage", 8, "neutral", 55)},
			result: ResultPass, detail: []string{"`coverage` neutral"}, url: "https://ci.example/runs/7"},
		{name: "only skipped runs: pending, none passed", runs: []CIRun{done("release", 8, "skipped", 55)},
			result: ResultPending, detail: []string{"no CI run has passed on #12 (h1) yet", "`release` skipped"}},
		{name: "a stale run is unfinished", runs: []CIRun{build("success"), done("e2e", 8, "stale", 55)},
			result: ResultPending, detail: []string{"`e2e` stale"}},
		{name: "a passing commit status counts", runs: []CIRun{commitStatus("ci/jenkins", 7, "success", 50)},
			result: ResultPass, detail: []string{"`ci/jenkins` passed"}, url: "https://ci.example/status/7"},
		{name: "a pending commit status keeps it pending", runs: []CIRun{build("success"), commitStatus("ci/jenkins", 8, "pending", 50)},
			result: ResultPending, detail: []string{"`ci/jenkins` pending"}},
		{name: "an erroring commit status fails it", runs: []CIRun{build("success"), commitStatus("ci/jenkins", 8, "error", 50)},
			result: ResultFail, detail: []string{"`ci/jenkins`: error"}, url: "https://ci.example/status/8"},
		// Trusted sources: the same rules as for named runs.
		{name: "a builder's own success status is no run", runs: []CIRun{statusBy("build", 7, "success", 50, u("alice"))},
			result: ResultPending, detail: []string{"no CI run has reported", "`build` (success) ignored: posted by @alice, who built this task"}},
		{name: "a builder's failing status fails nothing", runs: []CIRun{build("success"), statusBy("lint", 8, "failure", 50, u("dave"))},
			result: ResultPass, detail: []string{"`build` passed", "ignored: posted by @dave"}, url: "https://ci.example/runs/7"},
		{name: "a check run of no known App is ignored", runs: []CIRun{appRun("build", 7, "success", "")},
			result: ResultPending, detail: []string{"created by no known GitHub App"}},
		{name: "contracts.apps pins a name's App", facts: func(f *Facts) { f.Config.Contracts.Apps = map[string]string{"build": "github-actions"} },
			runs: []CIRun{appRun("build", 7, "success", "my-own-app")}, result: ResultPending,
			detail: []string{"`build` (success) ignored: created by the App my-own-app, not github-actions (contracts.apps)"}},
		{name: "contracts.status_creators pins who may post", facts: func(f *Facts) { f.Config.Contracts.StatusCreators = []string{"jenkins"} },
			runs: []CIRun{build("success"), statusBy("ci/other", 8, "failure", 50, u("erin"))}, result: ResultPass,
			detail: []string{"not one of contracts.status_creators"}, url: "https://ci.example/runs/7"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := wholeFacts()
			if tc.facts != nil {
				tc.facts(&f)
			}
			_, nt := ciChecked(t, f, tc.runs)
			if got := criterionKeys(nt.Contract.Criteria); !slices.Equal(got, []string{"ci"}) {
				t.Fatalf("criteria %v, want [ci]", got)
			}
			c := criterionOf(t, nt, "ci")
			if c.Result != tc.result || c.URL != tc.url {
				t.Errorf("ci: result %q, url %q; want %q, %q (detail %q)", c.Result, c.URL, tc.result, tc.url, c.Detail)
			}
			for _, p := range tc.detail {
				if !strings.Contains(c.Detail, p) {
					t.Errorf("ci: detail %q lacks %q", c.Detail, p)
				}
			}
		})
	}
}

// TestWholeCIVerify: /verify and failed attempts when the whole CI decides.
func TestWholeCIVerify(t *testing.T) {
	completed := func(runs []CIRun) *Task { return fxFilesTaskWith(wholeFacts(), Completed, runs, "internal/form.go") }
	review := func(runs []CIRun) *Task { return fxFilesTaskWith(wholeFacts(), Review, runs, "internal/form.go") }
	build := []CIRun{done("build", 7, "success", 50)}
	runEventCases(t, []eventCase{
		{name: "only build passed: verified", task: completed(build), ev: fxComment("bob", "/verify"), facts: wholeCI,
			want: want{state: Verified, steps: []step{{Verified, "/verify"}}, labels: lbl(Verified)}},
		{name: "no run yet: refused, naming the key that maps runs", task: completed([]CIRun{}), ev: fxComment("bob", "/verify"), facts: wholeCI,
			want: want{state: Completed, notices: []NoticeKind{NoticeRefused},
				check: refusedFor("ci pending (no CI run has reported on #12 (h1) yet)", "to require named runs, map them in `contracts.checks` in .github/countersign.yml",
					"A repository with no CI at all can write `contracts: {checks: {}}`")}},
		{name: "build running: refused, naming it and the key", task: completed([]CIRun{checkRun("build", 7, "in_progress", "", 50)}),
			ev: fxComment("bob", "/verify"), facts: wholeCI,
			want: want{state: Completed, notices: []NoticeKind{NoticeRefused}, check: func(t *testing.T, d Decision) {
				t.Helper()
				refusedFor("ci pending (`build` in_progress", "`contracts.checks`")(t, d)
				if r := refusalReason(d); strings.Contains(r, "no CI at all") {
					t.Errorf("refusal %q offers the way out of a repository with no CI, which has a run", r)
				}
			}}},
		{name: "build fails in review: a failed attempt", task: review(build), ev: prEv(PRChecked, fxHead, false, []CIRun{done("build", 8, "failure", 60)}),
			facts: wholeCI,
			want: want{state: InProgress, steps: []step{{InProgress, "failed attempt: ci (`build`: failure on #12 (h1))"}}, labels: lbl(InProgress),
				notices: []NoticeKind{NoticeFailed}}},
	})
}

// TestMappedVerifyHint: with named runs, a /verify refused while waiting
// says where the names are set.
func TestMappedVerifyHint(t *testing.T) {
	d := decide(t, fxFilesTask(Completed, nil, "internal/form.go"), fxComment("bob", "/verify"), fxFacts("bob"))
	if r := refusalReason(d); !strings.Contains(r, "no `test` run yet") || !strings.Contains(r, "named in `contracts.checks` in .github/countersign.yml") {
		t.Fatalf("refusal %q, want it to name the missing run and contracts.checks", r)
	}
}
