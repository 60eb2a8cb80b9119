package gh

import (
	"context"
	"fmt"
	"time"

	"github.com/countersign/countersign/app/fault"
	"github.com/countersign/countersign/app/ghhealth"
)

// GitHub being away is found per installation (ghhealth): the request that
// finds GitHub unreachable, answering 5xx or rate limiting (the
// installation-token request included) marks the installation away; its
// other requests then fail fast, unsent, and one probe per away installation
// (GET /rate_limit with its token, which costs no rate limit; GET /app for
// the App's own requests) finds out when GitHub is back, after the wait
// GitHub asked for if it did. The keys that waited are then woken in turn.

// newHealth builds g's health: probes go through g, wakes through the store
// set by OnBack.
func (g *GitHub) newHealth() *ghhealth.Health {
	return ghhealth.New(ghhealth.Config{
		Probe:   g.probe,
		Waiting: fault.GitHubWait,
		Wake: func(ctx context.Context, keys ...string) error {
			if g.wake == nil {
				return nil
			}
			return g.wake(ctx, keys...)
		},
	})
}

// OnBack sets how the keys that waited for GitHub are woken when it is back
// (the store's Wake). Call it before the first request.
func (g *GitHub) OnBack(wake func(ctx context.Context, keys ...string) error) { g.wake = wake }

// Health is whom GitHub is away for.
func (g *GitHub) Health() *ghhealth.Health { return g.health }

// Close stops the probes.
func (g *GitHub) Close() { g.health.Close() }

// probe asks GitHub once whether it is back for s: the installation's
// rate limit with its token (through neither the ETag cache nor the write
// pacing), or the App itself. A primary rate limit used up is still away,
// until it resets.
func (g *GitHub) probe(ctx context.Context, s ghhealth.Scope) error {
	if s == ghhealth.App {
		_, _, err := g.app.Apps.Get(ctx, "")
		return err
	}
	g.mu.Lock()
	itr := g.inst(int64(s)).itr
	g.mu.Unlock()
	c, err := g.newClient(ghhealth.ScopeTransport{Scope: s, Next: itr})
	if err != nil {
		return err
	}
	limits, _, err := c.RateLimit.Get(ctx)
	if err != nil {
		return err
	}
	if core := limits.GetCore(); core != nil && core.Remaining == 0 {
		wait := ghhealth.UntilReset(core.Reset.Time, time.Now())
		return fault.WaitError{Wait: wait, Why: fmt.Sprintf("installation %s: rate limit used up until %s", s, core.Reset.UTC().Format(time.RFC3339))}
	}
	return nil
}
