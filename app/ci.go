package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/countersign/countersign/app/mergequeue"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
	"github.com/google/go-github/v60/github"
)

// This file takes in CI results: check runs and commit statuses are the verify
// commands' exit codes (seed 002). A result arrives under its repository's
// key; it is handed, as an internal ciEvent delivery, to each open pull request
// whose head it is about, under that pull request's key; there it is recorded
// with the pull request and, when a result that some contract counts changed,
// fanned out to the tasks the pull request closes (rules.PRChecked).

// ciEvent is the internal event of CI results for one pull request's head.
const ciEvent = "countersign.ci"

// ciDelivery is the payload of a ciEvent delivery: a run to record, or (Read)
// a request to read every run of the head again.
type ciDelivery struct {
	Installation int64        `json:"installation"`
	Repo         string       `json:"repo"`
	Number       int          `json:"number"`
	Head         string       `json:"head"`
	Run          *rules.CIRun `json:"run,omitempty"`
	Read         bool         `json:"read,omitempty"`
	At           time.Time    `json:"at,omitzero"` // when the result came
	// Suite is the check suite whose completion asks for a read: a read that
	// already saw every run of it complete saw what it announces.
	Suite int64 `json:"suite,omitempty"`
}

// ciRead is what the last read of a head's CI results saw: the check suites
// all of whose runs were complete (no clock is compared: replicas' clocks
// differ).
type ciRead struct {
	Suites []int64 `json:"suites"`
}

// Limits on what is read of a pull request.
const (
	maxFilePages = 3 // 300 changed files
	maxRunPages  = 3 // 300 check runs
)

func (p *Processor) onCheckRun(ctx context.Context, d *store.Delivery, e *github.CheckRunEvent) (store.Commit, error) {
	inst, repo, cr := e.GetInstallation().GetID(), e.GetRepo().GetFullName(), e.GetCheckRun()
	if inst == 0 || repo == "" || cr.GetHeadSHA() == "" || p.ownApp(cr.GetApp()) {
		return store.Commit{}, nil
	}
	if cr.GetName() == rules.CheckName { // another App's: forged (mergegroup.go)
		if e.GetAction() != "created" {
			return store.Commit{}, nil
		}
		return p.forgedGate(ctx, inst, repo, cr.GetHeadSHA(), mergequeue.ForgedCheckRun, "the App "+cr.GetApp().GetSlug(), d, p.log)
	}
	run := checkRunOf(cr)
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
	return p.toPulls(ctx, inst, repo, cr.GetHeadSHA(), prs, d, ciDelivery{Run: &run, At: eventTime(at, d)})
}

func (p *Processor) onCheckSuite(ctx context.Context, d *store.Delivery, e *github.CheckSuiteEvent) (store.Commit, error) {
	inst, repo, cs := e.GetInstallation().GetID(), e.GetRepo().GetFullName(), e.GetCheckSuite()
	if inst == 0 || repo == "" || cs.GetHeadSHA() == "" || p.ownApp(cs.GetApp()) {
		return store.Commit{}, nil
	}
	var prs []int
	for _, pr := range cs.PullRequests {
		prs = append(prs, pr.GetNumber())
	}
	return p.toPulls(ctx, inst, repo, cs.GetHeadSHA(), prs, d, ciDelivery{Read: true, Suite: cs.GetID(), At: eventTime(cs.GetUpdatedAt().Time, d)})
}

func (p *Processor) onStatus(ctx context.Context, d *store.Delivery, e *github.StatusEvent) (store.Commit, error) {
	inst, repo := e.GetInstallation().GetID(), e.GetRepo().GetFullName()
	if inst == 0 || repo == "" || e.GetSHA() == "" || e.GetContext() == "" {
		return store.Commit{}, nil
	}
	if e.GetContext() == rules.CheckName { // countersign posts no status: forged (mergegroup.go)
		return p.forgedGate(ctx, inst, repo, e.GetSHA(), mergequeue.ForgedStatus, "@"+e.GetSender().GetLogin(), d, p.log)
	}
	// The status event's sender is the status's creator.
	run := rules.CIRun{Name: e.GetContext(), Status: true, ID: e.GetID(), State: e.GetState(), URL: e.GetTargetURL(),
		At: e.GetUpdatedAt().UTC(), Creator: user(e.GetSender())}
	return p.toPulls(ctx, inst, repo, e.GetSHA(), nil, d, ciDelivery{Run: &run, At: eventTime(e.GetUpdatedAt().Time, d)})
}

// ownApp reports whether a check run or suite is this App's own.
func (p *Processor) ownApp(a *github.App) bool {
	return a != nil && p.gh.appID != 0 && a.GetID() == p.gh.appID
}

// toPulls hands a CI result to every open pull request whose head is sha: those
// the webhook names and those the head index knows (statuses name none, nor do
// check runs on forks' pull requests).
func (p *Processor) toPulls(ctx context.Context, inst int64, repo, sha string, prs []int, d *store.Delivery, cd ciDelivery) (store.Commit, error) {
	var known []int
	if _, err := loadRecord(ctx, p.store, headRecordKey(repo, sha), &known); err != nil {
		return store.Commit{}, err
	}
	var w store.Commit
	for _, n := range union(prs, known) {
		cd.Installation, cd.Repo, cd.Number, cd.Head = inst, repo, n, sha
		w.Enqueue = append(w.Enqueue, derived(fmt.Sprintf("%s/ci/%d", d.ID, n), ciEvent, rules.TaskKey(repo, n), cd))
	}
	return w, nil
}

// decideCI records CI results on a pull request's head and tells the tasks it
// closes when a result their contracts count changed.
func (p *Processor) decideCI(ctx context.Context, cd ciDelivery, d *store.Delivery, log *slog.Logger) (store.Commit, error) {
	pr, err := loadPR(ctx, p.store, cd.Repo, cd.Number)
	if err != nil || pr == nil || !pr.Open || pr.Head != cd.Head {
		return store.Commit{}, err // an old head's result, or a pull request countersign does not follow
	}
	c, err := p.gh.Installation(cd.Installation)
	if err != nil {
		return store.Commit{}, permanent(err)
	}
	runs, changed := pr.Runs, false
	var readAt []byte // what this read of the head's CI results saw, to record
	switch {
	case cd.Read:
		// A burst of suites completing on one head is read once: a read that
		// saw every run of this suite complete saw what it announces.
		var last ciRead
		if b, err := p.store.Get(ctx, ciReadKey(cd.Repo, cd.Number, cd.Head)); err == nil {
			if json.Unmarshal(b, &last) == nil && cd.Suite != 0 && slices.Contains(last.Suites, cd.Suite) {
				return store.Commit{}, nil
			}
		} else if !errors.Is(err, store.ErrNotFound) {
			return store.Commit{}, fmt.Errorf("read %s: %w", ciReadKey(cd.Repo, cd.Number, cd.Head), err)
		}
		var done []int64
		if runs, done, err = p.ciRuns(ctx, c, cd.Repo, cd.Head); err != nil {
			return store.Commit{}, err
		}
		readAt, _ = json.Marshal(ciRead{Suites: done}) // plain data: cannot fail
		for _, r := range pr.Runs {                    // a status read now is at least as new as one recorded
			runs, _ = rules.MergeRun(runs, r)
		}
		changed = !slices.Equal(runs, pr.Runs)
	case cd.Run != nil:
		runs, changed = rules.MergeRun(pr.Runs, *cd.Run)
	}
	if !changed {
		return recordRead(store.Commit{}, cd, readAt), nil
	}
	cfg, err := p.config(ctx, c, cd.Repo, log)
	if err != nil {
		return store.Commit{}, err
	}
	counted := !slices.Equal(rules.RelevantRuns(cfg.Contracts, runs), rules.RelevantRuns(cfg.Contracts, pr.Runs))
	old := *pr
	pr.Runs = runs
	w, err := p.fanout(ctx, cd.Installation, d, &old, pr, rules.Event{Kind: rules.PRChecked, Actor: rules.User{Login: ciActor(cd.Run)}, At: eventTime(cd.At, d)}, linkGate{})
	if err != nil || counted {
		return recordRead(w, cd, readAt), err
	}
	w.Enqueue = nil // recorded; no contract counts it
	return recordRead(w, cd, readAt), nil
}

// ciReadKey records what the last read of pull request n's CI results on
// head saw (ciRead).
func ciReadKey(repo string, n int, head string) string {
	return "ci-read/" + rules.TaskKey(repo, n) + "@" + head
}

// recordRead adds to w, when the results were read (readAt not nil), what
// that read saw: committed with what was read, never without it.
func recordRead(w store.Commit, cd ciDelivery, readAt []byte) store.Commit {
	if readAt == nil {
		return w
	}
	if w.Records == nil {
		w.Records = map[string][]byte{}
	}
	w.Records[ciReadKey(cd.Repo, cd.Number, cd.Head)] = readAt
	return w
}

// ciRuns reads the CI results on sha: the latest check run of each name (but
// this App's own) and the latest status of each context.
func (p *Processor) ciRuns(ctx context.Context, c *github.Client, repo, sha string) ([]rules.CIRun, []int64, error) {
	owner, name := splitRepo(repo), repoName(repo)
	var runs []rules.CIRun
	complete := map[int64]bool{} // check suite -> every run of it read is completed
	opt := &github.ListCheckRunsOptions{Filter: github.String("latest"), ListOptions: github.ListOptions{PerPage: 100}}
	for page := 0; page < maxRunPages; page++ {
		res, resp, err := c.Checks.ListCheckRunsForRef(ctx, owner, name, sha, opt)
		if err != nil {
			return nil, nil, fmt.Errorf("list check runs on %s: %w", sha, err)
		}
		for _, cr := range res.CheckRuns {
			if !p.ownApp(cr.GetApp()) && cr.GetName() != rules.CheckName { // another App's of that name is forged: no CI result
				runs, _ = rules.MergeRun(runs, checkRunOf(cr))
				if id := cr.GetCheckSuite().GetID(); id != 0 {
					done, seen := complete[id]
					complete[id] = (done || !seen) && cr.GetStatus() == "completed"
				}
			}
		}
		if resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	// The statuses list, unlike the combined status, names each status's
	// creator (a builder's own statuses count for nothing); newest first, so
	// the first page holds the latest of each context.
	sopt := &github.ListOptions{PerPage: 100}
	for page := 0; page < maxRunPages; page++ {
		sts, resp, err := c.Repositories.ListStatuses(ctx, owner, name, sha, sopt)
		if err != nil {
			return nil, nil, fmt.Errorf("list statuses of %s: %w", sha, err)
		}
		for _, s := range sts {
			if s.GetContext() == rules.CheckName {
				continue // forged: no CI result
			}
			runs, _ = rules.MergeRun(runs, rules.CIRun{Name: s.GetContext(), Status: true, ID: s.GetID(), State: s.GetState(),
				URL: s.GetTargetURL(), At: s.GetUpdatedAt().UTC(), Creator: user(s.GetCreator())})
		}
		if resp.NextPage == 0 {
			break
		}
		sopt.Page = resp.NextPage
	}
	var suites []int64
	for id, done := range complete {
		if done {
			suites = append(suites, id)
		}
	}
	slices.Sort(suites)
	return runs, suites, nil
}

// checkRunOf is a check run as rules sees it: a result, and the App that
// created it.
func checkRunOf(cr *github.CheckRun) rules.CIRun {
	return rules.CIRun{Name: cr.GetName(), ID: cr.GetID(), State: cr.GetStatus(), Conclusion: cr.GetConclusion(),
		URL: firstOf(cr.GetHTMLURL(), cr.GetDetailsURL()), At: cr.GetStartedAt().UTC(), App: cr.GetApp().GetSlug()}
}

// changedFiles are the paths pull request n changes (at most 300: GitHub
// lists up to 3,000, and the first 300 say well enough what it touches).
func (p *Processor) changedFiles(ctx context.Context, c *github.Client, repo string, n int) ([]string, error) {
	out := []string{}
	opt := &github.ListOptions{PerPage: 100}
	for page := 0; page < maxFilePages; page++ {
		files, resp, err := c.PullRequests.ListFiles(ctx, splitRepo(repo), repoName(repo), n, opt)
		if err != nil {
			return nil, fmt.Errorf("list files of #%d: %w", n, err)
		}
		for _, f := range files {
			out = append(out, f.GetFilename())
			if prev := f.GetPreviousFilename(); prev != "" { // renamed: the old name is changed too
				out = append(out, prev)
			}
		}
		if resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	return out, nil
}

// headRecordKey keys the pull requests whose head is sha.
func headRecordKey(repo, sha string) string { return "head/" + repo + "@" + sha }

// indexHead records, in commit w, that pull request cur's head is its head,
// when it moved.
func (p *Processor) indexHead(ctx context.Context, w *store.Commit, old, cur *rules.PullRequest) error {
	if cur.Head == "" || !cur.Open || (old != nil && old.Head == cur.Head && old.Open) {
		return nil
	}
	var prs []int
	if _, err := loadRecord(ctx, p.store, headRecordKey(cur.Repo, cur.Head), &prs); err != nil {
		return err
	}
	if slices.Contains(prs, cur.Number) {
		return nil
	}
	b, err := json.Marshal(append(prs, cur.Number))
	if err != nil {
		return err
	}
	w.Records[headRecordKey(cur.Repo, cur.Head)] = b
	return nil
}

func ciActor(r *rules.CIRun) string {
	if r == nil {
		return "ci"
	}
	return "ci (" + r.Name + ")"
}

func firstOf(s ...string) string {
	for _, v := range s {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
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
