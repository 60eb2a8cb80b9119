// Package decide turns a delivery into facts, runs rules, and returns the
// commit: the records to write, the effects to apply and the deliveries to
// queue. It reads GitHub and the store but writes nothing. One file per kind of
// event: issues (issues.go), comments (comments.go), pull requests (pulls.go),
// reviews (reviews.go), the verification check (check.go), CI (ci.go),
// configuration and pushes (config.go), labels (labels.go), linking and
// regates (linking.go), dependencies and sub-issues (links.go), and a task's
// decision (task.go). Deciding calls into
// the packages that own a capability: a task record lost with the store is
// rebuilt by package card (card/recover.go); the merge queue, pull requests
// that close no task and forged gates are package mqdecide's
// (app/mergequeue/decide); resyncs, repairs and installations are package
// rcdecide's (app/reconcile/decide). Milestones, goal issues and the goal
// dashboard are package goals' to decide.
package decide

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/countersign/countersign/app/board"
	"github.com/countersign/countersign/app/deliveries"
	"github.com/countersign/countersign/app/fault"
	"github.com/countersign/countersign/app/gh"
	"github.com/countersign/countersign/app/goals"
	"github.com/countersign/countersign/app/lookup"
	"github.com/countersign/countersign/app/mergequeue"
	mqdecide "github.com/countersign/countersign/app/mergequeue/decide"
	"github.com/countersign/countersign/app/reconcile"
	rcdecide "github.com/countersign/countersign/app/reconcile/decide"
	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/seal"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
	"github.com/google/go-github/v60/github"
)

// Client is what deciding reads of GitHub, for one installation: what the
// packages it reads through need (goals, people, card, lookup, reconcile),
// and the few calls of its own.
type Client interface {
	goals.Client
	reconcile.Client
	GetIssue(ctx context.Context, owner string, repo string, number int) (*github.Issue, *github.Response, error)
	GetPullRequest(ctx context.Context, owner string, repo string, number int) (*github.PullRequest, *github.Response, error)
	ListPullRequestCommits(ctx context.Context, owner string, repo string, number int, opts *github.ListOptions) ([]*github.RepositoryCommit, *github.Response, error)
	ListPullRequests(ctx context.Context, owner string, repo string, opts *github.PullRequestListOptions) ([]*github.PullRequest, *github.Response, error)
	ListPullRequestReviews(ctx context.Context, owner string, repo string, number int, opts *github.ListOptions) ([]*github.PullRequestReview, *github.Response, error)
	ListInstallationRepos(ctx context.Context, opts *github.ListOptions) (*github.ListRepositories, *github.Response, error)
	ListMatchingRefs(ctx context.Context, owner, repo string, opts *github.ReferenceListOptions) ([]*github.Reference, *github.Response, error)
	CompareCommits(ctx context.Context, owner, repo, base, head string, opts *github.ListOptions) (*github.CommitsComparison, *github.Response, error)
	GetCommit(ctx context.Context, owner, repo, sha string, opts *github.ListOptions) (*github.RepositoryCommit, *github.Response, error)
	ListRepositoryActivity(ctx context.Context, owner, repo string, opts gh.ActivityOptions) ([]*gh.Activity, *github.Response, error)
	ListIssueLinks(ctx context.Context, owner, repo string, n int, kind string, max int) ([]*github.Issue, error)
}

// Decider turns a delivery into facts, asks rules what it means, and returns
// the commit that records the decision and its effects.
type Decider struct {
	store   store.Store
	gh      *gh.GitHub
	clients func(inst int64) (Client, error) // installation inst's GitHub
	look    *lookup.Lookup
	goals   *goals.Decider
	keys    *seal.Keys // checks the records read back from GitHub
	log     *slog.Logger
	recon   *rcdecide.Decider // resyncs, repairs and installations
	mq      *mqdecide.Decider // the merge queue, untracked and forged gates
	board   *board.Board      // the board's deliveries (nil: none are decided)
}

// Board makes p decide the board's deliveries with b.
func (p *Decider) Board(b *board.Board) { p.board = b }

// New is the decider reading the store st and GitHub: clients is each
// installation's, g the App's own; look reads configuration and CI, goals
// decides what is handed to goals; keys check the records read back from
// GitHub; recon and mq count what reconciliation and the gate see.
func New(st store.Store, g *gh.GitHub, clients func(inst int64) (Client, error), look *lookup.Lookup, goals *goals.Decider,
	keys *seal.Keys, log *slog.Logger, recon *reconcile.Metrics, mq *mergequeue.Metrics) *Decider {
	p := &Decider{store: st, gh: g, clients: clients, look: look, goals: goals, keys: keys, log: log,
		recon: rcdecide.New(st, g, func(inst int64) (rcdecide.Client, error) { return clients(inst) }, recon)}
	p.mq = mqdecide.New(st, func(inst int64) (mqdecide.Client, error) { return clients(inst) }, look, mq, p.rebuildPR,
		func(ctx context.Context, inst int64, repo string, pr *rules.PullRequest) (*rules.PullRequest, error) {
			return p.tracked(ctx, deliveries.CheckPayload{Installation: inst, Repo: repo, Number: pr.Number}, pr)
		})
	return p
}

// Before names the effects the decision on d presumes applied, which the
// processor applies first (deciding writes nothing): a new repository's labels.
func (p *Decider) Before(ctx context.Context, d *store.Delivery, log *slog.Logger) ([]records.OutboxEffect, error) {
	if d.Event != deliveries.Resync {
		return nil, nil
	}
	return p.recon.LabelsFirst(ctx, d, log)
}

// Decide asks rules what the delivery means. It reads GitHub and the store but
// writes nothing. Only the events and actions rules acts on are parsed; the rest
// are done with at once.
func (p *Decider) Decide(ctx context.Context, d *store.Delivery, log *slog.Logger) (store.Commit, error) {
	action := d.Action // read at intake; unknown for derived and older deliveries
	if action == "" {
		var head struct {
			Action string `json:"action"`
		}
		if err := json.Unmarshal(d.Payload, &head); err != nil {
			return store.Commit{}, fault.Permanent(fmt.Errorf("parse %s payload: %w", d.Event, err))
		}
		action = head.Action
	}
	if !deliveries.Handled(d.Event, action) {
		log.Info("nothing to do", "why", fmt.Sprintf("countersign does not act on %s (action %q)", d.Event, action))
		return store.Commit{}, nil
	}
	if deliveries.Webhook(d.Event) {
		var env struct {
			Installation struct {
				ID int64 `json:"id"`
			} `json:"installation"`
		}
		if err := json.Unmarshal(d.Payload, &env); err != nil {
			return store.Commit{}, fault.Permanent(fmt.Errorf("parse %s payload: %w", d.Event, err))
		}
		if env.Installation.ID == 0 {
			// GitHub names the installation in every event an App receives
			// for a repository it is installed on; without one there is no
			// token to act with.
			log.Info("nothing to do", "why", "the delivery names no installation: countersign acts only where it is installed")
			return store.Commit{}, nil
		}
	}
	switch d.Event {
	case deliveries.Task:
		var td deliveries.TaskPayload
		if err := json.Unmarshal(d.Payload, &td); err != nil {
			return store.Commit{}, fault.Permanent(fmt.Errorf("parse %s: %w", d.Event, err))
		}
		return p.decideTask(ctx, td.Installation, d, td.Event, log)
	case deliveries.Check:
		var cd deliveries.CheckPayload
		if err := json.Unmarshal(d.Payload, &cd); err != nil {
			return store.Commit{}, fault.Permanent(fmt.Errorf("parse %s: %w", d.Event, err))
		}
		return p.decideCheck(ctx, cd, d)
	case deliveries.Head:
		var hp deliveries.HeadPayload
		if err := json.Unmarshal(d.Payload, &hp); err != nil {
			return store.Commit{}, fault.Permanent(fmt.Errorf("parse %s: %w", d.Event, err))
		}
		return p.decideHead(ctx, hp, d)
	case deliveries.Goal:
		var gd deliveries.GoalPayload
		if err := json.Unmarshal(d.Payload, &gd); err != nil {
			return store.Commit{}, fault.Permanent(fmt.Errorf("parse %s: %w", d.Event, err))
		}
		return p.goals.Decide(ctx, gd, d, log)
	case deliveries.CI:
		var cd deliveries.CIPayload
		if err := json.Unmarshal(d.Payload, &cd); err != nil {
			return store.Commit{}, fault.Permanent(fmt.Errorf("parse %s: %w", d.Event, err))
		}
		return p.decideCI(ctx, cd, d, log)
	case deliveries.Resync, deliveries.Repair:
		return p.recon.Decide(ctx, d, log)
	case deliveries.BaseMoved:
		var bp deliveries.BaseMovedPayload
		if err := json.Unmarshal(d.Payload, &bp); err != nil {
			return store.Commit{}, fault.Permanent(fmt.Errorf("parse %s: %w", d.Event, err))
		}
		return p.decideBaseMoved(ctx, bp, d, log)
	case deliveries.Regate:
		var rd deliveries.RegatePayload
		if err := json.Unmarshal(d.Payload, &rd); err != nil {
			return store.Commit{}, fault.Permanent(fmt.Errorf("parse %s: %w", d.Event, err))
		}
		return p.decideRegate(ctx, rd, d, log)
	case deliveries.Dashboard:
		return p.goals.DecideDashboard(ctx, d, log)
	case deliveries.Card:
		var cd deliveries.CardPayload
		if err := json.Unmarshal(d.Payload, &cd); err != nil {
			return store.Commit{}, fault.Permanent(fmt.Errorf("parse %s: %w", d.Event, err))
		}
		return decideCard(cd, d)
	case "label":
		return p.onLabel(ctx, d, log)
	case "merge_group":
		return p.mq.OnMergeGroup(d, log)
	case "issue_dependencies", "sub_issues":
		return p.onLinks(d, log)
	case "projects_v2_item":
		return p.onBoardItem(ctx, d, log)
	case deliveries.Board:
		if p.board == nil {
			return store.Commit{}, nil
		}
		return p.board.DecideReconcile(ctx, d, p.boardConfigs(log), p.gh.WebHost(), log)
	case deliveries.MergeGroup:
		var md deliveries.MergeGroupPayload
		if err := json.Unmarshal(d.Payload, &md); err != nil {
			return store.Commit{}, fault.Permanent(fmt.Errorf("parse %s: %w", d.Event, err))
		}
		return p.mq.DecideMergeGroup(ctx, md, d, log)
	}
	raw, err := github.ParseWebHook(d.Event, d.Payload)
	if err != nil {
		return store.Commit{}, fault.Permanent(fmt.Errorf("parse %s payload: %w", d.Event, err))
	}
	switch e := raw.(type) {
	case *github.IssuesEvent:
		return p.onIssue(ctx, d, e, log)
	case *github.IssueCommentEvent:
		return p.onComment(ctx, d, e, log)
	case *github.PullRequestEvent:
		return p.onPull(ctx, d, e, log)
	case *github.PullRequestReviewEvent:
		return p.onReview(ctx, d, e, log)
	case *github.PushEvent:
		return p.onPush(ctx, d, e, log)
	case *github.MilestoneEvent:
		return p.goals.OnMilestone(ctx, d, e)
	case *github.CheckRunEvent:
		return p.onCheckRun(ctx, d, e)
	case *github.CheckSuiteEvent:
		return p.onCheckSuite(ctx, d, e)
	case *github.StatusEvent:
		return p.onStatus(ctx, d, e)
	case *github.InstallationEvent, *github.InstallationRepositoriesEvent:
		return p.recon.OnInstallation(ctx, d, e, log)
	}
	return store.Commit{}, nil
}
