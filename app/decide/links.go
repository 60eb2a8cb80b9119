// This file reads what blocks a task (docs/design.md, Dependencies): the
// issue_dependencies and sub_issues webhooks, GitHub's lists of an issue's
// blockers and sub-issues when a delivery's counts say the record missed a
// change, and the records of the blockers that are tasks. It tells a
// blocker's dependents when the blocker changes (the dependents records:
// records.DependentKey), whatever repository of the installation they are in.

package decide

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/countersign/countersign/app/jsonpick"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/countersign/countersign/app/deliveries"
	"github.com/countersign/countersign/app/fault"
	"github.com/countersign/countersign/app/gh"
	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
	"github.com/google/go-github/v60/github"
)

// linkIssue is an issue as a link webhook shows it.
type linkIssue struct {
	Number      int    `json:"number"`
	Title       string `json:"title"`
	State       string `json:"state"`
	StateReason string `json:"state_reason"`
	PullRequest any    `json:"pull_request"`
}

// linkPayload is an issue_dependencies or sub_issues webhook's payload.
type linkPayload struct {
	Action       string `json:"action"`
	Installation struct {
		ID int64 `json:"id"`
	} `json:"installation"`
	Repository struct {
		FullName string `json:"full_name"`
	} `json:"repository"`
	Sender            *github.User `json:"sender"`
	BlockedIssue      *linkIssue   `json:"blocked_issue"`
	BlockingIssue     *linkIssue   `json:"blocking_issue"`
	BlockingIssueRepo *struct {
		FullName string `json:"full_name"`
	} `json:"blocking_issue_repo"`
	ParentIssue  *linkIssue `json:"parent_issue"`
	SubIssue     *linkIssue `json:"sub_issue"`
	SubIssueRepo *struct {
		FullName string `json:"full_name"`
	} `json:"sub_issue_repo"`
}

// onLinks decides an issue_dependencies or sub_issues webhook: the change is
// the blocked issue's (the parent's, for a sub-issue), decided under its
// key. GitHub sends a link to the repository of each of its two issues:
// blocked_by_* and sub_issue_* to the issue that waits, which this acts on;
// blocking_* and parent_issue_* to the other, where nothing waits (a
// repository of another installation hears of the link by its own
// delivery).
func (p *Decider) onLinks(d *store.Delivery, log *slog.Logger) (store.Commit, error) {
	var e linkPayload
	if err := json.Unmarshal(d.Payload, &e); err != nil {
		return store.Commit{}, fault.Permanent(fmt.Errorf("parse %s payload: %w", d.Event, err))
	}
	inst, repo := e.Installation.ID, e.Repository.FullName
	var waiter, blocker *linkIssue
	var blockerRepo string
	via := rules.LinkBlockedBy
	removed := false
	switch e.Action {
	case "blocked_by_added", "blocked_by_removed":
		waiter, blocker = e.BlockedIssue, e.BlockingIssue
		if e.BlockingIssueRepo != nil {
			blockerRepo = e.BlockingIssueRepo.FullName
		}
		removed = e.Action == "blocked_by_removed"
	case "sub_issue_added", "sub_issue_removed":
		waiter, blocker, via = e.ParentIssue, e.SubIssue, rules.LinkSubIssue
		if e.SubIssueRepo != nil {
			blockerRepo = e.SubIssueRepo.FullName
		}
		removed = e.Action == "sub_issue_removed"
	default:
		log.Info("nothing to do", "why", "the waiting issue's repository hears of the link by its own delivery")
		return store.Commit{}, nil
	}
	if inst == 0 || repo == "" || waiter == nil || blocker == nil || waiter.Number == 0 || blocker.Number == 0 || waiter.PullRequest != nil {
		return store.Commit{}, nil
	}
	if blockerRepo == "" {
		blockerRepo = repo
	}
	b := rules.Blocker{Repo: blockerRepo, Number: blocker.Number, Title: blocker.Title, Via: via,
		Issue: rules.IssueStatusOf(blocker.State, blocker.StateReason)}
	ev := rules.Event{Kind: rules.LinksChanged, Actor: gh.User(e.Sender), At: deliveries.EventTime(time.Time{}, d),
		Issue: rules.IssueFacts{Repo: repo, Number: waiter.Number}, Link: &rules.LinkChange{Blocker: b, Removed: removed}}
	key := rules.TaskKey(repo, waiter.Number)
	return store.Commit{Enqueue: []store.Delivery{deliveries.Derived(d.ID+"/links/"+key, deliveries.Task, key,
		deliveries.TaskPayload{Installation: inst, Event: ev})}}, nil
}

// linkCounts are the totals an issue of a webhook's payload carries (nil when
// it carries none).
func linkCounts(payload []byte) *rules.LinkCounts {
	var v struct {
		Issue struct {
			Deps *struct {
				Total int `json:"total_blocked_by"`
			} `json:"issue_dependencies_summary"`
			Subs *struct {
				Total int `json:"total"`
			} `json:"sub_issues_summary"`
		} `json:"issue"`
	}
	if !pickLinkCounts(payload, &v.Issue.Deps, &v.Issue.Subs) && json.Unmarshal(payload, &v) != nil {
		return nil
	}
	if v.Issue.Deps == nil || v.Issue.Subs == nil {
		return nil
	}
	return &rules.LinkCounts{BlockedBy: v.Issue.Deps.Total, SubIssues: v.Issue.Subs.Total}
}

// pickLinkCounts decodes the issue's two summaries of payload into deps and
// subs without decoding the rest (jsonpick); false when it cannot (the
// payload is then decoded whole).
func pickLinkCounts(payload []byte, deps, subs any) bool {
	v, ok := jsonpick.Pick(payload, "issue")
	if !ok || v[0] == nil || v[0][0] != '{' {
		return ok && v[0] == nil // no issue: no counts
	}
	sums, ok := jsonpick.Sub(v[0], "issue_dependencies_summary", "sub_issues_summary")
	if !ok {
		return false
	}
	for i, dst := range []any{deps, subs} {
		if sums[i] != nil && json.Unmarshal(sums[i], dst) != nil {
			return false
		}
	}
	return true
}

// wantsLinks reports whether deciding ev needs the task's links as they are
// now: a link changed, GitHub's counts differ from the record, or someone
// asks to verify a task with blockers.
func wantsLinks(t *rules.Task, ev rules.Event) bool {
	if ev.Kind == rules.LinksChanged {
		return true
	}
	if c := ev.Issue.Counts; c != nil && ((t != nil && countsDiffer(t.Blockers, *c)) || (t == nil && (c.BlockedBy > 0 || c.SubIssues > 0))) {
		return true
	}
	if t == nil || len(t.Blockers) == 0 {
		return false
	}
	return slices.ContainsFunc(ev.Commands, func(c rules.Command) bool { return c.Name == rules.CmdVerify })
}

func countsDiffer(bs []rules.Blocker, c rules.LinkCounts) bool {
	n, s := 0, 0
	for _, b := range bs {
		if b.Gone() {
			continue // GitHub no longer counts it
		}
		if b.Via == rules.LinkSubIssue {
			s++
		} else {
			n++
		}
	}
	return n != c.BlockedBy || s != c.SubIssues
}

// linksNow are task n's links as they are now: the record's (nil t: none),
// with ev's change, read again from GitHub when its counts differ, each
// blocker that is a task as its record says, and the cycle it is in.
func (p *Decider) linksNow(ctx context.Context, c Client, t *rules.Task, ev rules.Event, log *slog.Logger) (*rules.Links, error) {
	repo, n := ev.Issue.Repo, ev.Issue.Number
	var blockers []rules.Blocker
	if t != nil {
		blockers = slices.Clone(t.Blockers)
	}
	if ev.Link != nil {
		blockers = rules.ApplyLink(blockers, *ev.Link)
	}
	if ev.Issue.Counts != nil && countsDiffer(blockers, *ev.Issue.Counts) {
		read, err := p.readLinks(ctx, c, repo, n, blockers)
		if err != nil {
			return nil, err
		}
		log.Info("links read again: GitHub's counts differ from the record", "task", rules.TaskKey(repo, n),
			"had", len(blockers), "now", len(read))
		blockers = read
	}
	for i := range blockers {
		b := &blockers[i]
		if b.Gone() {
			continue
		}
		bt, err := records.LoadTask(ctx, p.store, b.Repo, b.Number)
		if err != nil {
			return nil, err
		}
		if bt != nil {
			b.Task, b.State, b.Closed, b.Issue = true, bt.State, bt.Closed, ""
			if b.Title == "" {
				b.Title = bt.Title
			}
		}
	}
	self := rules.TaskKey(repo, n)
	var loadErr error
	next := func(k string) []string {
		list := blockers
		if k != self {
			r, num, ok := rules.SplitTaskKey(k)
			if !ok {
				return nil
			}
			bt, err := records.LoadTask(ctx, p.store, r, num)
			if err != nil {
				loadErr = err
				return nil
			}
			if bt == nil {
				return nil
			}
			list = bt.Blockers
		}
		var out []string
		for _, b := range list {
			if b.Task && b.Blocks() {
				out = append(out, b.Key())
			}
		}
		return out
	}
	cycle := rules.FindCycle(self, next, rules.MaxCycleSearch)
	if loadErr != nil {
		return nil, loadErr
	}
	return &rules.Links{Blockers: blockers, Cycle: cycle}, nil
}

// readLinks reads issue n's blockers and sub-issues from GitHub (the
// healing of a missed delivery), keeping the status a blocker had.
func (p *Decider) readLinks(ctx context.Context, c Client, repo string, n int, had []rules.Blocker) ([]rules.Blocker, error) {
	var out []rules.Blocker
	for _, kind := range []struct {
		path string
		via  rules.LinkKind
	}{{gh.LinksBlockedBy, rules.LinkBlockedBy}, {gh.LinksSubIssues, rules.LinkSubIssue}} {
		list, err := c.ListIssueLinks(ctx, gh.OwnerOf(repo), gh.NameOf(repo), n, kind.path, rules.MaxBlockers)
		if err != nil {
			return nil, err
		}
		for _, is := range list {
			out = append(out, rules.Blocker{Repo: gh.RepoOfIssue(is, repo), Number: is.GetNumber(), Title: is.GetTitle(), Via: kind.via,
				Issue: rules.IssueStatusOf(is.GetState(), is.GetStateReason())})
		}
	}
	for i := range out { // a blocker's title, as GitHub had it, is kept if the list shows none
		if j := slices.IndexFunc(had, func(b rules.Blocker) bool { return b.Key() == out[i].Key() }); j >= 0 && out[i].Title == "" {
			out[i].Title = had[j].Title
		}
	}
	return out, nil
}

// blocks reports whether task t (nil: an issue countersign does not track,
// open as far as a dependent knows) blocks the tasks that wait for it. Its
// dependents are told when this changes, not at each of its transitions: a
// write to each dependent's card per transition would spend the installation's
// writes on news no one needs; a dependent reads its blockers' states again
// when someone tries to verify it.
func blocks(t *rules.Task) bool {
	if t == nil {
		return true
	}
	return rules.Blocker{Task: true, State: t.State, Closed: t.Closed}.Blocks()
}

// dependentRecord is the record of one dependent of a blocker.
type dependentRecord struct {
	Installation int64 `json:"installation"`
}

// linkWrites are the records and deliveries a task's decision owes its
// links: the dependents records of the blockers it gained and lost, news
// for its own dependents when what they see of it changed, and a new look
// for the other tasks of a cycle it entered or left.
func (p *Decider) linkWrites(ctx context.Context, inst int64, d *store.Delivery, old, now *rules.Task, ev rules.Event, w *store.Commit) error {
	if now == nil {
		return nil
	}
	self := now.Key()
	put := func(k string, v []byte) {
		if w.Records == nil {
			w.Records = map[string][]byte{}
		}
		w.Records[k] = v
	}
	var had []rules.Blocker
	if old != nil {
		had = old.Blockers
	}
	rec, _ := json.Marshal(dependentRecord{Installation: inst})
	for _, b := range now.Blockers {
		if !slices.ContainsFunc(had, func(x rules.Blocker) bool { return x.Key() == b.Key() }) {
			put(records.DependentKey(b.Repo, b.Number, self), rec)
			if b.Task && b.Blocks() && sameAccount(b.Repo, now.Repo) {
				// The new blocker looks again for a cycle through this
				// task: two links added at once, each decided before the
				// other was recorded, would otherwise close a cycle that
				// neither side sees.
				k := b.Key()
				e := rules.Event{Kind: rules.LinksChanged, Actor: ev.Actor, At: ev.At, Issue: rules.IssueFacts{Repo: b.Repo, Number: b.Number}}
				w.Enqueue = append(w.Enqueue, deliveries.Derived(d.ID+"/look/"+k, deliveries.Task, k, deliveries.TaskPayload{Installation: inst, Event: e}))
			}
		}
	}
	for _, b := range had {
		if !slices.ContainsFunc(now.Blockers, func(x rules.Blocker) bool { return x.Key() == b.Key() }) {
			put(records.DependentKey(b.Repo, b.Number, self), nil)
		}
	}
	if blocks(old) != blocks(now) {
		b := rules.Blocker{Repo: now.Repo, Number: now.Number, Title: now.Title, Task: true, State: now.State, Closed: now.Closed}
		news, err := p.tellDependents(ctx, d, now.Repo, now.Number, b, ev)
		if err != nil {
			return err
		}
		w.Enqueue = append(w.Enqueue, news...)
	}
	var was []string
	if old != nil {
		was = old.Cycle
	}
	if !slices.Equal(was, now.Cycle) {
		for _, k := range append(slices.Clone(was), now.Cycle...) {
			r, num, ok := rules.SplitTaskKey(k)
			if !ok || k == self || !sameAccount(r, now.Repo) {
				continue
			}
			e := rules.Event{Kind: rules.LinksChanged, Actor: ev.Actor, At: ev.At, Issue: rules.IssueFacts{Repo: r, Number: num}}
			w.Enqueue = append(w.Enqueue, deliveries.Derived(d.ID+"/cycle/"+k, deliveries.Task, k, deliveries.TaskPayload{Installation: inst, Event: e}))
		}
	}
	return nil
}

// tellDependents are the deliveries that tell each task blocked by issue n
// of repo that it is now b.
func (p *Decider) tellDependents(ctx context.Context, d *store.Delivery, repo string, n int, b rules.Blocker, ev rules.Event) ([]store.Delivery, error) {
	prefix := records.DependentPrefix(repo, n)
	keys, err := p.store.Scan(ctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("read the dependents of %s#%d: %w", repo, n, err)
	}
	var out []store.Delivery
	for _, k := range keys {
		dep := strings.TrimPrefix(k, prefix)
		r, num, ok := rules.SplitTaskKey(dep)
		if !ok {
			continue
		}
		var rec dependentRecord
		if found, err := records.Load(ctx, p.store, k, &rec); err != nil || !found || rec.Installation == 0 {
			if err != nil {
				return nil, err
			}
			continue
		}
		e := rules.Event{Kind: rules.LinksChanged, Actor: ev.Actor, At: ev.At, Issue: rules.IssueFacts{Repo: r, Number: num},
			Link: &rules.LinkChange{Blocker: b, Update: true}}
		out = append(out, deliveries.Derived(d.ID+"/blocker/"+dep, deliveries.Task, dep, deliveries.TaskPayload{Installation: rec.Installation, Event: e}))
	}
	return out, nil
}

// sameAccount reports whether repositories a and b belong to one account:
// an App has one installation per account, so a task of b's is decided with
// a's installation. (A dependent in another installation is told with its
// own, which its DependentKey record keeps.)
func sameAccount(a, b string) bool { return strings.EqualFold(gh.OwnerOf(a), gh.OwnerOf(b)) }
