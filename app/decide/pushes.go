package decide

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"github.com/countersign/countersign/app/deliveries"
	"github.com/countersign/countersign/app/gh"
	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
	"github.com/google/go-github/v60/github"
)

// noCommit is the sha GitHub gives a ref that does not exist (a push that
// deletes a branch has it as after).
const noCommit = "0000000000000000000000000000000000000000"

// recordPush keeps who pushed which commits, whatever ref the push went to
// (records.PushesKey): a pull request that carries any of them has its
// sender among its builders (headPushers). It costs no request. A push by
// no account, by countersign itself or by web-flow, or one that deletes a
// ref, is not kept. The time kept is when the delivery arrived: a push's
// commit dates are whatever its author wrote.
func (p *Decider) recordPush(ctx context.Context, d *store.Delivery, e *github.PushEvent, log *slog.Logger) (map[string][]byte, error) {
	repo, by, after := e.GetRepo().GetFullName(), gh.User(e.GetSender()), e.GetAfter()
	if repo == "" || by.IsZero() || isWebFlow(by) || e.GetDeleted() || after == "" || after == noCommit {
		return nil, nil
	}
	if own, err := p.gh.Own(ctx, e.GetSender()); err != nil || own {
		return nil, err
	}
	commits := make([]string, 0, min(len(e.Commits), rules.MaxPushCommits))
	for _, c := range e.Commits {
		if len(commits) == rules.MaxPushCommits {
			break
		}
		if id := strings.ToLower(c.GetID()); id != "" {
			commits = append(commits, id)
		}
	}
	var pushes []rules.Push
	if _, err := records.Load(ctx, p.store, records.PushesKey(repo), &pushes); err != nil {
		return nil, err
	}
	at := deliveries.EventTime(d.ReceivedAt, d)
	next, changed := rules.RecordPush(pushes, rules.Push{By: by, Ref: e.GetRef(), After: strings.ToLower(after), Commits: commits, At: at}, at)
	if !changed {
		return nil, nil
	}
	b, err := json.Marshal(next)
	if err != nil {
		return nil, fmt.Errorf("encode the pushes of %s: %w", repo, err)
	}
	log.Debug("push recorded", "repo", repo, "ref", e.GetRef(), "after", after, "by", by.Login, "commits", len(commits), "kept", len(next))
	return map[string][]byte{records.PushesKey(repo): b}, nil
}

// recordedPushers adds to cur's pushers everyone the pushes recorded for its
// repository (and its head's, a fork) name as having pushed one of shas.
func (p *Decider) recordedPushers(ctx context.Context, cur *rules.PullRequest, shas map[string]bool) error {
	repos := []string{cur.Repo}
	if cur.HeadRepo != "" && !strings.EqualFold(cur.HeadRepo, cur.Repo) {
		repos = append(repos, cur.HeadRepo)
	}
	for _, repo := range repos {
		var pushes []rules.Push
		if _, err := records.Load(ctx, p.store, records.PushesKey(repo), &pushes); err != nil {
			return err
		}
		for _, u := range rules.PushersOf(pushes, shas) {
			addPusher(cur, u)
		}
	}
	return nil
}
