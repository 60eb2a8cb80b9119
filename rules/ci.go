package rules

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
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
	// Made says how a check run of GitHub Actions came to be, once the jobs
	// of its workflow run were read (MadeByJob, MadeByToken, MadeUnchecked);
	// "" while unknown, and for any other run.
	Made string `json:"made,omitempty"`
}

// How a check run of GitHub Actions came to be (CIRun.Made). A workflow
// whose token may write checks (`permissions: checks: write`) can create a
// check run of any name and conclusion on any commit of the repository
// through the Checks API: it is the App github-actions' as a job's is, and
// GitHub attaches it to one of github-actions' suites on that commit, maybe
// the pull request's own workflow run's. Only the jobs of a workflow run
// (whose ids are their check runs' ids) tell a job's check run apart.
const (
	// MadeByJob: the check run of a job of its suite's workflow run.
	MadeByJob = "job"
	// MadeByToken: no job of any workflow run: created through the Checks
	// API with a workflow's token (or in a suite that is no workflow run).
	MadeByToken = "token"
	// MadeUnchecked: the jobs could not be read (the installation lacks the
	// Actions permission): the run counts as GitHub lists it.
	MadeUnchecked = "unchecked"
)

// GitHubActionsBot is the account a workflow's token (GITHUB_TOKEN) posts
// commit statuses as: whoever's workflow ran, a builder's as anyone's.
const GitHubActionsBot = "github-actions[bot]"

// unproven reports whether r is a check run of GitHub Actions not yet known
// to be a job's (MadeByJob) or not (MadeByToken): a pass of it counts only
// once the jobs of its workflow run were read.
func (r CIRun) unproven() bool { return !r.Status && r.App == ActionsApp && r.Made == "" }

// sameSource reports whether runs r and o, of one name and kind, come from
// one source, whose latest run replaces its earlier ones: a commit status
// from one creator (a status another account posts never erases a trusted
// one's failure), a check run made by a job or not (one made through the
// Checks API never hides a job's).
func sameSource(r, o CIRun) bool {
	if r.Status {
		return r.Creator.Is(o.Creator) || (r.Creator.IsZero() && o.Creator.IsZero())
	}
	return (r.Made == MadeByToken) == (o.Made == MadeByToken)
}

// ActionsApp is the slug of GitHub Actions' App, whose check suites are
// workflow runs.
const ActionsApp = "github-actions"

// CISuite is a check suite on a commit, as GitHub lists them: one per
// workflow run for GitHub Actions, in_progress until its last job ends
// (a job behind `needs:` has no check run until then); one per App
// otherwise. An App with checks permission that never reports has one too,
// queued with no runs, for ever; so has github-actions on a push that
// triggers no workflow. A workflow run that waits in its concurrency group
// has a suite just like it: only the workflow run tells them apart.
type CISuite struct {
	ID         int64  `json:"id"`
	App        string `json:"app,omitempty"` // the slug of its GitHub App
	Status     string `json:"status"`        // queued, in_progress, completed, ...
	Conclusion string `json:"conclusion,omitempty"`
	Runs       int    `json:"runs,omitempty"` // its latest check runs (latest_check_runs_count)
	// Workflow is the GitHub Actions workflow run this suite is, 0 for none
	// (another App's suite, or github-actions' empty one).
	Workflow int64 `json:"workflow,omitempty"`
	// WorkflowStatus is that workflow run's status as read: queued,
	// pending, waiting, requested, in_progress or completed.
	WorkflowStatus string `json:"workflow_status,omitempty"`
	// WorkflowID is that workflow run's workflow (its workflow_id: the
	// workflow file), 0 while unknown. Only a later run of the same workflow
	// supersedes a job's run (CountedRuns): GitHub Actions names a job's check
	// run by the job alone, so two workflows can each have a job `test`.
	WorkflowID int64 `json:"workflow_id,omitempty"`
	// Head says whose a suite of github-actions is, once the workflow runs
	// were read: SuiteOwn (the pull request's head's workflow run, or no
	// workflow run), or SuiteOther, a workflow run for another head branch
	// or repository (another pull request's, a fork's, a push of the commit
	// to another branch; see OtherHead), whose runs count for nothing on
	// this pull request. "" while unknown (the suite's runs count).
	Head string `json:"head,omitempty"`
	// Unreadable: the workflow runs could not be read (the installation
	// lacks the Actions permission): the suite counts as listed, and its
	// check runs as GitHub lists them (MadeUnchecked).
	Unreadable bool `json:"unreadable,omitempty"`
}

// Whose a suite is (CISuite.Head).
const (
	SuiteOwn   = "own"
	SuiteOther = "other"
)

// Other reports whether s is another head's workflow run (SuiteOther).
func (s CISuite) Other() bool { return s.Head == SuiteOther }

// Empty reports whether s is an App's suite that never got a run: queued
// with none, and no workflow run that has yet to run. It blocks nothing.
func (s CISuite) Empty() bool {
	return s.Runs == 0 && s.Status == "queued" && (s.Workflow == 0 || s.WorkflowStatus == "completed")
}

// Running reports whether s has not concluded: queued (with runs, or a
// workflow run waiting to start) or in progress.
func (s CISuite) Running() bool { return s.Status != "completed" && !s.Empty() }

// accountedFor reports whether suite s, which concluded without passing,
// holds a run among runs (those counted) that says why, or that it is no
// longer so: a run that failed (one not trusted: a trusted one fails the
// whole CI itself), or one not concluded (a re-run of a failed job: the
// suite's conclusion as last read is outdated).
func accountedFor(s CISuite, runs []CIRun) bool {
	return slices.ContainsFunc(runs, func(r CIRun) bool {
		return r.Suite == s.ID && !r.Status && r.blocks()
	})
}

// RunsUnseen reports whether, among suites (as just read), one of the pull
// request's own completed without passing, no run known of it (runs) says
// why, and GitHub counts more runs in it than are known: the delivery of the
// run that failed is still on its way (a read sees what deliveries have not
// brought yet). The head's check runs are then read, so that the failure is
// told by the run that failed, not only by its suite.
func RunsUnseen(runs []CIRun, suites []CISuite) bool {
	return slices.ContainsFunc(suites, func(s CISuite) bool {
		if s.Other() || s.Status != "completed" || !s.Failed() || s.Runs == 0 || accountedFor(s, runs) {
			return false
		}
		known := 0
		for _, r := range runs {
			if !r.Status && r.Suite == s.ID {
				known++
			}
		}
		return known < s.Runs
	})
}

// Failed reports whether s concluded without passing.
func (s CISuite) Failed() bool {
	switch s.Conclusion {
	case "failure", "timed_out", "cancelled", "action_required", "startup_failure":
		return true
	}
	return false
}

// OtherHead reports whether a workflow run on a pull request's head commit,
// run for branch in repository repo (its head_branch and head_repository),
// is for another head than the pull request's own (headRepo, headRef):
// another pull request's on the same commit (a fork's, whose check suite
// names no pull request), or a push of the commit to another branch. Its
// runs then count for nothing on the pull request (DESIGN §2: anyone else's
// pull request blocks nothing and voids nothing). When either side is
// unknown ("") it is not: it counts, as a failure must never be hidden by a
// guess.
func OtherHead(headRepo, headRef, repo, branch string) bool {
	if headRepo == "" || headRef == "" || repo == "" || branch == "" {
		return false
	}
	return !strings.EqualFold(headRepo, repo) || headRef != branch
}

// maxSuites bounds the suites kept per commit.
const maxSuites = 50

// TrimSuites are suites as kept with a commit: the empty ones dropped (they
// block nothing), by id, at most maxSuites: those still running or failed kept first,
// then the completed ones, then other heads' (Other).
func TrimSuites(suites []CISuite) []CISuite {
	var out []CISuite
	for _, s := range suites {
		if !s.Empty() {
			out = append(out, s)
		}
	}
	rank := func(s CISuite) int {
		switch {
		case s.Other():
			return 2
		case s.Running(), s.Failed():
			return 0
		}
		return 1
	}
	slices.SortFunc(out, func(a, b CISuite) int {
		if c := rank(a) - rank(b); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	if len(out) > maxSuites {
		out = out[:maxSuites]
	}
	slices.SortFunc(out, func(a, b CISuite) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// OwnRuns are runs without those of the suites among suites that are
// another head's workflow runs (Other).
func OwnRuns(runs []CIRun, suites []CISuite) []CIRun {
	other := otherSuites(suites)
	if len(other) == 0 {
		return runs
	}
	var out []CIRun
	for _, r := range runs {
		if !other[r.Suite] {
			out = append(out, r)
		}
	}
	return out
}

func otherSuites(suites []CISuite) map[int64]bool {
	var other map[int64]bool
	for _, s := range suites {
		if s.Other() && s.ID != 0 {
			if other == nil {
				other = map[int64]bool{}
			}
			other[s.ID] = true
		}
	}
	return other
}

// CountedRuns are the runs of a pull request's head that count for it
// (runs as MergeRun keeps them, suites as last read): not those of another
// head's workflow runs (Other), and of each name (and App, and source: see
// sameSource; of each context and creator for statuses) the latest only,
// within its lineage: a GitHub Actions job's workflow (a failed job re-run
// to pass, or the workflow run again for the pull request, reopened or
// dispatched on its branch, is a pass), or its workflow run while the
// workflow is not known. GitHub Actions names a job's check run by the job
// alone, so two workflows can each run a `test`: each one's latest counts,
// and a later pass in one never hides a failure in the other. A status
// another account posted, or a check run a workflow's token created, never
// hides a failure. The order of runs is kept.
func CountedRuns(runs []CIRun, suites []CISuite) []CIRun {
	runs = OwnRuns(runs, suites)
	type key struct {
		name, app, lineage string
		status             bool
	}
	var out []CIRun
	at := map[key][]int{} // the runs kept of each key, one per source
	for _, r := range runs {
		k := key{r.Name, r.App, lineage(r, suites), r.Status}
		i := slices.IndexFunc(at[k], func(j int) bool { return sameSource(r, out[j]) })
		switch {
		case i < 0:
			at[k] = append(at[k], len(out))
			out = append(out, r)
		case r.newer(out[at[k][i]]):
			out[at[k][i]] = r
		}
	}
	return out
}

// lineage is what the latest run of a name is taken within (CountedRuns):
// a GitHub Actions job's workflow, as its suite was read (WorkflowID), or
// its suite (its workflow run) while the workflow is not known, so that an
// unknown workflow never hides another's failure; "" for another App's run
// or a status (the latest of the name and App, or of the context).
func lineage(r CIRun, suites []CISuite) string {
	if r.Status || r.App != ActionsApp || r.Suite == 0 {
		return ""
	}
	for _, s := range suites {
		if s.ID == r.Suite && s.WorkflowID != 0 {
			return "workflow " + strconv.FormatInt(s.WorkflowID, 10)
		}
	}
	return "suite " + strconv.FormatInt(r.Suite, 10)
}

// Known reports whether s, a suite of github-actions, is read for whose it
// is and which workflow it runs: its head read, and its workflow with it when
// it is a workflow run.
func (s CISuite) Known() bool {
	return s.Head != "" && (s.Workflow == 0 || s.WorkflowID != 0)
}

// WhoseFailed reports whether, among suites, a workflow run completed
// without passing (held for a maintainer's approval, failed to start) while
// a suite of github-actions is not known (Known): whose and of which
// workflow each is must then be read, for the failed one blocks the whole CI
// only if it is the pull request's own and its workflow has not run again
// since (Superseded), which the suite not known may be.
func WhoseFailed(suites []CISuite) bool {
	failed := slices.ContainsFunc(suites, func(s CISuite) bool {
		return s.App == ActionsApp && s.Status == "completed" && s.Failed() && !s.Other()
	})
	return failed && slices.ContainsFunc(suites, func(s CISuite) bool { return s.App == ActionsApp && !s.Known() && !s.Empty() })
}

// Superseded reports whether a later workflow run of s's workflow, for the
// same head, is among suites: the workflow run again (on reopening, a push,
// dispatched on the branch). Its conclusion then gives way to the later
// run's; its jobs are superseded one by one, by the later run's jobs of their
// names (CountedRuns), so a failed job the later run does not have still
// counts.
func (s CISuite) Superseded(suites []CISuite) bool {
	return s.WorkflowID != 0 && !s.Other() && slices.ContainsFunc(suites, func(o CISuite) bool {
		return o.WorkflowID == s.WorkflowID && o.ID > s.ID && !o.Other() && !o.Empty()
	})
}

// unread reports whether r is a GitHub Actions check run whose suite is not
// known to be the pull request's own (suites as last read): whose workflow
// run, and so whose head, is not known yet, or which workflow it runs.
func unread(r CIRun, suites []CISuite) bool {
	return !r.Status && r.App == ActionsApp && r.Suite != 0 &&
		!slices.ContainsFunc(suites, func(s CISuite) bool { return s.ID == r.Suite && s.Known() })
}

// CIRead is what is to be read of a pull request's head before what its
// runs say is taken (CIReadDue): its check suites, and with them the
// workflow runs on it (Whose), to tell whose each workflow run is.
type CIRead struct {
	Suites, Whose bool
	// Jobs: the jobs of the pull request's own workflow runs are to be
	// read too, and with them whose each workflow run is (JobsDue says,
	// once the suites are), to tell a job's check run from one a workflow's
	// token created (CIRun.Made).
	Jobs bool
}

// CIReadDue says what must be read of a pull request's head before what its
// runs (as MergeRun keeps them) and suites (as last read) say is taken,
// under cfg:
//
//   - the suites and whose they are, when a counted run (CountedRuns) of a
//     workflow run whose head is not known yet has failed, or is the latest
//     of a name another suite also ran: it may be another head's (a fork
//     pull request's on the same commit), which fails and hides nothing;
//   - the suites and whose they are, when the whole CI counts and a
//     workflow run completed without passing while a suite of
//     github-actions is not known (WhoseFailed);
//   - the suites, when the whole CI counts (WholeCI) and every trusted check
//     run counted has concluded without failing: only the suites can then
//     say whether a job has yet to come (a job behind `needs:` has no check
//     run until it is queued), or a workflow run waits to start;
//   - the suites, whose they are and then the jobs (JobsDue), when a pass
//     waits on knowing whether a counted run of GitHub Actions is a job's
//     (a workflow's token can create a check run of any name).
//
// So a read costs at most one request for the suites, one for the
// workflow runs and one per own workflow run for its jobs, made only by a
// decision that could pass, fail an attempt, or let another head's run
// through.
func CIReadDue(cfg ContractConfig, runs []CIRun, suites []CISuite) CIRead {
	if cfg.WholeCI() && WhoseFailed(suites) {
		return CIRead{Suites: true, Whose: true}
	}
	counted := RelevantRuns(cfg, CountedRuns(runs, suites))
	settled := true
	if jobsWanted(cfg, counted) {
		return CIRead{Suites: true, Jobs: true}
	}
	for _, r := range counted {
		if r.Status {
			continue
		}
		if Distrust(cfg, r, nil) != "" {
			continue
		}
		if unread(r, suites) && (r.Result() == ResultFail || slices.ContainsFunc(runs, func(o CIRun) bool {
			return !o.Status && o.Name == r.Name && o.App == r.App && o.Suite != r.Suite
		})) {
			return CIRead{Suites: true, Whose: true}
		}
		if r.blocks() {
			settled = false
		}
	}
	return CIRead{Suites: settled && len(counted) > 0 && cfg.WholeCI()}
}

// jobsWanted reports whether a pass of counted (counted runs as CountedRuns
// and RelevantRuns give them) waits on knowing whether a run of GitHub
// Actions is a job's: one is unproven and passed, and no trusted run
// counted has failed or is still going (no pass could be decided yet).
func jobsWanted(cfg ContractConfig, counted []CIRun) bool {
	unproven := false
	for _, r := range counted {
		switch {
		case r.unproven() && r.Result() == ResultPass:
			unproven = true
		case Distrust(cfg, r, nil) == "" && r.blocks():
			return false // a failure, or a run still going: no pass yet
		}
	}
	return unproven
}

// JobsDue reports whether the jobs of the pull request's own workflow runs
// are to be read now (runs as MergeRun keeps them, suites as just read,
// with whose each is): a pass waits on knowing whether a run of GitHub
// Actions is a job's (jobsWanted), and, when the whole CI counts, no own
// suite still runs (the decision could pass). One request per own workflow
// run holding such a run.
func JobsDue(cfg ContractConfig, runs []CIRun, suites []CISuite) bool {
	if !jobsWanted(cfg, RelevantRuns(cfg, CountedRuns(runs, suites))) {
		return false
	}
	return !cfg.WholeCI() || !slices.ContainsFunc(suites, func(s CISuite) bool { return !s.Other() && s.Running() })
}

// suiteName is how people are shown suite s: "workflow run N" when it is
// a GitHub Actions workflow run (read, or linked from one of runs, its check
// runs), else "check suite N of APP".
func suiteName(s CISuite, runs []CIRun) string {
	if s.Workflow != 0 {
		return fmt.Sprintf("workflow run %d", s.Workflow)
	}
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
// contracts.apps pins for its name when there is one; one of GitHub Actions
// only when it is a job's (CIRun.Made: a pass counts once that is known, a
// failure counts until it is known to be no job's); a commit status counts
// only when its creator is known, is not a builder (builder), and is one of
// contracts.status_creators when those are set; github-actions[bot]'s (a
// workflow's token, whoever's workflow ran) only when it is listed there.
func Distrust(cfg ContractConfig, r CIRun, builder func(User) bool) string {
	if !r.Status {
		if r.App == "" {
			return "created by no known GitHub App"
		}
		switch {
		case r.App == ActionsApp && r.Made == MadeByToken:
			return "created through the Checks API (a workflow's token can), by no job of a workflow run"
		case r.unproven() && r.Result() == ResultPass:
			return "not yet known to be a job of a workflow run"
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
	case len(cfg.StatusCreators) == 0 && SameLogin(r.Creator.Login, GitHubActionsBot):
		return "posted by @" + GitHubActionsBot + " (a workflow's token, whoever's workflow ran), not listed in contracts.status_creators"
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

// mayBeForged reports whether r and o are two check runs of GitHub Actions
// of which one may have been created through the Checks API (not known to be
// jobs, MadeByJob): both are kept, for the later one must not erase a job's
// result (a re-run of a job is its workflow run's job again, once read).
func mayBeForged(r, o CIRun) bool {
	return !r.Status && r.App == ActionsApp && r.ID != o.ID && (r.Made != MadeByJob || o.Made != MadeByJob)
}

// maxRuns bounds the runs kept per commit.
const maxRuns = 100

// MergeRun records run r among runs (the runs of one commit: one check run
// per check suite, App and name, as GitHub keeps the latest of each in each
// suite; one status per context and creator): it replaces an older run of
// its name (and App, and suite, and source: see sameSource), and is ignored
// if a newer one is known. Check runs of GitHub Actions replace one another
// only once both are known to be jobs (mayBeForged): one a workflow's token
// created in the same suite must not erase a failed job. Two Apps' runs of
// one name are two runs: a later pass from one never hides the other's
// failure; so are two workflow runs' (two suites'): which of them count is
// decided when they are counted (CountedRuns), once it is known whose they
// are. It returns the new list (sorted by name; at most maxRuns, the oldest
// dropped) and whether anything changed. runs is not modified.
func MergeRun(runs []CIRun, r CIRun) ([]CIRun, bool) {
	i := slices.IndexFunc(runs, func(o CIRun) bool {
		if r.ID != 0 && o.ID == r.ID && o.Status == r.Status {
			return true // the same check run (or status)
		}
		return o.Name == r.Name && o.Status == r.Status && o.App == r.App && o.Suite == r.Suite && sameSource(r, o) && !mayBeForged(r, o)
	})
	if i >= 0 && r.ID == runs[i].ID && !r.Status { // what is known of how it was made stands
		r.Made = cmp.Or(r.Made, runs[i].Made)
	}
	out := slices.Clone(runs)
	switch {
	case i < 0:
		out = append(out, r)
	case !r.newer(runs[i]) || runs[i] == r:
		if r.ID == runs[i].ID && runs[i].Made == "" && r.Made != "" {
			out[i].Made = r.Made
			return out, true
		}
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
		if c := strings.Compare(a.App, b.App); c != 0 {
			return c
		}
		return cmp.Compare(a.Suite, b.Suite)
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
// it needs failed is no pass), or if a suite (a workflow run) completed with
// a failing conclusion no run of it accounts for (startup_failure: an invalid
// workflow, no job) and its workflow has not run again since (Superseded);
// it is pending while a run or a suite (but an App's empty one) has not
// concluded, for a job behind `needs:` has no run until the jobs it needs
// end, and while a workflow run awaits a maintainer's approval
// (action_required, no job: a fork's pull request); it passes when every
// trusted run and suite has concluded, none failed and at least one run
// passed (a skipped or neutral run neither blocks nor passes). The detail
// names the runs that counted, the suites (workflow runs) and whether each
// still runs, and the runs ignored and why.
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
		case r.neutral() && r.Conclusion == "skipped" && suiteOf(r.Suite) != nil && suiteOf(r.Suite).Status == "completed" && suiteOf(r.Suite).Failed():
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
	running, awaiting := false, false
	for _, s := range suites {
		switch {
		case s.Other():
			states = append(states, suiteName(s, runs)+" ignored (run for another branch or fork)")
		case s.Empty():
		case s.Running():
			running = true
			states = append(states, suiteName(s, runs)+" still running")
		case s.Superseded(suites):
			states = append(states, suiteName(s, runs)+" run again since")
		case s.Failed() && accountedFor(s, runs):
			states = append(states, suiteName(s, runs)+" completed ("+s.Conclusion+")")
		case s.Conclusion == "action_required":
			awaiting = true
			states = append(states, suiteName(s, runs)+" awaiting approval")
		case s.Failed():
			return ResultFail, fmt.Sprintf("%s: %s%s", suiteName(s, runs), s.Conclusion, where), "", time.Time{}
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
	case awaiting:
		what := "waiting for a maintainer to approve a workflow run"
		if len(passed) > 0 {
			what = strings.Join(passed, ", ") + " passed, " + what
		}
		return ResultPending, what + where + note, "", time.Time{}
	case len(passed) == 0 && len(neutral) > 0:
		return ResultPending, "no CI run has passed" + where + " yet" + note, "", time.Time{}
	case len(passed) == 0:
		return ResultPending, noCIReported + where + " yet" + note, "", time.Time{}
	}
	return ResultPass, strings.Join(passed, ", ") + " passed" + where + note, url, at
}
