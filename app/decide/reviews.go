package decide

import (
	"context"
	"log/slog"
	"strings"

	"github.com/countersign/countersign/app/deliveries"
	"github.com/countersign/countersign/app/gh"
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
	return p.pullEvent(ctx, inst, repo, d, pr, rules.Event{Kind: rules.PRReviewed, Actor: gh.User(e.GetSender()),
		At:     deliveries.EventTime(rv.GetSubmittedAt().Time, d),
		Review: &rules.ReviewFacts{Reviewer: gh.User(rv.GetUser()), State: state, Head: rv.GetCommitID(), Body: rv.GetBody()}}, log)
}
