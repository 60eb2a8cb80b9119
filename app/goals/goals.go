// Package goals decides goals (DESIGN §4): a milestone is a goal, its goal
// issue the dashboard. Milestone events, events on the goal issue and changes
// of the goal's tasks all reach the goal as internal Goal deliveries (package
// deliveries) under the goal's own key (rules.GoalKey), so one goal's events
// are decided one at a time and in order. Like package decide, which hands it
// those deliveries, it reads GitHub and the store and writes nothing.
package goals

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/countersign/countersign/app/card"
	"github.com/countersign/countersign/app/deliveries"
	"github.com/countersign/countersign/app/fault"
	"github.com/countersign/countersign/app/gh"
	"github.com/countersign/countersign/app/lookup"
	"github.com/countersign/countersign/app/people"
	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/seal"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
	"github.com/countersign/countersign/templates"
	"github.com/google/go-github/v60/github"
)

// Client is what deciding goals reads of GitHub.
type Client interface {
	people.Client
	card.Client
	lookup.Client
	GetMilestone(ctx context.Context, owner string, repo string, number int) (*github.Milestone, *github.Response, error)
	GetRepository(ctx context.Context, owner, repo string) (*github.Repository, *github.Response, error)
}

// Decider decides goal events, looking up the facts they need.
type Decider struct {
	store   store.Store
	gh      *gh.GitHub
	clients func(inst int64) (Client, error) // installation inst's GitHub
	look    *lookup.Lookup
	keys    *seal.Keys // checks the goal records read back from goal issues
}

// New is the goals' decider reading the store st and GitHub: clients is each
// installation's, g the App's own (its bot account).
func New(st store.Store, g *gh.GitHub, clients func(inst int64) (Client, error), look *lookup.Lookup, keys *seal.Keys) *Decider {
	return &Decider{store: st, gh: g, clients: clients, look: look, keys: keys}
}

// Deliver is the delivery that hands ev to its goal (i tells apart the
// deliveries one delivery d hands on).
func Deliver(inst int64, d *store.Delivery, ev rules.GoalEvent, i int) store.Delivery {
	return deliveries.Derived(fmt.Sprintf("%s/goal/%d/%d", d.ID, ev.Milestone, i), deliveries.Goal, rules.GoalKey(ev.Repo, ev.Milestone),
		deliveries.GoalPayload{Installation: inst, Event: ev})
}

var milestoneKinds = map[string]rules.GoalEventKind{
	"created": rules.GoalMilestoneSeen, "edited": rules.GoalMilestoneEdited,
	"closed": rules.GoalMilestoneClosed, "opened": rules.GoalMilestoneReopened,
	"deleted": rules.GoalMilestoneDeleted,
}

// OnMilestone hands a milestone event to its goal.
func (p *Decider) OnMilestone(ctx context.Context, d *store.Delivery, e *github.MilestoneEvent) (store.Commit, error) {
	inst, repo, m := e.GetInstallation().GetID(), e.GetRepo().GetFullName(), e.GetMilestone()
	kind, ok := milestoneKinds[e.GetAction()]
	if !ok || inst == 0 || repo == "" || m.GetNumber() == 0 {
		return store.Commit{}, nil
	}
	if own, err := p.gh.Own(ctx, e.GetSender()); err != nil || own {
		return store.Commit{}, err
	}
	ev := rules.GoalEvent{Kind: kind, Repo: repo, Milestone: m.GetNumber(), Actor: e.GetSender().GetLogin(), ActorID: e.GetSender().GetID(),
		At: deliveries.EventTime(m.GetUpdatedAt().Time, d), Title: m.GetTitle()}
	return store.Commit{Enqueue: []store.Delivery{Deliver(inst, d, ev, 0)}}, nil
}

// IssueOf reports the milestone whose goal issue is is (0 if none).
func (p *Decider) IssueOf(ctx context.Context, repo string, is *github.Issue) (int, error) {
	var m int
	ok, err := records.Load(ctx, p.store, records.GoalIssueKey(repo, is.GetNumber()), &m)
	if err != nil || ok {
		return m, err
	}
	// No record (a store lost): a goal issue is one this App opened, labeled
	// goal, in a milestone. Anyone can put a goal label on an issue; only the
	// App can open an issue as itself.
	if is.GetMilestone().GetNumber() == 0 || !slices.ContainsFunc(is.Labels, func(l *github.Label) bool { return strings.EqualFold(l.GetName(), rules.LabelGoal) }) {
		return 0, nil
	}
	own, err := p.gh.Own(ctx, is.GetUser())
	if err != nil || !own {
		return 0, err
	}
	return is.GetMilestone().GetNumber(), nil
}

// IssueKinds are the actions on a goal issue its goal hears of.
var IssueKinds = map[string]rules.GoalEventKind{
	"closed": rules.GoalIssueClosed, "reopened": rules.GoalIssueReopened,
	"labeled": rules.GoalIssueLabeled, "unlabeled": rules.GoalIssueUnlabeled,
	"deleted": rules.GoalIssueGone, "transferred": rules.GoalIssueGone,
}

// OnIssue hands an event of goal issue is (of milestone m) to its goal.
func OnIssue(inst int64, d *store.Delivery, repo string, m int, is *github.Issue, ev rules.GoalEvent) store.Commit {
	ev.Repo, ev.Milestone, ev.Issue = repo, m, is.GetNumber()
	return store.Commit{Enqueue: []store.Delivery{Deliver(inst, d, ev, 0)}}
}

// Decide decides a goal event, looking up the facts it needs.
func (p *Decider) Decide(ctx context.Context, gd deliveries.GoalPayload, d *store.Delivery, log *slog.Logger) (store.Commit, error) {
	ev := gd.Event
	c, err := p.clients(gd.Installation)
	if err != nil {
		return store.Commit{}, fault.Permanent(err)
	}
	g, err := records.LoadGoal(ctx, p.store, ev.Repo, ev.Milestone)
	if err != nil {
		return store.Commit{}, err
	}
	owner, name := gh.OwnerOf(ev.Repo), gh.NameOf(ev.Repo)
	fresh := false // the goal's record was not trusted: it starts afresh
	if g == nil && ev.Kind != rules.GoalMilestoneSeen {
		if g, fresh, err = p.recoverGoal(ctx, c, ev.Repo, ev.Milestone, log); err != nil {
			return store.Commit{}, err
		}
	}
	if g == nil && ev.Kind == rules.GoalTaskChanged {
		if !ev.In {
			return store.Commit{}, nil
		}
		ms, _, err := c.GetMilestone(ctx, owner, name, ev.Milestone)
		if fault.IsStatus(err, http.StatusNotFound) {
			return store.Commit{}, nil
		}
		if err != nil {
			return store.Commit{}, fmt.Errorf("read milestone %d: %w", ev.Milestone, err)
		}
		if ms.GetState() != "open" {
			return store.Commit{}, nil // closed before countersign saw it: not a goal
		}
		ev.Title = ms.GetTitle()
	}
	if g != nil && g.Issue == 0 {
		var n int
		if _, err := records.Load(ctx, p.store, "goal-issue-of/"+rules.GoalKey(ev.Repo, ev.Milestone), &n); err != nil {
			return store.Commit{}, err
		}
		g.Issue = n
	}
	cfg, err := p.look.Config(ctx, c, ev.Repo, log)
	if err != nil {
		return store.Commit{}, err
	}
	// rules asks for the facts it needs as it decides; a fact that could not
	// be had fails the delivery (it is retried) rather than commit a
	// decision made without it.
	check := cfg.Goals.IntegrationCheck
	ask := people.New(c, ev.Repo, cfg).Ask(ctx, people.Sources{
		Integration: func(ctx context.Context) (string, error) {
			return p.integration(ctx, c, ev.Repo, check, cfg.Contracts, g)
		},
	})
	dec := rules.DecideGoal(g, ev, rules.GoalFacts{IntegrationCheck: check, Board: cfg.Board, Ask: ask})
	if err := ask.Err(); err != nil {
		return store.Commit{}, err
	}
	if fresh && dec.Goal == nil {
		// Written whatever the event: the goal issue still shows the
		// untrusted record.
		dec.Goal = g
		dec.Effects = append(dec.Effects, rules.Effect{Kind: rules.EffectGoalIssue, Repo: ev.Repo, Number: ev.Milestone})
	}
	if dec.Goal == nil && len(dec.Effects) == 0 {
		return store.Commit{}, nil
	}
	w, err := records.CommitFor(gd.Installation, d, nil, dec.Effects)
	if err != nil {
		return w, err
	}
	w.Records = map[string][]byte{}
	if issue := goalIssueOf(g, dec.Goal, ev); issue != 0 && (ev.Kind == rules.GoalIssueLabeled || ev.Kind == rules.GoalIssueUnlabeled) {
		// A goal label changed on the goal issue (or was deleted or renamed
		// in the repository): the labels countersign recorded setting there
		// are no longer what it carries.
		w.Records[records.LabelViewKey(ev.Repo, issue)] = records.StaleLabelView
	}
	if ev.Kind == rules.GoalIssueGone && dec.Goal != nil && dec.Goal.Issue == 0 {
		// The goal issue is gone: the goal's effect opens another, rather
		// than edit the one it last wrote. (The old number stays known as a
		// goal issue: never a task.)
		w.Records["goal-issue-of/"+rules.GoalKey(ev.Repo, ev.Milestone)] = nil
		w.Records[records.GoalTextKey(ev.Repo, ev.Issue)] = nil
	}
	if dec.Goal != nil {
		b, err := json.Marshal(dec.Goal)
		if err != nil {
			return w, err
		}
		w.Records[records.GoalKey(ev.Repo, ev.Milestone)] = b
		if dec.Goal.Issue != 0 {
			m, _ := json.Marshal(ev.Milestone)
			w.Records[records.GoalIssueKey(ev.Repo, dec.Goal.Issue)] = m
		}
	}
	return w, nil
}

// goalIssueOf is the goal issue's number, as the goal's record (before or
// after the event) or the event says.
func goalIssueOf(before, after *rules.Goal, ev rules.GoalEvent) int {
	switch {
	case after != nil && after.Issue != 0:
		return after.Issue
	case before != nil && before.Issue != 0:
		return before.Issue
	}
	return ev.Issue
}

// integration is the state of check (a check run name or status context, `*`
// for any text) on the head of the default branch, from trusted sources
// (contracts.apps, contracts.status_creators; see rules.Distrust): a commit
// status posted by a builder of one of goal g's tasks counts for nothing, as
// a builder's status counts for nothing on their own task.
func (p *Decider) integration(ctx context.Context, c Client, repo, check string, contracts rules.ContractConfig, g *rules.Goal) (string, error) {
	var tasks []*rules.Task
	if g != nil {
		for _, gt := range g.Tasks {
			t, err := records.LoadTask(ctx, p.store, repo, gt.Number)
			if err != nil {
				return "", err
			}
			if t != nil {
				tasks = append(tasks, t)
			}
		}
	}
	builder := func(u rules.User) bool {
		return slices.ContainsFunc(tasks, func(t *rules.Task) bool { return t.IsBuilder(u) })
	}
	r, _, err := c.GetRepository(ctx, gh.OwnerOf(repo), gh.NameOf(repo))
	if err != nil {
		return "", fmt.Errorf("read repository: %w", err)
	}
	runs, err := p.look.CIRuns(ctx, c, repo, r.GetDefaultBranch()) // a branch names its head commit
	if err != nil {
		return "", err
	}
	state := rules.IntegrationNone
	for _, run := range runs {
		if run.App == rules.ActionsApp && run.Made == "" {
			// The jobs of the default branch's workflow runs are not read:
			// a check run of GitHub Actions counts as listed here (one a
			// workflow's token created included), as it did before they
			// were read for pull requests.
			run.Made = rules.MadeUnchecked
		}
		if !rules.MatchCheck(check, run.Name) || rules.Distrust(contracts, run, builder) != "" {
			continue
		}
		switch run.Result() {
		case rules.ResultFail:
			return rules.IntegrationFailure, nil
		case rules.ResultPending:
			state = rules.IntegrationPending
		case rules.ResultPass:
			if state == rules.IntegrationNone {
				state = rules.IntegrationSuccess
			}
		}
	}
	return state, nil
}

// Notes hands a task's change to the goals it concerns.
func Notes(inst int64, d *store.Delivery, t *rules.Task, notes []rules.GoalNote, ev rules.Event) []store.Delivery {
	var out []store.Delivery
	gt := rules.GoalTaskOf(t)
	for i, n := range notes {
		out = append(out, Deliver(inst, d, rules.GoalEvent{Kind: rules.GoalTaskChanged, Repo: t.Repo, Milestone: n.Milestone,
			Actor: ev.Actor.Login, At: ev.At, Task: &gt, In: n.In}, i))
	}
	return out
}

// recoverGoal rebuilds a goal record lost with the store from its goal
// issue's marker, its tasks from their own records. nil when there is none.
// fresh says the record was not trusted and the goal starts afresh.
func (p *Decider) recoverGoal(ctx context.Context, c Client, repo string, m int, log *slog.Logger) (*rules.Goal, bool, error) {
	bot, err := p.gh.BotLogin(ctx)
	if err != nil {
		return nil, false, err
	}
	is, err := card.MarkedGoalIssue(ctx, c, gh.OwnerOf(repo), gh.NameOf(repo), m, bot)
	if err != nil || is == nil {
		return nil, false, err
	}
	rec, ok := templates.GoalRecord(is.GetBody())
	sig, _ := templates.RecordSignature(is.GetBody())
	var g rules.Goal
	switch {
	case ok && !p.keys.Verify(records.GoalScope(repo, m), rec, sig):
		// Anyone with write access can edit the goal issue: a record this
		// server did not sign is not trusted. The goal starts afresh on its
		// own issue (open, its tasks joining as they change), so nothing it
		// claimed (a lead's confirmation) counts until it is proven again.
		log.Warn("goal issue's record not trusted: not signed by this server; the goal starts afresh",
			"goal", rules.GoalKey(repo, m), "issue", is.GetNumber())
		g, err := p.freshGoal(ctx, c, repo, m, is.GetNumber())
		return g, g != nil, err
	case !ok || json.Unmarshal(rec, &g) != nil || g.Repo != repo || g.Milestone != m || !g.State.Valid():
		log.Warn("goal issue holds no usable record", "goal", rules.GoalKey(repo, m), "issue", is.GetNumber())
		return nil, false, nil
	}
	// A record this server signed may still be an older one put back: it is
	// believed only if its state is the goal:* label countersign applied last.
	labels, err := card.BotLabels(ctx, c, gh.OwnerOf(repo), gh.NameOf(repo), is.GetNumber(), bot, rules.GoalStateFromLabel)
	if err != nil {
		return nil, false, err
	}
	if len(labels) == 0 || labels[len(labels)-1] != g.State {
		log.Warn("goal issue's record not trusted: countersign labeled the goal otherwise since; the goal starts afresh",
			"goal", rules.GoalKey(repo, m), "issue", is.GetNumber(), "record", g.State)
		g, err := p.freshGoal(ctx, c, repo, m, is.GetNumber())
		return g, g != nil, err
	}
	g.Issue = is.GetNumber()
	for i, gt := range g.Tasks {
		t, err := records.LoadTask(ctx, p.store, repo, gt.Number)
		if err != nil {
			return nil, false, err
		}
		if t != nil {
			g.Tasks[i] = rules.GoalTaskOf(t)
		}
	}
	log.Info("goal record rebuilt from its goal issue", "goal", g.Key(), "state", g.State)
	return &g, false, nil
}

// freshGoal is a new goal for milestone m, whose goal issue is issue n.
func (p *Decider) freshGoal(ctx context.Context, c Client, repo string, m, n int) (*rules.Goal, error) {
	ms, _, err := c.GetMilestone(ctx, gh.OwnerOf(repo), gh.NameOf(repo), m)
	if fault.IsStatus(err, http.StatusNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read milestone %d: %w", m, err)
	}
	// A goal's creation asks nothing: no one leads, and no check is looked at.
	dec := rules.DecideGoal(nil, rules.GoalEvent{Kind: rules.GoalMilestoneSeen, Repo: repo, Milestone: m, Title: ms.GetTitle(),
		At: time.Now().UTC()}, rules.GoalFacts{Ask: rules.Known(rules.Answers{})})
	if dec.Goal == nil {
		return nil, nil
	}
	dec.Goal.Issue = n
	return dec.Goal, nil
}

// Carrying are the milestones of repo whose goal issue carries label by
// its goal's record.
func (p *Decider) Carrying(ctx context.Context, repo, label string) ([]int, error) {
	ms, err := records.ScanNumbers(ctx, p.store, strings.TrimSuffix(records.GoalKey(repo, 0), "0"))
	if err != nil {
		return nil, fmt.Errorf("list goals of %s: %w", repo, err)
	}
	var out []int
	for _, m := range ms {
		g, err := records.LoadGoal(ctx, p.store, repo, m)
		if err != nil {
			return nil, err
		}
		if g != nil && gh.HasLabel(g.Labels(), label) {
			out = append(out, m)
		}
	}
	return out, nil
}
