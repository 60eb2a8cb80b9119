package process

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"time"

	"github.com/countersign/countersign/app/deliveries"
	"github.com/countersign/countersign/app/fault"
	"github.com/countersign/countersign/app/pace"
	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
)

// Bulk is cheaper. While an installation's writes are saturated (background
// turns are given further ahead than a quarter of the pacing's minute), the
// card of a task still pending (records.OutboxEffect.MayWait: an imported
// issue's first card) is not written: it is recorded as owed
// (records.CardOwedKey), and its turn is handed back. It is written, as the
// task's record then makes it:
//
//   - before the task's labels next change (a person assigns it: the
//     contract is on its card before the task shows assigned), in the same
//     group of turns;
//   - or by a countersign.card delivery under the task's key, which the
//     processor queues for the installation's owed cards once its writes are
//     no longer saturated: after a group of writes, or by a sweep timer (a
//     countersign.card delivery with no task, under the installation's own
//     key, which waits while the writes are saturated).
//
// A task whose card waited and then changed (edited, assigned) therefore costs
// one card write instead of two, and an import of B issues costs B label
// writes while the installation is saturated, the cards following when it
// is not.

// saturatedDivisor: background turns further ahead than the pacing's minute
// divided by it mean the installation's writes are saturated.
const saturatedDivisor = 4

// sweepBatch is how many owed cards one sweep queues.
const sweepBatch = 20

// saturated reports whether installation inst's background writes are
// queued further ahead than a card may wait for.
func (p *Processor) saturated(inst int64) bool {
	b := p.bucket(inst)
	return b != nil && b.Backlog(pace.Background) > b.Limits().Minute/saturatedDivisor
}

func (p *Processor) bucket(inst int64) *pace.Bucket {
	if p.buckets == nil {
		return nil
	}
	return p.buckets.Bucket(inst)
}

// step is one effect of a group: from the outbox (popped once applied), or
// an owed card (its record deleted once applied).
type step struct {
	oe   records.OutboxEffect
	owed bool
	skip bool // a card that waits: recorded as owed, not applied
}

// plan lays out group's steps: the cards owed for the tasks whose labels
// the group changes go first; a card that may wait is skipped (owed) while
// saturated.
func (p *Processor) plan(ctx context.Context, group []records.OutboxEffect, saturated bool) ([]step, error) {
	var steps []step
	seen := map[string]bool{}
	for _, oe := range group {
		if oe.Installation == 0 || oe.Effect.Kind != rules.EffectSyncLabels {
			continue
		}
		key := records.CardOwedKey(oe.Effect.Repo, oe.Effect.Number)
		if seen[key] {
			continue
		}
		seen[key] = true
		var owed records.OutboxEffect
		ok, err := records.Load(ctx, p.store, key, &owed)
		if err != nil {
			return nil, err
		}
		if ok {
			steps = append(steps, step{oe: owed, owed: true})
		}
	}
	for _, oe := range group {
		steps = append(steps, step{oe: oe, skip: saturated && oe.MayWait})
	}
	return steps, nil
}

// writes is how many write turns steps take.
func (p *Processor) writes(ctx context.Context, steps []step) (int, error) {
	var effects []records.OutboxEffect
	for _, s := range steps {
		if !s.skip {
			effects = append(effects, s.oe)
		}
	}
	return p.groupWrites(ctx, effects)
}

// keyOnly is c without its delivery: what a write under c's lease that
// must not take the delivery off the queue commits with.
func keyOnly(c *store.Claim) *store.Claim {
	only := *c
	only.Delivery = nil
	return &only
}

// owe records oe's card as owed, popping it from the outbox in the same
// write.
func (p *Processor) owe(ctx context.Context, c *store.Claim, oe records.OutboxEffect) error {
	b, err := json.Marshal(oe)
	if err != nil {
		return fmt.Errorf("encode owed card: %w", err)
	}
	w := store.Commit{Records: map[string][]byte{records.CardOwedKey(oe.Effect.Repo, oe.Effect.Number): b},
		Enqueue: []store.Delivery{p.sweepTimer(oe.Installation)}, PopEffect: true}
	if err := p.store.Commit(ctx, keyOnly(c), w); err != nil {
		return fmt.Errorf("record owed card: %w", err)
	}
	p.owedMu.Lock()
	if p.owedDone == nil {
		p.owedDone = map[int64]bool{}
	}
	p.owedDone[oe.Installation] = false
	p.owedMu.Unlock()
	return nil
}

// sweepOf reports whether d is a sweep timer, and its installation.
func sweepOf(d *store.Delivery) (int64, bool) {
	if d.Event != deliveries.Card {
		return 0, false
	}
	var cd deliveries.CardPayload
	if json.Unmarshal(d.Payload, &cd) != nil || cd.Number != 0 || cd.Installation == 0 {
		return 0, false
	}
	return cd.Installation, true
}

// sweepTimer is the countersign.card delivery (no task) that sweeps
// installation inst's owed cards once its writes are no longer saturated:
// one per installation and pacing minute (its id is de-duplicated).
func (p *Processor) sweepTimer(inst int64) store.Delivery {
	minute := time.Minute
	if b := p.bucket(inst); b != nil {
		minute = b.Limits().Minute
	}
	id := fmt.Sprintf("cards/%d/%d", inst, time.Now().UnixNano()/int64(minute))
	return deliveries.Derived(id, deliveries.Card, fmt.Sprintf("countersign/cards/%d", inst), deliveries.CardPayload{Installation: inst})
}

// handleSweep handles a sweep timer: while the installation's writes are
// saturated its key waits (no attempt used); then it queues the owed cards.
func (p *Processor) handleSweep(ctx context.Context, c *store.Claim, inst int64) error {
	if b := p.bucket(inst); b != nil && p.saturated(inst) {
		wait := b.Backlog(pace.Background) - b.Limits().Minute/saturatedDivisor
		return fault.WaitError{Wait: max(wait, b.Limits().Minute/blockDivisor), Why: "owed cards wait until the writes are no longer saturated"}
	}
	p.owedMu.Lock()
	if p.owedDone == nil {
		p.owedDone = map[int64]bool{}
	}
	p.owedDone[inst] = false
	p.owedMu.Unlock()
	return p.sweep(ctx, c, inst)
}

// sweep queues a countersign.card delivery for up to sweepBatch of
// installation inst's owed cards, once after each saturation (and once
// after a start, when none is known), and a sweep timer when more are
// owed. A claim with a delivery (a sweep timer) is done with in the same
// commit.
func (p *Processor) sweep(ctx context.Context, c *store.Claim, inst int64) error {
	p.owedMu.Lock()
	if p.owedDone == nil {
		p.owedDone = map[int64]bool{}
	}
	done := p.owedDone[inst]
	p.owedDone[inst] = true
	var queued map[string]time.Time
	if !done { // not on every group's drain: the map holds an hour of cards
		queued = maps.Clone(p.owedQueued)
	}
	p.owedMu.Unlock()
	if done {
		if c.Delivery != nil {
			if err := p.store.Commit(ctx, c, store.Commit{}); err != nil {
				return fmt.Errorf("commit sweep: %w", err)
			}
			c.Delivery = nil
		}
		return nil
	}
	keys, err := p.store.Scan(ctx, records.CardOwedPrefix)
	if err != nil {
		return fmt.Errorf("list owed cards: %w", err)
	}
	var w store.Commit
	more := false
	for _, key := range keys {
		var owed records.OutboxEffect
		if ok, err := records.Load(ctx, p.store, key, &owed); err != nil || !ok || owed.Installation != inst {
			if err != nil {
				return err
			}
			continue
		}
		if t, ok := queued[key]; ok && time.Since(t) < time.Hour {
			continue // queued by an earlier sweep
		}
		if len(w.Enqueue) == sweepBatch {
			more = true
			break
		}
		e := owed.Effect
		w.Enqueue = append(w.Enqueue, deliveries.Derived(fmt.Sprintf("card/%s/%d", rules.TaskKey(e.Repo, e.Number), time.Now().UnixNano()),
			deliveries.Card, rules.TaskKey(e.Repo, e.Number), deliveries.CardPayload{Installation: inst, Repo: e.Repo, Number: e.Number}))
	}
	cards := len(w.Enqueue)
	if more {
		p.owedMu.Lock()
		p.owedDone[inst] = false
		p.owedMu.Unlock()
		w.Enqueue = append(w.Enqueue, p.sweepTimer(inst))
	}
	if len(w.Enqueue) == 0 && c.Delivery == nil {
		return nil
	}
	if err := p.store.Commit(ctx, c, w); err != nil {
		return fmt.Errorf("queue owed cards: %w", err)
	}
	c.Delivery = nil
	p.owedMu.Lock()
	defer p.owedMu.Unlock()
	if p.owedQueued == nil {
		p.owedQueued = map[string]time.Time{}
	}
	for k, t := range p.owedQueued {
		if time.Since(t) >= time.Hour {
			delete(p.owedQueued, k)
		}
	}
	for _, d := range w.Enqueue[:cards] {
		var cd deliveries.CardPayload
		if json.Unmarshal(d.Payload, &cd) == nil {
			p.owedQueued[records.CardOwedKey(cd.Repo, cd.Number)] = time.Now()
		}
	}
	return nil
}
