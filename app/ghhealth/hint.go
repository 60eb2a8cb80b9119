package ghhealth

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
)

// MaxHint bounds a wait GitHub asks for (Retry-After, X-RateLimit-Reset): the
// primary rate limit resets within the hour.
const MaxHint = time.Hour

// Classify reports whether one HTTP exchange found GitHub away (unreachable,
// a 5xx answer, or rate limiting: 429, or a 403 with X-RateLimit-Remaining: 0
// or Retry-After; the installation-token request included), and how long
// GitHub asked to wait (0: no hint). A cancelled request is not GitHub's doing.
func Classify(ctx context.Context, resp *http.Response, err error, now time.Time) (hint time.Duration, away bool) {
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return 0, false
		}
		var away *AwayError
		if errors.As(err, &away) {
			return 0, false // not sent
		}
		var he *ghinstallation.HTTPError
		if errors.As(err, &he) && he.Response != nil {
			return Answer(he.Response, now)
		}
		return 0, true // could not reach GitHub
	}
	return Answer(resp, now)
}

// Answer classifies an HTTP answer: 5xx, 429 and a rate-limited 403 are
// GitHub being away, with the wait it asked for.
func Answer(resp *http.Response, now time.Time) (time.Duration, bool) {
	switch {
	case resp.StatusCode >= 500, resp.StatusCode == http.StatusTooManyRequests:
	case RateLimited(resp):
	default:
		return 0, false
	}
	if d := RetryAfter(resp, now); d > 0 {
		return d, true
	}
	if resp.Header.Get("X-RateLimit-Remaining") == "0" {
		if reset, err := strconv.ParseInt(resp.Header.Get("X-RateLimit-Reset"), 10, 64); err == nil {
			return UntilReset(time.Unix(reset, 0), now), true
		}
	}
	return 0, true
}

// RateLimited reports whether a 403 or 429 answer is rate limiting rather
// than a refusal.
func RateLimited(resp *http.Response) bool {
	return resp.StatusCode == http.StatusTooManyRequests ||
		(resp.StatusCode == http.StatusForbidden && (resp.Header.Get("X-RateLimit-Remaining") == "0" || resp.Header.Get("Retry-After") != ""))
}

// RetryAfter is the wait an answer's Retry-After asks for (0: none), at most
// MaxHint.
func RetryAfter(resp *http.Response, now time.Time) time.Duration {
	if resp == nil {
		return 0
	}
	s := resp.Header.Get("Retry-After")
	if secs, err := strconv.Atoi(s); err == nil && secs > 0 {
		return min(time.Duration(secs)*time.Second, MaxHint)
	}
	if at, err := http.ParseTime(s); err == nil {
		return min(max(at.Sub(now), 0), MaxHint)
	}
	return 0
}

// UntilReset is the wait until a rate limit resets (a second past it), at
// most MaxHint; 0 for no reset time.
func UntilReset(reset, now time.Time) time.Duration {
	if reset.IsZero() {
		return 0
	}
	return min(max(reset.Sub(now), 0)+time.Second, MaxHint)
}
