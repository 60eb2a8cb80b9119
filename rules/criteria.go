package rules

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// This file keeps a task's contract (docs/design.md, Verification contracts): written when the task is
// tracked, rewritten when the issue is edited before work starts, when its pull
// requests' files call for other criteria, or by a lead's /contract; and its
// criteria's results, from the CI runs on the pull requests' heads and the
// approvals.

// maxFailures bounds Task.Failures.
const maxFailures = 20

// ensureContract gives a task its contract if it has none (tracked now, or a
// record from before contracts).
func (d *decider) ensureContract() {
	if d.t.Contract != nil {
		return
	}
	title, body := d.ev.Issue.Title, d.ev.Issue.Body
	if title == "" {
		title = d.t.Title
	}
	c := GenerateContract(d.f.Config.Contracts, ContractInput{Title: title, Body: body, At: d.ev.At})
	d.t.Contract = &c
	d.recontract("")
	d.refreshResults()
	d.dirty()
}

// issueEdited rewrites the contract of a task whose work has not started from
// the edited title and body, unless a lead set its type.
func (d *decider) issueEdited() {
	t := d.t
	if InProgress.Before(t.State) || t.State == InProgress || t.Contract.From == "lead" {
		return
	}
	title := d.ev.Issue.Title
	if title == "" {
		title = t.Title
	}
	c := GenerateContract(d.f.Config.Contracts, ContractInput{Title: title, Body: d.ev.Issue.Body, At: d.ev.At})
	d.setContract(c, "issue edited by @"+d.ev.Actor.Login)
}

// fileCriteria are the criteria that a pull request's changed files call
// for, beyond those of every contract (typecheck and lint, or ci).
func (d *decider) fileCriteria(files []string) []Criterion {
	c := GenerateContract(d.f.Config.Contracts, ContractInput{Type: Verifiable, Changed: files})
	out := slices.DeleteFunc(c.Criteria, func(k Criterion) bool {
		return k.Activity == ActTypecheck || k.Activity == ActLint || k.Activity == ActCI
	})
	if len(out) == 0 {
		return nil // as a stored record has it
	}
	return out
}

// recontract works the criteria out again: the issue's own (its type and
// expected files) and those the open pull requests' files call for (of a
// verifiable task only: skip asks for lint and typecheck whatever changes).
func (d *decider) recontract(why string) {
	old := d.t.Contract
	c := GenerateContract(d.f.Config.Contracts, ContractInput{Type: old.Type, Changed: old.Expected, At: d.ev.At})
	c.From, c.Why, c.Expected = old.From, old.Why, old.Expected
	if c.Type == Verifiable {
		for _, p := range d.t.PRs {
			if p.Open || (p.Merged && len(d.t.OpenPRs()) == 0) {
				c.Criteria = unionCriteria(c.Criteria, p.Criteria)
			}
		}
	}
	d.setContract(c, why)
}

// setContract makes c the task's contract, keeping the results of criteria
// that stay, and records what changed.
func (d *decider) setContract(c Contract, why string) {
	old := d.t.Contract
	for i := range c.Criteria {
		if j := slices.IndexFunc(old.Criteria, func(o Criterion) bool { return o.Key() == c.Criteria[i].Key() }); j >= 0 {
			o := old.Criteria[j]
			c.Criteria[i].Result, c.Criteria[i].Detail, c.Criteria[i].URL, c.Criteria[i].Attempt, c.Criteria[i].At = o.Result, o.Detail, o.URL, o.Attempt, o.At
		}
	}
	change := ContractCriteriaChanged(old, &c)
	if change == "" && slices.Equal(old.Expected, c.Expected) && old.Type == c.Type {
		if !sameCriteria(old.Criteria, c.Criteria) {
			c.At = old.At
			d.t.Contract = &c
			d.dirty() // the same criteria, called for by other files
		}
		return
	}
	d.t.Contract = &c
	d.refreshResults()
	if change != "" && why != "" {
		d.note("contract: " + change + " (" + why + ")")
	} else {
		d.dirty()
	}
}

func sameCriteria(a, b []Criterion) bool {
	return slices.EqualFunc(a, b, func(x, y Criterion) bool {
		return x.Key() == y.Key() && x.Description == y.Description && slices.Equal(x.Files, y.Files) && x.MoreFiles == y.MoreFiles
	})
}

func sameKey(a, b Criterion) bool { return a.Key() == b.Key() && slices.Equal(a.Files, b.Files) }

// unionCriteria adds b's criteria to a's: one per key, with the files of
// both (the first three named, the rest counted), in contract order.
func unionCriteria(a, b []Criterion) []Criterion {
	out := slices.Clone(a)
	for _, k := range b {
		i := slices.IndexFunc(out, func(o Criterion) bool { return o.Key() == k.Key() })
		if i < 0 {
			out = append(out, k)
			continue
		}
		o := &out[i]
		for _, f := range k.Files {
			switch {
			case slices.Contains(o.Files, f):
			case len(o.Files) < 3:
				o.Files = append(slices.Clip(o.Files), f)
			default:
				o.MoreFiles++
			}
		}
		o.MoreFiles += k.MoreFiles
		o.Description = describe(*o)
	}
	slices.SortStableFunc(out, func(x, y Criterion) int { return criterionRank(x) - criterionRank(y) })
	return out
}

// describe is the description of a criterion merged from several sources.
func describe(c Criterion) string {
	base, _, _ := strings.Cut(c.Description, " (")
	return base + filesNote(c.Files, c.MoreFiles)
}

func filesNote(files []string, more int) string {
	if len(files) == 0 {
		return ""
	}
	s := " (" + strings.Join(files, ", ")
	if more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s + ")"
}

// criterionRank orders criteria: ci, typecheck, lint, unit-test, e2e now, e2e
// deferred, critics (by name), anything else.
func criterionRank(c Criterion) int {
	switch {
	case c.Activity == ActCI:
		return -1
	case c.Activity == ActTypecheck:
		return 0
	case c.Activity == ActLint:
		return 1
	case c.Activity == ActUnitTest:
		return 2
	case c.Activity == ActE2E && c.Timing != TimingDeferred:
		return 3
	case c.Activity == ActE2E:
		return 4
	case c.Activity == ActCritic:
		return 5
	}
	return 6
}

// evaluate works out every criterion's result from the pull requests' runs and
// the approvals, and fails the attempt of work in review or completed that a
// criterion failed.
func (d *decider) evaluate() {
	t := d.t
	if t.Contract == nil {
		return
	}
	d.refreshResults()
	prs := d.checkedPRs()
	failed := Failed(t)
	switch {
	case len(failed) > 0 && (t.State == Review || t.State == Completed):
		d.failAttempt(failed, prs)
	case len(failed) == 0 && t.State == InProgress && d.greenAgain(prs):
		d.submitted("CI passed again on the same commits")
		d.completeIfApproved()
	}
}

// refreshResults works out every criterion's result as things are now.
func (d *decider) refreshResults() {
	t := d.t
	if t.Contract == nil {
		return
	}
	prs := d.checkedPRs()
	changed := false
	for i := range t.Contract.Criteria {
		c := &t.Contract.Criteria[i]
		res, detail, url, at := d.criterionResult(*c, prs)
		if res == c.Result && detail == c.Detail && url == c.URL {
			continue
		}
		if at.IsZero() {
			at = d.ev.At
		}
		c.Result, c.Detail, c.URL, c.Attempt, c.At = res, detail, url, t.Attempt, at
		changed = true
	}
	if changed {
		d.dirty()
	}
}

// checkedPRs are the pull requests whose heads CI results count on: the open
// ones, else the merged ones.
func (d *decider) checkedPRs() []*LinkedPR {
	var open, merged []*LinkedPR
	for i := range d.t.PRs {
		switch p := &d.t.PRs[i]; {
		case p.Open:
			open = append(open, p)
		case p.Merged:
			merged = append(merged, p)
		}
	}
	if len(open) > 0 {
		return open
	}
	return merged
}

// criterionResult is what the runs and approvals say of criterion c.
func (d *decider) criterionResult(c Criterion, prs []*LinkedPR) (Result, string, string, time.Time) {
	switch {
	case c.Activity == ActE2E && c.Timing == TimingDeferred:
		return ResultDeferred, "deferred to the goal's integration check", "", time.Time{}
	case c.Activity == ActCritic:
		return d.criticResult(c.Critic, prs)
	}
	decide := d.checkedBy(c)
	if decide == nil {
		return ResultUnchecked, "no CI check counts for it (contracts.checks): the verifier checks it", "", time.Time{}
	}
	if len(prs) == 0 {
		return ResultUnchecked, "no pull request for CI to check: the verifier checks it", "", time.Time{}
	}
	res, detail, url, at := ResultPass, "", "", time.Time{}
	var parts []string
	for _, p := range prs {
		where := fmt.Sprintf(" on #%d (%s)", p.Number, short(p.Head))
		r, dt, u, a := decide(p, where)
		switch {
		case r == ResultFail && res != ResultFail:
			res, detail, url, at = r, dt, u, a
			parts = nil
		case r == ResultPending && res == ResultPass:
			res, parts, url, at = r, nil, "", time.Time{}
			parts = append(parts, dt)
		case r == res && res != ResultFail:
			parts = append(parts, dt)
			if a.After(at) {
				at, url = a, u
			}
		}
	}
	if res != ResultFail {
		detail = strings.Join(parts, "; ")
	}
	return res, detail, url, at
}

// checkedBy returns what decides criterion c from one head's runs, nil when
// no CI run counts for it: the whole CI (a ci criterion, or any criterion of
// a checked activity while contracts.checks is unset), or the runs
// contracts.checks names for its activity.
func (d *decider) checkedBy(c Criterion) func(p *LinkedPR, where string) (Result, string, string, time.Time) {
	cfg := d.f.Config.Contracts
	if c.Activity == ActCI || (cfg.WholeCI() && slices.Contains(CheckedActivities, c.Activity) && c.Timing != TimingDeferred) {
		return func(p *LinkedPR, where string) (Result, string, string, time.Time) {
			return wholeCIResult(CountedRuns(p.Runs, p.Suites), p.Suites, where, d.distrust)
		}
	}
	pats := cfg.Checks[c.Activity]
	if len(pats) == 0 {
		return nil
	}
	return func(p *LinkedPR, where string) (Result, string, string, time.Time) {
		return ciResult(pats, CountedRuns(p.Runs, p.Suites), where, d.distrust)
	}
}

// distrust says why run counts for nothing on this task (Distrust), "".
func (d *decider) distrust(r CIRun) string {
	return Distrust(d.f.Config.Contracts, r, d.t.IsBuilder)
}

// criticResult: a critic is met by a counted approval, of the current work,
// by one of its reviewers (contracts.critics), or by anyone's when it has none.
func (d *decider) criticResult(name string, prs []*LinkedPR) (Result, string, string, time.Time) {
	reviewers := d.f.Config.Contracts.Critics[name]
	for _, a := range d.t.Approvals {
		if !d.current(a, prs) || (len(reviewers) > 0 && !slices.Contains(a.Critics, name)) {
			continue
		}
		where := ""
		if a.PR != 0 {
			where = fmt.Sprintf(" on #%d", a.PR)
		}
		return ResultPass, "approved by @" + a.By.Login + where, "", a.At
	}
	who := "a counted approval"
	if len(reviewers) > 0 {
		who = "an approval by " + mentions(reviewers)
	}
	return ResultPending, "waiting for " + who, "", time.Time{}
}

// current reports whether approval a is of the work as it is now.
func (d *decider) current(a Approval, prs []*LinkedPR) bool {
	if a.PR == 0 {
		return true
	}
	for _, p := range prs {
		if p.Number == a.PR {
			return p.Head == a.Head
		}
	}
	return false
}

// Failed are the criteria of t that failed.
func Failed(t *Task) []Criterion {
	return criteriaWith(t, ResultFail)
}

// Blocking are the criteria of t that stop /verify: failed or pending.
func Blocking(t *Task) []Criterion {
	return criteriaWith(t, ResultFail, ResultPending, "")
}

func criteriaWith(t *Task, results ...Result) []Criterion {
	if t.Contract == nil {
		return nil
	}
	var out []Criterion
	for _, c := range t.Contract.Criteria {
		if slices.Contains(results, c.Result) {
			out = append(out, c)
		}
	}
	return out
}

// failAttempt sends work in review or completed that failed a criterion back
// to in-progress: a failed attempt, with the failures as feedback.
func (d *decider) failAttempt(failed []Criterion, prs []*LinkedPR) {
	t := d.t
	names := make([]string, len(failed))
	for i, c := range failed {
		names[i] = c.Key() + " (" + c.Detail + ")"
	}
	reason := clip(strings.Join(names, "; "), maxReason)
	f := Failure{Attempt: t.Attempt, At: d.ev.At, Reason: reason}
	if p := d.failingPR(failed, prs); p != nil {
		f.PR, f.Head = p.Number, p.Head
	}
	t.Failures = append(t.Failures, f)
	if len(t.Failures) > maxFailures {
		t.Failures = t.Failures[len(t.Failures)-maxFailures:]
	}
	t.FailedAttempts++
	t.Attempt++
	t.Failing = true
	d.move(InProgress, "failed attempt: "+reason)
	d.notice(t.Number, Notice{Kind: NoticeFailed, Actor: "", Reason: reason, Criteria: failed, Mentions: Logins(d.builderMentions()),
		State: t.State, PR: f.PR, Head: f.Head, FailedAttempts: t.FailedAttempts})
	d.escalateIfDue()
}

// failingPR is the pull request on whose head a failed criterion failed
// (the first, if several; nil for a critic's).
func (d *decider) failingPR(failed []Criterion, prs []*LinkedPR) *LinkedPR {
	for _, c := range failed {
		decide := d.checkedBy(c)
		if decide == nil {
			continue
		}
		for _, p := range prs {
			if r, _, _, _ := decide(p, ""); r == ResultFail {
				return p
			}
		}
	}
	if len(prs) > 0 {
		return prs[0]
	}
	return nil
}

// greenAgain reports whether a task sent back by CI alone can go back to
// review: its ready pull requests' heads are the very commits that failed, and
// every criterion CI checks now passes (a flaky run re-run green).
func (d *decider) greenAgain(prs []*LinkedPR) bool {
	t := d.t
	if !t.Failing || len(t.Failures) == 0 || len(prs) == 0 || !prs[0].Open {
		return false
	}
	last := t.Failures[len(t.Failures)-1]
	if n := len(t.Rejections); n > 0 && !t.Rejections[n-1].At.Before(last.At) {
		return false // a person rejected it since: only new work answers that
	}
	for i := len(t.History) - 1; i >= 0; i-- {
		why := t.History[i].Why
		if strings.HasPrefix(why, "failed attempt") {
			break
		}
		if strings.HasPrefix(why, "/reject") || strings.HasPrefix(why, "changes requested") || strings.HasPrefix(why, "/reopen") {
			return false // a person sent it back since: only new work answers that
		}
	}
	for _, p := range prs {
		if p.Draft || (p.Number == last.PR && p.Head != last.Head) || slices.Contains(t.RejectedHeads, p.Head) {
			return false
		}
	}
	for _, c := range t.Contract.Criteria {
		if c.Result == ResultPending && c.Activity != ActCritic {
			return false
		}
	}
	return true
}

// contradicted reports whether a claim of completion says the work is not
// done: then it is refused, with the words quoted, where they were said.
func (d *decider) contradicted(c *Contradiction, where int) bool {
	if c == nil {
		return false
	}
	n := Notice{Kind: NoticeContradiction, Contradiction: c, State: InProgress} // where the claim leaves it
	if where != d.t.Number {
		n.PR = where
	}
	d.notice(where, n)
	d.note(fmt.Sprintf("claim of completion refused: it also says %q", c.Phrase))
	return true
}

// contradiction is what text says that contradicts a claim of completion, if anything.
func (d *decider) contradiction(text string) *Contradiction {
	if phrase, line, ok := FindContradiction(text, d.f.Config.Contracts.Contradictions); ok {
		return &Contradiction{Phrase: phrase, Line: line}
	}
	return nil
}

func (d *decider) contract(c Command) {
	t := d.t
	if !d.leadOnly(c) {
		return
	}
	typ := ContractType(strings.ToLower(strings.TrimSpace(c.Args)))
	if f := strings.Fields(string(typ)); len(f) > 0 {
		typ = ContractType(f[0])
	}
	if typ != Verifiable && typ != Advisory && typ != Skip {
		d.refuse(c, "say which type: `/contract verifiable`, `/contract advisory` or `/contract skip`.")
		return
	}
	if t.Contract.Type == typ && t.Contract.From == "lead" {
		return
	}
	old := t.Contract.Type
	next := *t.Contract
	next.Type, next.From, next.Why, next.At = typ, "lead", "set by @"+d.actor().Login+" with /contract", d.ev.At
	d.t.Contract = &next
	d.recontract("")
	d.note(fmt.Sprintf("contract type %s → %s by lead @%s", old, typ, d.actor()))
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}
