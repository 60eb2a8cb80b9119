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
	e, err := p.HeadCheck(ctx, hp.Installation, hp.Repo, hp.SHA, hp.Number)
	if err != nil || e == nil {
		return store.Commit{}, err
	}
	// Worked out again when applied, under the commit's write lock: a task's
	// decision may write the check meanwhile, in its own group of writes
	// (withChecks), and this one, decided before it, must not undo it.
	e.Latest = true
	return records.CommitFor(hp.Installation, d, nil, []rules.Effect{*e})
}

// HeadCheck is the check effect on commit sha of repo as the records say now
// (nil: there is none to write), as decideHead decides it for pull request
// number (0: none in particular). The executor applies a task's check
// (rules.Effect.Latest) with it: the check is worked out when its turn
// comes, from the records as they are then.
func (p *Decider) HeadCheck(ctx context.Context, inst int64, repo, sha string, number int) (*rules.Effect, error) {
	var known []int
	if _, err := records.Load(ctx, p.store, records.HeadKey(repo, sha), &known); err != nil {
		return nil, err
	}
	var prs []*rules.PullRequest
	var merged *rules.PullRequest
	for _, n := range union([]int{number}, known) {
		if n == 0 {
			continue
		}
		pr, err := records.LoadPR(ctx, p.store, repo, n)
		if err != nil {
			return nil, err
		}
		switch {
		case pr == nil || pr.Head != sha:
		case pr.Open:
			prs = append(prs, pr)
		case pr.Merged && n == number:
			merged = pr
		}
	}
	if len(prs) == 0 && merged != nil {
		prs = []*rules.PullRequest{merged}
	}
	var answers []rules.HeadAnswer
	for _, pr := range prs {
		a, ok, err := p.headAnswer(ctx, inst, pr)
		if err != nil {
			return nil, err
		}
		if ok {
			answers = append(answers, a)
		}
	}
	check, n := rules.HeadCheck(answers)
	if n == 0 {
		return nil, nil
	}
	if len(answers) > 1 {
		p.log.Info("check on a head shared by pull requests", "sha", sha, "answers", len(answers), "for", n,
			"status", check.Status, "conclusion", check.Conclusion)
	}
	return &rules.Effect{Kind: rules.EffectCheck, Repo: repo, Number: n, SHA: sha, Check: &check}, nil
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
