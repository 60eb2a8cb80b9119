package decide

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/countersign/countersign/app/deliveries"
	"github.com/countersign/countersign/app/fault"
	"github.com/countersign/countersign/app/gh"
	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
)

// decideCheck works out the verification check of a pull request from the
// tasks it closes: the check on its head (decided again under the head's key,
// head.go) and the checks of its merge-queue groups.
func (p *Decider) decideCheck(ctx context.Context, cd deliveries.CheckPayload, d *store.Delivery) (store.Commit, error) {
	pr, err := records.LoadPR(ctx, p.store, cd.Repo, cd.Number)
	if err != nil {
		return store.Commit{}, err
	}
	var recs map[string][]byte
	if pr == nil {
		// Lost with the store: the task that asks still has a gate to keep in
		// step (invariant 5), so the pull request is read again and recorded.
		if pr, recs, err = p.rebuildPR(ctx, cd); err != nil || pr == nil {
			return store.Commit{}, err
		}
	}
	if (!pr.Open && !pr.Merged) || pr.Head == "" {
		return store.Commit{Records: recs}, nil
	}
	if len(pr.Links) == 0 {
		// An exempt author's pull request is exempt only while everyone who
		// built its head is: read who did when the record does not say yet
		// (the exemption came after the head, e.g. by a configuration
		// change). Its record is written here, under its own key.
		c, err := p.clients(cd.Installation)
		if err != nil {
			return store.Commit{}, fault.Permanent(err)
		}
		if pr, err = p.exemptBuilders(ctx, c, cd, pr, &recs); err != nil {
			return store.Commit{}, err
		}
	}
	// The check on its head answers for every pull request whose head it is
	// (head.go): it is decided under the head's own key, unless it goes with
	// the label of the task that asks (withChecks).
	w := store.Commit{Records: recs}
	if !cd.Grouped || recs != nil {
		w.Enqueue = []store.Delivery{headCheck(d, "check", cd.Installation, cd.Repo, pr.Head, pr.Number, cd.Interactive)}
	}
	// The checks of its merge-queue groups follow its tasks
	// (app/mergequeue/decide): with no group tracked (and none to find
	// again after a store loss) there is none to answer.
	groups, err := records.LoadMergeGroups(ctx, p.store, cd.Repo, pr.Number)
	if err != nil || (len(groups) == 0 && recs == nil) {
		return w, err
	}
	if pr, err = p.tracked(ctx, cd, pr); err != nil {
		return store.Commit{}, err
	}
	tasks := make([]*rules.Task, len(pr.Links))
	for i, n := range pr.Links {
		if tasks[i], err = records.LoadTask(ctx, p.store, cd.Repo, n); err != nil {
			return store.Commit{}, err
		}
	}
	return w, p.mq.Regroup(ctx, &w, cd.Installation, d, pr, tasks, recs != nil, p.log)
}

// rebuildPR reads pull request cd.Number from GitHub and returns its record
// and the records to write for it (itself, and its head's index). nil if it
// is gone.
func (p *Decider) rebuildPR(ctx context.Context, cd deliveries.CheckPayload) (*rules.PullRequest, map[string][]byte, error) {
	c, err := p.clients(cd.Installation)
	if err != nil {
		return nil, nil, fault.Permanent(err)
	}
	gpr, _, err := c.GetPullRequest(ctx, gh.OwnerOf(cd.Repo), gh.NameOf(cd.Repo), cd.Number)
	if fault.IsStatus(err, 404) || fault.IsStatus(err, 410) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read pull request #%d: %w", cd.Number, err)
	}
	pr, err := p.pullRecord(ctx, c, cd.Installation, cd.Repo, gpr, nil)
	if err != nil {
		return nil, nil, err
	}
	b, err := json.Marshal(pr)
	if err != nil {
		return nil, nil, err
	}
	w := store.Commit{Records: map[string][]byte{records.PRKey(cd.Repo, cd.Number): b}}
	if err := p.indexHead(ctx, &w, nil, pr); err != nil {
		return nil, nil, err
	}
	return pr, w.Records, nil
}

// tracked is pull request pr as its check sees it: linked only to the issues
// it names that are tasks, or may yet become one. An issue countersign has
// no record of and that is no task (tasks.track or ignore_labels leave it
// out; closed before it was tracked; a goal issue; a pull request; gone) is
// no task's work: a pull request that names only such issues closes no task
// and is answered as gate.untracked says (DESIGN §2: every pull request gets
// an answer). An issue that is a task by its labels and milestone but has no
// record yet (its event is on its way, or the record was lost) still holds
// the check back. GitHub is asked only about issues with no record.
func (p *Decider) tracked(ctx context.Context, cd deliveries.CheckPayload, pr *rules.PullRequest) (*rules.PullRequest, error) {
	var keep []int
	var cfg *rules.Config
	for _, n := range pr.Links {
		t, err := records.LoadTask(ctx, p.store, cd.Repo, n)
		if err != nil {
			return nil, err
		}
		if t != nil {
			keep = append(keep, n)
			continue
		}
		var m int
		if goal, err := records.Load(ctx, p.store, records.GoalIssueKey(cd.Repo, n), &m); err != nil {
			return nil, err
		} else if goal {
			continue
		}
		c, err := p.clients(cd.Installation)
		if err != nil {
			return nil, fault.Permanent(err)
		}
		if cfg == nil {
			got, err := p.look.Config(ctx, c, cd.Repo, p.log)
			if err != nil {
				return nil, err
			}
			cfg = &got
		}
		is, _, err := c.GetIssue(ctx, gh.OwnerOf(cd.Repo), gh.NameOf(cd.Repo), n)
		if fault.IsStatus(err, 404) || fault.IsStatus(err, 410) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read issue #%d: %w", n, err)
		}
		if u := is.GetRepositoryURL(); u != "" && !strings.HasSuffix(strings.ToLower(u), "/repos/"+strings.ToLower(cd.Repo)) {
			continue // transferred: GitHub redirects the old number to the issue's new repository
		}
		if f := issueFacts(cd.Repo, is); !is.IsPullRequest() && !f.Closed && rules.Tracked(*cfg, f) {
			keep = append(keep, n)
		}
	}
	if len(keep) == len(pr.Links) {
		return pr, nil
	}
	out := *pr
	out.Links = keep
	return &out, nil
}

// exemptBuilders is pr with who built its head read, when its author is in
// gate.exempt and that was not read for its head (the exemption was added
// after the head was pushed, or the record predates it): the exemption holds
// only while they are all exempt too (rules.UntrackedCheck). The record to
// write is added to recs. A head that moved on GitHub is left to its
// synchronize.
func (p *Decider) exemptBuilders(ctx context.Context, c Client, cd deliveries.CheckPayload, pr *rules.PullRequest, recs *map[string][]byte) (*rules.PullRequest, error) {
	if !pr.Open || pr.Head == "" || pr.CommittersHead == pr.Head {
		return pr, nil
	}
	if exempt, err := p.exemptAuthor(ctx, c, pr); err != nil || !exempt {
		return pr, err
	}
	gpr, _, err := c.GetPullRequest(ctx, gh.OwnerOf(cd.Repo), gh.NameOf(cd.Repo), cd.Number)
	if err != nil {
		return nil, fmt.Errorf("read pull request #%d: %w", cd.Number, err)
	}
	if gpr.GetHead().GetSHA() != pr.Head {
		return pr, nil
	}
	rec, err := records.LoadPR(ctx, p.store, cd.Repo, cd.Number)
	if err != nil || rec == nil {
		return pr, err
	}
	rec.HeadRef, rec.HeadRepo = gpr.GetHead().GetRef(), gpr.GetHead().GetRepo().GetFullName()
	rec.HeadOwner, rec.HeadOwnerOrg = headOwner(gpr)
	if err := p.readHead(ctx, c, cd.Installation, rec); err != nil {
		return nil, err
	}
	out := *pr
	out.Committers, out.Unresolved, out.Pushers, out.PushersUnread = rec.Committers, rec.Unresolved, rec.Pushers, rec.PushersUnread
	out.HeadOwner, out.HeadOwnerOrg = rec.HeadOwner, rec.HeadOwnerOrg
	out.HeadRef, out.HeadRepo, out.Files, out.Runs, out.Suites, out.CommittersHead = rec.HeadRef, rec.HeadRepo, rec.Files, rec.Runs, rec.Suites, rec.CommittersHead
	b, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	if *recs == nil {
		*recs = map[string][]byte{}
	}
	(*recs)[records.PRKey(cd.Repo, cd.Number)] = b
	return &out, nil
}
