package fault

import (
	"errors"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/countersign/countersign/app/ghhealth"
	"github.com/countersign/countersign/app/store"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v60/github"
)

// Waiting for GitHub is never a delivery's fault (DESIGN §8, invariant 6):
// when GitHub is unreachable, answers 5xx, or rate limits the App (primary or
// secondary limits, the installation-token request included), the key waits
// and tries again later without using one of the delivery's attempts, so no
// outage, however long, dead-letters anything. Only a failure on the
// delivery's own merits (a bad payload, a permanent 4xx) uses attempts.

// maxHintWait bounds a wait GitHub asks for (Retry-After, X-RateLimit-Reset):
// the primary limit resets within the hour.
const maxHintWait = ghhealth.MaxHint

// GitHubWait reports whether err is GitHub being away rather than the
// delivery failing, and how long GitHub asked to wait (0: no hint).
func GitHubWait(err error, now time.Time) (hint time.Duration, waiting bool) {
	if err == nil || IsPermanent(err) || store.Unavailable(err) {
		return 0, false // a store that cannot be reached is not GitHub
	}
	if d, ok := IsWait(err); ok {
		return d, true
	}
	if ghhealth.IsAway(err) {
		return 0, true // not sent: GitHub is away for the installation
	}
	var rl *github.RateLimitError
	if errors.As(err, &rl) {
		return untilReset(rl.Rate.Reset.Time, now), true
	}
	var abuse *github.AbuseRateLimitError
	if errors.As(err, &abuse) {
		if abuse.RetryAfter != nil {
			return min(*abuse.RetryAfter, maxHintWait), true
		}
		return retryAfterHint(abuse.Response, now), true
	}
	var he *ghinstallation.HTTPError // the installation-token request
	if errors.As(err, &he) {
		if he.Response == nil {
			return 0, true // could not reach GitHub
		}
		return answerWait(he.Response, now)
	}
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return answerWait(er.Response, now)
	}
	var ue *url.Error
	var ne net.Error
	if errors.As(err, &ue) || errors.As(err, &ne) {
		return 0, true
	}
	return 0, false
}

// answerWait classifies an HTTP answer: 5xx, 429 and a rate-limited 403 are
// waits.
func answerWait(resp *http.Response, now time.Time) (time.Duration, bool) {
	return ghhealth.Answer(resp, now)
}

func retryAfterHint(resp *http.Response, now time.Time) time.Duration {
	return ghhealth.RetryAfter(resp, now)
}

func untilReset(reset, now time.Time) time.Duration { return ghhealth.UntilReset(reset, now) }

// WaitDelay is how long a key waits for GitHub after its streak-th
// consecutive wait: GitHub's hint when it gave one, else exponential from
// 1 s capped at limit, with jitter.
func WaitDelay(streak int, hint, limit time.Duration) time.Duration {
	if hint > 0 {
		return hint
	}
	d := min(time.Second<<min(streak, 20), limit)
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

// RateLimited reports whether a 403 or 429 answer is rate limiting rather
// than a refusal.
func RateLimited(resp *http.Response) bool { return ghhealth.RateLimited(resp) }
