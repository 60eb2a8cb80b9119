package decide

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/countersign/countersign/app/deliveries"
	"github.com/countersign/countersign/app/fault"
	"github.com/countersign/countersign/app/gh"
	"github.com/countersign/countersign/app/lookup"
	"github.com/countersign/countersign/app/mergequeue"
	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
	"github.com/google/go-github/v60/github"
)

// This file takes in CI results: check runs and commit statuses are the verify
// commands' exit codes (seed 002). A result arrives under its repository's
// key; it is handed, as an internal CI delivery (package deliveries), to each open pull request
// whose head it is about, under that pull request's key; there it is recorded
// with the pull request and, when a result that some contract counts changed,
// fanned out to the tasks the pull request closes (rules.PRChecked).

// ciRead is what the last read of a head's CI results (its check runs,
// statuses and check suites, on a suite's completion) saw: the suites
// completed (no clock is compared: replicas' clocks differ).
type ciRead struct {
	Suites []int64 `json:"suites"`
}

func (p *Decider) onCheckRun(ctx context.Context, d *store.Delivery, e *github.CheckRunEvent) (store.Commit, error) {
	inst, repo, cr := e.GetInstallation().GetID(), e.GetRepo().GetFullName(), e.GetCheckRun()
	if inst == 0 || repo == "" || cr.GetHeadSHA() == "" || p.gh.OwnApp(cr.GetApp()) {
		return store.Commit{}, nil
	}
	if cr.GetName() == rules.CheckName { // another App's: forged (app/mergequeue/decide)
		if e.GetAction() != "created" {
			return store.Commit{}, nil
		}
		return p.mq.ForgedGate(ctx, inst, repo, cr.GetHeadSHA(), mergequeue.ForgedCheckRun, "the App "+cr.GetApp().GetSlug(), d, p.log)
	}
	run := lookup.CheckRunOf(cr)
	var prs []int
	for _, pr := range cr.PullRequests {
		if pr.GetBase().GetRepo().GetID() == e.GetRepo().GetID() || pr.GetBase().GetRepo() == nil {
			prs = append(prs, pr.GetNumber())
		}
	}
	at := cr.GetCompletedAt().Time
	if at.IsZero() {
		at = cr.GetStartedAt().Time
	}
	return p.toPulls(ctx, inst, repo, cr.GetHeadSHA(), prs, d, deliveries.CIPayload{Run: &run, At: deliveries.EventTime(at, d)})
}

func (p *Decider) onCheckSuite(ctx context.Context, d *store.Delivery, e *github.CheckSuiteEvent) (store.Commit, error) {
	inst, repo, cs := e.GetInstallation().GetID(), e.GetRepo().GetFullName(), e.GetCheckSuite()
	if inst == 0 || repo == "" || cs.GetHeadSHA() == "" || p.gh.OwnApp(cs.GetApp()) {
		return store.Commit{}, nil
	}
	var prs []int
	for _, pr := range cs.PullRequests {
		prs = append(prs, pr.GetNumber())
	}
	return p.toPulls(ctx, inst, repo, cs.GetHeadSHA(), prs, d, deliveries.CIPayload{Read: true, Suite: cs.GetID(), At: deliveries.EventTime(cs.GetUpdatedAt().Time, d)})
}

func (p *Decider) onStatus(ctx context.Context, d *store.Delivery, e *github.StatusEvent) (store.Commit, error) {
	inst, repo := e.GetInstallation().GetID(), e.GetRepo().GetFullName()
	if inst == 0 || repo == "" || e.GetSHA() == "" || e.GetContext() == "" {
		return store.Commit{}, nil
	}
	if e.GetContext() == rules.CheckName { // countersign posts no status: forged (app/mergequeue/decide)
		return p.mq.ForgedGate(ctx, inst, repo, e.GetSHA(), mergequeue.ForgedStatus, "@"+e.GetSender().GetLogin(), d, p.log)
	}
	// The status event's sender is the status's creator.
	run := rules.CIRun{Name: e.GetContext(), Status: true, ID: e.GetID(), State: e.GetState(), URL: e.GetTargetURL(),
		At: e.GetUpdatedAt().UTC(), Creator: gh.User(e.GetSender())}
	return p.toPulls(ctx, inst, repo, e.GetSHA(), nil, d, deliveries.CIPayload{Run: &run, At: deliveries.EventTime(e.GetUpdatedAt().Time, d)})
}

// toPulls hands a CI result to every open pull request whose head is sha: those
// the webhook names and those the head index knows (statuses name none, nor do
// check runs on forks' pull requests).
func (p *Decider) toPulls(ctx context.Context, inst int64, repo, sha string, prs []int, d *store.Delivery, cd deliveries.CIPayload) (store.Commit, error) {
	var known []int
	if _, err := records.Load(ctx, p.store, records.HeadKey(repo, sha), &known); err != nil {
		return store.Commit{}, err
	}
	var w store.Commit
	for _, n := range union(prs, known) {
		cd.Installation, cd.Repo, cd.Number, cd.Head = inst, repo, n, sha
		w.Enqueue = append(w.Enqueue, deliveries.Derived(fmt.Sprintf("%s/ci/%d", d.ID, n), deliveries.CI, rules.TaskKey(repo, n), cd))
	}
	return w, nil
}

// decideCI records CI results on a pull request's head and tells the tasks it
// closes when a result their contracts count changed. The check suites on
// the head are read (one request; with the workflow runs when a suite of
// github-actions is new or queued with no run, one more) when a check suite
// completed, and when rules.CIReadDue says so: when the counted runs could
// pass (only the suites can then say whether a job has yet to come, a job
// behind `needs:` having no check run until it is queued), or a run of a
// workflow run not read yet fails or outdates another suite's run of its
// name (it may be another pull request's on the same commit, which counts
// for nothing here).
func (p *Decider) decideCI(ctx context.Context, cd deliveries.CIPayload, d *store.Delivery, log *slog.Logger) (store.Commit, error) {
	pr, err := records.LoadPR(ctx, p.store, cd.Repo, cd.Number)
	if err != nil || pr == nil || !pr.Open || pr.Head != cd.Head {
		return store.Commit{}, err // an old head's result, or a pull request countersign does not follow
	}
	c, err := p.clients(cd.Installation)
	if err != nil {
		return store.Commit{}, fault.Permanent(err)
	}
	var last ciRead
	if b, err := p.store.Get(ctx, records.CIReadKey(cd.Repo, cd.Number, cd.Head)); err == nil {
		_ = json.Unmarshal(b, &last) // a record that does not decode is no read
	} else if !errors.Is(err, store.ErrNotFound) {
		return store.Commit{}, fmt.Errorf("read %s: %w", records.CIReadKey(cd.Repo, cd.Number, cd.Head), err)
	}
	runs, suites := pr.Runs, pr.Suites
	var read *ciRead // what this decision read of the suites, to record
	switch {
	case cd.Read:
		// A burst of suites completing on one head is read once: a read that
		// saw this suite completed saw what it announces.
		if cd.Suite != 0 && slices.Contains(last.Suites, cd.Suite) {
			return store.Commit{}, nil
		}
		if otherSuite(pr, cd.Suite) {
			return store.Commit{}, nil // another head's workflow run completed: nothing of this pull request's
		}
		if runs, err = p.look.CIRuns(ctx, c, cd.Repo, cd.Head); err != nil {
			return store.Commit{}, err
		}
		for _, r := range pr.Runs { // a status read now is at least as new as one recorded
			runs, _ = rules.MergeRun(runs, r)
		}
	case cd.Run != nil:
		if otherSuite(pr, cd.Run.Suite) {
			return store.Commit{}, nil // another head's workflow run (a fork pull request's): nothing of this pull request's
		}
		var moved bool
		if runs, moved = rules.MergeRun(pr.Runs, *cd.Run); !moved {
			return store.Commit{}, nil // known already (a run created completed sends created, then completed)
		}
		if s := cd.Run.Suite; s != 0 && cd.Run.State != "completed" && slices.Contains(last.Suites, s) {
			// A new run in a suite read as completed: a re-run, whose
			// completion is to be read again.
			read = &ciRead{Suites: slices.DeleteFunc(slices.Clone(last.Suites), func(id int64) bool { return id == s })}
		}
	}
	cfg, err := p.look.Config(ctx, c, cd.Repo, log)
	if err != nil {
		return store.Commit{}, err
	}
	due := rules.CIReadDue(cfg.Contracts, runs, suites)
	if due.Whose && len(pr.Links) == 0 {
		// Whose each workflow run is matters to the tasks a pull request
		// closes: one that closes none does not pay for it.
		due = rules.CIRead{}
	}
	if cd.Read || due.Suites {
		if suites, err = p.look.CISuites(ctx, c, cd.Repo, cd.Head, headOf(pr), pr.Suites, lookup.WhoseFor(due, len(pr.Links) > 0)); err != nil {
			return store.Commit{}, err
		}
		if !cd.Read && rules.RunsUnseen(runs, suites) {
			// A suite failed by a run whose delivery has not come yet: read
			// the runs (one request), so the failure is told by its run.
			fresh, err := p.look.CIRuns(ctx, c, cd.Repo, cd.Head)
			if err != nil {
				return store.Commit{}, err
			}
			for _, r := range runs { // what a delivery brought is at least as new as the read
				fresh, _ = rules.MergeRun(fresh, r)
			}
			runs = fresh
		}
		runs = rules.OwnRuns(runs, suites) // another head's workflow runs are not this pull request's
		if runs, suites, err = p.jobsOf(ctx, c, cd.Repo, cd.Head, headOf(pr), cfg.Contracts, runs, suites); err != nil {
			return store.Commit{}, err
		}
		if cd.Read { // the runs were read too: what a suite's completion announces is known
			read = &ciRead{Suites: completedSuites(suites)}
		}
	}
	var readAt []byte
	if read != nil {
		readAt, _ = json.Marshal(read) // plain data: cannot fail
	}
	if slices.Equal(runs, pr.Runs) && slices.Equal(suites, pr.Suites) {
		return recordRead(store.Commit{}, cd, readAt), nil
	}
	counted := !slices.Equal(rules.RelevantRuns(cfg.Contracts, rules.CountedRuns(runs, suites)), rules.RelevantRuns(cfg.Contracts, rules.CountedRuns(pr.Runs, pr.Suites))) ||
		(cfg.Contracts.WholeCI() && !slices.Equal(suites, pr.Suites))
	old := *pr
	pr.Runs, pr.Suites = runs, suites
	w, err := p.fanout(ctx, cd.Installation, d, &old, pr, rules.Event{Kind: rules.PRChecked, Actor: rules.User{Login: ciActor(cd.Run)}, At: deliveries.EventTime(cd.At, d)}, linkGate{})
	if err != nil || counted {
		return recordRead(w, cd, readAt), err
	}
	w.Enqueue = nil // recorded; no contract counts it
	return recordRead(w, cd, readAt), nil
}

// jobsOf is runs with how each check run of GitHub Actions was made, and
// suites with whose each is (lookup.Jobs), when a pass waits on it
// (rules.JobsDue, suites just read): a workflow's token can create a check
// run of any name, which no job made.
func (p *Decider) jobsOf(ctx context.Context, c Client, repo, sha string, head lookup.Head, cfg rules.ContractConfig, runs []rules.CIRun, suites []rules.CISuite) ([]rules.CIRun, []rules.CISuite, error) {
	if !rules.JobsDue(cfg, runs, suites) {
		return runs, suites, nil
	}
	return p.look.Jobs(ctx, c, repo, sha, head, runs, suites)
}

// otherSuite reports whether suite is, as pr's suites were last read,
// another head's workflow run.
func otherSuite(pr *rules.PullRequest, suite int64) bool {
	return suite != 0 && slices.ContainsFunc(pr.Suites, func(s rules.CISuite) bool { return s.ID == suite && s.Other() })
}

// headOf is whose head pr's is: a workflow run for another counts for
// nothing on it.
func headOf(pr *rules.PullRequest) lookup.Head {
	return lookup.Head{Repo: pr.HeadRepo, Ref: pr.HeadRef}
}

// completedSuites are the ids of the suites read completed.
func completedSuites(suites []rules.CISuite) []int64 {
	out := []int64{}
	for _, s := range suites {
		if s.Status == "completed" {
			out = append(out, s.ID)
		}
	}
	return out
}

// recordRead adds to w, when the results were read (readAt not nil), what
// that read saw: committed with what was read, never without it.
func recordRead(w store.Commit, cd deliveries.CIPayload, readAt []byte) store.Commit {
	if readAt == nil {
		return w
	}
	if w.Records == nil {
		w.Records = map[string][]byte{}
	}
	w.Records[records.CIReadKey(cd.Repo, cd.Number, cd.Head)] = readAt
	return w
}

// indexHead records, in commit w, that pull request cur's head is its head,
// when it moved.
func (p *Decider) indexHead(ctx context.Context, w *store.Commit, old, cur *rules.PullRequest) error {
	if cur.Head == "" || !cur.Open || (old != nil && old.Head == cur.Head && old.Open) {
		return nil
	}
	var prs []int
	if _, err := records.Load(ctx, p.store, records.HeadKey(cur.Repo, cur.Head), &prs); err != nil {
		return err
	}
	if slices.Contains(prs, cur.Number) {
		return nil
	}
	b, err := json.Marshal(append(prs, cur.Number))
	if err != nil {
		return err
	}
	w.Records[records.HeadKey(cur.Repo, cur.Head)] = b
	return nil
}

func ciActor(r *rules.CIRun) string {
	if r == nil {
		return "ci"
	}
	return "ci (" + r.Name + ")"
}

func union(a, b []int) []int {
	out := slices.Clone(a)
	for _, n := range b {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}
