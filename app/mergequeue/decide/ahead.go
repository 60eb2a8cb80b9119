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
// head of a group that passes (mergequeue.Resolve, mergequeue.Decide).
// GitHub delivers the merge_group webhooks of a queue's groups in any
// order, and a group's answer also changes when a task of its pull request
// does. So:
//
//   - every group of a repository is decided under one key, the
//     repository's merge-queue key (records.MergeQueueKey), one decision at
//     a time: two groups are never decided at the same moment;
//   - a group built on another records itself as behind it
//     (records.MergeGroupBehindKey), whichever of the two arrives first;
//   - a decision that changes a group's answer, or takes in GitHub's
//     destroying it, decides again in the same commit the groups recorded
//     behind it, and the ones behind those in turn (cascade);
//   - that commit's checks are written in an order that never shows, on
//     GitHub, a group passing while a group ahead of it does not: first the
//     checks that do not pass, the last in line first, then those that
//     pass, the first in line first (pass.commit).
//
// A group built on a commit countersign knows nothing of (its group's
// request has not arrived yet) waits; it is decided again when that group
// is answered or destroyed.

// pass is one decision of the merge-queue key: what it writes, what it has
// decided so far of the groups (now, by head sha: read before the store),
// and the checks it writes, staged.
type pass struct {
	w      *store.Commit
	inst   int64
	d      *store.Delivery
	repo   string
	c      Client
	now    map[string]mq.Known
	staged []staged
	log    *slog.Logger
}

// staged is a group's check to write: depth is how many groups ahead of it
// the decision decided before it.
type staged struct {
	depth  int
	effect rules.Effect
}

// stage adds the check of group sha of pull request n, at depth.
func (ps *pass) stage(depth, n int, sha string, check rules.Check) {
	c := check
	ps.staged = append(ps.staged, staged{depth: depth, effect: rules.Effect{Kind: rules.EffectCheck, Repo: ps.repo, Number: n, SHA: sha, Check: &c}})
}

// commit is the decision's commit, its checks in the order that never
// shows a group passing while one ahead of it does not (see above).
func (ps *pass) commit() (store.Commit, error) {
	key := func(s staged) mq.Staged {
		return mq.Staged{Depth: s.depth, Passing: s.effect.Check.Status == "completed" && s.effect.Check.Conclusion == "success"}
	}
	slices.SortStableFunc(ps.staged, func(a, b staged) int { return mq.WriteOrder(key(a), key(b)) })
	effects := make([]rules.Effect, len(ps.staged))
	for i, s := range ps.staged {
		effects[i] = s.effect
	}
	if len(effects) > 0 {
		ew, err := records.CommitFor(ps.inst, ps.d, nil, effects)
		if err != nil {
			return store.Commit{}, err
		}
		ps.w.Effects = ew.Effects
	}
	if len(ps.w.Records) == 0 && len(ps.w.Effects) == 0 && len(ps.w.Enqueue) == 0 {
		return store.Commit{}, nil
	}
	return *ps.w, nil
}

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

// ahead is what group g is built on (mergequeue.Resolve): what this
// decision or countersign's records say of the group with head g.BaseSHA
// and, when they say nothing, two reads of GitHub (the base branch's head
// and, when that is not it, the merge queue's branches, to name the group
// it is).
func (p *Decider) ahead(ctx context.Context, ps *pass, g mq.Group) (*mq.Ahead, bool, error) {
	k, err := p.known(ctx, ps, g)
	if err != nil {
		return nil, false, err
	}
	a, onBranch, need := mq.Resolve(g, k)
	if !need {
		return a, onBranch, nil
	}
	k.Read = true
	if k.BranchHead, err = branchHead(ctx, ps.c, ps.repo, g.Base); err != nil {
		return nil, false, err
	}
	if k.BranchHead != g.BaseSHA {
		branches, err := (queueGitHub{ps.c}).QueueBranches(ctx, ps.repo)
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

// known is what this decision, or else countersign's records, say of the
// group with head g.BaseSHA: tracked (and its last answer), or destroyed
// (and why).
func (p *Decider) known(ctx context.Context, ps *pass, g mq.Group) (mq.Known, error) {
	var k mq.Known
	if g.OnBranch || g.BaseSHA == "" {
		return k, nil
	}
	if now, ok := ps.now[g.BaseSHA]; ok {
		return now, nil
	}
	var n int
	if ok, err := records.Load(ctx, p.store, records.MergeGroupKey(ps.repo, g.BaseSHA), &n); err != nil {
		return k, err
	} else if ok && n != 0 {
		groups, err := p.groupsIn(ctx, ps, n)
		if err != nil {
			return k, err
		}
		if i := slices.IndexFunc(groups, func(x mq.Group) bool { return x.HeadSHA == g.BaseSHA }); i >= 0 {
			k.Group, k.GroupPR = &groups[i], n
			return k, nil
		}
	}
	gone, err := p.gone(ctx, ps.repo, g.BaseSHA)
	if err != nil || gone == nil {
		return k, err
	}
	k.Gone, k.GonePR = gone.Reason, gone.PR
	return k, nil
}

// groupsIn are the groups tracked for pull request n, as this decision has
// them (written already) or the store does.
func (p *Decider) groupsIn(ctx context.Context, ps *pass, n int) ([]mq.Group, error) {
	if b, ok := ps.w.Records[records.MergeGroupsKey(ps.repo, n)]; ok {
		var groups []mq.Group
		if b == nil {
			return nil, nil
		}
		if err := json.Unmarshal(b, &groups); err != nil {
			return nil, fmt.Errorf("decode merge groups: %w", err)
		}
		return groups, nil
	}
	return records.LoadMergeGroups(ctx, p.store, ps.repo, n)
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
// request md.PR: it is remembered as gone (merged: its changes are on the
// base branch; otherwise they left the queue), no longer tracked, and the
// groups built on it are decided again.
func (p *Decider) destroyed(ctx context.Context, ps *pass, md deliveries.MergeGroupPayload) error {
	gone, err := p.gone(ctx, md.Repo, md.HeadSHA)
	if err != nil {
		return err
	}
	groups, err := p.groupsIn(ctx, ps, md.PR)
	if err != nil {
		return err
	}
	left, tracked := mq.Forget(groups, md.HeadSHA)
	if gone != nil && !tracked {
		return nil
	}
	if tracked {
		ps.w.Records[records.MergeGroupKey(md.Repo, md.HeadSHA)] = nil
		if err := putGroups(ps.w, md.Repo, md.PR, left); err != nil {
			return err
		}
	}
	if md.BaseSHA != "" {
		ps.w.Records[records.MergeGroupBehindKey(md.Repo, md.BaseSHA, md.HeadSHA)] = nil
		var old behindGroup
		if ok, err := records.Load(ctx, p.store, records.MergeGroupBehindOldKey(md.Repo, md.BaseSHA), &old); err != nil {
			return err
		} else if ok && old.HeadSHA == md.HeadSHA {
			ps.w.Records[records.MergeGroupBehindOldKey(md.Repo, md.BaseSHA)] = nil
		}
	}
	ps.log.Info("merge group destroyed", "pr", md.PR, "head_sha", md.HeadSHA, "reason", md.Reason)
	if gone != nil {
		return nil
	}
	reason := md.Reason
	if reason == "" {
		reason = "destroyed"
	}
	b, _ := json.Marshal(goneGroup{PR: md.PR, Reason: reason}) // cannot fail
	ps.w.Records[records.MergeGroupGoneKey(md.Repo, md.HeadSHA)] = b
	ps.now[md.HeadSHA] = mq.Known{Gone: reason, GonePR: md.PR}
	return p.cascade(ctx, ps, md.HeadSHA, 1)
}

// cascade decides again, in decision ps, the groups recorded as built on
// the group with head sha, whose answer this decision changed (ps.now), and
// in turn the groups built on those whose answer changes; depth is how many
// groups ahead of them it decided. Once the group with head sha is gone its
// answer is final: the records of the groups behind it are dropped.
func (p *Decider) cascade(ctx context.Context, ps *pass, sha string, depth int) error {
	if depth > 4*mq.MaxGroups {
		return fmt.Errorf("merge groups built on %s: deeper than %d", sha, 4*mq.MaxGroups)
	}
	keys, err := p.store.Scan(ctx, records.MergeGroupBehindPrefix(ps.repo, sha))
	if err != nil {
		return fmt.Errorf("list the groups behind %s: %w", sha, err)
	}
	keys = append(keys, records.MergeGroupBehindOldKey(ps.repo, sha))
	for _, k := range keys {
		if v, ok := ps.w.Records[k]; ok && v == nil {
			continue // deleted by this decision
		}
		var b behindGroup
		ok, err := records.Load(ctx, p.store, k, &b)
		if err != nil {
			return err
		}
		if !ok || b.PR == 0 {
			continue
		}
		if ps.now[sha].Gone != "" {
			ps.w.Records[k] = nil
		}
		if err := p.redecide(ctx, ps, b.PR, b.HeadSHA, depth); err != nil {
			return err
		}
	}
	return nil
}

// redecide decides again group sha of pull request n (if it is still
// tracked, and its pull request open) in decision ps, at depth, and the
// groups behind it when its answer changes.
func (p *Decider) redecide(ctx context.Context, ps *pass, n int, sha string, depth int) error {
	groups, err := p.groupsIn(ctx, ps, n)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(groups, func(g mq.Group) bool { return g.HeadSHA == sha })
	if i < 0 {
		return nil
	}
	pr, err := records.LoadPR(ctx, p.store, ps.repo, n)
	if err != nil || pr == nil || !pr.Open {
		return err
	}
	check, onBranch, err := p.groupCheck(ctx, ps, n, pr, groups[i])
	if err != nil {
		return err
	}
	changed := p.answer(ps, pr, groups, i, check, false, depth)
	if onBranch && !groups[i].OnBranch {
		groups[i].OnBranch = true
	} else if !changed {
		return nil
	}
	if err := putGroups(ps.w, ps.repo, n, groups); err != nil {
		return err
	}
	if !changed {
		return nil
	}
	return p.cascade(ctx, ps, sha, depth+1)
}

// recheck decides again group md.HeadSHA of pull request md.PR (a recheck
// queued by an earlier version), or the groups built on it (behind).
func (p *Decider) recheck(ctx context.Context, ps *pass, md deliveries.MergeGroupPayload) error {
	if md.Action == mq.Behind {
		if gone, err := p.gone(ctx, md.Repo, md.HeadSHA); err != nil {
			return err
		} else if gone != nil {
			ps.now[md.HeadSHA] = mq.Known{Gone: gone.Reason, GonePR: gone.PR}
		}
		return p.cascade(ctx, ps, md.HeadSHA, 1)
	}
	return p.redecide(ctx, ps, md.PR, md.HeadSHA, 0)
}

func digest(parts ...string) string {
	h := sha256.New()
	for _, s := range parts {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}
