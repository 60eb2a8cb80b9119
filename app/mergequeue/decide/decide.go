// Package mqdecide decides countersign's part in GitHub's merge queue, over
// the pure parts in package mergequeue: merge_group deliveries and the
// groups' checks when a task of a queued pull request changes, the check of
// a pull request that closes no task, and countersign/verification results
// that someone other than countersign posted. It reads GitHub and the store
// and writes nothing: every write is a check effect (effects/checks.go) or a
// task's history entry (rules.GateNoted, decided by decide/task.go). Package
// decide calls it; it never calls decide but through the rebuild it is given.
package mqdecide

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/countersign/countersign/app/deliveries"
	"github.com/countersign/countersign/app/fault"
	"github.com/countersign/countersign/app/gh"
	"github.com/countersign/countersign/app/lookup"
	mq "github.com/countersign/countersign/app/mergequeue"
	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
	"github.com/google/go-github/v60/github"
)

// Client is what deciding the merge queue reads of GitHub, for one
// installation.
type Client interface {
	lookup.Client
	GetPullRequest(ctx context.Context, owner string, repo string, number int) (*github.PullRequest, *github.Response, error)
	ListMatchingRefs(ctx context.Context, owner, repo string, opts *github.ReferenceListOptions) ([]*github.Reference, *github.Response, error)
	GetCommit(ctx context.Context, owner, repo, sha string, opts *github.ListOptions) (*github.RepositoryCommit, *github.Response, error)
}

// RebuildPR reads a pull request countersign has no record of from GitHub
// and returns its record and the records to write for it; nil when it is
// gone.
type RebuildPR func(ctx context.Context, cd deliveries.CheckPayload) (*rules.PullRequest, map[string][]byte, error)

// Tracked is pull request pr as its own check sees it: linked only to the
// issues it names that are tasks, or may yet become one (app/decide). A
// group's check leaves out the same issues, so that it answers as the pull
// request's check does.
type Tracked func(ctx context.Context, inst int64, repo string, pr *rules.PullRequest) (*rules.PullRequest, error)

// Decider decides the merge queue's groups and the gate beyond a pull
// request's own check.
type Decider struct {
	store     store.Store
	clients   func(inst int64) (Client, error) // installation inst's GitHub
	look      *lookup.Lookup
	metrics   *mq.Metrics // what the gate sees: forged results
	rebuildPR RebuildPR
	tracked   Tracked
}

// New is the decider reading the store st and GitHub through clients; look
// reads configuration, metrics count forged results, rebuildPR reads a
// queued pull request whose record was lost, and tracked leaves out of a
// pull request the issues it names that are no tasks.
func New(st store.Store, clients func(inst int64) (Client, error), look *lookup.Lookup, metrics *mq.Metrics, rebuildPR RebuildPR, tracked Tracked) *Decider {
	return &Decider{store: st, clients: clients, look: look, metrics: metrics, rebuildPR: rebuildPR, tracked: tracked}
}

// OnMergeGroup takes in a merge_group delivery (under the repository's key)
// and hands it to the repository's merge-queue key, where every group is
// decided, one at a time (ahead.go).
func (p *Decider) OnMergeGroup(d *store.Delivery, log *slog.Logger) (store.Commit, error) {
	e, err := mq.ParseEvent(d.Payload)
	if err != nil {
		return store.Commit{}, fault.Permanent(err)
	}
	inst, repo := e.Installation.ID, e.Repository.FullName
	if inst == 0 || repo == "" || (e.Action != mq.ChecksRequested && e.Action != mq.Destroyed) {
		return store.Commit{}, nil
	}
	md := deliveries.MergeGroupPayload{Installation: inst, Repo: repo, Action: e.Action, Reason: e.Reason, HeadSHA: e.MergeGroup.HeadSHA,
		BaseSHA: e.MergeGroup.BaseSHA, Ref: strings.TrimPrefix(e.MergeGroup.HeadRef, "refs/heads/")}
	r, err := e.Entry()
	md.PR, md.Base = r.PR, r.Base
	if err != nil {
		if r.PR == 0 || !mq.IsSHA(md.HeadSHA) {
			log.Warn("merge group skipped: no pull request or commit can be read from it", "error", err)
			return store.Commit{}, nil
		}
		md.Invalid = err.Error()
	}
	log.Info("merge group", "action", e.Action, "reason", e.Reason, "pr", md.PR, "head_sha", md.HeadSHA)
	return store.Commit{Enqueue: []store.Delivery{
		deliveries.Derived(d.ID+"/merge-group", deliveries.MergeGroup, records.MergeQueueKey(repo), md)}}, nil
}

// DecideMergeGroup decides a merge group under the repository's merge-queue
// key: checks_requested re-evaluates the pull request's tasks for the head
// that was queued and posts the group's check; destroyed ends its tracking;
// regroup decides again the groups of a pull request whose tasks changed.
// Whenever a group's answer changes, or GitHub destroys it, the groups
// built on it are decided again in the same decision (ahead.go).
func (p *Decider) DecideMergeGroup(ctx context.Context, md deliveries.MergeGroupPayload, d *store.Delivery, log *slog.Logger) (store.Commit, error) {
	c, err := p.clients(md.Installation)
	if err != nil {
		return store.Commit{}, fault.Permanent(err)
	}
	ps := &pass{w: &store.Commit{Records: map[string][]byte{}}, inst: md.Installation, d: d, repo: md.Repo, c: c,
		now: map[string]mq.Known{}, log: log}
	switch md.Action {
	case mq.Destroyed:
		err = p.destroyed(ctx, ps, md)
	case mq.Recheck, mq.Behind:
		// Queued by an earlier version, which decided the groups behind a
		// group in deliveries of their own.
		err = p.recheck(ctx, ps, md)
	case mq.Regroup:
		err = p.regroup(ctx, ps, md)
	default:
		err = p.requested(ctx, ps, md)
	}
	if err != nil {
		return store.Commit{}, err
	}
	return ps.commit()
}

// requested answers merge_group checks_requested: the group's check, and
// the groups built on it (recorded before it arrived) decided again.
func (p *Decider) requested(ctx context.Context, ps *pass, md deliveries.MergeGroupPayload) error {
	if gone, err := p.gone(ctx, md.Repo, md.HeadSHA); err != nil || gone != nil {
		if gone != nil {
			ps.log.Info("merge group already destroyed: its late checks_requested is not answered", "pr", md.PR, "head_sha", md.HeadSHA, "reason", gone.Reason)
		}
		return err
	}
	groups, err := p.groupsIn(ctx, ps, md.PR)
	if err != nil {
		return err
	}
	g := mq.Group{HeadSHA: md.HeadSHA, BaseSHA: md.BaseSHA, Ref: md.Ref, Base: md.Base, At: ps.d.ReceivedAt}
	var check rules.Check
	if md.Invalid != "" {
		check = rules.Check{Status: "completed", Conclusion: "failure", Tasks: []rules.CheckTask{},
			Queue: &rules.QueueEntry{PR: md.PR, Ref: md.Ref, Base: md.Base},
			Note:  "countersign cannot trust this merge group, so nothing here is verified: " + md.Invalid + "."}
	} else {
		pr, recs, err := p.queuedPR(ctx, ps.c, md, &g)
		if err != nil {
			return err
		}
		for k, v := range recs {
			ps.w.Records[k] = v
		}
		if check, g.OnBranch, err = p.groupCheck(ctx, ps, md.PR, pr, g); err != nil {
			return err
		}
	}
	prev := slices.IndexFunc(groups, func(x mq.Group) bool { return x.HeadSHA == md.HeadSHA })
	if prev < 0 {
		// A group's commit is new: no check run of countersign's is on it
		// yet (see effects/checks.go), so its first is created without a look.
		ps.w.Records[records.NewHeadKey(md.Repo, md.HeadSHA)] = []byte{'1'}
	}
	changed := prev < 0 || groups[prev].Status != check.Status || groups[prev].Conclusion != check.Conclusion
	g.Status, g.Conclusion = check.Status, check.Conclusion
	ps.stage(0, md.PR, md.HeadSHA, check)
	if md.BaseSHA != "" && md.Invalid == "" && !g.OnBranch {
		// Built on a group: decided again when that group's answer changes.
		b, _ := json.Marshal(behindGroup{PR: md.PR, HeadSHA: md.HeadSHA}) // cannot fail
		ps.w.Records[records.MergeGroupBehindKey(md.Repo, md.BaseSHA, md.HeadSHA)] = b
	}
	groups, dropped := mq.Track(groups, g)
	for _, sha := range dropped {
		ps.w.Records[records.MergeGroupKey(md.Repo, sha)] = nil
	}
	b, _ := json.Marshal(md.PR) // a number: cannot fail
	ps.w.Records[records.MergeGroupKey(md.Repo, md.HeadSHA)] = b
	if err := putGroups(ps.w, md.Repo, md.PR, groups); err != nil {
		return err
	}
	if !changed {
		return nil
	}
	ps.now[md.HeadSHA] = mq.Known{Group: &g, GroupPR: md.PR}
	return p.cascade(ctx, ps, md.HeadSHA, 1)
}

// queuedPR is the record of the queued pull request (read from GitHub and
// returned with its records when countersign has none) and sets g.Queued to
// its head on GitHub now: the head the group merges, since GitHub takes a
// pull request out of the queue when it is pushed to.
func (p *Decider) queuedPR(ctx context.Context, c Client, md deliveries.MergeGroupPayload, g *mq.Group) (*rules.PullRequest, map[string][]byte, error) {
	pr, err := records.LoadPR(ctx, p.store, md.Repo, md.PR)
	if err != nil {
		return nil, nil, err
	}
	if pr == nil {
		pr, recs, err := p.rebuildPR(ctx, deliveries.CheckPayload{Installation: md.Installation, Repo: md.Repo, Number: md.PR})
		if pr != nil {
			g.Queued = pr.Head
		}
		return pr, recs, err
	}
	head, _, err := (queueGitHub{c}).PullHead(ctx, md.Repo, md.PR)
	if errors.Is(err, mq.ErrGone) {
		return nil, nil, nil
	}
	g.Queued = head
	return pr, nil, err
}

// groupCheck is the check of group g of pull request n (pr its record, nil
// when there is none), its tasks read from the store. It reports too
// whether g is built on the head of the base branch (mergequeue.Resolve).
func (p *Decider) groupCheck(ctx context.Context, ps *pass, n int, pr *rules.PullRequest, g mq.Group) (rules.Check, bool, error) {
	in := mq.Input{Entry: g.Entry(n), PR: pr}
	ahead, onBranch, err := p.ahead(ctx, ps, g)
	if err != nil {
		return rules.Check{}, false, err
	}
	in.Ahead = ahead
	if pr != nil {
		if p.tracked != nil {
			if pr, err = p.tracked(ctx, ps.inst, ps.repo, pr); err != nil {
				return rules.Check{}, false, err
			}
			in.PR = pr
		}
		in.Tasks = make([]*rules.Task, len(pr.Links))
		for i, t := range pr.Links {
			var err error
			if in.Tasks[i], err = records.LoadTask(ctx, p.store, ps.repo, t); err != nil {
				return rules.Check{}, false, err
			}
		}
	}
	if pr != nil && len(pr.Links) == 0 {
		cfg, err := p.look.Config(ctx, ps.c, ps.repo, ps.log)
		if err != nil {
			return rules.Check{}, false, err
		}
		in.Gate, in.Pins = cfg.Gate, cfg.Pins
	}
	return mq.Decide(in), onBranch, nil
}

// Regroup has the checks of the queued groups of pull request pr, whose
// tasks changed, worked out again under the repository's merge-queue key
// (records.MergeQueueKey), where every group is decided: it queues that
// decision when pr has a group tracked, or when its record was just rebuilt
// from GitHub (rebuilt: countersign's records were lost, and its groups are
// found again from GitHub's queue branches).
// The decision reads the tasks' records as committed by then, not the ones
// given here.
func (p *Decider) Regroup(ctx context.Context, w *store.Commit, inst int64, d *store.Delivery, pr *rules.PullRequest, _ []*rules.Task, rebuilt bool, _ *slog.Logger) error {
	if !pr.Open {
		return nil // merged (its groups are destroyed) or closed (GitHub drops them)
	}
	if !rebuilt {
		groups, err := records.LoadMergeGroups(ctx, p.store, pr.Repo, pr.Number)
		if err != nil || len(groups) == 0 {
			return err
		}
	}
	w.Enqueue = append(w.Enqueue, deliveries.Derived(fmt.Sprintf("merge-group-regroup/%s", digest(d.ID, fmt.Sprint(pr.Number))), deliveries.MergeGroup,
		records.MergeQueueKey(pr.Repo), deliveries.MergeGroupPayload{Installation: inst, Repo: pr.Repo, Action: mq.Regroup, PR: pr.Number, Rebuilt: rebuilt}))
	return nil
}

// regroup works out again the checks of the queued groups of pull request
// md.PR, whose tasks changed (md.Rebuilt: see Regroup). A check that
// changes is written; one that stops passing is said in the history of
// each task the pull request closes.
func (p *Decider) regroup(ctx context.Context, ps *pass, md deliveries.MergeGroupPayload) error {
	pr, err := records.LoadPR(ctx, p.store, md.Repo, md.PR)
	if err != nil || pr == nil || !pr.Open {
		return err
	}
	groups, err := p.groupsIn(ctx, ps, md.PR)
	if err != nil {
		return err
	}
	found := false
	if md.Rebuilt && len(groups) == 0 {
		gs, err := mq.Find(ctx, queueGitHub{ps.c}, pr.Repo, pr.Number)
		if err != nil {
			return err
		}
		for _, g := range gs {
			g.Queued, g.At = pr.Head, ps.d.ReceivedAt
			groups, _ = mq.Track(groups, g)
		}
		found = len(gs) > 0
	}
	if len(groups) == 0 {
		return nil
	}
	var changed []string
	wrote := false
	for i, g := range groups {
		if g.Queued != "" && g.Queued != pr.Head {
			// The pull request moved on from the head that was queued: GitHub
			// took it out of the queue, and destroyed arrives; or countersign's
			// record catches up, and decides this group again then.
			continue
		}
		check, onBranch, err := p.groupCheck(ctx, ps, pr.Number, pr, g)
		if err != nil {
			return err
		}
		if p.answer(ps, pr, groups, i, check, md.Rebuilt, 0) {
			changed, wrote = append(changed, g.HeadSHA), true
		}
		if onBranch && !g.OnBranch {
			groups[i].OnBranch, wrote = true, true
		}
		if found && !onBranch && g.BaseSHA != "" {
			// Found again, built on a group: decided again when that group's
			// answer changes, as when its checks_requested came (requested).
			b, _ := json.Marshal(behindGroup{PR: pr.Number, HeadSHA: g.HeadSHA}) // cannot fail
			ps.w.Records[records.MergeGroupBehindKey(pr.Repo, g.BaseSHA, g.HeadSHA)] = b
		}
	}
	if !wrote {
		return nil
	}
	if err := putGroups(ps.w, pr.Repo, pr.Number, groups); err != nil {
		return err
	}
	for _, sha := range changed {
		if err := p.cascade(ctx, ps, sha, 1); err != nil {
			return err
		}
	}
	return nil
}

// answer stages check on groups[i], a group of pr, at depth (how many
// groups ahead of it this decision decided), when it is not what was last
// written there (or always, when force): the check, the group's record, a
// line in the history of each task pr closes when the group stops passing.
// It reports whether the answer changed (or was written), and then notes
// it in ps for the groups behind it; the caller records groups and has
// those decided again (cascade).
func (p *Decider) answer(ps *pass, pr *rules.PullRequest, groups []mq.Group, i int, check rules.Check, force bool, depth int) bool {
	g := groups[i]
	if check.Status == g.Status && check.Conclusion == g.Conclusion && !force {
		return false
	}
	ps.stage(depth, pr.Number, g.HeadSHA, check)
	if g.Passing() && check.Conclusion == "failure" {
		why := fmt.Sprintf("merge queue: the group of #%d (%s) no longer passes countersign/verification, so GitHub takes #%d out of the queue: %s",
			pr.Number, g.Ref, pr.Number, check.Note)
		ps.w.Enqueue = append(ps.w.Enqueue, gateNotes(ps.inst, ps.d, pr, "group/"+g.HeadSHA, why)...)
		ps.log.Info("a queued pull request's merge group stopped passing", "pr", pr.Number, "group", g.HeadSHA)
	}
	groups[i].Status, groups[i].Conclusion = check.Status, check.Conclusion
	b, _ := json.Marshal(pr.Number)
	ps.w.Records[records.MergeGroupKey(pr.Repo, g.HeadSHA)] = b
	now := groups[i]
	ps.now[g.HeadSHA] = mq.Known{Group: &now, GroupPR: pr.Number}
	return true
}

// gateNotes are the deliveries that write why into the history of each task
// pr closes (rules.GateNoted); tag tells them apart within delivery d.
func gateNotes(inst int64, d *store.Delivery, pr *rules.PullRequest, tag, why string) []store.Delivery {
	var out []store.Delivery
	for _, n := range pr.Links {
		ev := rules.Event{Kind: rules.GateNoted, Actor: rules.User{Login: "countersign"}, At: d.ReceivedAt.UTC(),
			Issue: rules.IssueFacts{Repo: pr.Repo, Number: n}, Text: why}
		out = append(out, deliveries.Derived(fmt.Sprintf("%s/gate/%s/%d", d.ID, tag, n), deliveries.Task, rules.TaskKey(pr.Repo, n),
			deliveries.TaskPayload{Installation: inst, Event: ev}))
	}
	return out
}

// putGroups records the groups tracked for pull request n in w (none: the
// record is deleted).
func putGroups(w *store.Commit, repo string, n int, groups []mq.Group) error {
	if len(groups) == 0 {
		w.Records[records.MergeGroupsKey(repo, n)] = nil
		return nil
	}
	b, err := json.Marshal(groups)
	if err != nil {
		return fmt.Errorf("encode merge groups: %w", err)
	}
	w.Records[records.MergeGroupsKey(repo, n)] = b
	return nil
}

// UntrackedGate is the check effect of pull request pr when it closes no
// task (gate.untracked, gate.exempt); nil when it closes one, or has no open
// head.
func (p *Decider) UntrackedGate(ctx context.Context, c Client, pr *rules.PullRequest, log *slog.Logger) (*rules.Effect, error) {
	if len(pr.Links) > 0 || !pr.Open || pr.Head == "" {
		return nil, nil
	}
	cfg, err := p.look.Config(ctx, c, pr.Repo, log)
	if err != nil {
		return nil, err
	}
	check := rules.UntrackedCheck(pr, cfg.Gate, cfg.Pins)
	return &rules.Effect{Kind: rules.EffectCheck, Repo: pr.Repo, Number: pr.Number, SHA: pr.Head, Check: &check}, nil
}

// ForgedGate takes in a result named countersign/verification that
// countersign did not post on sha (kind: mergequeue.ForgedStatus or
// ForgedCheckRun; by: who posted it, as shown): it counts for nothing, is
// counted, and is said, once per poster and commit, in the history of each
// task of the pull requests whose head (or merge group) sha is.
func (p *Decider) ForgedGate(ctx context.Context, inst int64, repo, sha, kind, by string, d *store.Delivery, log *slog.Logger) (store.Commit, error) {
	p.metrics.Forged.WithLabelValues(kind).Inc()
	log.Warn("a result named countersign/verification that countersign did not post: ignored", "kind", kind, "by", by, "sha", sha)
	seenKey := records.ForgedKey(repo, sha, kind, by)
	if seen, err := records.Load(ctx, p.store, seenKey, new(int)); err != nil || seen {
		return store.Commit{}, err
	}
	var prs []int
	if _, err := records.Load(ctx, p.store, records.HeadKey(repo, sha), &prs); err != nil {
		return store.Commit{}, err
	}
	var group int
	if _, err := records.Load(ctx, p.store, records.MergeGroupKey(repo, sha), &group); err != nil {
		return store.Commit{}, err
	}
	if group != 0 && !slices.Contains(prs, group) {
		prs = append(prs, group)
	}
	what := "a commit status"
	if kind == mq.ForgedCheckRun {
		what = "a check run"
	}
	w := store.Commit{Records: map[string][]byte{seenKey: []byte("1")}}
	for _, n := range prs {
		pr, err := records.LoadPR(ctx, p.store, repo, n)
		if err != nil {
			return store.Commit{}, err
		}
		if pr == nil {
			continue
		}
		where := fmt.Sprintf("the head of #%d", n)
		if n == group && pr.Head != sha {
			where = fmt.Sprintf("the merge-queue group of #%d", n)
		}
		why := fmt.Sprintf("%s named %s by %s on %s (%.12s) was ignored: only countersign's own check run is the gate, and a rule that requires it must be pinned to the countersign App",
			what, rules.CheckName, by, where, sha)
		w.Enqueue = append(w.Enqueue, gateNotes(inst, d, pr, fmt.Sprintf("forged/%d", n), why)...)
	}
	return w, nil
}

// queueGitHub is mergequeue.GitHub over an installation's client.
type queueGitHub struct{ c Client }

func (q queueGitHub) PullHead(ctx context.Context, repo string, n int) (string, bool, error) {
	pr, _, err := q.c.GetPullRequest(ctx, gh.OwnerOf(repo), gh.NameOf(repo), n)
	if fault.IsStatus(err, 404) || fault.IsStatus(err, 410) {
		return "", false, mq.ErrGone
	}
	if err != nil {
		return "", false, fmt.Errorf("read pull request #%d: %w", n, err)
	}
	return pr.GetHead().GetSHA(), pr.GetState() == "open", nil
}

func (q queueGitHub) FirstParent(ctx context.Context, repo, sha string) (string, error) {
	cm, _, err := q.c.GetCommit(ctx, gh.OwnerOf(repo), gh.NameOf(repo), sha, &github.ListOptions{PerPage: 1})
	if fault.IsStatus(err, 404) || fault.IsStatus(err, 422) {
		return "", nil // gone: the group was destroyed since
	}
	if err != nil {
		return "", fmt.Errorf("read merge group commit %s: %w", sha, err)
	}
	if len(cm.Parents) == 0 {
		return "", nil
	}
	return cm.Parents[0].GetSHA(), nil
}

func (q queueGitHub) QueueBranches(ctx context.Context, repo string) (map[string]string, error) {
	refs, _, err := q.c.ListMatchingRefs(ctx, gh.OwnerOf(repo), gh.NameOf(repo), &github.ReferenceListOptions{
		Ref: strings.TrimPrefix(mq.RefPrefix, "refs/"), ListOptions: github.ListOptions{PerPage: 100}})
	if err != nil {
		return nil, fmt.Errorf("list merge-queue branches: %w", err)
	}
	out := map[string]string{}
	for _, r := range refs {
		out[r.GetRef()] = r.GetObject().GetSHA()
	}
	return out, nil
}
