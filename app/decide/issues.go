package decide

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/countersign/countersign/app/deliveries"
	"github.com/countersign/countersign/app/gh"
	"github.com/countersign/countersign/app/goals"
	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
	"github.com/google/go-github/v60/github"
)

// This file turns GitHub's webhooks into rules' events. Issue events and
// comments on an issue are the task's own (their ordering key is the task's);
// pull request events, reviews and comments on a pull request are decided
// under the pull request's key, which records the pull request and fans its
// events out, as internal deliveries, to the tasks it closes.

var issueKinds = map[string]rules.EventKind{
	"opened": rules.IssueOpened, "edited": rules.IssueEdited, "milestoned": rules.IssueEdited, "demilestoned": rules.IssueEdited,
	"assigned": rules.IssueAssigned, "unassigned": rules.IssueAssigned,
	"closed": rules.IssueClosed, "reopened": rules.IssueReopened,
	"labeled": rules.IssueLabeled, "unlabeled": rules.IssueUnlabeled,
}

func (p *Decider) onIssue(ctx context.Context, d *store.Delivery, e *github.IssuesEvent, log *slog.Logger) (store.Commit, error) {
	inst, repo, issue := e.GetInstallation().GetID(), e.GetRepo().GetFullName(), e.GetIssue()
	if a := e.GetAction(); (a == "deleted" || a == "transferred") && inst != 0 && repo != "" && issue.GetNumber() != 0 && !issue.IsPullRequest() {
		m, err := p.goals.IssueOf(ctx, repo, issue)
		if err != nil || m != 0 {
			return onGoalIssue(d, e, inst, repo, issue, m), err
		}
		return p.onIssueGone(ctx, d, inst, repo, issue.GetNumber(), e.GetSender(), log)
	}
	kind, ok := issueKinds[e.GetAction()]
	if !ok || inst == 0 || repo == "" || issue.GetNumber() == 0 || issue.IsPullRequest() {
		return store.Commit{}, nil
	}
	if own, err := p.gh.Own(ctx, e.GetSender()); err != nil || own {
		return store.Commit{}, err
	}
	w, err := p.onPeoplesIssue(ctx, d, e, inst, repo, issue, kind, log)
	if err == nil && (kind == rules.IssueLabeled || kind == rules.IssueUnlabeled) && rules.Owned(e.GetLabel().GetName()) {
		// Someone changed a label countersign owns: the labels it recorded
		// setting are no longer what the issue carries. The next sync reads them.
		if w.Records == nil {
			w.Records = map[string][]byte{}
		}
		w.Records[records.LabelViewKey(repo, issue.GetNumber())] = records.StaleLabelView
	}
	return w, err
}

// onPeoplesIssue decides an issues event someone (not countersign) caused.
func (p *Decider) onPeoplesIssue(ctx context.Context, d *store.Delivery, e *github.IssuesEvent, inst int64, repo string, issue *github.Issue, kind rules.EventKind, log *slog.Logger) (store.Commit, error) {
	if m, err := p.goals.IssueOf(ctx, repo, issue); err != nil || m != 0 {
		if err != nil {
			return store.Commit{}, err
		}
		return onGoalIssue(d, e, inst, repo, issue, m), nil
	}
	facts := issueFacts(repo, issue)
	facts.Counts = linkCounts(d.Payload)
	return p.decideTask(ctx, inst, d, rules.Event{
		Kind: kind, Actor: gh.User(e.GetSender()), At: deliveries.EventTime(issue.GetUpdatedAt().Time, d),
		Issue: facts, Label: e.GetLabel().GetName(), Reason: issue.GetStateReason(),
	}, log)
}

// onGoalIssue decides an issues event on the goal issue of milestone m.
func onGoalIssue(d *store.Delivery, e *github.IssuesEvent, inst int64, repo string, issue *github.Issue, m int) store.Commit {
	if m == 0 {
		return store.Commit{}
	}
	var w store.Commit
	if gk, ok := goals.IssueKinds[e.GetAction()]; ok {
		w = goals.OnIssue(inst, d, repo, m, issue, rules.GoalEvent{Kind: gk, Actor: e.GetSender().GetLogin(), ActorID: e.GetSender().GetID(),
			At: deliveries.EventTime(issue.GetUpdatedAt().Time, d), Label: e.GetLabel().GetName()})
	}
	switch e.GetAction() {
	case "edited", "closed", "reopened":
		// Someone changed the goal issue: what countersign recorded
		// writing there is no longer what it shows.
		w.Records = map[string][]byte{records.GoalTextKey(repo, issue.GetNumber()): records.StaleGoalText}
	}
	return w
}

func issueFacts(repo string, is *github.Issue) rules.IssueFacts {
	return rules.IssueFacts{Repo: repo, Number: is.GetNumber(), Title: is.GetTitle(), Body: is.GetBody(), Author: gh.User(is.GetUser()),
		Assignees: gh.Users(is.Assignees), Labels: gh.LabelNames(is.Labels), Milestone: is.GetMilestone().GetNumber(),
		Closed: is.GetState() == "closed"}
}

// onIssueGone forgets task n of repo: its issue was deleted (converting an
// issue to a discussion deletes it) or transferred to another repository
// (where, if countersign is installed, it is opened anew). It is no longer a
// task here: the checks of the pull requests that closed it no longer wait
// for it, and its goal no longer counts it.
func (p *Decider) onIssueGone(ctx context.Context, d *store.Delivery, inst int64, repo string, n int, sender *github.User, log *slog.Logger) (store.Commit, error) {
	t, err := records.LoadTask(ctx, p.store, repo, n)
	if err != nil {
		return store.Commit{}, err
	}
	gone := rules.IssueDeleted
	if d.Action == "transferred" {
		gone = rules.IssueTransferred
	}
	news, err := p.tellDependents(ctx, d, repo, n, rules.Blocker{Repo: repo, Number: n, Issue: gone},
		rules.Event{Actor: gh.User(sender), At: deliveries.EventTime(time.Time{}, d)})
	if err != nil || t == nil {
		return store.Commit{Enqueue: news}, err
	}
	log.Info("task's issue deleted or transferred: no longer a task here", "task", t.Key(), "state", t.State, "by", sender.GetLogin())
	w := store.Commit{Records: map[string][]byte{records.TaskKey(repo, n): nil}, Enqueue: news}
	for _, b := range t.Blockers { // it waits for nothing now
		w.Records[records.DependentKey(b.Repo, b.Number, t.Key())] = nil
	}
	if t.Milestone != 0 {
		w.Enqueue = append(w.Enqueue, goals.Notes(inst, d, t, []rules.GoalNote{{Milestone: t.Milestone}},
			rules.Event{Actor: gh.User(sender), At: deliveries.EventTime(time.Time{}, d)})...)
	}
	for _, pr := range t.PRs {
		if pr.Open || pr.Merged {
			w.Enqueue = append(w.Enqueue, deliveries.Derived(fmt.Sprintf("%s/check/%d", d.ID, pr.Number), deliveries.Check, rules.TaskKey(repo, pr.Number),
				deliveries.CheckPayload{Installation: inst, Repo: repo, Number: pr.Number, Interactive: !deliveries.Background(d)}))
		}
	}
	return w, nil
}
