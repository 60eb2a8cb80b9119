package fault

import (
	"errors"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

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
const maxHintWait = time.Hour

// GitHubWait reports whether err is GitHub being away rather than the
// delivery failing, and how long GitHub asked to wait (0: no hint).
func GitHubWait(err error, now time.Time) (hint time.Duration, waiting bool) {
	if err == nil || IsPermanent(err) {
		return 0, false
	}
	if d, ok := IsWait(err); ok {
		return d, true
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
	switch {
	case resp.StatusCode >= 500, resp.StatusCode == http.StatusTooManyRequests:
	case RateLimited(resp):
	default:
		return 0, false
	}
	if d := retryAfterHint(resp, now); d > 0 {
		return d, true
	}
	if resp.Header.Get("X-RateLimit-Remaining") == "0" {
		if reset, err := strconv.ParseInt(resp.Header.Get("X-RateLimit-Reset"), 10, 64); err == nil {
			return untilReset(time.Unix(reset, 0), now), true
		}
	}
	return 0, true
}

func retryAfterHint(resp *http.Response, now time.Time) time.Duration {
	if resp == nil {
		return 0
	}
	s := resp.Header.Get("Retry-After")
	if secs, err := strconv.Atoi(s); err == nil && secs > 0 {
		return min(time.Duration(secs)*time.Second, maxHintWait)
	}
	if at, err := http.ParseTime(s); err == nil {
		return min(max(at.Sub(now), 0), maxHintWait)
	}
	return 0
}

func untilReset(reset, now time.Time) time.Duration {
	if reset.IsZero() {
		return 0
	}
	return min(max(reset.Sub(now), 0)+time.Second, maxHintWait)
}

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
func RateLimited(resp *http.Response) bool {
	return resp.StatusCode == http.StatusTooManyRequests ||
		(resp.StatusCode == http.StatusForbidden && (resp.Header.Get("X-RateLimit-Remaining") == "0" || resp.Header.Get("Retry-After") != ""))
}
