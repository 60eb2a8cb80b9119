// Package rcdecide decides reconciliation (package reconcile) as the
// processor runs it: a resync delivery reads a repository and queues a
// repair for each drifted task; a repair delivery, under the task's key, sets
// the task's owned labels to what its record says and refreshes its pull
// requests' verification checks; an installation's repositories are tracked
// and resynced. It reads GitHub and the store and writes nothing: a new
// repository's labels are an effect named first (LabelsFirst). Package decide
// calls it.
package rcdecide

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"time"

	"github.com/countersign/countersign/app/board"
	"github.com/countersign/countersign/app/deliveries"
	"github.com/countersign/countersign/app/fault"
	"github.com/countersign/countersign/app/gh"
	rc "github.com/countersign/countersign/app/reconcile"
	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
	"github.com/google/go-github/v60/github"
)

// Client is what reconciliation reads of GitHub, for one installation.
type Client interface {
	rc.Client
	ListInstallationRepos(ctx context.Context, opts *github.ListOptions) (*github.ListRepositories, *github.Response, error)
}

// Decider decides resyncs, repairs and installations.
type Decider struct {
	store   store.Store
	gh      *gh.GitHub                       // the App's own: which installation a repository has
	clients func(inst int64) (Client, error) // installation inst's GitHub
	metrics *rc.Metrics                      // nil: nothing is counted
}

// New is the decider reading the store st and GitHub (g the App's own,
// clients each installation's); metrics count resyncs and repairs.
func New(st store.Store, g *gh.GitHub, clients func(inst int64) (Client, error), metrics *rc.Metrics) *Decider {
	return &Decider{store: st, gh: g, clients: clients, metrics: metrics}
}

// Decide handles rc.ResyncEvent and rc.RepairEvent.
func (p *Decider) Decide(ctx context.Context, d *store.Delivery, log *slog.Logger) (store.Commit, error) {
	if d.Event == rc.RepairEvent {
		var r rc.Repair
		if err := json.Unmarshal(d.Payload, &r); err != nil {
			return store.Commit{}, fault.Permanent(fmt.Errorf("parse %s: %w", d.Event, err))
		}
		return p.repair(ctx, d, r, log)
	}
	var r rc.Resync
	if err := json.Unmarshal(d.Payload, &r); err != nil {
		return store.Commit{}, fault.Permanent(fmt.Errorf("parse %s: %w", d.Event, err))
	}
	if r.All {
		repos, err := rc.TrackedRepos(ctx, p.store)
		if err != nil {
			return store.Commit{}, err
		}
		var w store.Commit
		now := time.Now()
		for _, repo := range repos {
			w.Enqueue = append(w.Enqueue, rc.NewResync(rc.Resync{Repo: repo, Why: r.Why}, now))
		}
		log.Info("resync of every tracked repository queued", "repos", len(repos), "why", r.Why)
		return w, nil
	}
	if r.Repo == "" || gh.OwnerOf(r.Repo) == "" || gh.NameOf(r.Repo) == "" {
		return store.Commit{}, fault.Permanent(fmt.Errorf("%s names no repository: %q", d.Event, r.Repo))
	}
	return p.resync(ctx, d, r, log)
}

// LabelsFirst: a resync that starts tracking a repository (r.Labels) compares
// only once countersign's labels exist there; failing to create them fails it.
func (p *Decider) LabelsFirst(ctx context.Context, d *store.Delivery, log *slog.Logger) ([]records.OutboxEffect, error) {
	var r rc.Resync
	if err := json.Unmarshal(d.Payload, &r); err != nil || !r.Labels || r.All ||
		r.Repo == "" || gh.OwnerOf(r.Repo) == "" || gh.NameOf(r.Repo) == "" {
		return nil, nil // nothing to create first (Decide reports a bad payload)
	}
	_, inst, _, err := p.resyncInstallation(ctx, r, log)
	if err != nil || inst == 0 {
		return nil, err
	}
	return []records.OutboxEffect{{Installation: inst, Delivery: d.ID, Key: d.ID + "/labels", At: time.Now().UTC(), Effect: ownedLabels(r.Repo)}}, nil
}

// resyncInstallation is repo r's tracking record and the installation to read
// it through: the resync's, else the recorded one, else the one the App has
// on the repository's account (0: none; guessed: the repository may not be
// among those that installation was given).
func (p *Decider) resyncInstallation(ctx context.Context, r rc.Resync, log *slog.Logger) (_ rc.RepoRecord, _ int64, guessed bool, _ error) {
	rec, err := rc.LoadRepo(ctx, p.store, r.Repo)
	if err != nil {
		return rec, 0, false, err
	}
	inst := r.Installation
	if inst == 0 {
		inst = rec.Installation
	}
	if inst != 0 {
		return rec, inst, false, nil
	}
	// One list of the App's installations for every repository of a pass,
	// not a look-up of each.
	id, ok, err := p.gh.InstallationOf(ctx, gh.OwnerOf(r.Repo))
	if err != nil {
		return rec, 0, false, fmt.Errorf("find the installation of %s: %w", r.Repo, err)
	}
	if !ok {
		log.Warn("resync skipped: the App is not installed on the repository", "repo", r.Repo)
		return rec, 0, false, nil
	}
	return rec, id, true, nil
}

// resync compares repo's recently updated tasks' labels with their records
// (a new repository's labels were created before: see Before).
func (p *Decider) resync(ctx context.Context, d *store.Delivery, r rc.Resync, log *slog.Logger) (store.Commit, error) {
	start := time.Now().UTC()
	rec, inst, guessed, err := p.resyncInstallation(ctx, r, log)
	if err != nil || inst == 0 {
		return store.Commit{}, err
	}
	c, err := p.clients(inst)
	if err != nil {
		return store.Commit{}, fault.Permanent(err)
	}
	openPRs := map[int]bool{} // of the tasks compared: their checks are recomputed on a full resync
	sc, err := rc.Compare(ctx, c, r.Repo, r.Since, r.Page, func(ctx context.Context, n int) ([]string, bool, error) {
		t, err := records.LoadTask(ctx, p.store, r.Repo, n)
		if err != nil || t == nil {
			return nil, false, err
		}
		for _, pr := range t.OpenPRs() {
			openPRs[pr] = true
		}
		return t.Labels(), true, nil
	})
	if guessed && fault.IsStatus(err, http.StatusNotFound) {
		// The account's installation was not given this repository.
		log.Warn("resync skipped: the App is not installed on the repository", "repo", r.Repo, "installation", inst)
		return store.Commit{}, nil
	}
	if err != nil {
		return store.Commit{}, err
	}
	if sc.LowBudget { // pace: let the rate limit recover first
		return store.Commit{}, fault.WaitError{Wait: time.Minute, Why: fmt.Sprintf("resync of %s: installation rate limit below its reserve", r.Repo)}
	}
	w := store.Commit{}
	if sc.NextPage > 0 { // more than MaxPages of issues: continue in another delivery
		next := r
		next.Page, next.Labels = sc.NextPage, false
		w.Enqueue = append(w.Enqueue, rc.NewResync(next, start))
	} else if r.Page == 0 || !rec.ReconciledAt.IsZero() || r.Since.IsZero() {
		rec.ReconciledAt = start
	}
	rec.Installation = inst
	b, err := json.Marshal(rec)
	if err != nil {
		return store.Commit{}, fmt.Errorf("encode %s: %w", rc.RepoKey(r.Repo), err)
	}
	w.Records = map[string][]byte{rc.RepoKey(r.Repo): b}
	for _, dr := range sc.Drifts {
		w.Enqueue = append(w.Enqueue, rc.NewRepair(rc.Repair{Installation: inst, Repo: r.Repo, Number: dr.Number, Had: dr.Had}, d.ID, start))
	}
	if r.Since.IsZero() { // a full resync: every open pull request's check as the records make it (written only if it changed)
		prs := make([]int, 0, len(openPRs))
		for pr := range openPRs {
			prs = append(prs, pr)
		}
		sort.Ints(prs)
		for _, pr := range prs {
			w.Enqueue = append(w.Enqueue, deliveries.Derived(fmt.Sprintf("%s/check/%d", d.ID, pr), deliveries.Check, rules.TaskKey(r.Repo, pr),
				deliveries.CheckPayload{Installation: inst, Repo: r.Repo, Number: pr}))
		}
	}
	// Every resync (the scheduled ones too: a change on the board leaves the
	// issue's updated_at alone) compares the board, when the repository keeps
	// one (package board): one read per 100 items.
	var cfg records.Config
	if ok, err := records.Load(ctx, p.store, records.ConfigKey(r.Repo), &cfg); err != nil {
		return store.Commit{}, err
	} else if ok && cfg.Config.Board.On() && r.Page == 0 {
		w.Enqueue = append(w.Enqueue, board.NewReconcile(d.ID+"/board", board.ReconcilePayload{Installation: inst, Repo: r.Repo, Why: r.Why}))
	}
	if p.metrics != nil {
		p.metrics.Resyncs.WithLabelValues(r.Why).Inc()
		p.metrics.Checked.Add(float64(sc.Checked))
	}
	log.Info("repository resynced", "repo", r.Repo, "why", r.Why, "since", r.Since, "checked", sc.Checked,
		"drifted", len(sc.Drifts), "requests", sc.Requests)
	return w, nil
}

// repair makes a task's owned labels what its record says, and its pull
// requests' verification checks what its record makes them.
func (p *Decider) repair(ctx context.Context, d *store.Delivery, r rc.Repair, log *slog.Logger) (store.Commit, error) {
	task, err := records.LoadTask(ctx, p.store, r.Repo, r.Number)
	if err != nil || task == nil {
		return store.Commit{}, err
	}
	want := task.Labels()
	e := rules.Effect{Kind: rules.EffectSyncLabels, Repo: r.Repo, Number: r.Number, Labels: want}
	if r.Strip != "" {
		e.Remove = []string{r.Strip}
	}
	w, err := records.CommitFor(r.Installation, d, nil, []rules.Effect{e, {Kind: rules.EffectSyncCard, Repo: r.Repo, Number: r.Number}})
	if err != nil {
		return w, err
	}
	// The labels drifted from what countersign recorded setting: forget
	// them, so that the sync reads what the issue carries.
	w.Records = map[string][]byte{records.LabelViewKey(r.Repo, r.Number): records.StaleLabelView}
	// Drift means GitHub and the store disagree (a store restored from a
	// backup, writes lost): what countersign recorded writing is no longer
	// to be trusted either. The card and the checks are written again, not
	// skipped as identical to a record that GitHub may not show.
	w.Records[records.CardDigestKey(r.Repo, r.Number)] = nil
	owner, name := gh.OwnerOf(r.Repo), gh.NameOf(r.Repo)
	for _, lp := range task.PRs {
		if (lp.Open || lp.Merged) && lp.Head != "" {
			w.Records["checkrun/"+owner+"/"+name+"/"+rules.CheckName+"@"+lp.Head] = nil
		}
	}
	for _, pr := range task.OpenPRs() {
		w.Enqueue = append(w.Enqueue, deliveries.Derived(fmt.Sprintf("%s/check/%d", d.ID, pr), deliveries.Check, rules.TaskKey(r.Repo, pr),
			deliveries.CheckPayload{Installation: r.Installation, Repo: r.Repo, Number: pr}))
	}
	if p.metrics != nil {
		p.metrics.Repairs.WithLabelValues("labels").Inc()
	}
	log.Info("label drift repaired", "task", task.Key(), "had", r.Had, "want", want, "why", r.Why)
	return w, nil
}

// ownedLabels is the effect that creates the labels countersign owns in repo,
// with their colours, unless they exist.
func ownedLabels(repo string) rules.Effect {
	var names []string
	for _, s := range rules.States {
		names = append(names, s.Label())
	}
	names = append(names, rules.LabelEscalated, rules.LabelUnverified, rules.LabelForced)
	sort.Strings(names)
	return rules.Effect{Kind: rules.EffectEnsureLabels, Repo: repo, Labels: names}
}

// OnInstallation starts tracking the repositories an installation (or an
// installation_repositories addition) gives the App: their owned labels are
// created and they are resynced.
func (p *Decider) OnInstallation(ctx context.Context, d *store.Delivery, raw any, log *slog.Logger) (store.Commit, error) {
	var inst int64
	var repos []*github.Repository
	switch e := raw.(type) {
	case *github.InstallationEvent:
		inst, repos = e.GetInstallation().GetID(), e.Repositories
	case *github.InstallationRepositoriesEvent:
		inst, repos = e.GetInstallation().GetID(), e.RepositoriesAdded
	}
	if inst == 0 {
		return store.Commit{}, nil
	}
	if len(repos) == 0 { // the payload may leave them out: ask
		c, err := p.clients(inst)
		if err != nil {
			return store.Commit{}, fault.Permanent(err)
		}
		opt := &github.ListOptions{PerPage: 100}
		for {
			list, resp, err := c.ListInstallationRepos(ctx, opt)
			if err != nil {
				return store.Commit{}, fmt.Errorf("list the installation's repositories: %w", err)
			}
			repos = append(repos, list.Repositories...)
			if resp.NextPage == 0 {
				break
			}
			opt.Page = resp.NextPage
		}
	}
	var w store.Commit
	now := time.Now()
	for _, r := range repos {
		repo := r.GetFullName()
		if repo == "" {
			continue
		}
		w.Enqueue = append(w.Enqueue, rc.NewResync(rc.Resync{Installation: inst, Repo: repo, Labels: true, Why: "installation"}, now))
	}
	log.Info("repositories to track", "installation", inst, "repos", len(w.Enqueue))
	return w, nil
}
