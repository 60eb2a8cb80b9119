// Package process handles one claim, in order: the effects left over from an
// earlier attempt, then the decision on the claimed delivery, its commit
// (record and effects in one atomic write: the transactional outbox), then
// the application of those effects.
package process

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/countersign/countersign/app/fault"
	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
)

// Decider asks rules what a delivery means. It reads GitHub and the store but
// writes nothing: what it decides is the commit it returns. Before names the
// effects a decision presumes already applied (a new repository's labels
// before its first resync): they are applied before Decide, and a failure
// to apply them fails the delivery.
type Decider interface {
	Before(ctx context.Context, d *store.Delivery, log *slog.Logger) ([]records.OutboxEffect, error)
	Decide(ctx context.Context, d *store.Delivery, log *slog.Logger) (store.Commit, error)
}

// Applier applies one committed effect to GitHub (Apply; leftover says it may
// have been applied before), or one effect a decision presumes (Prepare: its
// failure is the delivery's, so GitHub's answer is not classified as for a
// committed effect).
//
// Apply returns the records the application keeps: they are written with the
// effect's pop, in one write, so an applied effect leaves the outbox only
// with them.
type Applier interface {
	Apply(ctx context.Context, oe records.OutboxEffect, leftover bool) (map[string][]byte, error)
	Prepare(ctx context.Context, oe records.OutboxEffect) error
}

// Processor turns one claimed delivery into a decision (rules), records it with
// its effects in one atomic commit, then applies the effects to GitHub.
type Processor struct {
	store  store.Store
	decide Decider
	exec   Applier
	// buckets paces each group of writes (nil: not paced); tickets are the
	// turns reserved for keys waiting for them (turns.go).
	buckets  Buckets
	deferred func()
	tickets  tickets
	// owedDone: installation -> its owed cards are all queued (cards.go);
	// owedQueued: owed card key -> when a sweep queued it.
	owedMu     sync.Mutex
	owedDone   map[int64]bool
	owedQueued map[string]time.Time
}

// New is the processor deciding with d and applying with x, over st.
func New(st store.Store, d Decider, x Applier) *Processor {
	return &Processor{store: st, decide: d, exec: x}
}

// Handle processes claim c. Effects left over from an earlier attempt are applied
// first, so a task's effects always go out in order. Once the delivery is
// committed c.Delivery is set to nil: what may remain are its effects.
func (p *Processor) Handle(ctx context.Context, c *store.Claim, log *slog.Logger) error {
	if !c.NoEffects { // else nothing left over: not read
		if err := p.drain(ctx, c, log, true); err != nil {
			return fault.Outbox(err) // not the queued delivery's fault
		}
	}
	if c.Delivery == nil {
		return nil
	}
	if inst, ok := sweepOf(c.Delivery); ok {
		return p.handleSweep(ctx, c, inst)
	}
	w, err := p.prepareAndDecide(ctx, c.Delivery, log)
	if fault.InstallationGone(err) {
		log.Warn("delivery skipped: the App is no longer installed there", "error", err)
		w, err = store.Commit{}, nil
	}
	if err != nil {
		return err
	}
	if err := p.store.Commit(ctx, c, w); err != nil {
		return fmt.Errorf("commit decision: %w", err)
	}
	c.Delivery = nil
	if err := p.drain(ctx, c, log, false); err != nil {
		return fault.Outbox(err)
	}
	return nil
}

// prepareAndDecide applies the effects the decision on d presumes, then
// decides it.
func (p *Processor) prepareAndDecide(ctx context.Context, d *store.Delivery, log *slog.Logger) (store.Commit, error) {
	before, err := p.decide.Before(ctx, d, log)
	if err != nil {
		return store.Commit{}, err
	}
	for _, oe := range before {
		if err := p.exec.Prepare(ctx, oe); err != nil {
			return store.Commit{}, err
		}
	}
	return p.decide.Decide(ctx, d, log)
}

// drain applies the claimed key's outbox, oldest first, popping each effect once
// applied. leftover says the effects may have been tried before (a crash or a
// failure): effects that cannot be made idempotent by looking (a new comment)
// then look for their earlier application first. An effect GitHub refuses for
// good (the issue is gone, the App lacks a permission) is logged and dropped;
// any other failure stops the drain.
func (p *Processor) drain(ctx context.Context, c *store.Claim, log *slog.Logger, leftover bool) error {
	raws, err := p.store.Outbox(ctx, c)
	if err != nil {
		return fmt.Errorf("read outbox: %w", err)
	}
	effects := make([]records.OutboxEffect, len(raws))
	for i, raw := range raws {
		if err := json.Unmarshal(raw, &effects[i]); err != nil {
			log.Error("dropping an unreadable outbox effect", "error", err)
			effects[i] = records.OutboxEffect{}
		}
	}
	for start := 0; start < len(effects); {
		end := start + 1 // one decision's effects go together
		for end < len(effects) && effects[end].Delivery == effects[start].Delivery {
			end++
		}
		if err := p.drainGroup(ctx, c, effects[start:end], log, leftover); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// drainGroup applies one decision's effects under their turns (turns.go),
// with the cards owed for their tasks, or leaves a card owed (cards.go).
func (p *Processor) drainGroup(ctx context.Context, c *store.Claim, group []records.OutboxEffect, log *slog.Logger, leftover bool) error {
	inst := group[0].Installation
	if inst == 0 { // unreadable: dropped
		steps := make([]step, len(group))
		for i, oe := range group {
			steps[i] = step{oe: oe}
		}
		return p.applyGroup(ctx, ctx, c, steps, log, leftover)
	}
	saturated := p.saturated(inst)
	steps, err := p.plan(ctx, group, saturated)
	if err != nil {
		return err
	}
	n, err := p.writes(ctx, steps)
	if err != nil {
		return err
	}
	gctx, done, err := p.groupTurns(ctx, c.Key, group, n)
	if err != nil {
		return err
	}
	err = p.applyGroup(ctx, gctx, c, steps, log, leftover)
	done()
	if err == nil && !saturated && p.buckets != nil {
		err = p.sweep(ctx, keyOnly(c), inst)
	}
	return err
}

// applyGroup applies one decision's steps under gctx, popping each outbox
// effect once applied (or owed), in the same write as the records its
// application keeps.
func (p *Processor) applyGroup(ctx, gctx context.Context, c *store.Claim, steps []step, log *slog.Logger, leftover bool) error {
	for _, s := range steps {
		oe := s.oe
		var w store.Commit
		switch {
		case s.skip: // recorded as owed as it leaves the outbox
			if err := p.owe(ctx, c, oe); err != nil {
				return err
			}
			continue
		case oe.Installation != 0: // else unreadable: dropped
			recs, err := p.exec.Apply(gctx, oe, leftover && !s.owed)
			if err != nil {
				if !fault.IsPermanent(err) {
					return fmt.Errorf("apply %s on %s#%d: %w", oe.Effect.Kind, oe.Effect.Repo, oe.Effect.Number, err)
				}
				log.Error("effect refused by GitHub; dropped", "effect", oe.Effect.Kind, "error", err)
			}
			w.Records = recs
			if oe.Effect.Kind == rules.EffectSyncCard {
				// The task's card is no longer owed (paid): forgotten
				// with what is kept of the card.
				if w.Records == nil {
					w.Records = map[string][]byte{}
				}
				w.Records[records.CardOwedKey(oe.Effect.Repo, oe.Effect.Number)] = nil
			}
		}
		w.PopEffect = !s.owed // an owed card is not in the outbox
		if !w.PopEffect && len(w.Records) == 0 {
			continue
		}
		if err := p.store.Commit(ctx, keyOnly(c), w); err != nil {
			return fmt.Errorf("pop applied effect: %w", err)
		}
	}
	return nil
}
