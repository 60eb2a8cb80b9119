package heal

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/countersign/countersign/app/deliveries"
	"github.com/google/go-github/v60/github"
)

// gapMargin widens a gap on both sides: the log's times have whole seconds,
// and a delivery under way when the stream was lost may be logged a little
// before it.
const gapMargin = 5 * time.Second

// GapResult is what one gap pass did.
type GapResult struct {
	Requests    int
	Scanned     int // log entries within the gap
	Redelivered int
}

// Gap asks GitHub to redeliver what it sent between from and to and the bot
// never took in, whatever the log says of its success. A webhook proxy
// answers GitHub 2xx whether or not the bot was listening, so the deliveries
// made while the proxy's stream was lost look successful in the log; this
// reads the log back to from, and redelivers each delivery of an event the
// bot handles that the store has not seen (the store's de-duplication is the
// only witness). It keeps no state: each gap is covered once, when the
// stream is back.
func (h *Healer) Gap(ctx context.Context, from, to time.Time) (GapResult, error) {
	var res GapResult
	from, to = from.Add(-gapMargin), to.Add(gapMargin)
	byGUID := map[string]*github.HookDelivery{}
	opt := &github.ListCursorOptions{PerPage: perPage}
	for res.Requests < h.cfg.MaxRequests/2 {
		page, resp, err := h.api.ListHookDeliveries(ctx, opt)
		res.Requests++
		if err != nil {
			return res, fmt.Errorf("list webhook deliveries: %w", err)
		}
		older := false
		for _, d := range page {
			at := d.GetDeliveredAt().Time
			if at.Before(from) {
				older = true
				break
			}
			if at.After(to) || d.GetGUID() == "" || !deliveries.Webhook(d.GetEvent()) {
				continue
			}
			if _, dup := byGUID[d.GetGUID()]; !dup {
				byGUID[d.GetGUID()] = d
			}
		}
		if older || resp == nil || resp.Cursor == "" || len(page) == 0 {
			break
		}
		opt.Cursor = resp.Cursor
	}
	res.Scanned = len(byGUID)
	missed := make([]*github.HookDelivery, 0, len(byGUID))
	for guid, d := range byGUID {
		seen, err := h.store.Seen(ctx, guid)
		if err != nil {
			return res, fmt.Errorf("heal: %w", err)
		}
		if !seen {
			missed = append(missed, d)
		}
	}
	sort.Slice(missed, func(i, j int) bool { return missed[i].GetID() < missed[j].GetID() })
	for _, d := range missed {
		if res.Requests >= h.cfg.MaxRequests {
			break
		}
		h.m.Missed.Inc()
		_, resp, err := h.api.RedeliverHookDelivery(ctx, d.GetID())
		res.Requests++
		var accepted *github.AcceptedError
		if err != nil && !errors.As(err, &accepted) && !(resp != nil && resp.StatusCode == http.StatusAccepted) {
			if refused(resp) {
				h.m.Refused.Inc()
				continue
			}
			return res, fmt.Errorf("redeliver %s (%s): %w", d.GetGUID(), d.GetEvent(), err)
		}
		res.Redelivered++
		h.m.Redelivered.Inc()
		h.log.Info("delivery missed while the webhook proxy was down: redelivered", "delivery", d.GetGUID(),
			"event", d.GetEvent(), "action", d.GetAction(), "log_id", d.GetID())
	}
	return res, nil
}
