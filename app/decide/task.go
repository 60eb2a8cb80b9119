// This file decides a task's event: its facts, rules.DecideTask, the commit.

package decide

import (
	"context"
	"fmt"
	"github.com/google/go-github/v60/github"
	"log/slog"

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
			deliveries.CheckPayload{Installation: inst, Repo: repo, Number: pr, Interactive: !deliveries.Background(d)}))
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
