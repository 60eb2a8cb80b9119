package decide

import (
	"context"
	"fmt"

	"github.com/countersign/countersign/app/gh"
	"github.com/countersign/countersign/app/lookup"
	"github.com/countersign/countersign/rules"
	"github.com/google/go-github/v60/github"
)

// maxMergedBelow bounds the merged pull requests read to account for what a
// base change brings (normally one: the pull request beneath in a stack).
const maxMergedBelow = 3

// retarget works out a change of pull request cur's base (DESIGN §2): told is
// the change the delivery names (pull_request.edited with changes.base), nil
// when it names none; a base different from the one recorded in old is a
// change all the same (its delivery was missed or comes later). It returns
// the change, nil if the base did not change for the same head.
//
// What cur merges is read again: its files, each with its patch (one
// paginated read). If they differ from what was read before, and the
// difference is not a change that a pull request from the old base branch,
// merged into the new base, already put there (a stack's lower pull request,
// squash-merged: GitHub then lists its changes in the upper one again),
// cur.Merges is what it merges now, which no approval covers, and who built
// the commits it carries now is read again. Otherwise cur.Merges stays: what
// was approved and verified still holds. A pull request that closes no task
// is not read: its record forgets what it merges, to be read in full when it
// links a task.
func (p *Decider) retarget(ctx context.Context, c Client, inst int64, repo string, old, cur *rules.PullRequest, told *rules.Retarget) (*rules.Retarget, error) {
	if old == nil || !cur.Open || old.Head != cur.Head || cur.Base == "" || old.Base == cur.Base {
		return nil, nil
	}
	from := old.Base
	if from == "" { // a record from before bases were recorded
		if told == nil {
			return nil, nil
		}
		from = told.From
	}
	rt := &rules.Retarget{From: from, To: cur.Base}
	if len(cur.Links) == 0 {
		cur.CommittersHead, cur.Files, cur.Changes, cur.Merges = "", nil, nil, ""
		return rt, nil
	}
	files, now, err := lookup.Changes(ctx, c, repo, cur.Number)
	if err != nil {
		return nil, err
	}
	news := rules.NewChanges(old.Changes, now, nil)
	if len(news) > 0 && old.Changes != nil {
		merged, err := mergedInto(ctx, c, repo, from, cur.Base)
		if err != nil {
			return nil, err
		}
		news = rules.NewChanges(old.Changes, now, func(f, e string) bool { return merged[f][e] })
	}
	cur.Files, cur.Changes = files, now
	if len(news) == 0 {
		return rt, nil
	}
	rt.Changes = len(news)
	cur.Merges = rules.MergesOf(now)
	var shas map[string]bool
	if cur.Committers, cur.Unresolved, shas, err = p.committers(ctx, c, inst, repo, cur.Number); err != nil {
		return nil, err
	}
	// Whoever pushed the commits it now carries, as recorded (no request).
	if err := p.recordedPushers(ctx, cur, shas); err != nil {
		return nil, err
	}
	return rt, nil
}

// mergedInto are the changes (file -> its change's fingerprints) of the pull
// requests from branch head merged into branch base: what base already holds
// of head. A pull request merged into any other branch puts nothing on base.
func mergedInto(ctx context.Context, c Client, repo, head, base string) (map[string]map[string]bool, error) {
	owner := gh.OwnerOf(repo)
	prs, _, err := c.ListPullRequests(ctx, owner, gh.NameOf(repo), &github.PullRequestListOptions{
		State: "closed", Head: owner + ":" + head, Base: base, ListOptions: github.ListOptions{PerPage: maxMergedBelow}})
	if err != nil {
		return nil, fmt.Errorf("list pull requests from %s into %s: %w", head, base, err)
	}
	out := map[string]map[string]bool{}
	for _, pr := range prs {
		if pr.MergedAt == nil || pr.GetBase().GetRef() != base || pr.GetHead().GetRef() != head {
			continue
		}
		_, changes, err := lookup.Changes(ctx, c, repo, pr.GetNumber())
		if err != nil {
			return nil, err
		}
		for f, e := range changes {
			if out[f] == nil {
				out[f] = map[string]bool{}
			}
			out[f][e] = true
		}
	}
	return out, nil
}
