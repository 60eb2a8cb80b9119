// This file decides a task's event: its facts, rules.DecideTask, the commit.

package decide

import (
	"context"
	"fmt"
	"github.com/google/go-github/v60/github"
	"log/slog"
	"slices"
	"strings"

	"github.com/countersign/countersign/app/deliveries"
	"github.com/countersign/countersign/app/fault"
	"github.com/countersign/countersign/app/gh"
	"github.com/countersign/countersign/app/goals"
	"github.com/countersign/countersign/app/people"
	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
)

// decideTask decides ev for its task, looking up the facts the event needs.
func (p *Decider) decideTask(ctx context.Context, inst int64, d *store.Delivery, ev rules.Event, log *slog.Logger) (store.Commit, error) {
	return p.decideTaskWith(ctx, inst, d, ev, nil, log)
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
	facts, err := p.facts(ctx, c, people.New(c, repo, cfg), task, ev)
	if err != nil {
		return store.Commit{}, err
	}
	facts.Config = cfg
	dec := rules.DecideTask(task, ev, facts)
	if rebuilt {
		keepInStep(&dec, task, ev)
	}
	if dec.Task != nil {
		log.Debug("task decided", "task", dec.Task.Key(), "state", dec.Task.State, "effects", len(dec.Effects))
	}
	w, err := records.CommitFor(inst, d, dec.Task, dec.Effects)
	if err != nil {
		return w, err
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

// facts looks up what the event's decision depends on, and no more: the
// actor's standing for commands, reviews and closes; the team size for
// /verify; the leads for /reject and for a pull request's event that may fail
// an attempt (either may escalate); the pilots of agents involved.
func (p *Decider) facts(ctx context.Context, c Client, dir *people.Directory, task *rules.Task, ev rules.Event) (rules.Facts, error) {
	var f rules.Facts
	var err error
	if f.Pilots, err = p.pilots(ctx, c, dir, task, ev); err != nil {
		return f, err
	}
	if f.Leads == nil && mayEscalateByFailure(dir.Config(), task, ev) {
		if f.Leads, err = dir.Leads(ctx); err != nil {
			return f, err
		}
		if f.Leads == nil {
			f.Leads = []string{}
		}
	}
	var who rules.User
	switch ev.Kind {
	case rules.Commented:
		who = ev.Actor
	case rules.PRReviewed:
		if ev.Review != nil && (ev.Review.State == "approved" || ev.Review.State == "changes_requested") {
			who = ev.Review.Reviewer
		}
	case rules.IssueClosed:
		if ev.Reason == "not_planned" && (task == nil || task.State != rules.Verified) {
			who = ev.Actor
		}
	}
	if who.Login == "" {
		return f, nil
	}
	if f.Actor, err = dir.Person(ctx, who); err != nil {
		return f, err
	}
	if ev.Kind == rules.PRReviewed || slices.ContainsFunc(ev.Commands, func(c rules.Command) bool { return c.Name == rules.CmdApprove }) {
		if f.Actor.Critics, err = dir.Critics(ctx, who); err != nil {
			return f, err
		}
	}
	for _, cmd := range ev.Commands {
		switch {
		case (cmd.Name == rules.CmdVerify || cmd.Name == rules.CmdReject) && f.TeamSize == 0 && task != nil && task.State == rules.Completed:
			if f.TeamSize, err = dir.TeamSize(ctx); err != nil {
				return f, err
			}
		}
		switch {
		case cmd.Name == rules.CmdReject && f.Leads == nil && task != nil && task.State == rules.Completed:
			if f.Leads, err = dir.Leads(ctx); err != nil {
				return f, err
			}
			if f.Leads == nil {
				f.Leads = []string{}
			}
		}
	}
	return f, nil
}

// pilots resolves the pilots (agents: of the configuration) that the event
// may call on to accounts with ids, so that a pilot who renames stays the
// pilot. Only an event that involves a configured agent's account asks; the
// answers are cached for the process (GET /users/{login}).
func (p *Decider) pilots(ctx context.Context, c Client, dir *people.Directory, task *rules.Task, ev rules.Event) (map[string]rules.User, error) {
	if len(dir.Config().Agents) == 0 {
		return nil, nil
	}
	var involved []rules.User
	involved = append(involved, ev.Actor)
	involved = append(involved, ev.Issue.Assignees...)
	if ev.PR != nil {
		involved = append(involved, ev.PR.Author)
		for _, m := range ev.PR.Committers {
			involved = append(involved, m.User())
		}
		involved = append(involved, ev.PR.Pushers...)
	}
	if ev.Review != nil {
		involved = append(involved, ev.Review.Reviewer)
	}
	out := map[string]rules.User{}
	for _, u := range involved {
		pilot, ok := dir.Config().Pilot(u.Login)
		if !ok {
			continue
		}
		key := strings.ToLower(pilot)
		if _, done := out[key]; done {
			continue
		}
		if pin := dir.Config().Pins[key]; pin != 0 {
			out[key] = rules.User{ID: pin, Login: pilot} // the account agents: named, whatever holds the login now
			continue
		}
		acc, err := p.gh.Account(ctx, c, pilot)
		if err != nil {
			return nil, err
		}
		out[key] = acc
	}
	return out, nil
}

// mayEscalateByFailure reports whether ev may fail task's attempt once more
// and so escalate it for failed attempts: the leads are then looked up, to be
// @-mentioned.
func mayEscalateByFailure(cfg rules.Config, task *rules.Task, ev rules.Event) bool {
	return task != nil && !task.Escalated && ev.PR != nil &&
		(task.State == rules.Review || task.State == rules.Completed) &&
		task.FailedAttempts+1 >= cfg.Escalation.FailedAttempts
}

// untracked prepares an event on an issue countersign has no record of. A
// record lost with the store is rebuilt from the task card (its marker carries
// the record, signed; gone is the card just deleted, if the event is its
// deletion) and GitHub's history (see recoverTask). An event fanned out from
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
			return p.recoverTask(ctx, c, ev.Issue, gone, log)
		}
	}
	return nil, false, nil
}
