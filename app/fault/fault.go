// Package fault names the kinds of failure that decide what happens to a
// delivery: permanent (retrying cannot fix it: dead-letter or drop), outbox
// (effects already committed failed: retry, never dead-letter the delivery),
// and waits (GitHub away or rate limited, or countersign pacing itself: wait
// without using an attempt).
package fault

import (
	"errors"
	"net/http"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v60/github"
)

// permanentError marks a failure that retrying cannot fix.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }

func (e permanentError) Unwrap() error { return e.err }

// Permanent marks err as a failure that retrying cannot fix.
func Permanent(err error) error { return permanentError{err} }

// IsPermanent reports whether err was marked Permanent.
func IsPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}

// outboxError is a failure to apply effects already committed: it is retried
// with backoff and never counted against (or dead-letters) a queued delivery.
type outboxError struct{ err error }

func (e outboxError) Error() string { return e.err.Error() }

func (e outboxError) Unwrap() error { return e.err }

// Outbox marks err as a failure to apply effects already committed.
func Outbox(err error) error { return outboxError{err} }

// IsOutbox reports whether err was marked Outbox.
func IsOutbox(err error) bool {
	var o outboxError
	return errors.As(err, &o)
}

// InstallationGone reports whether err is GitHub refusing an installation
// token: the App was uninstalled (404) or suspended (403). Nothing can be done
// for such an installation's deliveries.
func InstallationGone(err error) bool {
	var he *ghinstallation.HTTPError
	return errors.As(err, &he) && he.Response != nil &&
		(he.Response.StatusCode == http.StatusNotFound || he.Response.StatusCode == http.StatusForbidden) &&
		!RateLimited(he.Response)
}

// WaitError is a wait countersign decides on itself (pacing): like GitHub
// being away, it uses no attempt.
type WaitError struct {
	Wait time.Duration
	Why  string
}

func (e WaitError) Error() string { return e.Why }

// IsWait reports whether err is a WaitError, and how long it asks to wait.
func IsWait(err error) (time.Duration, bool) {
	var we WaitError
	if errors.As(err, &we) {
		return we.Wait, true
	}
	return 0, false
}

// IsStatus reports whether err is GitHub answering with HTTP status code.
func IsStatus(err error, code int) bool {
	var er *github.ErrorResponse
	return errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == code
}

// Classify marks the GitHub answers that retrying cannot change as permanent:
// the thing is gone (404, 410) or the request is invalid (422), or the App lacks
// a permission (403 that is not rate limiting).
func Classify(err error) error {
	if err == nil || IsPermanent(err) {
		return err
	}
	var rl *github.RateLimitError
	var abuse *github.AbuseRateLimitError
	if errors.As(err, &rl) || errors.As(err, &abuse) {
		return err
	}
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil && !RateLimited(er.Response) {
		switch er.Response.StatusCode {
		case http.StatusNotFound, http.StatusGone, http.StatusUnprocessableEntity, http.StatusForbidden:
			return Permanent(err)
		}
	}
	// No installation token: the App was uninstalled (404) or suspended (403).
	// A 401 (wrong key or app id) is the operator's to fix, so it is retried.
	var he *ghinstallation.HTTPError
	if errors.As(err, &he) && he.Response != nil && !RateLimited(he.Response) {
		switch he.Response.StatusCode {
		case http.StatusNotFound, http.StatusForbidden:
			return Permanent(err)
		}
	}
	return err
}
