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
// and hands it to its pull request's key.
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
		deliveries.Derived(d.ID+"/merge-group", deliveries.MergeGroup, rules.TaskKey(repo, md.PR), md)}}, nil
}

// DecideMergeGroup decides a merge group under its pull request's key:
// checks_requested re-evaluates the pull request's tasks for the head that
// was queued and posts the group's check; destroyed ends its tracking and
// has the groups built on it decided again; countersign's own recheck and
// behind decide again the groups whose group ahead changed (ahead.go).
func (p *Decider) DecideMergeGroup(ctx context.Context, md deliveries.MergeGroupPayload, d *store.Delivery, log *slog.Logger) (store.Commit, error) {
	if md.Action == mq.Behind {
		return p.behind(ctx, md, d)
	}
	groups, err := records.LoadMergeGroups(ctx, p.store, md.Repo, md.PR)
	if err != nil {
		return store.Commit{}, err
	}
	w := store.Commit{Records: map[string][]byte{}}
	switch md.Action {
	case mq.Destroyed:
		return p.destroyed(ctx, md, groups, d, log)
	case mq.Recheck:
		return p.recheck(ctx, md, groups, d, log)
	}
	if gone, err := p.gone(ctx, md.Repo, md.HeadSHA); err != nil || gone != nil {
		if gone != nil {
			log.Info("merge group already destroyed: its late checks_requested is not answered", "pr", md.PR, "head_sha", md.HeadSHA, "reason", gone.Reason)
		}
		return store.Commit{}, err
	}
	c, err := p.clients(md.Installation)
	if err != nil {
		return store.Commit{}, fault.Permanent(err)
	}
	g := mq.Group{HeadSHA: md.HeadSHA, BaseSHA: md.BaseSHA, Ref: md.Ref, Base: md.Base, At: d.ReceivedAt}
	var check rules.Check
	if md.Invalid != "" {
		check = rules.Check{Status: "completed", Conclusion: "failure", Tasks: []rules.CheckTask{},
			Queue: &rules.QueueEntry{PR: md.PR, Ref: md.Ref, Base: md.Base},
			Note:  "countersign cannot trust this merge group, so nothing here is verified: " + md.Invalid + "."}
	} else {
		pr, recs, err := p.queuedPR(ctx, c, md, &g)
		if err != nil {
			return store.Commit{}, err
		}
		for k, v := range recs {
			w.Records[k] = v
		}
		if check, g.OnBranch, err = p.groupCheck(ctx, c, md.Installation, md.Repo, md.PR, pr, nil, g, log); err != nil {
			return store.Commit{}, err
		}
	}
	g.Status, g.Conclusion = check.Status, check.Conclusion
	ew, err := records.CommitFor(md.Installation, d, nil, []rules.Effect{{Kind: rules.EffectCheck, Repo: md.Repo, Number: md.PR, SHA: md.HeadSHA, Check: &check}})
	if err != nil {
		return store.Commit{}, err
	}
	w.Effects = ew.Effects
	prev := slices.IndexFunc(groups, func(x mq.Group) bool { return x.HeadSHA == md.HeadSHA })
	if prev < 0 {
		// A group's commit is new: no check run of countersign's is on it
		// yet (see effects/checks.go), so its first is created without a look.
		w.Records[records.NewHeadKey(md.Repo, md.HeadSHA)] = []byte{'1'}
	}
	if prev < 0 || groups[prev].Status != g.Status || groups[prev].Conclusion != g.Conclusion {
		// The groups behind this one (built on it) carry its answer.
		w.Enqueue = append(w.Enqueue, behindOf(md.Installation, d, md.Repo, md.PR, md.HeadSHA))
	}
	if md.BaseSHA != "" && md.Invalid == "" && !g.OnBranch {
		// Built on a group: recorded as behind it, and decided again once
		// this is committed (see ahead.go).
		b, _ := json.Marshal(behindGroup{PR: md.PR, HeadSHA: md.HeadSHA}) // cannot fail
		w.Records[records.MergeGroupBehindKey(md.Repo, md.BaseSHA, md.HeadSHA)] = b
		w.Enqueue = append(w.Enqueue, settle(md.Installation, d, md.Repo, md.PR, md.HeadSHA))
	}
	groups, dropped := mq.Track(groups, g)
	for _, sha := range dropped {
		w.Records[records.MergeGroupKey(md.Repo, sha)] = nil
	}
	b, _ := json.Marshal(md.PR) // a number: cannot fail
	w.Records[records.MergeGroupKey(md.Repo, md.HeadSHA)] = b
	return w, putGroups(&w, md.Repo, md.PR, groups)
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
// when there is none); tasks are pr's tasks, read when nil. It reports too
// whether g is built on the head of the base branch (mergequeue.Resolve).
func (p *Decider) groupCheck(ctx context.Context, c Client, inst int64, repo string, n int, pr *rules.PullRequest, tasks []*rules.Task, g mq.Group, log *slog.Logger) (rules.Check, bool, error) {
	in := mq.Input{Entry: g.Entry(n), PR: pr, Tasks: tasks}
	ahead, onBranch, err := p.ahead(ctx, c, repo, g)
	if err != nil {
		return rules.Check{}, false, err
	}
	in.Ahead = ahead
	if pr != nil && tasks == nil {
		if p.tracked != nil {
			if pr, err = p.tracked(ctx, inst, repo, pr); err != nil {
				return rules.Check{}, false, err
			}
			in.PR = pr
		}
		in.Tasks = make([]*rules.Task, len(pr.Links))
		for i, t := range pr.Links {
			var err error
			if in.Tasks[i], err = records.LoadTask(ctx, p.store, repo, t); err != nil {
				return rules.Check{}, false, err
			}
		}
	}
	if pr != nil && len(pr.Links) == 0 {
		cfg, err := p.look.Config(ctx, c, repo, log)
		if err != nil {
			return rules.Check{}, false, err
		}
		in.Gate, in.Pins = cfg.Gate, cfg.Pins
	}
	return mq.Decide(in), onBranch, nil
}

// Regroup works out again the checks of the queued groups of pull request
// pr, whose tasks changed (tasks[i] is the record of pr.Links[i]); rebuilt
// says pr's record was just rebuilt from GitHub (countersign's records were
// lost): the groups are then found again from GitHub's queue branches. A
// check that changes is written; one that stops passing is said in the
// history of each task pr closes.
func (p *Decider) Regroup(ctx context.Context, w *store.Commit, inst int64, d *store.Delivery, pr *rules.PullRequest, tasks []*rules.Task, rebuilt bool, log *slog.Logger) error {
	if !pr.Open {
		return nil // merged (its groups are destroyed) or closed (GitHub drops them)
	}
	groups, err := records.LoadMergeGroups(ctx, p.store, pr.Repo, pr.Number)
	if err != nil {
		return err
	}
	c, err := p.clients(inst)
	if err != nil {
		return fault.Permanent(err)
	}
	if rebuilt && len(groups) == 0 {
		found, err := mq.Find(ctx, queueGitHub{c}, pr.Repo, pr.Number)
		if err != nil {
			return err
		}
		for _, g := range found {
			g.Queued, g.At = pr.Head, d.ReceivedAt
			groups, _ = mq.Track(groups, g)
		}
	}
	if len(groups) == 0 {
		return nil
	}
	if w.Records == nil {
		w.Records = map[string][]byte{}
	}
	changed := false
	for i, g := range groups {
		check, onBranch, err := p.groupCheck(ctx, c, inst, pr.Repo, pr.Number, pr, tasks, g, log)
		if err != nil {
			return err
		}
		wrote, err := p.answer(ctx, w, inst, d, pr, groups, i, check, rebuilt, log)
		if err != nil {
			return err
		}
		if onBranch && !g.OnBranch {
			groups[i].OnBranch, wrote = true, true
		}
		changed = changed || wrote
	}
	if !changed {
		return nil
	}
	return putGroups(w, pr.Repo, pr.Number, groups)
}

// answer writes check on groups[i], a group of pr, when it is not what was
// last written there (or always, when force): the check, the group's
// record, a line in the history of each task pr closes when the group stops
// passing, and the decision again of the groups built on it. It reports
// whether it wrote.
func (p *Decider) answer(ctx context.Context, w *store.Commit, inst int64, d *store.Delivery, pr *rules.PullRequest, groups []mq.Group, i int, check rules.Check, force bool, log *slog.Logger) (bool, error) {
	g := groups[i]
	if check.Status == g.Status && check.Conclusion == g.Conclusion && !force {
		return false, nil
	}
	ew, err := records.CommitFor(inst, d, nil, []rules.Effect{{Kind: rules.EffectCheck, Repo: pr.Repo, Number: pr.Number, SHA: g.HeadSHA, Check: &check}})
	if err != nil {
		return false, err
	}
	w.Effects = append(w.Effects, ew.Effects...)
	if g.Passing() && check.Conclusion == "failure" {
		why := fmt.Sprintf("merge queue: the group of #%d (%s) no longer passes countersign/verification, so GitHub takes #%d out of the queue: %s",
			pr.Number, g.Ref, pr.Number, check.Note)
		w.Enqueue = append(w.Enqueue, gateNotes(inst, d, pr, "group/"+g.HeadSHA, why)...)
		log.Info("a queued pull request's merge group stopped passing", "pr", pr.Number, "group", g.HeadSHA)
	}
	if check.Status != g.Status || check.Conclusion != g.Conclusion {
		w.Enqueue = append(w.Enqueue, behindOf(inst, d, pr.Repo, pr.Number, g.HeadSHA))
	}
	groups[i].Status, groups[i].Conclusion = check.Status, check.Conclusion
	b, _ := json.Marshal(pr.Number)
	w.Records[records.MergeGroupKey(pr.Repo, g.HeadSHA)] = b
	return true, nil
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
