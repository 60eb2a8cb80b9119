package decide

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/countersign/countersign/app/board"
	"github.com/countersign/countersign/app/fault"
	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
	"github.com/google/go-github/v60/github"
)

// The board (package board): a person's change of countersign's field on an
// organization's board, or removal of an item, is put back; countersign's
// own changes come back as webhooks too, and change nothing.

func (p *Decider) onBoardItem(ctx context.Context, d *store.Delivery, log *slog.Logger) (store.Commit, error) {
	if p.board == nil {
		return store.Commit{}, nil
	}
	var e struct {
		Sender *github.User `json:"sender"`
	}
	if err := json.Unmarshal(d.Payload, &e); err != nil {
		return store.Commit{}, fault.Permanent(fmt.Errorf("parse projects_v2_item payload: %w", err))
	}
	if own, err := p.gh.Own(ctx, e.Sender); err != nil || own {
		return store.Commit{}, err
	}
	return p.board.OnItem(ctx, d, p.boardConfigs(log), log)
}

// boardConfigs reads a repository's configuration for the board.
func (p *Decider) boardConfigs(log *slog.Logger) board.Configs {
	return func(ctx context.Context, inst int64, repo string) (rules.Config, error) {
		c, err := p.clients(inst)
		if err != nil {
			return rules.Config{}, fault.Permanent(err)
		}
		return p.look.Config(ctx, c, repo, log)
	}
}

// boardReach checks, for a configuration pushed to the default branch, that
// the board it names can be reached. One that cannot (a user's project, a
// project of another organization, an installation without the
// organization projects permission) is a mistake of the configuration,
// reported on check as any other: the rest of the configuration applies,
// and the board is not kept (its effects are skipped) until a push or a
// reconciliation finds it reachable. A board newly named, or reachable
// again, is reconciled: every task and goal issue is put on it.
func (p *Decider) boardReach(ctx context.Context, inst int64, d *store.Delivery, prev *records.Config, rec records.Config, check *rules.Effect) (store.Commit, error) {
	var w store.Commit
	b := rec.Config.Board
	if p.board == nil || rec.Error != "" || !b.On() {
		return w, nil
	}
	repo := check.Repo
	err := p.board.Reach(ctx, inst, b, p.gh.WebHost())
	w.Records = map[string][]byte{board.UnreachableKey(inst, b.Project): nil}
	switch {
	case errors.Is(err, board.ErrUnreachable):
		check.Problem = fmt.Sprintf("board.project: countersign cannot reach the board: %v. The rest of the configuration applies; "+
			"the board is not kept until this is fixed.", err)
		w.Records[board.UnreachableKey(inst, b.Project)] = []byte(err.Error())
		return w, nil
	case err != nil:
		return w, err
	}
	_, wasUnreachable := p.store.Get(ctx, board.UnreachableKey(inst, b.Project))
	if prev == nil || prev.Config.Board != b || wasUnreachable == nil {
		w.Enqueue = append(w.Enqueue, board.NewReconcile(d.ID+"/board", board.ReconcilePayload{Installation: inst, Repo: repo, Why: "configuration"}))
	}
	return w, nil
}
