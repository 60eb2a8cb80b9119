package githubtest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// GitHub promises no order of webhook deliveries: events a second apart can
// arrive either way round, and redeliveries come whenever they come. The
// fake sends its webhooks one at a time, in the order of the actions, unless
// told otherwise here: with jitter each webhook is sent on its own after an
// independent random delay, so close events arrive out of order; and webhooks
// held by SetWebhookPaused can be put in any order before they are let go.

// DefaultJitter is the longest delay of SetWebhookJitter when none is given.
const DefaultJitter = 1500 * time.Millisecond

// jitter draws each webhook's delay from a seeded generator: the same seed
// gives the same delays to the same sequence of webhooks.
type jitter struct {
	rng *rand.Rand
	max time.Duration
}

// SetWebhookJitter makes every following webhook wait an independent random
// delay between 0 and max (DefaultJitter when max is 0) before it is sent,
// drawn from a generator seeded with seed; webhooks are then sent
// concurrently, each after its own delay. WaitWebhooks still waits for all of
// them. A negative max turns jitter off: webhooks go one at a time, in order.
func (s *Server) SetWebhookJitter(seed uint64, max time.Duration) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if max < 0 {
		s.jitter = nil
		return
	}
	if max == 0 {
		max = DefaultJitter
	}
	s.jitter = &jitter{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), max: max}
}

// jitterDelay is the delay of the next webhook, and whether jitter is on.
// Call with s.wmu held.
func (s *Server) jitterDelay() (time.Duration, bool) {
	if s.jitter == nil {
		return 0, false
	}
	return time.Duration(s.jitter.rng.Int64N(int64(s.jitter.max) + 1)), true
}

// sendLater sends d after delay (sooner if the server closes). It runs on its
// own goroutine, counted in s.wg.
func (s *Server) sendLater(d *delivery, url string, secret []byte, delay time.Duration) {
	defer s.wg.Done()
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.closeCtx.Done():
	}
	s.send(d, url, secret)
}

// HeldWebhooks returns the webhooks queued and not yet sent (held while
// SetWebhookPaused(true)), in the order they will be sent.
func (s *Server) HeldWebhooks() []SentWebhook {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	out := make([]SentWebhook, 0, len(s.queue))
	for _, d := range s.queue {
		w := d.SentWebhook
		w.Payload = append([]byte(nil), d.Payload...)
		out = append(out, w)
	}
	return out
}

// ReorderHeldWebhooks sets the order in which the held webhooks are sent:
// order[i] is the index (in HeldWebhooks) of the webhook to send i-th. order
// must be a permutation of the held webhooks' indexes.
func (s *Server) ReorderHeldWebhooks(order []int) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if len(order) != len(s.queue) {
		return fmt.Errorf("githubtest: %d webhooks held, order names %d", len(s.queue), len(order))
	}
	seen := make([]bool, len(order))
	q := make([]*delivery, len(order))
	for i, j := range order {
		if j < 0 || j >= len(order) || seen[j] {
			return fmt.Errorf("githubtest: order %v is not a permutation", order)
		}
		seen[j] = true
		q[i] = s.queue[j]
	}
	s.queue = slices.Clip(q)
	return nil
}
