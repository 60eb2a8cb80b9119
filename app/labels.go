package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
	"github.com/google/go-github/v60/github"
)

// The labels countersign owns are repository labels: renaming one (say
// state:in-progress to state:verified) would change the state every task
// seems to be in, and deleting one would take it off every task at once.
// Both are undone (rules.LabelRepair); the tasks that lost a deleted label
// get it back from their records.

// repairEvent is the internal event that puts a task's owned labels back as
// its record says, decided under the task's key.
const repairEvent = "countersign.repair"

// repairDelivery is the payload of a repairEvent delivery.
type repairDelivery struct {
	Installation int64  `json:"installation"`
	Repo         string `json:"repo"`
	Number       int    `json:"number"`
	Why          string `json:"why"`
}

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

// maxRepairIssuePages bounds the issues read to find the tasks that lost a
// deleted label (100 a page).
const maxRepairIssuePages = 50

func (p *Processor) onLabel(ctx context.Context, d *store.Delivery, log *slog.Logger) (store.Commit, error) {
	var e labelPayload
	if err := json.Unmarshal(d.Payload, &e); err != nil {
		return store.Commit{}, permanent(fmt.Errorf("parse label payload: %w", err))
	}
	inst, repo := e.Installation.ID, e.Repository.FullName
	if inst == 0 || repo == "" {
		return store.Commit{}, nil
	}
	if own, err := p.own(ctx, e.Sender); err != nil || own {
		return store.Commit{}, err
	}
	effects := rules.LabelRepair(repo, e.Action, e.Label.Name, e.Changes.Name.From)
	if len(effects) == 0 {
		return store.Commit{}, nil
	}
	log.Warn("an owned label was changed: undoing it", "label", e.Label.Name, "action", e.Action,
		"from", e.Changes.Name.From, "by", e.Sender.GetLogin())
	w, err := p.commitFor(inst, d, nil, effects)
	if err != nil || e.Action != "deleted" {
		return w, err
	}
	c, err := p.gh.Installation(inst)
	if err != nil {
		return store.Commit{}, permanent(err)
	}
	lost, err := p.tasksCarrying(ctx, c, repo, e.Label.Name)
	if err != nil {
		return store.Commit{}, err
	}
	for _, n := range lost {
		w.Enqueue = append(w.Enqueue, derived(fmt.Sprintf("%s/repair/%d", d.ID, n), repairEvent, rules.TaskKey(repo, n),
			repairDelivery{Installation: inst, Repo: repo, Number: n,
				Why: fmt.Sprintf("label %s deleted by @%s: put back", strings.ToLower(e.Label.Name), e.Sender.GetLogin())}))
	}
	return w, nil
}

// tasksCarrying are the tracked tasks whose records say they carry label:
// the issues of the repository (open and closed, newest first, bounded) that
// countersign has a record of.
func (p *Processor) tasksCarrying(ctx context.Context, c *github.Client, repo, label string) ([]int, error) {
	var out []int
	opt := &github.IssueListByRepoOptions{State: "all", ListOptions: github.ListOptions{PerPage: 100}}
	for page := 0; page < maxRepairIssuePages; page++ {
		issues, resp, err := c.Issues.ListByRepo(ctx, splitRepo(repo), repoName(repo), opt)
		if err != nil {
			return nil, fmt.Errorf("list issues of %s: %w", repo, err)
		}
		for _, is := range issues {
			if is.IsPullRequest() {
				continue
			}
			t, err := loadTask(ctx, p.store, repo, is.GetNumber())
			if err != nil {
				return nil, err
			}
			if t != nil && containsFold(t.Labels(), label) {
				out = append(out, t.Number)
			}
		}
		if resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	return out, nil
}

// decideRepair puts a task's owned labels back as its record says.
func (p *Processor) decideRepair(ctx context.Context, rd repairDelivery, d *store.Delivery) (store.Commit, error) {
	t, err := loadTask(ctx, p.store, rd.Repo, rd.Number)
	if err != nil || t == nil {
		return store.Commit{}, err
	}
	return p.commitFor(rd.Installation, d, nil, []rules.Effect{{Kind: rules.EffectSyncLabels, Repo: t.Repo, Number: t.Number, Labels: t.Labels()}})
}

// renameLabel renames repository label e.Label back to e.RenameTo, with the
// colour and description countersign gives it when it owns that name.
func (x *Executor) renameLabel(ctx context.Context, c *github.Client, owner, name string, e rules.Effect) error {
	l := &github.Label{Name: github.String(e.RenameTo)}
	if spec, ok := rules.Spec(e.RenameTo); ok {
		l.Color, l.Description = github.String(spec.Color), github.String(spec.Description)
	}
	_, _, err := c.Issues.EditLabel(ctx, owner, name, url.PathEscape(e.Label), l)
	if isStatus(err, http.StatusNotFound) {
		return nil // renamed again or deleted since: that change has its own event
	}
	if err != nil {
		return fmt.Errorf("rename label %s back to %s: %w", e.Label, e.RenameTo, err)
	}
	x.labels.Delete(owner + "/" + name + "\x00" + e.Label)
	return nil
}

// createLabel creates a deleted owned label again.
func (x *Executor) createLabel(ctx context.Context, c *github.Client, owner, name string, e rules.Effect) error {
	x.labels.Delete(owner + "/" + name + "\x00" + e.Label)
	return x.ensureLabel(ctx, c, owner, name, e.Label)
}
