package decide

import (
	"context"
	"fmt"

	"github.com/countersign/countersign/app/deliveries"
	"github.com/countersign/countersign/app/fault"
	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
)

// A check run belongs to a commit, not to a pull request: every pull request
// whose head is the commit shows the same countersign/verification. So the
// check on a commit answers for every open pull request whose head it is
// (DESIGN §2, rules.HeadCheck): anyone else's pull request (an outsider's
// from a fork, one that closes no task) never overrides a tracked one's
// answer, and several tracked pull requests on one head pass only if each
// passes. It is decided under the commit's own key (deliveries.HeadKey), one
// decision at a time, each from the records as they are then: whichever pull
// request's change asked last, the last check written answers for all of
// them.

// headCheck is the delivery that decides again the check on sha, a head of
// pull request n (0: none in particular) whose change delivery d decided.
func headCheck(d *store.Delivery, tag string, inst int64, repo, sha string, n int, interactive bool) store.Delivery {
	return deliveries.Derived(fmt.Sprintf("%s/head/%s/%.12s", d.ID, tag, sha), deliveries.Head, deliveries.HeadKey(repo, sha),
		deliveries.HeadPayload{Installation: inst, Repo: repo, SHA: sha, Number: n, Interactive: interactive})
}

// decideHead writes the check on commit hp.SHA: the answer for every open pull
// request whose head it is (the head index, and the pull request that asks).
// When none is open, a merged pull request that asks still gets its own, as
// its tasks change after the merge.
func (p *Decider) decideHead(ctx context.Context, hp deliveries.HeadPayload, d *store.Delivery) (store.Commit, error) {
	var known []int
	if _, err := records.Load(ctx, p.store, records.HeadKey(hp.Repo, hp.SHA), &known); err != nil {
		return store.Commit{}, err
	}
	var prs []*rules.PullRequest
	var merged *rules.PullRequest
	for _, n := range union([]int{hp.Number}, known) {
		if n == 0 {
			continue
		}
		pr, err := records.LoadPR(ctx, p.store, hp.Repo, n)
		if err != nil {
			return store.Commit{}, err
		}
		switch {
		case pr == nil || pr.Head != hp.SHA:
		case pr.Open:
			prs = append(prs, pr)
		case pr.Merged && n == hp.Number:
			merged = pr
		}
	}
	if len(prs) == 0 && merged != nil {
		prs = []*rules.PullRequest{merged}
	}
	var answers []rules.HeadAnswer
	for _, pr := range prs {
		a, ok, err := p.headAnswer(ctx, hp.Installation, pr)
		if err != nil {
			return store.Commit{}, err
		}
		if ok {
			answers = append(answers, a)
		}
	}
	check, n := rules.HeadCheck(answers)
	if n == 0 {
		return store.Commit{}, nil
	}
	if len(answers) > 1 {
		p.log.Info("check on a head shared by pull requests", "sha", hp.SHA, "answers", len(answers), "for", n,
			"status", check.Status, "conclusion", check.Conclusion)
	}
	return records.CommitFor(hp.Installation, d, nil, []rules.Effect{{Kind: rules.EffectCheck, Repo: hp.Repo, Number: n, SHA: hp.SHA, Check: &check}})
}

// headAnswer is pull request pr's own answer: CheckFor over the tasks it
// links (tracked), else gate.untracked's; false when it gets none (it
// closes no task and is not open).
func (p *Decider) headAnswer(ctx context.Context, inst int64, pr *rules.PullRequest) (rules.HeadAnswer, bool, error) {
	tp, err := p.tracked(ctx, deliveries.CheckPayload{Installation: inst, Repo: pr.Repo, Number: pr.Number}, pr)
	if err != nil {
		return rules.HeadAnswer{}, false, err
	}
	if len(tp.Links) > 0 {
		tasks := make([]*rules.Task, len(tp.Links))
		for i, n := range tp.Links {
			if tasks[i], err = records.LoadTask(ctx, p.store, pr.Repo, n); err != nil {
				return rules.HeadAnswer{}, false, err
			}
		}
		return rules.HeadAnswer{Number: pr.Number, Tracked: true, Check: rules.CheckFor(tp, tasks)}, true, nil
	}
	c, err := p.clients(inst)
	if err != nil {
		return rules.HeadAnswer{}, false, fault.Permanent(err)
	}
	effect, err := p.mq.UntrackedGate(ctx, c, tp, p.log)
	if err != nil || effect == nil {
		return rules.HeadAnswer{}, false, err
	}
	return rules.HeadAnswer{Number: pr.Number, Check: *effect.Check}, true, nil
}
