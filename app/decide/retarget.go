package decide

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/countersign/countersign/app/deliveries"
	"github.com/countersign/countersign/app/fault"
	"github.com/countersign/countersign/app/gh"
	"github.com/countersign/countersign/app/lookup"
	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
	"github.com/google/go-github/v60/github"
)

// maxMergedBelow bounds the merged pull requests that may excuse what a base
// change brings (normally one: the pull request beneath in a stack).
const maxMergedBelow = 3

// maxClosedPages bounds the pages of closed pull requests (100 a page) read
// to find them.
const maxClosedPages = 3

// maxCompareFiles is how many files GitHub lists in a comparison at most:
// a comparison that lists that many may have left some out.
const maxCompareFiles = 300

// retarget works out a change of pull request cur's base (DESIGN §2): told is
// the change the delivery names (pull_request.edited with changes.base), nil
// when it names none; a base different from the one recorded in old is a
// change all the same (its delivery was missed or comes later). It returns
// the change, nil if the base did not change for the same head.
//
// What cur merges is read again: its files, each with its patch (one
// paginated read). If they differ from what approvals of it cover, and the
// difference is not a change that the new base still holds because a pull
// request from the old base branch put it there (a stack's lower pull
// request, squash-merged: GitHub then lists its changes in the upper one
// again) and passed countersign's gate, cur.Merges is what it merges now,
// which no approval covers, and who built the commits it carries now is read
// again. Otherwise cur.Merges stays: what was approved and verified still
// holds, and the changes excused are recorded (cur.Excused), to be read
// again when the base is pushed to (decideBaseMoved). A pull request that
// closes no task is not read: its record forgets what it merges, to be read
// in full when it links a task.
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
		cur.CommittersHead, cur.Files, cur.Changes, cur.Merges, cur.Excused = "", nil, nil, "", nil
		return rt, nil
	}
	files, now, err := lookup.Changes(ctx, c, repo, cur.Number)
	if err != nil {
		return nil, err
	}
	// What approvals cover: a change excused on the old base is no
	// approval's, and counts as new unless the new base holds it too.
	approved := rules.Approved(old.Changes, old.Excused)
	news := rules.NewChanges(approved, now, nil)
	var below []mergedBelow
	if len(news) > 0 && old.Changes != nil {
		if below, err = p.mergedInto(ctx, c, repo, from, cur.Base); err != nil {
			return nil, err
		}
		news = rules.NewChanges(approved, now, func(f, e string) bool { return excuserOf(below, f, e) != nil })
	}
	cur.Files, cur.Changes, cur.Excused = files, now, nil
	if len(news) == 0 {
		cur.Excused = excuses(below, approved, now)
		return rt, nil
	}
	rt.Changes = len(news)
	cur.Merges = rules.MergesOf(now)
	return rt, p.rereadBuilders(ctx, c, inst, repo, cur)
}

// rereadBuilders reads again who built the commits pull request cur
// carries: its base changed, so they may not be those it carried.
func (p *Decider) rereadBuilders(ctx context.Context, c Client, inst int64, repo string, cur *rules.PullRequest) error {
	var shas map[string]bool
	var err error
	if cur.Committers, cur.Unresolved, shas, err = p.committers(ctx, c, inst, repo, cur.Number); err != nil {
		return err
	}
	// Whoever pushed the commits it now carries, as recorded (no request).
	return p.recordedPushers(ctx, cur, shas)
}

// mergedBelow is a pull request from the old base branch, merged into the
// new base after passing countersign's gate: the changes it merged (file ->
// fingerprint) and the files the base changed since its merge commit.
type mergedBelow struct {
	number  int
	merge   string
	changes map[string]string
	undone  map[string]bool
}

// excuserOf is the pull request of below that accounts for file f changed as
// e: it merged the same change, and the base has not changed f since.
func excuserOf(below []mergedBelow, f, e string) *mergedBelow {
	for i := range below {
		if below[i].changes[f] == e && !below[i].undone[f] {
			return &below[i]
		}
	}
	return nil
}

// excuses are the changes of now that approvals (approved) do not cover and
// that a pull request of below accounts for, one Excuse per such pull
// request.
func excuses(below []mergedBelow, approved, now map[string]string) []rules.Excuse {
	var out []rules.Excuse
	for _, f := range rules.NewChanges(approved, now, nil) {
		e, ok := now[f]
		if !ok {
			continue
		}
		by := excuserOf(below, f, e)
		if by == nil {
			continue
		}
		i := slices.IndexFunc(out, func(x rules.Excuse) bool { return x.PR == by.number })
		if i < 0 {
			out = append(out, rules.Excuse{PR: by.number, Merge: by.merge})
			i = len(out) - 1
		}
		out[i].Files = append(out[i].Files, f)
	}
	return out
}

// mergedInto are the pull requests from branch head merged into branch base
// that passed countersign's gate (gated), newest first, at most
// maxMergedBelow of them: what base may hold of head. For each: the changes
// it merged (one paginated read of its files) and what base changed since
// its merge commit (one comparison). A pull request merged into any other
// branch puts nothing on base; one merged past the gate, or that
// countersign never gated, accounts for nothing.
func (p *Decider) mergedInto(ctx context.Context, c Client, repo, head, base string) ([]mergedBelow, error) {
	owner := gh.OwnerOf(repo)
	opt := &github.PullRequestListOptions{State: "closed", Head: owner + ":" + head, Base: base, ListOptions: github.ListOptions{PerPage: 100}}
	var out []mergedBelow
	for page := 0; page < maxClosedPages && len(out) < maxMergedBelow; page++ {
		prs, resp, err := c.ListPullRequests(ctx, owner, gh.NameOf(repo), opt)
		if err != nil {
			return nil, fmt.Errorf("list pull requests from %s into %s: %w", head, base, err)
		}
		for _, pr := range prs {
			if len(out) == maxMergedBelow {
				break
			}
			if pr.MergedAt == nil || pr.GetMergeCommitSHA() == "" || pr.GetBase().GetRef() != base || pr.GetHead().GetRef() != head {
				continue
			}
			ok, err := p.gated(ctx, repo, pr)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			_, changes, err := lookup.Changes(ctx, c, repo, pr.GetNumber())
			if err != nil {
				return nil, err
			}
			since, err := baseSince(ctx, c, repo, pr.GetMergeCommitSHA(), base)
			if err != nil {
				return nil, err
			}
			undone := map[string]bool{}
			for _, f := range rules.Undone(rules.Excuse{Files: slices.Collect(maps.Keys(changes))}, since) {
				undone[f] = true
			}
			out = append(out, mergedBelow{number: pr.GetNumber(), merge: pr.GetMergeCommitSHA(), changes: changes, undone: undone})
		}
		if resp == nil || resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	return out, nil
}

// gated reports whether merged pull request pr passed countersign's gate,
// as countersign recorded it: its record names the head GitHub merged and
// the tasks it closes, and its check for them passes (rules.CheckFor: each
// verified for that head, or a lead's logged override). A pull request
// countersign has no record of, whose record names another head, or that
// closes no task (nothing verified it), passed nothing. No request.
func (p *Decider) gated(ctx context.Context, repo string, pr *github.PullRequest) (bool, error) {
	rec, err := records.LoadPR(ctx, p.store, repo, pr.GetNumber())
	if err != nil || rec == nil {
		return false, err
	}
	if rec.Head == "" || !strings.EqualFold(rec.Head, pr.GetHead().GetSHA()) || len(rec.Links) == 0 {
		return false, nil
	}
	tasks := make([]*rules.Task, len(rec.Links))
	for i, n := range rec.Links {
		if tasks[i], err = records.LoadTask(ctx, p.store, repo, n); err != nil {
			return false, err
		}
		if tasks[i] == nil {
			return false, nil
		}
	}
	check := rules.CheckFor(rec, tasks)
	return check.Status == "completed" && check.Conclusion == "success", nil
}

// baseSince is what branch did after commit sha landed on it: one
// comparison of sha with the branch's head. A commit or branch GitHub no
// longer knows gives an unknown status (nothing held for sure).
func baseSince(ctx context.Context, c Client, repo, sha, branch string) (rules.Since, error) {
	cmp, _, err := c.CompareCommits(ctx, gh.OwnerOf(repo), gh.NameOf(repo), sha, branch, nil)
	if fault.IsStatus(err, 404) {
		return rules.Since{}, nil
	}
	if err != nil {
		return rules.Since{}, fmt.Errorf("compare %.12s with %s: %w", sha, branch, err)
	}
	s := rules.Since{Status: cmp.GetStatus(), Truncated: len(cmp.Files) >= maxCompareFiles}
	for _, f := range cmp.Files {
		s.Files = append(s.Files, f.GetFilename())
		if prev := f.GetPreviousFilename(); prev != "" {
			s.Files = append(s.Files, prev)
		}
	}
	return s, nil
}

// baseMoved is the delivery that reads again, under pull request n's key,
// whether its base still holds what excused its changes.
func baseMoved(d *store.Delivery, tag string, inst int64, repo string, n int, base string, actor rules.User) store.Delivery {
	return deliveries.Derived(fmt.Sprintf("%s/base-moved/%s/%d", d.ID, tag, n), deliveries.BaseMoved, rules.TaskKey(repo, n),
		deliveries.BaseMovedPayload{Installation: inst, Repo: repo, Number: n, Base: base, Actor: actor})
}

// basePushed are the deliveries a push to a branch asks for: one for each
// open pull request on that base whose changes were excused because the
// branch held them (records.ExcusedKey). It costs no request here; each of
// them costs one comparison per pull request that excused it
// (decideBaseMoved).
func (p *Decider) basePushed(ctx context.Context, d *store.Delivery, e *github.PushEvent) ([]store.Delivery, error) {
	inst, repo, ref := e.GetInstallation().GetID(), e.GetRepo().GetFullName(), e.GetRef()
	branch, ok := strings.CutPrefix(ref, "refs/heads/")
	if inst == 0 || repo == "" || !ok || branch == "" || e.GetDeleted() {
		return nil, nil
	}
	prs, err := records.ScanNumbers(ctx, p.store, records.ExcusedPrefix(repo, branch))
	if err != nil {
		return nil, fmt.Errorf("list pull requests excused on %s: %w", branch, err)
	}
	var out []store.Delivery
	for _, n := range prs {
		out = append(out, baseMoved(d, "push", inst, repo, n, branch, gh.User(e.GetSender())))
	}
	return out, nil
}

// decideBaseMoved reads again, for open pull request bp.Number whose
// changes were excused because its base held them, whether the base still
// does (one comparison per pull request that excused them: rules.Undone). If
// it no longer holds one (a revert pushed to it, a force push), the pull
// request merges changes no approval covers: PRFacts.Merges becomes what it
// merges, who built its commits is read again, and its tasks hear of it as
// of a base change (approvals and verification are stale: DESIGN §2).
func (p *Decider) decideBaseMoved(ctx context.Context, bp deliveries.BaseMovedPayload, d *store.Delivery, log *slog.Logger) (store.Commit, error) {
	old, err := records.LoadPR(ctx, p.store, bp.Repo, bp.Number)
	if err != nil || old == nil || !old.Open || old.Base != bp.Base || len(old.Excused) == 0 || len(old.Links) == 0 {
		return store.Commit{}, err
	}
	c, err := p.clients(bp.Installation)
	if err != nil {
		return store.Commit{}, fault.Permanent(err)
	}
	var undone []string
	by := 0
	for _, e := range old.Excused {
		since, err := baseSince(ctx, c, bp.Repo, e.Merge, old.Base)
		if err != nil {
			return store.Commit{}, err
		}
		if u := rules.Undone(e, since); len(u) > 0 {
			undone = append(undone, u...)
			if by == 0 {
				by = e.PR
			}
		}
	}
	if len(undone) == 0 {
		return store.Commit{}, nil
	}
	var cur rules.PullRequest
	b, _ := json.Marshal(old) // a deep copy: plain data
	if err := json.Unmarshal(b, &cur); err != nil {
		return store.Commit{}, fmt.Errorf("copy pull request record: %w", err)
	}
	cur.Excused = nil
	cur.Merges = rules.MergesOf(cur.Changes)
	if err := p.rereadBuilders(ctx, c, bp.Installation, bp.Repo, &cur); err != nil {
		return store.Commit{}, err
	}
	log.Info("base no longer holds what excused a pull request's changes", "repo", bp.Repo, "pr", bp.Number,
		"base", old.Base, "excused_by", by, "undone", len(undone))
	actor := bp.Actor
	if actor.IsZero() {
		actor = cur.Author
	}
	ev := rules.Event{Kind: rules.PRRetargeted, Actor: actor, At: deliveries.EventTime(d.ReceivedAt, d),
		Retarget: &rules.Retarget{From: old.Base, To: old.Base, Changes: len(undone), Undone: by}}
	return p.fanout(ctx, bp.Installation, d, old, &cur, ev, linkGate{})
}

// indexExcused keeps records.ExcusedKey true to pull request cur's record
// (old: as it was), in w: present while it is open with changes excused on
// its base.
func indexExcused(w *store.Commit, old, cur *rules.PullRequest) {
	key := func(pr *rules.PullRequest) string {
		if pr == nil || !pr.Open || len(pr.Excused) == 0 || pr.Base == "" {
			return ""
		}
		return records.ExcusedKey(pr.Repo, pr.Base, pr.Number)
	}
	was, now := key(old), key(cur)
	if was != "" && was != now {
		w.Records[was] = nil
	}
	if now != "" {
		w.Records[now] = []byte{'1'}
	}
}
