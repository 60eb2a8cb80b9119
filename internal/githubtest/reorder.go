package githubtest

import (
	"fmt"
	"time"
)

// GitHub does not promise the order of its webhook deliveries: events a
// second apart can arrive in either order. A test makes the fake deliver
// close events in the order it picks: it holds them back with
// DropWebhooks(true), then sends them with SendDropped, each as its first
// delivery (not a redelivery), in any order.

// SendDropped sends the webhooks with these delivery ids, each dropped by
// DropWebhooks(true) and never sent, in this order, after the ones already
// queued: as GitHub would have delivered them, with their own ids and
// payloads, had it delivered them in that order. An id that names no such
// webhook is an error, and nothing is sent.
func (s *Server) SendDropped(ids ...string) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	var send []*delivery
	seen := map[string]bool{}
	for _, id := range ids {
		var found *delivery
		for _, d := range s.deliveries {
			if d.ID == id && d.Dropped && !d.Redelivery {
				found = d
				break
			}
		}
		if found == nil || seen[id] {
			return fmt.Errorf("githubtest: no dropped, unsent webhook %q", id)
		}
		seen[id] = true
		send = append(send, found)
	}
	for _, d := range send {
		d.Dropped, d.Pending, d.Queued = false, true, time.Now()
		d.fault = s.takeHookFault(d)
		s.queue = append(s.queue, d)
		s.enqueued++
	}
	s.wcond.Broadcast()
	return nil
}

// DroppedWebhooks lists the webhooks dropped and not sent since (event,
// action: "" for any), in the order GitHub made them.
func (s *Server) DroppedWebhooks(event, action string) []SentWebhook {
	var out []SentWebhook
	for _, d := range s.Deliveries() {
		if d.Dropped && !d.Redelivery && d.Event == event && (action == "" || d.Action == action) {
			out = append(out, d)
		}
	}
	return out
}
