package effects

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/countersign/countersign/app/deliveries"
	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
)

// deferDashboard reports whether the goal's dashboard edit is left to a
// dashboard delivery (scheduling one when none is due), rather than written
// now.
func (x *Executor) deferDashboard(ctx context.Context, inst int64, repo string, m int) (bool, error) {
	if x.coalesce <= 0 {
		return false, nil
	}
	var due time.Time
	pending, err := records.Load(ctx, x.store, records.DashboardDueKey(repo, m), &due)
	if err != nil {
		return false, err
	}
	now := time.Now()
	if pending && !due.IsZero() {
		return now.Before(due), nil // due: write it now
	}
	due = now.Add(x.coalesce).UTC()
	b, err := json.Marshal(deliveries.DashboardPayload{Installation: inst, Repo: repo, Milestone: m, Due: due})
	if err != nil {
		return false, fmt.Errorf("encode dashboard delivery: %w", err)
	}
	id := rules.GoalKey(repo, m) + "/dashboard/" + strconv.FormatInt(due.UnixNano(), 10)
	if _, err := x.store.Accept(ctx, store.Delivery{ID: id, Event: deliveries.Dashboard, Key: records.DashboardTimerKey(repo, m), Payload: b, ReceivedAt: now.UTC()}); err != nil {
		return false, fmt.Errorf("queue the dashboard edit: %w", err)
	}
	db, _ := json.Marshal(due) // a time: cannot fail
	if err := x.store.Put(ctx, records.DashboardDueKey(repo, m), db); err != nil {
		return false, fmt.Errorf("remember the dashboard edit: %w", err)
	}
	return true, nil
}

// dashboardWritten records that no dashboard edit of the goal is pending.
func (x *Executor) dashboardWritten(ctx context.Context, repo string, m int) error {
	if x.coalesce <= 0 {
		return nil
	}
	b, err := x.store.Get(ctx, records.DashboardDueKey(repo, m))
	if errors.Is(err, store.ErrNotFound) || (err == nil && string(b) == "null") {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", records.DashboardDueKey(repo, m), err)
	}
	if err := x.store.Put(ctx, records.DashboardDueKey(repo, m), []byte("null")); err != nil {
		return fmt.Errorf("clear the dashboard edit: %w", err)
	}
	return nil
}
