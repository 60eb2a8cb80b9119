package decide

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/countersign/countersign/app/deliveries"
	"github.com/countersign/countersign/app/fault"
	"github.com/countersign/countersign/app/gh"
	"github.com/countersign/countersign/app/goals"
	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
	"github.com/google/go-github/v60/github"
)

func (p *Decider) onComment(ctx context.Context, d *store.Delivery, e *github.IssueCommentEvent, log *slog.Logger) (store.Commit, error) {
	if e.GetAction() != "created" { // an edit or a deletion is news only of the card: commands act once, as written
		return p.onCardChange(ctx, d, e, log)
	}
	inst, repo, issue, cm := e.GetInstallation().GetID(), e.GetRepo().GetFullName(), e.GetIssue(), e.GetComment()
	if inst == 0 || repo == "" || issue.GetNumber() == 0 {
		return store.Commit{}, nil
	}
	cmds := rules.ParseCommands(cm.GetBody())
	if len(cmds) == 0 {
		return store.Commit{}, nil
	}
	if own, err := p.gh.Own(ctx, e.GetSender()); err != nil || own {
		return store.Commit{}, err
	}
	if !issue.IsPullRequest() {
		if m, err := p.goals.IssueOf(ctx, repo, issue); err != nil || m != 0 {
			return goals.OnIssue(inst, d, repo, m, issue, rules.GoalEvent{Kind: rules.GoalCommented, Actor: cm.GetUser().GetLogin(), ActorID: cm.GetUser().GetID(),
				At: deliveries.EventTime(cm.GetCreatedAt().Time, d), CommentID: cm.GetID(), Commands: cmds}), err
		}
	}
	ev := rules.Event{Kind: rules.Commented, Actor: gh.User(cm.GetUser()), At: deliveries.EventTime(cm.GetCreatedAt().Time, d),
		CommentID: cm.GetID(), Where: issue.GetNumber(), Commands: cmds, Text: cm.GetBody()}
	if !issue.IsPullRequest() {
		ev.Issue = issueFacts(repo, issue)
		ev.Issue.Counts = linkCounts(d.Payload)
		return p.decideTask(ctx, inst, d, ev, log)
	}
	c, err := p.clients(inst)
	if err != nil {
		return store.Commit{}, fault.Permanent(err)
	}
	old, err := records.LoadPR(ctx, p.store, repo, issue.GetNumber())
	if err != nil {
		return store.Commit{}, err
	}
	cur := old
	var gate linkGate
	if cur == nil { // a pull request from before countersign: read it
		pr, _, err := c.GetPullRequest(ctx, gh.OwnerOf(repo), gh.NameOf(repo), issue.GetNumber())
		if err != nil {
			return store.Commit{}, fmt.Errorf("read pull request #%d: %w", issue.GetNumber(), err)
		}
		if cur, err = p.pullRecord(ctx, c, inst, repo, pr, nil); err != nil {
			return store.Commit{}, err
		}
		if gate, err = p.gateLinks(ctx, c, repo, nil, cur, false, log); err != nil {
			return store.Commit{}, err
		}
	}
	return p.fanout(ctx, inst, d, old, cur, ev, gate)
}
