package mqdecide

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"

	"github.com/countersign/countersign/app/deliveries"
	"github.com/countersign/countersign/app/fault"
	"github.com/countersign/countersign/app/gh"
	mq "github.com/countersign/countersign/app/mergequeue"
	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
	"github.com/google/go-github/v60/github"
)

// A group passes only if its base_sha is the head of the base branch or the
// head of a group that passes (mergequeue.Resolve, mergequeue.Decide). The
// groups of a queue are decided under their own pull requests' keys, so
// two of them may be decided at the same moment, and GitHub delivers their
// merge_group webhooks in any order. Every group behind is decided again
// after the last change of the group ahead, whichever is committed first:
//
//   - a group built on another records itself as behind it
//     (records.MergeGroupBehindKey, one record per group behind) and, once
//     that is committed, decides itself again from countersign's records
//     (a settle recheck);
//   - a group whose answer changes, or that GitHub destroys, has, once that
//     is committed, the groups recorded behind it decided again (behind,
//     then a recheck of each).
//
// Each side writes, then reads what the other writes: whichever commits
// second, its read sees the other's write, so the last decision of a group
// behind sees the last answer of the group ahead.

// behindGroup is a group built on another (records.MergeGroupBehindKey).
type behindGroup struct {
	PR      int    `json:"pr"`
	HeadSHA string `json:"head_sha"`
}

// goneGroup is a group GitHub destroyed (records.MergeGroupGoneKey).
type goneGroup struct {
	PR     int    `json:"pr"`
	Reason string `json:"reason"`
}

// ahead is what group g is built on (mergequeue.Resolve): countersign's
// records of the group with head g.BaseSHA and, when they say nothing, two
// reads of GitHub (the base branch's head and, when that is not it, the
// merge queue's branches, to name the group it is).
func (p *Decider) ahead(ctx context.Context, c Client, repo string, g mq.Group) (*mq.Ahead, bool, error) {
	k, err := p.known(ctx, repo, g)
	if err != nil {
		return nil, false, err
	}
	a, onBranch, need := mq.Resolve(g, k)
	if !need {
		return a, onBranch, nil
	}
	k.Read = true
	if k.BranchHead, err = branchHead(ctx, c, repo, g.Base); err != nil {
		return nil, false, err
	}
	if k.BranchHead != g.BaseSHA {
		branches, err := (queueGitHub{c}).QueueBranches(ctx, repo)
		if err != nil {
			return nil, false, err
		}
		for ref, sha := range branches {
			if r, err := mq.ParseHeadRef(ref); err == nil && sha == g.BaseSHA && r.Base == g.Base {
				k.QueuePR = r.PR
			}
		}
	}
	a, onBranch, _ = mq.Resolve(g, k)
	return a, onBranch, nil
}

// known is what countersign's records say of the group with head
// g.BaseSHA: tracked (and its last answer), or destroyed (and why).
func (p *Decider) known(ctx context.Context, repo string, g mq.Group) (mq.Known, error) {
	var k mq.Known
	if g.OnBranch || g.BaseSHA == "" {
		return k, nil
	}
	var n int
	if ok, err := records.Load(ctx, p.store, records.MergeGroupKey(repo, g.BaseSHA), &n); err != nil {
		return k, err
	} else if ok && n != 0 {
		groups, err := records.LoadMergeGroups(ctx, p.store, repo, n)
		if err != nil {
			return k, err
		}
		if i := slices.IndexFunc(groups, func(x mq.Group) bool { return x.HeadSHA == g.BaseSHA }); i >= 0 {
			k.Group, k.GroupPR = &groups[i], n
			return k, nil
		}
	}
	gone, err := p.gone(ctx, repo, g.BaseSHA)
	if err != nil || gone == nil {
		return k, err
	}
	k.Gone, k.GonePR = gone.Reason, gone.PR
	return k, nil
}

// gone is the record that GitHub destroyed the group with head sha (nil:
// countersign heard of no such thing).
func (p *Decider) gone(ctx context.Context, repo, sha string) (*goneGroup, error) {
	var g goneGroup
	if ok, err := records.Load(ctx, p.store, records.MergeGroupGoneKey(repo, sha), &g); err != nil || !ok {
		return nil, err
	}
	return &g, nil
}

// branchHead is the head of branch in repo, read from GitHub ("" when
// there is no such branch). The one read is of the git references that
// begin with the branch's name, the first of which, in GitHub's order, is
// the branch itself.
func branchHead(ctx context.Context, c Client, repo, branch string) (string, error) {
	refs, _, err := c.ListMatchingRefs(ctx, gh.OwnerOf(repo), gh.NameOf(repo), &github.ReferenceListOptions{
		Ref: "heads/" + branch, ListOptions: github.ListOptions{PerPage: 100}})
	if fault.IsStatus(err, 404) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the head of %s: %w", branch, err)
	}
	for _, r := range refs {
		if r.GetRef() == "refs/heads/"+branch {
			return r.GetObject().GetSHA(), nil
		}
	}
	return "", nil
}

// destroyed takes in GitHub's destroying the group md.HeadSHA of pull
// request md.PR (groups are its tracked groups): it is remembered as gone
// (merged: its changes are on the base branch; otherwise they left the
// queue), no longer tracked, and the groups built on it are decided again.
func (p *Decider) destroyed(ctx context.Context, md deliveries.MergeGroupPayload, groups []mq.Group, d *store.Delivery, log *slog.Logger) (store.Commit, error) {
	w := store.Commit{Records: map[string][]byte{}}
	gone, err := p.gone(ctx, md.Repo, md.HeadSHA)
	if err != nil {
		return store.Commit{}, err
	}
	if gone == nil {
		reason := md.Reason
		if reason == "" {
			reason = "destroyed"
		}
		b, _ := json.Marshal(goneGroup{PR: md.PR, Reason: reason}) // cannot fail
		w.Records[records.MergeGroupGoneKey(md.Repo, md.HeadSHA)] = b
		w.Enqueue = append(w.Enqueue, behindOf(md.Installation, d, md.Repo, md.PR, md.HeadSHA))
	}
	left, tracked := mq.Forget(groups, md.HeadSHA)
	if gone != nil && !tracked {
		return store.Commit{}, nil
	}
	if tracked {
		w.Records[records.MergeGroupKey(md.Repo, md.HeadSHA)] = nil
		if err := putGroups(&w, md.Repo, md.PR, left); err != nil {
			return store.Commit{}, err
		}
	}
	if md.BaseSHA != "" {
		w.Records[records.MergeGroupBehindKey(md.Repo, md.BaseSHA, md.HeadSHA)] = nil
		var old behindGroup
		if ok, err := records.Load(ctx, p.store, records.MergeGroupBehindOldKey(md.Repo, md.BaseSHA), &old); err != nil {
			return store.Commit{}, err
		} else if ok && old.HeadSHA == md.HeadSHA {
			w.Records[records.MergeGroupBehindOldKey(md.Repo, md.BaseSHA)] = nil
		}
	}
	log.Info("merge group destroyed", "pr", md.PR, "head_sha", md.HeadSHA, "reason", md.Reason)
	return w, nil
}

// behind has the groups built on the group with head md.HeadSHA decided
// again: it runs once that group's change is committed, and queues a
// recheck of each. Once that group is gone its answer is final: the
// records of the groups behind it are dropped.
func (p *Decider) behind(ctx context.Context, md deliveries.MergeGroupPayload, d *store.Delivery) (store.Commit, error) {
	prefix := records.MergeGroupBehindPrefix(md.Repo, md.HeadSHA)
	keys, err := p.store.Scan(ctx, prefix)
	if err != nil {
		return store.Commit{}, fmt.Errorf("list the groups behind %s: %w", md.HeadSHA, err)
	}
	keys = append(keys, records.MergeGroupBehindOldKey(md.Repo, md.HeadSHA))
	gone, err := p.gone(ctx, md.Repo, md.HeadSHA)
	if err != nil {
		return store.Commit{}, err
	}
	w := store.Commit{Records: map[string][]byte{}}
	for _, k := range keys {
		var b behindGroup
		ok, err := records.Load(ctx, p.store, k, &b)
		if err != nil {
			return store.Commit{}, err
		}
		if !ok || b.PR == 0 || !mq.IsSHA(b.HeadSHA) {
			continue
		}
		w.Enqueue = append(w.Enqueue, recheckOf(md.Installation, d, md.Repo, b.PR, b.HeadSHA, false))
		if gone != nil {
			w.Records[k] = nil
		}
	}
	return w, nil
}

// recheck decides again group md.HeadSHA of pull request md.PR (groups are
// its tracked groups) from countersign's records, the group ahead of it
// having changed its answer (or, md.Settle, the group having just been
// recorded); nothing when the group is no longer tracked or its answer is
// the same. A settle recheck reads nothing from GitHub: when countersign's
// records still say nothing of the group ahead, the answer stands, and that
// group, once answered or destroyed, has this one decided again.
func (p *Decider) recheck(ctx context.Context, md deliveries.MergeGroupPayload, groups []mq.Group, d *store.Delivery, log *slog.Logger) (store.Commit, error) {
	i := slices.IndexFunc(groups, func(g mq.Group) bool { return g.HeadSHA == md.HeadSHA })
	if i < 0 {
		return store.Commit{}, nil
	}
	if md.Settle {
		k, err := p.known(ctx, md.Repo, groups[i])
		if err != nil {
			return store.Commit{}, err
		}
		if _, _, need := mq.Resolve(groups[i], k); need {
			return store.Commit{}, nil
		}
	}
	pr, err := records.LoadPR(ctx, p.store, md.Repo, md.PR)
	if err != nil || pr == nil || !pr.Open {
		return store.Commit{}, err
	}
	c, err := p.clients(md.Installation)
	if err != nil {
		return store.Commit{}, fault.Permanent(err)
	}
	check, onBranch, err := p.groupCheck(ctx, c, md.Installation, md.Repo, md.PR, pr, nil, groups[i], log)
	if err != nil {
		return store.Commit{}, err
	}
	w := store.Commit{Records: map[string][]byte{}}
	wrote, err := p.answer(ctx, &w, md.Installation, d, pr, groups, i, check, false, log)
	if err != nil {
		return store.Commit{}, err
	}
	if onBranch && !groups[i].OnBranch {
		groups[i].OnBranch, wrote = true, true
	}
	if !wrote {
		return store.Commit{}, nil
	}
	return w, putGroups(&w, md.Repo, md.PR, groups)
}

// behindOf is the delivery that has the groups built on group sha (of pull
// request n) decided again, once delivery d's decision is committed.
func behindOf(inst int64, d *store.Delivery, repo string, n int, sha string) store.Delivery {
	return deliveries.Derived("merge-group-behind/"+digest(d.ID, sha), deliveries.MergeGroup, rules.TaskKey(repo, n),
		deliveries.MergeGroupPayload{Installation: inst, Repo: repo, Action: mq.Behind, PR: n, HeadSHA: sha})
}

// settle is the recheck group sha of pull request n asks of itself once
// delivery d's decision, which recorded it as behind another, is committed.
func settle(inst int64, d *store.Delivery, repo string, n int, sha string) store.Delivery {
	return recheckOf(inst, d, repo, n, sha, true)
}

// recheckOf is the delivery that decides group sha of pull request n again
// (settle: see recheck).
func recheckOf(inst int64, d *store.Delivery, repo string, n int, sha string, settle bool) store.Delivery {
	tag := "merge-group-recheck/"
	if settle {
		tag = "merge-group-settle/"
	}
	return deliveries.Derived(tag+digest(d.ID, sha), deliveries.MergeGroup, rules.TaskKey(repo, n),
		deliveries.MergeGroupPayload{Installation: inst, Repo: repo, Action: mq.Recheck, PR: n, HeadSHA: sha, Settle: settle})
}

func digest(parts ...string) string {
	h := sha256.New()
	for _, s := range parts {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}
