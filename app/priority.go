package app

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/countersign/countersign/app/pace"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
)

// People first (DESIGN §9). Each delivery is given a class when its decision
// is committed: interactive when it answers what a person just did (a
// command, a review, a push, a pull request's change, a close or reopen, a
// label changed by hand, and what those fan out to), background otherwise
// (an opened issue's first card, dashboards, reconciliation repairs, check
// refreshes, installation events, anything a bot sent). The class is kept
// with each effect in the outbox and travels on the context down to the
// pacing transport, where interactive writes take their turns ahead of
// background ones and background ones leave the pacing's headroom free.
//
// One decision's effects (the outbox effects of one delivery) are applied as
// a group: before the first is applied, the group's writes are reserved at
// once (a pace.Ticket). When the group's first turn is further away than a
// write may wait inside a delivery, nothing is read or written: the ticket is
// kept for the key, and the key waits until its turn (a waitError, no attempt
// used). Keys therefore wake one by one in turn order, and a deferral costs
// no request to GitHub: everything the effects read (issue comments, check
// runs) is read only once their turns have come.

// classKey carries a write's pace.Class on a context.
type classKey struct{}

// ticketKey carries the pace.Ticket of the group of writes under way.
type ticketKey struct{}

func withClass(ctx context.Context, c pace.Class) context.Context {
	return context.WithValue(ctx, classKey{}, c)
}

// classOf is the class of the writes made under ctx: background unless said
// otherwise, so that work no person waits for never eats into the headroom.
func classOf(ctx context.Context) pace.Class {
	if c, ok := ctx.Value(classKey{}).(pace.Class); ok {
		return c
	}
	return pace.Background
}

func ticketOf(ctx context.Context) *pace.Ticket {
	t, _ := ctx.Value(ticketKey{}).(*pace.Ticket)
	return t
}

// personEvents are the webhook events that answer a person's action when a
// person (not a bot) sent them.
var personEvents = map[string]bool{
	"issue_comment.created": true, "issues.closed": true, "issues.reopened": true,
	"issues.labeled": true, "issues.unlabeled": true, "issues.assigned": true, "issues.unassigned": true,
	"issues.edited": true, "issues.milestoned": true, "issues.demilestoned": true,
	"pull_request_review.submitted": true, "pull_request_review.dismissed": true,
	"pull_request.opened": true, "pull_request.reopened": true, "pull_request.edited": true,
	"pull_request.ready_for_review": true, "pull_request.converted_to_draft": true,
	"pull_request.synchronize": true, "pull_request.closed": true, "push.": true,
}

// deliveryClass is the class of the writes that answer d.
func deliveryClass(d *store.Delivery) pace.Class {
	switch d.Event {
	case taskEvent:
		// A pull request's event fanned out to the task it closes: it
		// answers the person who pushed, opened or reviewed it.
		var td taskDelivery
		if json.Unmarshal(d.Payload, &td) == nil && td.Event.Kind != "" && !rules.IsBot(td.Event.Actor.Login) {
			return pace.Interactive
		}
		return pace.Background
	case checkEvent:
		// A pull request's check refreshed after its task changed: someone
		// waits for it when a person changed the task.
		var cd checkDelivery
		if json.Unmarshal(d.Payload, &cd) == nil && cd.Interactive {
			return pace.Interactive
		}
		return pace.Background
	case regateEvent, ciEvent, "check_run", "check_suite", "status":
		// A task's assignment re-gating its pull requests, and CI results:
		// someone who pushed waits for the gate.
		return pace.Interactive
	}
	var head struct {
		Action string `json:"action"`
		Sender struct {
			Type string `json:"type"`
		} `json:"sender"`
	}
	if json.Unmarshal(d.Payload, &head) != nil || head.Sender.Type == "Bot" {
		return pace.Background
	}
	action := d.Action
	if action == "" {
		action = head.Action
	}
	if personEvents[d.Event+"."+action] {
		return pace.Interactive
	}
	return pace.Background
}

// background reports whether no person waits for the writes that answer d.
func background(d *store.Delivery) bool { return deliveryClass(d) == pace.Background }

// groupWrites estimates how many writes applying effects takes: a label
// swap adds and removes, the rest write once (or not at all when nothing
// changed; unused turns are handed back).
func groupWrites(effects []outboxEffect) int {
	n := 0
	for _, oe := range effects {
		switch oe.Effect.Kind {
		case rules.EffectSyncLabels:
			n += 2
		default:
			n++
		}
	}
	return n
}

// heldTicket is the ticket a waiting key holds for its next group: the
// group's first effect, and the turns reserved for it.
type heldTicket struct {
	head   string // outboxEffect.Key of the group's first effect
	ticket *pace.Ticket
}

// tickets keeps the tickets of keys waiting for their turn.
type tickets struct {
	mu   sync.Mutex
	held map[string]heldTicket // claim key -> ticket
}

// groupTurns reserves the turns of group (one delivery's effects, the
// first of them next in the key's outbox), or takes back the ticket the key
// held for it, and returns the context to apply the group under. When the
// group's first turn is further away than a write may wait inside a
// delivery, the ticket is kept and a waitError says how long the key waits.
// done hands back the turns left unused.
func (p *Processor) groupTurns(ctx context.Context, key string, group []outboxEffect) (_ context.Context, done func(), _ error) {
	class := pace.Interactive
	if group[0].Background {
		class = pace.Background
	}
	ctx = withClass(ctx, class)
	b := p.gh.bucket(group[0].Installation)
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
		t = b.Reserve(class, groupWrites(group))
	}
	if wait := t.Last().Sub(now); wait > b.Limits().Minute/paceBlockDivisor { // the group goes when all its turns are near
		p.tickets.mu.Lock()
		p.tickets.held[key] = heldTicket{head: group[0].Key, ticket: t}
		p.tickets.mu.Unlock()
		p.gh.m.WritesDeferred.Inc()
		return nil, nil, waitError{wait: wait, why: fmt.Sprintf("write pacing: %s writes of %s wait for their turn in %v",
			class, group[0].Delivery, wait.Round(time.Millisecond))}
	}
	return context.WithValue(ctx, ticketKey{}, t), t.Release, nil
}
