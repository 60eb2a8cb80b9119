// Package effects applies to GitHub the effects decisions committed to the
// outbox: one file per kind of effect (labels, card, notices, checks, goals,
// dashboard). Every application looks before it writes, so it is idempotent.
package effects

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/countersign/countersign/app/board"
	"github.com/countersign/countersign/app/card"
	"github.com/countersign/countersign/app/fault"
	"github.com/countersign/countersign/app/gh"
	"github.com/countersign/countersign/app/metrics"
	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/seal"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
	"github.com/google/go-github/v60/github"
)

// Client is what applying effects reads and writes on GitHub, for one
// installation.
type Client interface {
	card.Client
	GetIssue(ctx context.Context, owner string, repo string, number int) (*github.Issue, *github.Response, error)
	CreateIssue(ctx context.Context, owner string, repo string, issue *github.IssueRequest) (*github.Issue, *github.Response, error)
	EditIssue(ctx context.Context, owner string, repo string, number int, issue *github.IssueRequest) (*github.Issue, *github.Response, error)
	AddAssignees(ctx context.Context, owner, repo string, number int, assignees []string) (*github.Issue, *github.Response, error)
	ListLabelsByIssue(ctx context.Context, owner string, repo string, number int, opts *github.ListOptions) ([]*github.Label, *github.Response, error)
	AddLabelsToIssue(ctx context.Context, owner string, repo string, number int, labels []string) ([]*github.Label, *github.Response, error)
	RemoveLabelForIssue(ctx context.Context, owner string, repo string, number int, label string) (*github.Response, error)
	CreateLabel(ctx context.Context, owner string, repo string, label *github.Label) (*github.Label, *github.Response, error)
	EditLabel(ctx context.Context, owner string, repo string, name string, label *github.Label) (*github.Label, *github.Response, error)
	GetComment(ctx context.Context, owner string, repo string, commentID int64) (*github.IssueComment, *github.Response, error)
	CreateComment(ctx context.Context, owner string, repo string, number int, comment *github.IssueComment) (*github.IssueComment, *github.Response, error)
	EditComment(ctx context.Context, owner string, repo string, commentID int64, comment *github.IssueComment) (*github.IssueComment, *github.Response, error)
	EditMilestone(ctx context.Context, owner string, repo string, number int, milestone *github.Milestone) (*github.Milestone, *github.Response, error)
	ListCheckRunsForRef(ctx context.Context, owner, repo, ref string, opts *github.ListCheckRunsOptions) (*github.ListCheckRunsResults, *github.Response, error)
	CreateCheckRun(ctx context.Context, owner, repo string, opts github.CreateCheckRunOptions) (*github.CheckRun, *github.Response, error)
	UpdateCheckRun(ctx context.Context, owner, repo string, checkRunID int64, opts github.UpdateCheckRunOptions) (*github.CheckRun, *github.Response, error)
}

// Executor applies effects to GitHub. Each application looks before it writes,
// so applying an effect again (after a crash or a retry) changes nothing more:
// labels are set to what they must be, never toggled; the card is found by its
// marker and edited, never posted twice.
type Executor struct {
	store   store.Store
	gh      *gh.GitHub
	clients func(inst int64) (Client, error) // installation inst's GitHub
	log     *slog.Logger
	metrics *metrics.Metrics
	keys    *seal.Keys // signs the records kept on GitHub

	labels madeLabels // madeLabelKey: labels known to exist (a bounded few)

	// coalesce is the window within which a goal's dashboard edits are
	// coalesced into one (0: each is written at once).
	coalesce time.Duration

	board *board.Board // applies board effects (nil: none are applied)

	// heads works out a task's check when it is applied (nil: a Latest
	// check is not written; its head's own decision writes it); the checks'
	// writes hold checkLocks and, under owner, a store lease (headlock.go).
	heads      HeadChecker
	owner      atomic.Pointer[string]
	checkLocks checkLocks
}

// Board makes x apply board effects with b.
func (x *Executor) Board(b *board.Board) { x.board = b }

// New is the executor writing to GitHub through g, keeping what it knows in
// st; keys sign the records kept on GitHub; coalesce is the window within which
// a goal's dashboard edits are coalesced into one (0: each is written at once).
func New(st store.Store, g *gh.GitHub, clients func(inst int64) (Client, error), log *slog.Logger, m *metrics.Metrics, keys *seal.Keys, coalesce time.Duration) *Executor {
	return &Executor{store: st, gh: g, clients: clients, log: log, metrics: m, keys: keys, coalesce: coalesce}
}

// Apply applies one outbox effect and returns the records its application
// keeps (the labels it set, the card it wrote), which the caller writes with
// the effect's pop, in one write (nil: none; effects of other kinds keep
// theirs themselves). leftover says it may have been applied before (see
// Processor.drain). GitHub's answers that retrying cannot change are marked
// permanent (fault.Classify): the drain drops such an effect.
func (x *Executor) Apply(ctx context.Context, oe records.OutboxEffect, leftover bool) (map[string][]byte, error) {
	recs, err := x.apply(ctx, oe, leftover)
	if err != nil {
		return nil, fault.Classify(err)
	}
	if x.log.Enabled(ctx, slog.LevelDebug) {
		e := oe.Effect
		x.log.Debug("effect applied", "effect", e.Kind, "repo", e.Repo, "number", e.Number, "delivery", oe.Delivery)
	}
	return recs, nil
}

// Prepare applies an effect a decision presumes applied before it is decided
// (process.Decider.Before), and writes the records it keeps. Its failure
// fails the delivery, as a failed decision does: GitHub's answer is returned
// as it is, not classified.
func (x *Executor) Prepare(ctx context.Context, oe records.OutboxEffect) error {
	recs, err := x.apply(ctx, oe, false)
	if err != nil {
		return err
	}
	return x.keep(ctx, recs)
}

// keep writes recs (records an application keeps) in one write.
func (x *Executor) keep(ctx context.Context, recs map[string][]byte) error {
	if len(recs) == 0 {
		return nil
	}
	if err := x.store.PutAll(ctx, recs); err != nil {
		return fmt.Errorf("remember what was applied: %w", err)
	}
	return nil
}

// apply applies oe; the records a label sync or a card keeps are returned,
// not written.
func (x *Executor) apply(ctx context.Context, oe records.OutboxEffect, leftover bool) (map[string][]byte, error) {
	c, err := x.clients(oe.Installation)
	if err != nil {
		return nil, fault.Permanent(err)
	}
	e := oe.Effect
	owner, name, ok := strings.Cut(e.Repo, "/")
	if !ok || (e.Number <= 0 && e.Kind != rules.EffectConfigCheck && e.Kind != rules.EffectRenameLabel && e.Kind != rules.EffectCreateLabel && e.Kind != rules.EffectEnsureLabels) {
		return nil, fault.Permanent(fmt.Errorf("effect names no issue: %q#%d", e.Repo, e.Number))
	}
	var applyErr error
	switch e.Kind {
	case rules.EffectSyncLabels:
		return x.syncLabels(ctx, c, owner, name, e)
	case rules.EffectSyncCard:
		return x.syncCard(ctx, c, owner, name, e)
	case rules.EffectNotice:
		applyErr = x.notice(ctx, c, owner, name, oe, leftover)
	case rules.EffectReopen:
		_, _, applyErr = c.EditIssue(ctx, owner, name, e.Number, &github.IssueRequest{State: github.String("open")})
	case rules.EffectAssign:
		_, _, applyErr = c.AddAssignees(ctx, owner, name, e.Number, e.Users)
	case rules.EffectCheck:
		applyErr = x.verificationCheck(ctx, c, oe.Installation, owner, name, e, leftover)
	case rules.EffectConfigCheck:
		applyErr = x.configCheck(ctx, c, owner, name, e, leftover)
	case rules.EffectRenameLabel:
		applyErr = x.renameLabel(ctx, c, owner, name, e)
	case rules.EffectCreateLabel:
		applyErr = x.createLabel(ctx, c, owner, name, e)
	case rules.EffectEnsureLabels:
		applyErr = x.ensureLabels(ctx, c, owner, name, e)
	case rules.EffectGoalIssue:
		applyErr = x.goalIssueEffect(ctx, c, owner, name, oe.Installation, e)
	case rules.EffectGoalNotice:
		applyErr = x.goalNotice(ctx, c, owner, name, oe, leftover)
	case rules.EffectCloseMilestone, rules.EffectReopenMilestone:
		applyErr = x.milestoneState(ctx, c, owner, name, e)
	case rules.EffectBoard:
		if x.board == nil {
			return nil, fault.Permanent(fmt.Errorf("board effect, but no board is wired"))
		}
		applyErr = x.board.Apply(ctx, oe.Installation, e)
	default:
		return nil, fault.Permanent(fmt.Errorf("unknown effect %q", e.Kind))
	}
	return nil, applyErr
}
