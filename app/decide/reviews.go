package decide

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/countersign/countersign/app/deliveries"
	"github.com/countersign/countersign/app/fault"
	"github.com/countersign/countersign/app/gh"
	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
	"github.com/google/go-github/v60/github"
)

func (p *Decider) onReview(ctx context.Context, d *store.Delivery, e *github.PullRequestReviewEvent, log *slog.Logger) (store.Commit, error) {
	inst, repo, pr, rv := e.GetInstallation().GetID(), e.GetRepo().GetFullName(), e.GetPullRequest(), e.GetReview()
	if inst == 0 || repo == "" || pr.GetNumber() == 0 {
		return store.Commit{}, nil
	}
	if own, err := p.gh.Own(ctx, e.GetSender()); err != nil || own {
		return store.Commit{}, err
	}
	state := strings.ToLower(rv.GetState())
	if e.GetAction() == "dismissed" {
		state = "dismissed"
	}
	ev := rules.Event{Kind: rules.PRReviewed, Actor: gh.User(e.GetSender()),
		At:     deliveries.EventTime(rv.GetSubmittedAt().Time, d),
		Review: &rules.ReviewFacts{Reviewer: gh.User(rv.GetUser()), State: state, Head: rv.GetCommitID(), Body: rv.GetBody()}}
	now, err := p.headAhead(ctx, inst, repo, pr.GetNumber(), rv.GetCommitID())
	if err != nil {
		return store.Commit{}, err
	}
	if now != nil {
		// The review is of a head countersign has not taken in: its push has
		// not come yet (GitHub promises no order). The pull request as GitHub
		// shows it now is taken in first, as its push would be, then the review.
		log.Info("review of a head the record does not have yet: the pull request read from GitHub first", "pr", pr.GetNumber(), "head", rv.GetCommitID())
		return p.pullEvent(ctx, inst, repo, d, now, rules.Event{Kind: rules.PRPushed, Actor: gh.User(now.GetUser()),
			At: deliveries.EventTime(now.GetUpdatedAt().Time, d)}, noPusher, log, ev)
	}
	return p.pullEvent(ctx, inst, repo, d, pr, ev, noPusher, log)
}

// headAhead is pull request n as GitHub shows it now when head, the commit
// a review is of, is its head there but not in countersign's record of it
// (the push that brought it is still on its way); else nil. A review of a
// head the pull request has moved past is decided as it is (it counts for
// nothing now).
func (p *Decider) headAhead(ctx context.Context, inst int64, repo string, n int, head string) (*github.PullRequest, error) {
	old, err := records.LoadPR(ctx, p.store, repo, n)
	if err != nil || old == nil || !old.Open || head == "" || head == old.Head {
		return nil, err
	}
	c, err := p.clients(inst)
	if err != nil {
		return nil, fault.Permanent(err)
	}
	now, _, err := c.GetPullRequest(ctx, gh.OwnerOf(repo), gh.NameOf(repo), n)
	if err != nil {
		return nil, fmt.Errorf("read pull request #%d: %w", n, err)
	}
	if now.GetHead().GetSHA() != head || now.GetState() != "open" {
		return nil, nil
	}
	return now, nil
}
