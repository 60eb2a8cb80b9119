package decide

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/countersign/countersign/app/deliveries"
	"github.com/countersign/countersign/app/fault"
	"github.com/countersign/countersign/app/gh"
	"github.com/countersign/countersign/app/goals"
	"github.com/countersign/countersign/app/reconcile"
	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
	"github.com/google/go-github/v60/github"
)

// The labels countersign owns are repository labels: renaming one (say
// state:in-progress to state:verified) would change the state every task
// seems to be in, and deleting one would take it off every task at once.
// Both are undone (rules.LabelRepair); the tasks that lost the label get it
// back from their records (a reconcile.Repair under each task's key).

// labelPayload is the part of a label webhook countersign reads (go-github's
// LabelEvent has no changes.name).
type labelPayload struct {
	Action       string `json:"action"`
	Installation struct {
		ID int64 `json:"id"`
	} `json:"installation"`
	Repository struct {
		FullName string `json:"full_name"`
	} `json:"repository"`
	Label struct {
		Name string `json:"name"`
	} `json:"label"`
	Changes struct {
		Name struct {
			From string `json:"from"`
		} `json:"name"`
	} `json:"changes"`
	Sender *github.User `json:"sender"`
}

func (p *Decider) onLabel(ctx context.Context, d *store.Delivery, log *slog.Logger) (store.Commit, error) {
	var e labelPayload
	if err := json.Unmarshal(d.Payload, &e); err != nil {
		return store.Commit{}, fault.Permanent(fmt.Errorf("parse label payload: %w", err))
	}
	inst, repo := e.Installation.ID, e.Repository.FullName
	if inst == 0 || repo == "" {
		return store.Commit{}, nil
	}
	if own, err := p.gh.Own(ctx, e.Sender); err != nil || own {
		return store.Commit{}, err
	}
	effects := rules.LabelRepair(repo, e.Action, e.Label.Name, e.Changes.Name.From)
	if len(effects) == 0 {
		return store.Commit{}, nil
	}
	log.Warn("an owned label was changed: undoing it", "label", e.Label.Name, "action", e.Action,
		"from", e.Changes.Name.From, "by", e.Sender.GetLogin())
	w, err := records.CommitFor(inst, d, nil, effects)
	if err != nil {
		return w, err
	}
	// The tasks (and goal issues) that carried the owned label lost it: to a
	// deletion, or to a rename that renaming back may not undo (someone may
	// have taken the name meanwhile). Each is put back as its record says.
	lostLabel, strip := e.Label.Name, ""
	if e.Action == "edited" {
		lostLabel, strip = e.Changes.Name.From, e.Label.Name
		if !rules.Owned(lostLabel) {
			return w, nil // a label renamed onto an owned name: renaming it back is all
		}
		if rules.Owned(strip) {
			strip = "" // an owned label: syncing the labels takes it off anyway
		}
	}
	lost, err := p.tasksCarrying(ctx, repo, lostLabel)
	if err != nil {
		return store.Commit{}, err
	}
	why := fmt.Sprintf("label %s %s by @%s: put back", strings.ToLower(lostLabel), map[string]string{"deleted": "deleted", "edited": "renamed"}[e.Action], e.Sender.GetLogin())
	for _, n := range lost {
		w.Enqueue = append(w.Enqueue, reconcile.NewRepair(reconcile.Repair{Installation: inst, Repo: repo, Number: n, Why: why, Strip: strip},
			fmt.Sprintf("%s/repair/%d", d.ID, n), time.Now()))
	}
	carrying, err := p.goalsCarrying(ctx, repo, lostLabel)
	if err != nil {
		return store.Commit{}, err
	}
	for i, m := range carrying {
		w.Enqueue = append(w.Enqueue, goals.Deliver(inst, d, rules.GoalEvent{Kind: rules.GoalIssueUnlabeled, Repo: repo, Milestone: m,
			Actor: e.Sender.GetLogin(), ActorID: e.Sender.GetID(), At: deliveries.EventTime(time.Time{}, d), Label: strings.ToLower(lostLabel)}, i))
	}
	return w, nil
}

// goalsCarrying are the milestones of repo whose goal issue carries label by
// its goal's record.
func (p *Decider) goalsCarrying(ctx context.Context, repo, label string) ([]int, error) {
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

// tasksCarrying are the tracked tasks of repo whose records say they carry
// label (the store's task records; GitHub is not asked).
func (p *Decider) tasksCarrying(ctx context.Context, repo, label string) ([]int, error) {
	ns, err := records.ScanNumbers(ctx, p.store, strings.TrimSuffix(records.TaskKey(repo, 0), "0"))
	if err != nil {
		return nil, fmt.Errorf("list tasks of %s: %w", repo, err)
	}
	var out []int
	for _, n := range ns {
		t, err := records.LoadTask(ctx, p.store, repo, n)
		if err != nil {
			return nil, err
		}
		if t != nil && gh.HasLabel(t.Labels(), label) {
			out = append(out, n)
		}
	}
	return out, nil
}
