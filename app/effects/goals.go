package effects

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/countersign/countersign/app/card"
	"github.com/countersign/countersign/app/fault"
	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/rules"
	"github.com/countersign/countersign/templates"
	"github.com/google/go-github/v60/github"
)

// goalIssueEffect makes the goal issue of milestone e.Number exist and show
// the goal as it is now (DESIGN §4): its dashboard, its labels, open or closed.
func (x *Executor) goalIssueEffect(ctx context.Context, c Client, owner, name string, inst int64, e rules.Effect) error {
	g, err := records.LoadGoal(ctx, x.store, e.Repo, e.Number)
	if err != nil || g == nil {
		return err
	}
	cfg := rules.DefaultConfig()
	var rec records.Config
	if ok, err := records.Load(ctx, x.store, records.ConfigKey(e.Repo), &rec); err == nil && ok {
		cfg = rec.Config
	}
	body, err := templates.RenderGoal(g, cfg.Goals.IntegrationCheck, func(rec []byte) string {
		return x.keys.Sign(records.GoalScope(g.Repo, g.Milestone), rec)
	})
	if err != nil {
		return fault.Permanent(err)
	}
	state := "open"
	if g.State == rules.GoalVerified || g.MilestoneDeleted {
		state = "closed"
	}
	digest := fmt.Sprintf("%x", sha256.Sum256([]byte(g.IssueTitle()+"\x00"+body)))
	// What countersign last wrote to the goal issue: it is not read back.
	// Someone's edit, close or reopen of the goal issue makes the record
	// stale (onPeoplesIssue); then it is read as before.
	known := g.Issue
	if known == 0 {
		if _, err := records.Load(ctx, x.store, "goal-issue-of/"+g.Key(), &known); err != nil {
			return err
		}
	}
	var text records.GoalText
	if known != 0 {
		if _, err := records.Load(ctx, x.store, records.GoalTextKey(e.Repo, known), &text); err != nil {
			return err
		}
	}
	if known != 0 && !text.Stale && text.Digest != "" {
		// A change of a goal issue that shows what countersign last wrote
		// is maybe coalesced with the changes that follow (dashboard.go).
		var view records.LabelView
		if ok, err := records.Load(ctx, x.store, records.LabelViewKey(e.Repo, known), &view); err != nil {
			return err
		} else if ok && !view.Stale && (text.Digest != digest || text.State != state || !sameFold(view.Labels, g.Labels())) {
			if deferred, err := x.deferDashboard(ctx, inst, e.Repo, e.Number); err != nil || deferred {
				return err
			}
		}
		if text.Digest != digest || text.State != state {
			req := &github.IssueRequest{}
			if text.Digest != digest {
				req.Title, req.Body = github.String(g.IssueTitle()), github.String(body)
			}
			if text.State != state {
				req.State = github.String(state)
			}
			_, _, err := c.EditIssue(ctx, owner, name, known, req)
			switch {
			case err == nil:
				if err := x.goalIssueWritten(ctx, e, known, digest, state); err != nil {
					return err
				}
				return x.syncRecordedLabels(ctx, c, owner, name, e.Repo, known, g.Labels(), rules.GoalOwned)
			case !fault.IsStatus(err, http.StatusNotFound) && !fault.IsStatus(err, http.StatusGone):
				return fmt.Errorf("edit the goal issue: %w", err)
			}
			// gone: find it, or open another
		} else {
			if err := x.dashboardWritten(ctx, e.Repo, e.Number); err != nil { // written by an edit before
				return err
			}
			return x.syncRecordedLabels(ctx, c, owner, name, e.Repo, known, g.Labels(), rules.GoalOwned)
		}
	}
	is, err := x.findGoalIssue(ctx, c, owner, name, g)
	if err != nil {
		return err
	}
	if is == nil && g.MilestoneDeleted {
		return nil // no goal issue for a milestone that is gone
	}
	if is == nil {
		is, _, err = c.CreateIssue(ctx, owner, name, &github.IssueRequest{Title: github.String(g.IssueTitle()), Body: github.String(body),
			Milestone: github.Int(g.Milestone)})
		if err != nil {
			return fmt.Errorf("create the goal issue: %w", err)
		}
	} else if is.GetBody() != body || is.GetTitle() != g.IssueTitle() {
		if _, _, err := c.EditIssue(ctx, owner, name, is.GetNumber(), &github.IssueRequest{Title: github.String(g.IssueTitle()), Body: github.String(body)}); err != nil {
			return fmt.Errorf("edit the goal issue: %w", err)
		}
	}
	n := is.GetNumber()
	if err := x.store.Put(ctx, "goal-issue-of/"+rules.GoalKey(e.Repo, e.Number), []byte(strconv.Itoa(n))); err != nil {
		return fmt.Errorf("remember the goal issue: %w", err)
	}
	if err := x.store.Put(ctx, records.GoalIssueKey(e.Repo, n), []byte(strconv.Itoa(e.Number))); err != nil {
		return fmt.Errorf("remember the goal issue: %w", err)
	}
	if err := x.syncRecordedLabels(ctx, c, owner, name, e.Repo, n, g.Labels(), rules.GoalOwned); err != nil {
		return err
	}
	if is.GetState() != state {
		if _, _, err := c.EditIssue(ctx, owner, name, n, &github.IssueRequest{State: github.String(state)}); err != nil {
			return fmt.Errorf("%s the goal issue: %w", strings.TrimSuffix(state, "d")+"e", err)
		}
	}
	return x.goalIssueWritten(ctx, e, n, digest, state)
}

func (x *Executor) goalIssueWritten(ctx context.Context, e rules.Effect, n int, digest, state string) error {
	if err := x.dashboardWritten(ctx, e.Repo, e.Number); err != nil {
		return err
	}
	b, err := json.Marshal(records.GoalText{Digest: digest, State: state})
	if err != nil {
		return fmt.Errorf("encode goal issue record: %w", err)
	}
	if err := x.store.Put(ctx, records.GoalTextKey(e.Repo, n), b); err != nil {
		return fmt.Errorf("remember the goal issue's text: %w", err)
	}
	return nil
}

// findGoalIssue finds the goal issue: the record's, else the one the bot
// opened in the milestone with the goal's marker (a lost store). nil if none.
func (x *Executor) findGoalIssue(ctx context.Context, c Client, owner, name string, g *rules.Goal) (*github.Issue, error) {
	n := g.Issue
	if n == 0 {
		var known int
		if _, err := records.Load(ctx, x.store, "goal-issue-of/"+g.Key(), &known); err != nil {
			return nil, err
		}
		n = known
	}
	if n != 0 {
		is, _, err := c.GetIssue(ctx, owner, name, n)
		switch {
		case err == nil:
			return is, nil
		case !fault.IsStatus(err, http.StatusNotFound) && !fault.IsStatus(err, http.StatusGone):
			return nil, fmt.Errorf("read the goal issue: %w", err)
		}
	}
	bot, err := x.gh.BotLogin(ctx)
	if err != nil {
		return nil, err
	}
	return card.MarkedGoalIssue(ctx, c, owner, name, g.Milestone, bot)
}

// goalNotice posts a notice on the goal issue of milestone e.Number.
func (x *Executor) goalNotice(ctx context.Context, c Client, owner, name string, oe records.OutboxEffect, leftover bool) error {
	var n int
	ok, err := records.Load(ctx, x.store, "goal-issue-of/"+rules.GoalKey(oe.Effect.Repo, oe.Effect.Number), &n)
	if err != nil {
		return err
	}
	if !ok || n == 0 {
		return errors.New("the goal issue does not exist yet")
	}
	oe.Effect.Number = n
	if nt := *oe.Effect.Notice; nt.Task == 0 {
		nt.Task = n
		oe.Effect.Notice = &nt
	}
	return x.notice(ctx, c, owner, name, oe, leftover)
}

func (x *Executor) milestoneState(ctx context.Context, c Client, owner, name string, e rules.Effect) error {
	state := "open"
	if e.Kind == rules.EffectCloseMilestone {
		state = "closed"
	}
	_, _, err := c.EditMilestone(ctx, owner, name, e.Number, &github.Milestone{State: github.String(state)})
	if err != nil {
		return fmt.Errorf("set milestone %d %s: %w", e.Number, state, err)
	}
	return nil
}
