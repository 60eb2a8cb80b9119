package board

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	"github.com/shurcooL/githubv4"
)

// Configs gives repository repo's configuration, read through installation
// inst.
type Configs func(ctx context.Context, inst int64, repo string) (rules.Config, error)

// itemPayload is the part of a projects_v2_item webhook countersign reads.
type itemPayload struct {
	Action       string `json:"action"`
	Installation struct {
		ID int64 `json:"id"`
	} `json:"installation"`
	Item struct {
		NodeID        string `json:"node_id"`
		ProjectNodeID string `json:"project_node_id"`
		ContentNodeID string `json:"content_node_id"`
		ContentType   string `json:"content_type"`
	} `json:"projects_v2_item"`
	Changes struct {
		FieldValue *struct {
			FieldNodeID string          `json:"field_node_id"`
			FieldName   string          `json:"field_name"`
			To          json.RawMessage `json:"to"`
		} `json:"field_value"`
	} `json:"changes"`
	Sender *github.User `json:"sender"`
}

// ItemKeyOf is the ordering key of a projects_v2_item delivery: its content's.
func ItemKeyOf(contentNodeID string) string { return "board-item:" + contentNodeID }

// OnItem decides a projects_v2_item delivery that someone other than
// countersign sent (the caller drops countersign's own): a change of the
// field countersign keeps (edited) or the removal of an item (deleted), of
// an issue countersign keeps on that board, is put back. A task hears of it
// (rules.BoardEdited, rules.BoardRemoved: recorded on its card, the board
// effect follows); a goal issue is put back as its goal stands. What
// countersign recorded setting is forgotten first, so the effect writes.
func (b *Board) OnItem(ctx context.Context, d *store.Delivery, configs Configs, log *slog.Logger) (store.Commit, error) {
	var e itemPayload
	if err := json.Unmarshal(d.Payload, &e); err != nil {
		return store.Commit{}, fault.Permanent(fmt.Errorf("parse projects_v2_item payload: %w", err))
	}
	inst := e.Installation.ID
	if inst == 0 || e.Item.ContentType != "Issue" || e.Item.ContentNodeID == "" ||
		(e.Action == "edited" && e.Changes.FieldValue == nil) || (e.Action != "edited" && e.Action != "deleted") {
		return store.Commit{}, nil
	}
	repo, n, err := b.issueOf(ctx, inst, e.Item.ContentNodeID)
	if err != nil || repo == "" {
		return store.Commit{}, err
	}
	cfg, err := configs(ctx, inst, repo)
	if err != nil {
		return store.Commit{}, err
	}
	if !cfg.Board.On() {
		return store.Commit{}, nil
	}
	var known Project
	if ok, err := records.Load(ctx, b.store, ProjectKey(cfg.Board), &known); err != nil || !ok || known.ID != e.Item.ProjectNodeID {
		return store.Commit{}, err // not the board this repository names (or countersign never kept it)
	}
	if e.Action == "edited" && e.Changes.FieldValue.FieldNodeID != known.FieldID {
		return store.Commit{}, nil // another field: people's own
	}
	key := ItemKey(cfg.Board.Project, repo, n)
	var it Item
	if _, err := records.Load(ctx, b.store, key, &it); err != nil {
		return store.Commit{}, err
	}
	w := store.Commit{Records: map[string][]byte{key: nil}} // removed: add it again
	if e.Action == "edited" {
		w.Records[key] = StaleItem(it)
	}
	ev := rules.Event{Kind: rules.BoardRemoved, Actor: gh.User(e.Sender), At: deliveries.EventTime(time.Time{}, d), Issue: rules.IssueFacts{Repo: repo, Number: n}}
	if e.Action == "edited" {
		ev.Kind, ev.Text = rules.BoardEdited, optionName(e.Changes.FieldValue.To)
	}
	var m int
	if ok, err := records.Load(ctx, b.store, records.GoalIssueKey(repo, n), &m); err != nil {
		return store.Commit{}, err
	} else if ok && m != 0 {
		g, err := records.LoadGoal(ctx, b.store, repo, m)
		if err != nil || g == nil {
			return store.Commit{}, err
		}
		log.Info("the board was changed by someone else: the goal issue is put back", "repo", repo, "goal", n, "action", e.Action, "by", ev.Actor.Login)
		c, err := records.CommitFor(inst, d, nil, []rules.Effect{rules.GoalBoardEffect(cfg.Board, g)})
		if err != nil {
			return c, err
		}
		c.Records = w.Records
		return c, nil
	}
	t, err := records.LoadTask(ctx, b.store, repo, n)
	if err != nil || t == nil {
		return store.Commit{}, err
	}
	log.Info("the board was changed by someone else: the task is put back", "task", t.Key(), "action", e.Action, "by", ev.Actor.Login, "to", ev.Text)
	w.Enqueue = append(w.Enqueue, deliveries.Derived(d.ID+"/board", deliveries.Task, rules.TaskKey(repo, n),
		deliveries.TaskPayload{Installation: inst, Event: ev}))
	return w, nil
}

// optionName is the name of a single-select option as a webhook shows it.
func optionName(raw json.RawMessage) string {
	var o struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(raw, &o) == nil {
		return o.Name
	}
	return ""
}

// issueOf is the repository and number of the issue whose node id is id
// ("" when it is no issue the installation can see).
func (b *Board) issueOf(ctx context.Context, inst int64, id string) (string, int, error) {
	r, _, err := b.clients(inst)
	if err != nil {
		return "", 0, fault.Permanent(err)
	}
	var q struct {
		Node struct {
			Issue struct {
				Number     int
				Repository struct {
					NameWithOwner string
				}
			} `graphql:"... on Issue"`
		} `graphql:"node(id: $id)"`
	}
	if err := r.Query(ctx, &q, map[string]any{"id": githubv4.ID(id)}); err != nil {
		if strings.Contains(err.Error(), "Could not resolve") {
			return "", 0, nil
		}
		return "", 0, fmt.Errorf("read the board item's issue: %w", err)
	}
	return q.Node.Issue.Repository.NameWithOwner, q.Node.Issue.Number, nil
}

// ReconcilePayload is the payload of a deliveries.Board delivery: compare
// repo's tasks and goals with the board.
type ReconcilePayload struct {
	Installation int64  `json:"installation"`
	Repo         string `json:"repo"`
	Why          string `json:"why,omitempty"`
}

// ReconcileKey is the ordering key of repo's board reconciliation.
func ReconcileKey(repo string) string { return "board/" + repo }

// NewReconcile is the delivery that reconciles repo's board.
func NewReconcile(id string, p ReconcilePayload) store.Delivery {
	return deliveries.Derived(id, deliveries.Board, ReconcileKey(p.Repo), p)
}

// maxItemPages bounds the board read by a reconciliation (100 items a page).
const maxItemPages = 50

// itemsQuery reads a page of a project's items with the field's value.
type itemsQuery struct {
	Node struct {
		Project struct {
			Items struct {
				PageInfo struct {
					HasNextPage bool
					EndCursor   string
				}
				Nodes []struct {
					ID      string
					Content struct {
						Issue struct {
							Number     int
							Repository struct {
								NameWithOwner string
							}
						} `graphql:"... on Issue"`
					}
					FieldValueByName struct {
						Value struct {
							Name string
						} `graphql:"... on ProjectV2ItemFieldSingleSelectValue"`
					} `graphql:"fieldValueByName(name: $field)"`
				}
			} `graphql:"items(first: 100, after: $cursor)"`
		} `graphql:"... on ProjectV2"`
	} `graphql:"node(id: $project)"`
}

// DecideReconcile compares the board with repo's task and goal records
// (the records are the truth: DESIGN §8, drift is repaired): every task and
// goal issue whose item is missing or shows another value gets a board
// effect, what countersign recorded of its item corrected first. It reads
// the board (one query per 100 items) and writes nothing itself. A project
// that can now be reached is no longer marked unreachable.
func (b *Board) DecideReconcile(ctx context.Context, d *store.Delivery, configs Configs, webHost string, log *slog.Logger) (store.Commit, error) {
	var p ReconcilePayload
	if err := json.Unmarshal(d.Payload, &p); err != nil {
		return store.Commit{}, fault.Permanent(fmt.Errorf("parse %s: %w", d.Event, err))
	}
	cfg, err := configs(ctx, p.Installation, p.Repo)
	if err != nil || !cfg.Board.On() {
		return store.Commit{}, err
	}
	w := store.Commit{Records: map[string][]byte{}}
	if _, err := b.readProject(ctx, p.Installation, cfg.Board, webHost); errors.Is(err, ErrUnreachable) {
		log.Warn("board not reconciled: its project cannot be reached", "repo", p.Repo, "project", cfg.Board.Project, "why", err)
		w.Records[UnreachableKey(p.Installation, cfg.Board.Project)] = []byte(err.Error())
		return w, nil
	} else if err != nil {
		return store.Commit{}, err
	}
	w.Records[UnreachableKey(p.Installation, cfg.Board.Project)] = nil
	proj, err := b.project(ctx, p.Installation, cfg.Board)
	if err != nil {
		return store.Commit{}, err
	}
	type shown struct {
		item, value string
	}
	onBoard := map[int]shown{}
	r, _, err := b.clients(p.Installation)
	if err != nil {
		return store.Commit{}, fault.Permanent(err)
	}
	cursor := (*githubv4.String)(nil)
	for page := 0; page < maxItemPages; page++ {
		var q itemsQuery
		if err := r.Query(ctx, &q, map[string]any{"project": githubv4.ID(proj.ID), "field": githubv4.String(cfg.Board.Field), "cursor": cursor}); err != nil {
			return store.Commit{}, fmt.Errorf("read the board %s: %w", cfg.Board.Project, err)
		}
		for _, n := range q.Node.Project.Items.Nodes {
			if strings.EqualFold(n.Content.Issue.Repository.NameWithOwner, p.Repo) && n.Content.Issue.Number != 0 {
				onBoard[n.Content.Issue.Number] = shown{n.ID, n.FieldValueByName.Value.Name}
			}
		}
		if !q.Node.Project.Items.PageInfo.HasNextPage {
			break
		}
		cursor = githubv4.NewString(githubv4.String(q.Node.Project.Items.PageInfo.EndCursor))
	}
	var effects []rules.Effect
	check := func(n int, e rules.Effect) {
		s, ok := onBoard[n]
		if ok && s.value == e.Value {
			return
		}
		key := ItemKey(cfg.Board.Project, p.Repo, n)
		w.Records[key] = nil // not on the board: add it
		if ok {
			w.Records[key] = StaleItem(Item{ID: s.item}) // another value: set it
		}
		effects = append(effects, e)
	}
	tasks, err := records.ScanNumbers(ctx, b.store, strings.TrimSuffix(records.TaskKey(p.Repo, 0), "0"))
	if err != nil {
		return store.Commit{}, fmt.Errorf("list tasks of %s: %w", p.Repo, err)
	}
	slices.Sort(tasks)
	for _, n := range tasks {
		t, err := records.LoadTask(ctx, b.store, p.Repo, n)
		if err != nil {
			return store.Commit{}, err
		}
		if t != nil {
			check(n, rules.BoardEffect(cfg.Board, t))
		}
	}
	goals, err := records.ScanNumbers(ctx, b.store, strings.TrimSuffix(records.GoalKey(p.Repo, 0), "0"))
	if err != nil {
		return store.Commit{}, fmt.Errorf("list goals of %s: %w", p.Repo, err)
	}
	slices.Sort(goals)
	for _, m := range goals {
		g, err := records.LoadGoal(ctx, b.store, p.Repo, m)
		if err != nil {
			return store.Commit{}, err
		}
		if g == nil || g.MilestoneDeleted {
			continue
		}
		issue := g.Issue
		if issue == 0 {
			if _, err := records.Load(ctx, b.store, "goal-issue-of/"+rules.GoalKey(p.Repo, m), &issue); err != nil {
				return store.Commit{}, err
			}
		}
		if issue != 0 {
			check(issue, rules.GoalBoardEffect(cfg.Board, g))
		}
	}
	c, err := records.CommitFor(p.Installation, d, nil, effects)
	if err != nil {
		return c, err
	}
	c.Records = w.Records
	log.Info("board reconciled", "repo", p.Repo, "project", cfg.Board.Project, "items", len(onBoard), "repaired", len(effects), "why", p.Why)
	return c, nil
}
