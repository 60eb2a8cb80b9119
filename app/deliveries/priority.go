package deliveries

import (
	"encoding/json"
	"github.com/countersign/countersign/app/jsonpick"

	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
)

// People first. Each delivery is given a class when its decision is
// committed: interactive when it answers what a person just did (a command, a
// review, a push, a pull request's change, a close or reopen, a label changed
// by hand, a CI result, and what those fan out to), background otherwise (an
// opened issue's first card, dashboards, reconciliation repairs, check
// refreshes no person waits for, installation events, anything a bot sent).
// The class is kept with each effect in the outbox (records.OutboxEffect)
// and travels on the context down to the write pacing (app/gh, app/pace),
// where interactive writes take their turns ahead of background ones and
// background ones leave the pacing's headroom free.

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

// Background reports whether no person waits for the writes that answer d.
func Background(d *store.Delivery) bool {
	switch d.Event {
	case Task:
		// A pull request's event fanned out to the task it closes: it
		// answers the person who pushed, opened or reviewed it.
		var td TaskPayload
		return json.Unmarshal(d.Payload, &td) != nil || td.Event.Kind == "" || rules.IsBot(td.Event.Actor.Login)
	case Check:
		// A pull request's check refreshed after its task changed: someone
		// waits for it when a person changed the task.
		var cd CheckPayload
		return json.Unmarshal(d.Payload, &cd) != nil || !cd.Interactive
	case Head:
		// The check on a commit, decided again for a pull request's change.
		var hd HeadPayload
		return json.Unmarshal(d.Payload, &hd) != nil || !hd.Interactive
	case BaseMoved:
		// A push to a base branch read again for the pull requests on it:
		// no one waits for it.
		return true
	case Regate, CI:
		// A task's assignment re-gating its pull requests, and CI results:
		// someone who pushed waits for the gate.
		return false
	}
	var head struct {
		Action string `json:"action"`
		Sender struct {
			Type string `json:"type"`
		} `json:"sender"`
	}
	if !pickHead(d.Payload, &head.Action, &head.Sender) && json.Unmarshal(d.Payload, &head) != nil {
		return true
	}
	action := d.Action
	if action == "" {
		action = head.Action
	}
	return !WebhookInteractive(d.Event, action, head.Sender.Type)
}

// WebhookInteractive reports whether a person waits for what answers a
// webhook event with action sent by an account of senderType: a person's
// action (a bot's is background), or a CI result.
func WebhookInteractive(event, action, senderType string) bool {
	switch event {
	case "check_run", "check_suite", "status":
		return true
	}
	return senderType != "Bot" && personEvents[event+"."+action]
}

// pickHead decodes payload's action and sender into action and sender
// without decoding the rest (jsonpick); false when it cannot (the payload
// is then decoded whole, as before).
func pickHead(payload []byte, action *string, sender any) bool {
	v, ok := jsonpick.Pick(payload, "action", "sender")
	if !ok {
		return false
	}
	for i, dst := range []any{action, sender} {
		if v[i] != nil && json.Unmarshal(v[i], dst) != nil {
			return false
		}
	}
	return true
}
