package decide

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/countersign/countersign/app/board"
	"github.com/countersign/countersign/app/fault"
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
