// This file decides a task's event: its facts, rules.DecideTask, the commit.

package decide

import (
	"context"
	"fmt"
	"github.com/google/go-github/v60/github"
	"log/slog"
	"slices"

	"github.com/countersign/countersign/app/card"
	"github.com/countersign/countersign/app/deliveries"
	"github.com/countersign/countersign/app/fault"
	"github.com/countersign/countersign/app/gh"
	"github.com/countersign/countersign/app/goals"
	"github.com/countersign/countersign/app/people"
	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
)

// decideTask decides ev for its task; rules asks for the facts it needs.
func (p *Decider) decideTask(ctx context.Context, inst int64, d *store.Delivery, ev rules.Event, log *slog.Logger) (store.Commit, error) {
	w, err := p.decideTaskWith(ctx, inst, d, ev, nil, log)
	if err == nil && ev.PR != nil && ev.PR.Open && len(w.Records) == 0 && len(w.Enqueue) == 0 {
		switch ev.Kind {
		case rules.PRLinked, rules.PRReady, rules.PRDraft, rules.PRPushed:
			// A pull request's work on an issue that is no task: no task
			// asks for its check, so this does (decideCheck answers one that
			// names no task as gate.untracked says).
			w.Enqueue = append(w.Enqueue, deliveries.Derived(fmt.Sprintf("%s/check/%d", d.ID, ev.PR.Number), deliveries.Check,
				rules.TaskKey(ev.Issue.Repo, ev.PR.Number), deliveries.CheckPayload{Installation: inst, Repo: ev.Issue.Repo,
					Number: ev.PR.Number, Interactive: !deliveries.Background(d)}))
		}
	}
	return w, err
}

// decideTaskWith is decideTask for an event that carries the task card as it
// was just deleted (gone, nil for none): a record lost with the store may be
// rebuilt from it.
func (p *Decider) decideTaskWith(ctx context.Context, inst int64, d *store.Delivery, ev rules.Event, gone *github.IssueComment, log *slog.Logger) (store.Commit, error) {
	repo, n := ev.Issue.Repo, ev.Issue.Number
	c, err := p.clients(inst)
	if err != nil {
		return store.Commit{}, fault.Permanent(err)
	}
	task, err := records.LoadTask(ctx, p.store, repo, n)
	if err != nil {
		return store.Commit{}, err
	}
	cfg, err := p.look.Config(ctx, c, repo, log)
	if err != nil {
		return store.Commit{}, err
	}
	rebuilt := false
	if task == nil {
		// A goal issue (any issue this App opened) is never a task, whatever
		// event names it: a pull request's "Fixes #N" included.
		var m int
		if goal, err := records.Load(ctx, p.store, records.GoalIssueKey(repo, n), &m); err != nil || goal {
			return store.Commit{}, err
		}
		if task, rebuilt, err = p.untracked(ctx, c, &ev, gone, log); err != nil || (task == nil && ev.Issue.Title == "" && ev.Issue.Author.IsZero()) {
			return store.Commit{}, err // gone, or a pull request: nothing to track
		}
		if task == nil {
			if bot, err := p.gh.BotLogin(ctx); err != nil || ev.Issue.Author.Login == bot {
				return store.Commit{}, err
			}
		}
	}
	// rules asks for the facts it needs as it decides; a fact that could not
	// be had fails the delivery (it is retried) rather than commit a
	// decision made without it.
	ask := people.New(c, repo, cfg).Ask(ctx, people.Sources{
		Account: func(ctx context.Context, login string) (rules.User, error) { return p.gh.Account(ctx, c, login) },
	})
	facts := rules.Facts{Config: cfg, Ask: ask}
	if wantsLinks(task, ev) {
		links, err := p.linksNow(ctx, c, task, ev, log)
		if err != nil {
			return store.Commit{}, err
		}
		if task == nil || !task.SameLinks(*links) {
			ev.Links = links
		}
	}
	dec := rules.DecideTask(task, ev, facts)
	if err := ask.Err(); err != nil {
		return store.Commit{}, err
	}
	var ahead map[string][]byte
	if dec.Recheck && !rebuilt && task != nil {
		// Refused on a picture deliveries still on their way may change:
		// read GitHub once, take in what it shows, and decide again
		// (recheck.go).
		if dec, ahead, err = p.recheck(ctx, c, task, ev, facts, dec, log); err != nil {
			return store.Commit{}, err
		}
		if err := ask.Err(); err != nil {
			return store.Commit{}, err
		}
	}
	if rebuilt {
		card.KeepInStep(&dec, task, ev)
	}
	var grouped map[int]bool
	if dec.Task != nil && len(dec.Refresh) > 0 {
		if dec.Effects, grouped, err = p.withChecks(ctx, repo, dec); err != nil {
			return store.Commit{}, err
		}
	}
	if dec.Task != nil {
		log.Debug("task decided", "task", dec.Task.Key(), "state", dec.Task.State, "effects", len(dec.Effects))
	}
	w, err := records.CommitFor(inst, d, dec.Task, dec.Effects)
	if err != nil {
		return w, err
	}
	if len(ahead) > 0 {
		if w.Records == nil {
			w.Records = map[string][]byte{}
		}
		for k, v := range ahead {
			w.Records[k] = v
		}
	}
	linksWere := task
	if rebuilt && task != nil {
		// A record rebuilt after a store loss: the dependents records of its
		// blockers were lost with it, and are written again.
		c := *task
		c.Blockers = nil
		linksWere = &c
	}
	if err := p.linkWrites(ctx, inst, d, linksWere, dec.Task, ev, &w); err != nil {
		return store.Commit{}, err
	}
	if task == nil && dec.Task == nil && (ev.Kind == rules.IssueClosed || ev.Kind == rules.IssueReopened) {
		// An issue that is no task may block tasks all the same.
		state := "open"
		if ev.Kind == rules.IssueClosed {
			state = "closed"
		}
		news, err := p.tellDependents(ctx, d, repo, n, rules.Blocker{Repo: repo, Number: n, Title: ev.Issue.Title,
			Issue: rules.IssueStatusOf(state, ev.Reason)}, ev)
		if err != nil {
			return store.Commit{}, err
		}
		w.Enqueue = append(w.Enqueue, news...)
	}
	if dec.Task != nil {
		w.Enqueue = append(w.Enqueue, goals.Notes(inst, d, dec.Task, dec.Goals, ev)...)
		if ev.Kind == rules.IssueAssigned && len(dec.Task.Assignees) > 0 {
			regates, err := p.regates(ctx, inst, d, repo, n)
			if err != nil {
				return store.Commit{}, err
			}
			w.Enqueue = append(w.Enqueue, regates...)
		}
	}
	for _, pr := range dec.Refresh {
		w.Enqueue = append(w.Enqueue, deliveries.Derived(fmt.Sprintf("%s/check/%d", d.ID, pr), deliveries.Check, rules.TaskKey(repo, pr),
			deliveries.CheckPayload{Installation: inst, Repo: repo, Number: pr, Interactive: !deliveries.Background(d), Grouped: grouped[pr]}))
	}
	return w, nil
}

// untracked prepares an event on an issue countersign has no record of. A
// record lost with the store is rebuilt from the task card (its marker carries
// the record, signed; gone is the card just deleted, if the event is its
// deletion) and GitHub's history (see card.Recover). An event fanned out from
// a pull request knows only the issue's number: the issue is read, and a pull
// request or a missing issue is skipped.
func (p *Decider) untracked(ctx context.Context, c Client, ev *rules.Event, gone *github.IssueComment, log *slog.Logger) (*rules.Task, bool, error) {
	owner, name, n := gh.OwnerOf(ev.Issue.Repo), gh.NameOf(ev.Issue.Repo), ev.Issue.Number
	if ev.Issue.Title == "" && ev.Issue.Author.IsZero() {
		is, _, err := c.GetIssue(ctx, owner, name, n)
		if fault.IsStatus(err, 404) || fault.IsStatus(err, 410) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("read issue #%d: %w", n, err)
		}
		if is.IsPullRequest() {
			return nil, false, nil
		}
		ev.Issue = issueFacts(ev.Issue.Repo, is)
	}
	for _, l := range ev.Issue.Labels {
		if _, ok := rules.StateFromLabel(l); ok {
			bot, err := p.gh.BotLogin(ctx)
			if err != nil {
				return nil, false, err
			}
			return card.Recover(ctx, c, owner, name, bot, p.keys, ev.Issue, gone, log)
		}
	}
	return nil, false, nil
}

// withChecks is dec's effects with the check on the head of each pull
// request whose check the decision changes (dec.Refresh), in the same group
// of writes as the task's label (docs/cost.md, One decision's writes go
// together): before the label when the task is now verified (the gate
// opens: nobody sees a verified task whose pull request is still blocked),
// right after it otherwise (the gate closes or stays shut: the task's label
// says so before the check turns back). Each is worked out when it is
// applied (rules.Effect.Latest), from the records as they are then, under
// its commit's write lock (app/effects/headlock.go), so one applied late
// never says less than the records. grouped are the pull requests whose
// head's check is among them: their check delivery leaves the head out (it
// would write it in a group of its own, before the label when the gate
// closes). A pull request with no record is left to its check delivery,
// which reads it again.
func (p *Decider) withChecks(ctx context.Context, repo string, dec rules.Decision) ([]rules.Effect, map[int]bool, error) {
	var checks []rules.Effect
	grouped := map[int]bool{}
	heads := map[string]bool{}
	for _, n := range dec.Refresh {
		pr, err := records.LoadPR(ctx, p.store, repo, n)
		if err != nil {
			return nil, nil, err
		}
		if pr == nil || pr.Head == "" || !(pr.Open || pr.Merged) {
			continue
		}
		grouped[n] = true
		if !heads[pr.Head] { // the check on a head answers for each pull request there
			heads[pr.Head] = true
			checks = append(checks, rules.Effect{Kind: rules.EffectCheck, Repo: repo, Number: n, SHA: pr.Head, Latest: true})
		}
	}
	if len(checks) == 0 {
		return dec.Effects, nil, nil
	}
	at := 0 // the gate opens: the check goes first
	if dec.Task.State != rules.Verified || dec.Task.Failing {
		for i, e := range dec.Effects {
			if e.Kind == rules.EffectSyncLabels && e.Repo == dec.Task.Repo && e.Number == dec.Task.Number {
				at = i + 1
				break
			}
		}
	}
	return slices.Concat(dec.Effects[:at:at], checks, dec.Effects[at:]), grouped, nil
}
