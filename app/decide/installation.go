package decide

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"time"

	"github.com/countersign/countersign/app/deliveries"
	"github.com/countersign/countersign/app/fault"
	"github.com/countersign/countersign/app/gh"
	"github.com/countersign/countersign/app/reconcile"
	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
	"github.com/google/go-github/v60/github"
)

// Reconciliation (package reconcile) as the processor runs it: a resync
// delivery reads a repository and queues a repair for each drifted task; a
// repair delivery, under the task's key, sets the task's owned labels to what
// its record says and refreshes its pull requests' verification checks.

// decideReconcile handles reconcile.ResyncEvent and reconcile.RepairEvent.
func (p *Decider) decideReconcile(ctx context.Context, d *store.Delivery, log *slog.Logger) (store.Commit, error) {
	if d.Event == reconcile.RepairEvent {
		var r reconcile.Repair
		if err := json.Unmarshal(d.Payload, &r); err != nil {
			return store.Commit{}, fault.Permanent(fmt.Errorf("parse %s: %w", d.Event, err))
		}
		return p.repair(ctx, d, r, log)
	}
	var r reconcile.Resync
	if err := json.Unmarshal(d.Payload, &r); err != nil {
		return store.Commit{}, fault.Permanent(fmt.Errorf("parse %s: %w", d.Event, err))
	}
	if r.All {
		repos, err := reconcile.TrackedRepos(ctx, p.store)
		if err != nil {
			return store.Commit{}, err
		}
		var w store.Commit
		now := time.Now()
		for _, repo := range repos {
			w.Enqueue = append(w.Enqueue, reconcile.NewResync(reconcile.Resync{Repo: repo, Why: r.Why}, now))
		}
		log.Info("resync of every tracked repository queued", "repos", len(repos), "why", r.Why)
		return w, nil
	}
	if r.Repo == "" || gh.OwnerOf(r.Repo) == "" || gh.NameOf(r.Repo) == "" {
		return store.Commit{}, fault.Permanent(fmt.Errorf("%s names no repository: %q", d.Event, r.Repo))
	}
	return p.resync(ctx, d, r, log)
}

// Before names the effects the decision on d presumes already applied: a
// resync that starts tracking a repository (r.Labels, on installation)
// creates countersign's labels there before it compares the tasks' labels,
// and a failure to create them fails the resync, which is retried. The
// processor applies them before Decide, so deciding still writes nothing.
func (p *Decider) Before(ctx context.Context, d *store.Delivery, log *slog.Logger) ([]records.OutboxEffect, error) {
	if d.Event != deliveries.Resync {
		return nil, nil
	}
	var r reconcile.Resync
	if err := json.Unmarshal(d.Payload, &r); err != nil || !r.Labels || r.All ||
		r.Repo == "" || gh.OwnerOf(r.Repo) == "" || gh.NameOf(r.Repo) == "" {
		return nil, nil // nothing to create first (Decide reports a bad payload)
	}
	_, inst, err := p.resyncInstallation(ctx, r, log)
	if err != nil || inst == 0 {
		return nil, err
	}
	return []records.OutboxEffect{{Installation: inst, Delivery: d.ID, Key: d.ID + "/labels", At: time.Now().UTC(), Effect: ownedLabels(r.Repo)}}, nil
}

// resyncInstallation is repo r's tracking record and the installation to read
// it through: the resync's, else the recorded one, else the one GitHub names
// (0: the App is not installed there).
func (p *Decider) resyncInstallation(ctx context.Context, r reconcile.Resync, log *slog.Logger) (reconcile.RepoRecord, int64, error) {
	rec, err := reconcile.LoadRepo(ctx, p.store, r.Repo)
	if err != nil {
		return rec, 0, err
	}
	inst := r.Installation
	if inst == 0 {
		inst = rec.Installation
	}
	if inst == 0 {
		in, _, err := p.gh.App().Apps.FindRepositoryInstallation(ctx, gh.OwnerOf(r.Repo), gh.NameOf(r.Repo))
		if fault.IsStatus(err, http.StatusNotFound) {
			log.Warn("resync skipped: the App is not installed on the repository", "repo", r.Repo)
			return rec, 0, nil
		}
		if err != nil {
			return rec, 0, fmt.Errorf("find the installation of %s: %w", r.Repo, err)
		}
		inst = in.GetID()
	}
	return rec, inst, nil
}

// resync compares repo's recently updated tasks' labels with their records
// (a new repository's labels were created before: see Before).
func (p *Decider) resync(ctx context.Context, d *store.Delivery, r reconcile.Resync, log *slog.Logger) (store.Commit, error) {
	start := time.Now().UTC()
	rec, inst, err := p.resyncInstallation(ctx, r, log)
	if err != nil || inst == 0 {
		return store.Commit{}, err
	}
	c, err := p.gh.Installation(inst)
	if err != nil {
		return store.Commit{}, fault.Permanent(err)
	}
	openPRs := map[int]bool{} // of the tasks compared: their checks are recomputed on a full resync
	sc, err := reconcile.Compare(ctx, c, r.Repo, r.Since, r.Page, func(ctx context.Context, n int) ([]string, bool, error) {
		t, err := records.LoadTask(ctx, p.store, r.Repo, n)
		if err != nil || t == nil {
			return nil, false, err
		}
		for _, pr := range t.OpenPRs() {
			openPRs[pr] = true
		}
		return t.Labels(), true, nil
	})
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
		w.Enqueue = append(w.Enqueue, reconcile.NewResync(next, start))
	} else if r.Page == 0 || !rec.ReconciledAt.IsZero() || r.Since.IsZero() {
		rec.ReconciledAt = start
	}
	rec.Installation = inst
	b, err := json.Marshal(rec)
	if err != nil {
		return store.Commit{}, fmt.Errorf("encode %s: %w", reconcile.RepoKey(r.Repo), err)
	}
	w.Records = map[string][]byte{reconcile.RepoKey(r.Repo): b}
	for _, dr := range sc.Drifts {
		w.Enqueue = append(w.Enqueue, reconcile.NewRepair(reconcile.Repair{Installation: inst, Repo: r.Repo, Number: dr.Number, Had: dr.Had}, d.ID, start))
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
	if p.recon != nil {
		p.recon.Resyncs.WithLabelValues(r.Why).Inc()
		p.recon.Checked.Add(float64(sc.Checked))
	}
	log.Info("repository resynced", "repo", r.Repo, "why", r.Why, "since", r.Since, "checked", sc.Checked,
		"drifted", len(sc.Drifts), "requests", sc.Requests)
	return w, nil
}

// repair makes a task's owned labels what its record says, and its pull
// requests' verification checks what its record makes them.
func (p *Decider) repair(ctx context.Context, d *store.Delivery, r reconcile.Repair, log *slog.Logger) (store.Commit, error) {
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
	w.Records["card-digest/"+rules.TaskKey(r.Repo, r.Number)] = nil
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
	if p.recon != nil {
		p.recon.Repairs.WithLabelValues("labels").Inc()
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

// onInstallation starts tracking the repositories an installation (or an
// installation_repositories addition) gives the App: their owned labels are
// created and they are resynced.
func (p *Decider) onInstallation(ctx context.Context, d *store.Delivery, raw any, log *slog.Logger) (store.Commit, error) {
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
		c, err := p.gh.Installation(inst)
		if err != nil {
			return store.Commit{}, fault.Permanent(err)
		}
		opt := &github.ListOptions{PerPage: 100}
		for {
			list, resp, err := c.Apps.ListRepos(ctx, opt)
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
		w.Enqueue = append(w.Enqueue, reconcile.NewResync(reconcile.Resync{Installation: inst, Repo: repo, Labels: true, Why: "installation"}, now))
	}
	log.Info("repositories to track", "installation", inst, "repos", len(w.Enqueue))
	return w, nil
}
