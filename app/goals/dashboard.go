package goals

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/countersign/countersign/app/deliveries"
	"github.com/countersign/countersign/app/fault"
	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
)

// A goal's dashboard (its goal issue's description) changes with every change
// of one of its tasks. With a coalescing window (Settings.GoalCoalesce), a
// change of a goal issue that shows what countersign last wrote there is not
// written at once: the first one schedules a dashboard delivery for the end of
// the window, under a key of its own (so that the goal's later changes are
// decided meanwhile); once due, it hands an edit to the goal's key, which
// writes the goal issue as the goal's record is then. Every change in between
// is written by that one edit.
//
// Crash safety: the delivery is queued (durably) before the goal records that
// one is due; a crash between the two queues a second one later, which finds
// nothing left to write. A dashboard written but not yet marked as written is
// written again, identically, at most once more.

// DecideDashboard waits for the dashboard delivery's window to pass, then
// writes the goal issue as the goal's record is.
func (p *Decider) DecideDashboard(ctx context.Context, d *store.Delivery, log *slog.Logger) (store.Commit, error) {
	var dd deliveries.DashboardPayload
	if err := json.Unmarshal(d.Payload, &dd); err != nil {
		return store.Commit{}, fault.Permanent(fmt.Errorf("parse %s: %w", d.Event, err))
	}
	if dd.Repo == "" || dd.Milestone <= 0 {
		return store.Commit{}, fault.Permanent(fmt.Errorf("%s names no goal", d.Event))
	}
	if !dd.Apply {
		if wait := time.Until(dd.Due); wait > 0 {
			return store.Commit{}, fault.WaitError{Wait: wait, Why: fmt.Sprintf("goal dashboard of %s coalesces changes until %s", rules.GoalKey(dd.Repo, dd.Milestone), dd.Due.Format(time.RFC3339Nano))}
		}
		log.Debug("goal dashboard due", "goal", rules.GoalKey(dd.Repo, dd.Milestone))
		apply := dd
		apply.Apply = true
		return store.Commit{Enqueue: []store.Delivery{deliveries.Derived(d.ID+"/apply", deliveries.Dashboard, rules.GoalKey(dd.Repo, dd.Milestone), apply)}}, nil
	}
	return records.CommitFor(dd.Installation, d, nil, []rules.Effect{{Kind: rules.EffectGoalIssue, Repo: dd.Repo, Number: dd.Milestone}})
}
