package process

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/countersign/countersign/app/fault"
	"github.com/countersign/countersign/app/gh"
	"github.com/countersign/countersign/app/pace"
	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/rules"
)

// One decision's effects (the outbox effects of one delivery) are applied as
// a group: before the first is applied, the group's writes are reserved at
// once (a pace.Ticket), with the class of the delivery that caused them
// (records.OutboxEffect.Background). When the group's first turn is further
// away than a write may wait inside a delivery, nothing is read or written:
// the ticket is kept for the key, and the key waits until its turn (a
// fault.WaitError, no attempt used). Keys therefore wake one by one in turn
// order, and a deferral costs no request to GitHub: everything the effects
// read (issue comments, check runs) is read only once their turns have come.

// Buckets gives an installation's write pacing (nil: writes are not paced).
type Buckets interface {
	Bucket(inst int64) *pace.Bucket
}

// blockDivisor sets how long a group may wait for its turns inside a
// delivery: the pacing's minute divided by it (1 s), as a single write may.
const blockDivisor = 60

// Pace makes p reserve each group's write turns from b; deferred counts the
// groups that wait for them.
func (p *Processor) Pace(b Buckets, deferred func()) {
	p.buckets, p.deferred = b, deferred
}

// groupWrites estimates how many writes applying effects takes: a label
// sync as many as the label record says it adds and removes (labelWrites),
// the rest once (or not at all when nothing changed; unused turns are
// handed back, and a write beyond the estimate takes a turn of its own).
// Turns taken and not used still count in the windows of the turns taken
// after them: reserving two for a new issue's label, which takes one, let a
// burst of imports drain at half the paced rate.
func (p *Processor) groupWrites(ctx context.Context, effects []records.OutboxEffect) (int, error) {
	n := 0
	for _, oe := range effects {
		switch oe.Effect.Kind {
		case rules.EffectSyncLabels:
			w, err := p.labelWrites(ctx, oe.Effect)
			if err != nil {
				return 0, err
			}
			n += w
		case rules.EffectBoard: // one mutation; the first adds the item too
			n++
		default:
			n++
		}
	}
	return n, nil
}

// labelWrites is how many writes syncing e's labels takes, from the labels
// countersign recorded setting on the issue (app/effects): one addition and
// a removal per owned label taken off; with no record, one addition (a new
// issue carries none of them); with a stale record, or labels to strip that
// countersign does not own, an addition and a removal.
func (p *Processor) labelWrites(ctx context.Context, e rules.Effect) (int, error) {
	if len(e.Remove) > 0 {
		return 1 + len(e.Remove), nil
	}
	var view records.LabelView
	known, err := records.Load(ctx, p.store, records.LabelViewKey(e.Repo, e.Number), &view)
	if err != nil {
		return 0, err
	}
	switch {
	case !known:
		return 1, nil
	case view.Stale:
		return 2, nil
	}
	n := 0
	for _, l := range e.Labels {
		if !gh.HasLabel(view.Labels, l) {
			n = 1
			break
		}
	}
	for _, l := range view.Labels {
		if rules.TaskOwned(l) && !gh.HasLabel(e.Labels, l) {
			n++
		}
	}
	return n, nil
}

// heldTicket is the ticket a waiting key holds for its next group: the
// group's first effect, and the turns reserved for it.
type heldTicket struct {
	head   string // records.OutboxEffect.Key of the group's first effect
	ticket *pace.Ticket
}

// tickets keeps the tickets of keys waiting for their turn.
type tickets struct {
	mu   sync.Mutex
	held map[string]heldTicket // claim key -> ticket
	// waiting: installation -> a worker is waiting for one of its groups'
	// turns inside a delivery. One at a time: an installation's backlog holds
	// at most one worker, the others stay free for the keys that are ready.
	waiting map[int64]bool
}

// groupTurns reserves the turns of group (one delivery's effects, the first
// of them next in the key's outbox), or takes back the ticket the key held
// for it, and returns the context to apply the group (n writes) under. When the group's
// last turn is further away than a write may wait inside a delivery, the
// ticket is kept and a fault.WaitError says how long the key waits. done
// hands back the turns left unused.
func (p *Processor) groupTurns(ctx context.Context, key string, group []records.OutboxEffect, n int) (_ context.Context, done func(), _ error) {
	class := pace.Interactive
	if group[0].Background {
		class = pace.Background
	}
	ctx = pace.WithClass(ctx, class)
	b := p.bucket(group[0].Installation)
	if b == nil {
		return ctx, func() {}, nil
	}
	now := time.Now()
	p.tickets.mu.Lock()
	if p.tickets.held == nil {
		p.tickets.held = map[string]heldTicket{}
	}
	h, ok := p.tickets.held[key]
	delete(p.tickets.held, key)
	for k, other := range p.tickets.held { // keys that never came back for their turn
		if now.Sub(other.ticket.Last()) > other.ticket.Bucket().Limits().Minute {
			other.ticket.Release()
			delete(p.tickets.held, k)
		}
	}
	p.tickets.mu.Unlock()
	if ok && (h.head != group[0].Key || h.ticket.Bucket() != b) {
		h.ticket.Release()
		ok = false
	}
	t := h.ticket
	if ok {
		t.Renew() // the key came back late: its turns move, keeping its place
	} else {
		t = b.Reserve(class, n)
	}
	block := b.Limits().Minute / blockDivisor
	inst := group[0].Installation
	wait := t.Last().Sub(now)
	inside := wait <= block // the group goes when all its turns are near
	if inside && wait > 0 {
		// Another of the installation's keys already holds a worker waiting:
		// this one waits outside, the worker free for ready keys.
		inside = p.startWaiting(inst)
	}
	if !inside {
		p.tickets.mu.Lock()
		p.tickets.held[key] = heldTicket{head: group[0].Key, ticket: t}
		p.tickets.mu.Unlock()
		if p.deferred != nil {
			p.deferred()
		}
		// The key wakes half a block early and waits the rest inside the
		// delivery: a key picked up a little late still finds its turns.
		return nil, nil, fault.WaitError{Wait: max(wait-block/2, wait/2, time.Millisecond), Why: fmt.Sprintf("write pacing: %s writes of %s wait for their turn in %v",
			class, group[0].Delivery, wait.Round(time.Millisecond))}
	}
	if wait > 0 {
		err := p.waitTurns(ctx, t)
		p.stopWaiting(inst)
		if err != nil {
			t.Release()
			return nil, nil, err
		}
	}
	return pace.WithTicket(ctx, t), t.Release, nil
}

// startWaiting reports whether a worker may wait inside a delivery for
// installation inst's turns: none is already.
func (p *Processor) startWaiting(inst int64) bool {
	p.tickets.mu.Lock()
	defer p.tickets.mu.Unlock()
	if p.tickets.waiting[inst] {
		return false
	}
	if p.tickets.waiting == nil {
		p.tickets.waiting = map[int64]bool{}
	}
	p.tickets.waiting[inst] = true
	return true
}

func (p *Processor) stopWaiting(inst int64) {
	p.tickets.mu.Lock()
	defer p.tickets.mu.Unlock()
	delete(p.tickets.waiting, inst)
}

// waitTurns sleeps until t's last turn. (The turns may move later
// meanwhile, a person's writes going first: each write then waits for its
// turn, up to a block, in the pacing transport.)
func (p *Processor) waitTurns(ctx context.Context, t *pace.Ticket) error {
	clk := t.Bucket().Clock()
	wait := t.Last().Sub(clk.Now())
	if wait <= 0 {
		return nil
	}
	select {
	case <-clk.After(wait):
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for write turns: %w", ctx.Err())
	}
}
