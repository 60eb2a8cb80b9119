package rules

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// CIRun is one CI result on a commit, a verify command's exit code (seed
// 002): a check run, or a commit status.
type CIRun struct {
	Name   string `json:"name"`             // the check run's name, or the status's context
	Status bool   `json:"status,omitempty"` // a commit status, not a check run
	ID     int64  `json:"id,omitempty"`
	// State is a check run's status (queued, in_progress, completed, ...) or a
	// commit status's state (pending, success, failure, error).
	State      string    `json:"state"`
	Conclusion string    `json:"conclusion,omitempty"` // a completed check run's conclusion
	URL        string    `json:"url,omitempty"`
	At         time.Time `json:"at,omitzero"` // when it started (check run) or was set (status)
	// App is the slug of the GitHub App that created the check run ("" for a
	// status, or when unknown).
	App string `json:"app,omitempty"`
	// Creator is the account that created the commit status (zero for a
	// check run, or when unknown).
	Creator User `json:"creator,omitzero"`
	// Suite is the check run's check suite (0 for a status, or when
	// unknown): for GitHub Actions, its workflow run.
	Suite int64 `json:"suite,omitempty"`
}

// CISuite is a check suite on a commit, as GitHub lists them: one per
// workflow run for GitHub Actions, in_progress until its last job ends
// (a job behind `needs:` has no check run until then); one per App
// otherwise. An App with checks permission that never reports has one too,
// queued with no runs, for ever.
type CISuite struct {
	ID         int64  `json:"id"`
	App        string `json:"app,omitempty"` // the slug of its GitHub App
	Status     string `json:"status"`        // queued, in_progress, completed, ...
	Conclusion string `json:"conclusion,omitempty"`
	Runs       int    `json:"runs,omitempty"` // its latest check runs (latest_check_runs_count)
}

// Empty reports whether s is an App's suite that never got a run: queued
// with none. It blocks nothing.
func (s CISuite) Empty() bool { return s.Runs == 0 && s.Status == "queued" }

// Running reports whether s has not concluded: queued (with runs) or in
// progress.
func (s CISuite) Running() bool { return s.Status != "completed" && !s.Empty() }

// failed reports whether s concluded without passing.
func (s CISuite) failed() bool {
	switch s.Conclusion {
	case "failure", "timed_out", "cancelled", "action_required", "startup_failure":
		return true
	}
	return false
}

// maxSuites bounds the suites kept per commit.
const maxSuites = 50

// TrimSuites are suites as kept with a commit: the empty ones dropped (they
// block nothing), by id, at most maxSuites, those still running kept first.
func TrimSuites(suites []CISuite) []CISuite {
	var out []CISuite
	for _, s := range suites {
		if !s.Empty() {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b CISuite) int {
		if a.Running() != b.Running() {
			if a.Running() {
				return -1
			}
			return 1
		}
		return int(a.ID - b.ID)
	})
	if len(out) > maxSuites {
		out = out[:maxSuites]
	}
	slices.SortFunc(out, func(a, b CISuite) int { return int(a.ID - b.ID) })
	return out
}

// suiteName is how people are shown suite s: "workflow run N" when one of
// runs (check runs of it) links to its GitHub Actions workflow run, else
// "check suite N of APP".
func suiteName(s CISuite, runs []CIRun) string {
	for _, r := range runs {
		if r.Suite != s.ID {
			continue
		}
		if _, rest, ok := strings.Cut(r.URL, "/actions/runs/"); ok {
			id, _, _ := strings.Cut(rest, "/")
			if id != "" && strings.Trim(id, "0123456789") == "" {
				return "workflow run " + id
			}
		}
	}
	return fmt.Sprintf("check suite %d of %s", s.ID, s.App)
}

// Distrust says why run is not a source whose result counts (docs/design.md, Verification contracts),
// "" when it is: a check run counts only when a GitHub App (other than
// countersign, whose own runs never reach here) created it, and the App
// contracts.apps pins for its name when there is one; a commit status counts
// only when its creator is known, is not a builder (builder), and is one of
// contracts.status_creators when those are set.
func Distrust(cfg ContractConfig, r CIRun, builder func(User) bool) string {
	if !r.Status {
		if r.App == "" {
			return "created by no known GitHub App"
		}
		for _, name := range sortedKeys(cfg.Apps) {
			if MatchCheck(name, r.Name) && !strings.EqualFold(cfg.Apps[name], r.App) {
				return fmt.Sprintf("created by the App %s, not %s (contracts.apps)", r.App, cfg.Apps[name])
			}
		}
		return ""
	}
	switch {
	case r.Creator.IsZero():
		return "posted by an unknown account"
	case builder != nil && builder(r.Creator):
		return "posted by @" + r.Creator.Login + ", who built this task"
	case len(cfg.StatusCreators) > 0 && !slices.ContainsFunc(cfg.StatusCreators, func(l string) bool { return SameLogin(l, r.Creator.Login) }):
		return "posted by @" + r.Creator.Login + ", not one of contracts.status_creators"
	}
	return ""
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Result is what the run says of its criterion: success passes; failure,
// timed_out, cancelled and action_required (or a status's failure and error)
// fail; anything else is pending.
func (r CIRun) Result() Result {
	if r.Status {
		switch r.State {
		case "success":
			return ResultPass
		case "failure", "error":
			return ResultFail
		}
		return ResultPending
	}
	if r.State != "completed" {
		return ResultPending
	}
	switch r.Conclusion {
	case "success":
		return ResultPass
	case "failure", "timed_out", "cancelled", "action_required":
		return ResultFail
	}
	return ResultPending
}

// Outcome is the run's state in a word, for people: "success", "failure",
// "in_progress", ...
func (r CIRun) Outcome() string {
	if !r.Status && r.State == "completed" && r.Conclusion != "" {
		return r.Conclusion
	}
	return r.State
}

// newer reports whether r supersedes o, a run of the same name and kind: the
// latest counts (a re-run is a new check run, started later).
func (r CIRun) newer(o CIRun) bool {
	if r.ID == o.ID && r.ID != 0 && !r.Status { // the same check run: it only moves forward
		return stage(r) >= stage(o)
	}
	if !r.At.Equal(o.At) {
		return r.At.After(o.At)
	}
	return r.ID >= o.ID
}

// stage orders a check run's statuses: queued, in progress, completed.
func stage(r CIRun) int {
	switch r.State {
	case "completed":
		return 2
	case "in_progress":
		return 1
	}
	return 0
}

// maxRuns bounds the runs kept per commit.
const maxRuns = 100

// MergeRun records run r among runs (the runs of one commit: one check run
// per App and name, as GitHub keeps the latest of each; one status per
// context): it replaces an older run of its name (and App), and is ignored if a
// newer one is known. Two Apps' runs of one name are two runs: a later pass
// from one never hides the other's failure. It returns the new list (sorted by name; at most maxRuns, the oldest
// dropped) and whether anything changed. runs is not modified.
func MergeRun(runs []CIRun, r CIRun) ([]CIRun, bool) {
	i := slices.IndexFunc(runs, func(o CIRun) bool { return o.Name == r.Name && o.Status == r.Status && o.App == r.App })
	out := slices.Clone(runs)
	switch {
	case i < 0:
		out = append(out, r)
	case !r.newer(runs[i]) || runs[i] == r:
		return runs, false
	default:
		out[i] = r
	}
	if len(out) > maxRuns {
		// The oldest run goes, but what blocks (a failure, a run still
		// going) outlives what passed: a dropped failure would let the whole
		// CI (WholeCI) pass over it.
		oldest := -1
		for _, blocking := range []bool{false, true} {
			for j := range out {
				if out[j].blocks() == blocking && (oldest < 0 || out[oldest].newer(out[j])) {
					oldest = j
				}
			}
			if oldest >= 0 {
				break
			}
		}
		if out[oldest] == r {
			return runs, false // older than every run kept
		}
		out = slices.Delete(out, oldest, oldest+1)
	}
	slices.SortFunc(out, func(a, b CIRun) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		if a.Status != b.Status {
			if a.Status {
				return 1
			}
			return -1
		}
		return strings.Compare(a.App, b.App)
	})
	return out, true
}

// MatchCheck reports whether a check run or status name is one that pattern
// (an entry of contracts.checks) names: exactly, or with `*` standing for any
// text ("test (*)" for a matrix's jobs).
func MatchCheck(pattern, name string) bool {
	if !strings.Contains(pattern, "*") {
		return pattern == name
	}
	parts := strings.Split(pattern, "*")
	if !strings.HasPrefix(name, parts[0]) {
		return false
	}
	name = name[len(parts[0]):]
	for i, p := range parts[1:] {
		if i == len(parts)-2 {
			return strings.HasSuffix(name, p) && len(name) >= len(p)
		}
		j := strings.Index(name, p)
		if j < 0 {
			return false
		}
		name = name[j+len(p):]
	}
	return true
}

// RelevantRuns are the runs that some activity of cfg counts
// (contracts.checks): every run when contracts.checks is unset (the
// repository's CI counts as it is, see WholeCI).
func RelevantRuns(cfg ContractConfig, runs []CIRun) []CIRun {
	var out []CIRun
	for _, r := range runs {
		if cfg.counts(r.Name) {
			out = append(out, r)
		}
	}
	return out
}

func (c ContractConfig) counts(name string) bool {
	if c.WholeCI() {
		return true
	}
	for _, pats := range c.Checks {
		for _, p := range pats {
			if MatchCheck(p, name) {
				return true
			}
		}
	}
	return false
}

// ciResult is what the runs of one commit say of an activity counted by the
// check names pats: it fails if any matching run fails, passes when every
// pattern has matching runs and all pass, and is pending otherwise. A run
// distrust (see Distrust) gives a reason for counts for nothing: the result
// says it was ignored, and why.
func ciResult(pats []string, runs []CIRun, where string, distrust func(CIRun) string) (Result, string, string, time.Time) {
	var (
		pending []string
		passed  []string
		ignored []string
		at      time.Time
		url     string
	)
	for _, p := range pats {
		found := false
		for _, r := range runs {
			if !MatchCheck(p, r.Name) {
				continue
			}
			if distrust != nil {
				if why := distrust(r); why != "" {
					ignored = append(ignored, fmt.Sprintf("`%s` (%s) ignored: %s", r.Name, r.Outcome(), why))
					continue
				}
			}
			found = true
			switch r.Result() {
			case ResultFail:
				return ResultFail, fmt.Sprintf("`%s`: %s%s", r.Name, r.Outcome(), where), r.URL, r.At
			case ResultPending:
				pending = append(pending, fmt.Sprintf("`%s` %s", r.Name, r.Outcome()))
			default:
				passed = append(passed, "`"+r.Name+"`")
				if r.At.After(at) {
					at, url = r.At, r.URL
				}
			}
		}
		if !found {
			pending = append(pending, fmt.Sprintf("no `%s` run yet", p))
		}
	}
	note := ""
	if len(ignored) > 0 {
		note = "; " + strings.Join(ignored, "; ")
	}
	if len(pending) > 0 {
		return ResultPending, strings.Join(pending, ", ") + where + note, "", time.Time{}
	}
	return ResultPass, strings.Join(passed, ", ") + " passed" + where + note, url, at
}

// WholeCI reports whether the repository's CI counts as it is: contracts.checks
// is unset, so no activity is mapped to named runs and every trusted run on a
// head must pass instead (DESIGN §3). A contracts.checks given, even empty,
// maps activities exactly as it says.
func (c ContractConfig) WholeCI() bool { return c.Checks == nil }

// MapChecksHint is what a /verify refused while waiting for CI says about the
// key that names the runs.
// noCIReported begins the detail of a whole-CI criterion no run has reported
// for.
const noCIReported = "no CI run has reported"

const MapChecksHint = "to require named runs, map them in `contracts.checks` in " + ConfigPath

// blocks reports whether run r stands in the way of the whole CI passing:
// it failed, or has not concluded.
func (r CIRun) blocks() bool { return r.Result() != ResultPass && !r.neutral() }

// neutral reports whether a run ended without passing or failing: a skipped
// job, or a neutral conclusion. As branch protection does, the whole CI
// (WholeCI) takes it as not blocking; it is not a pass either.
func (r CIRun) neutral() bool {
	return !r.Status && r.State == "completed" && (r.Conclusion == "skipped" || r.Conclusion == "neutral")
}

// wholeCIResult is what the runs and suites of one commit say when the
// repository's CI counts as it is (WholeCI): it fails if any trusted run
// fails, or was skipped in a suite that failed (a job skipped because the job
// it needs failed is no pass); it is pending while a run or a suite (but an
// App's empty one) has not concluded, for a job behind `needs:` has no run
// until the jobs it needs end; it passes when every trusted run and suite has
// concluded, none failed and at least one run passed (a skipped or neutral
// run neither blocks nor passes). The detail names the runs that counted,
// the suites (workflow runs) and whether each still runs, and the runs
// ignored and why.
func wholeCIResult(runs []CIRun, suites []CISuite, where string, distrust func(CIRun) string) (Result, string, string, time.Time) {
	var (
		pending, passed, neutral, ignored []string
		at                                time.Time
		url                               string
	)
	suiteOf := func(id int64) *CISuite {
		for i := range suites {
			if id != 0 && suites[i].ID == id {
				return &suites[i]
			}
		}
		return nil
	}
	for _, r := range runs {
		if distrust != nil {
			if why := distrust(r); why != "" {
				ignored = append(ignored, fmt.Sprintf("`%s` (%s) ignored: %s", r.Name, r.Outcome(), why))
				continue
			}
		}
		switch res := r.Result(); {
		case res == ResultFail:
			return ResultFail, fmt.Sprintf("`%s`: %s%s", r.Name, r.Outcome(), where), r.URL, r.At
		case r.neutral() && r.Conclusion == "skipped" && suiteOf(r.Suite) != nil && suiteOf(r.Suite).Status == "completed" && suiteOf(r.Suite).failed():
			return ResultFail, fmt.Sprintf("`%s`: skipped after a failure in %s (%s)%s", r.Name, suiteName(*suiteOf(r.Suite), runs),
				suiteOf(r.Suite).Conclusion, where), r.URL, r.At
		case r.neutral():
			neutral = append(neutral, fmt.Sprintf("`%s` %s", r.Name, r.Outcome()))
		case res == ResultPending:
			pending = append(pending, fmt.Sprintf("`%s` %s", r.Name, r.Outcome()))
		default:
			passed = append(passed, "`"+r.Name+"`")
			if r.At.After(at) {
				at, url = r.At, r.URL
			}
		}
	}
	var states []string
	running := false
	for _, s := range suites {
		switch {
		case s.Empty():
		case s.Running():
			running = true
			states = append(states, suiteName(s, runs)+" still running")
		default:
			states = append(states, suiteName(s, runs)+" completed")
		}
	}
	note := ""
	if len(neutral) > 0 {
		note += " (" + strings.Join(neutral, ", ") + ")"
	}
	if len(states) > 0 {
		note += "; " + strings.Join(states, ", ")
	}
	if len(ignored) > 0 {
		note += "; " + strings.Join(ignored, "; ")
	}
	switch {
	case len(pending) > 0:
		return ResultPending, strings.Join(pending, ", ") + where + note, "", time.Time{}
	case running:
		what := "waiting for CI to finish"
		if len(passed) > 0 {
			what = strings.Join(passed, ", ") + " passed, waiting for CI to finish"
		}
		return ResultPending, what + where + note, "", time.Time{}
	case len(passed) == 0 && len(neutral) > 0:
		return ResultPending, "no CI run has passed" + where + " yet" + note, "", time.Time{}
	case len(passed) == 0:
		return ResultPending, noCIReported + where + " yet" + note, "", time.Time{}
	}
	return ResultPass, strings.Join(passed, ", ") + " passed" + where + note, url, at
}

// ChecksConcluded reports whether every check run among runs that cfg trusts
// has concluded and none failed, with at least one result of any kind: the
// moment the whole CI (WholeCI) could pass, when the check suites decide
// whether a job has yet to come.
func ChecksConcluded(cfg ContractConfig, runs []CIRun) bool {
	if len(runs) == 0 {
		return false
	}
	for _, r := range runs {
		if r.Status || Distrust(cfg, r, nil) != "" {
			continue
		}
		if r.blocks() {
			return false
		}
	}
	return true
}
