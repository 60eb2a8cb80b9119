package fault

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/countersign/countersign/app/ghhealth"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/app/store/redisstore"
	"github.com/google/go-github/v60/github"
	"github.com/redis/go-redis/v9"
)

// storeDown is the error a Redis store gives when its server cannot be
// reached.
func storeDown(t *testing.T) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	_, err = redisstore.New(c, "").Get(t.Context(), "k")
	if err == nil || !store.Unavailable(err) || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("Get on a Redis that is down: %v; want an unavailable store", err)
	}
	return err
}

func TestGitHubWait(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	answer := func(code int, h map[string]string) *http.Response {
		r := &http.Response{StatusCode: code, Header: http.Header{}, Request: &http.Request{Method: "GET", URL: &url.URL{Path: "/x"}}}
		for k, v := range h {
			r.Header.Set(k, v)
		}
		return r
	}
	gh := func(code int, h map[string]string) error {
		return fmt.Errorf("read issue: %w", &github.ErrorResponse{Response: answer(code, h), Message: "x"})
	}
	retryAfter := 30 * time.Second
	for _, tc := range []struct {
		name    string
		err     error
		waiting bool
		hint    time.Duration
	}{
		{"nil", nil, false, 0},
		{"not found", gh(404, nil), false, 0},
		{"validation", gh(422, nil), false, 0},
		{"forbidden", gh(403, nil), false, 0},
		{"bad payload", Permanent(errors.New("parse")), false, 0},
		{"plain error", errors.New("decode task"), false, 0},
		{"server error", gh(502, nil), true, 0},
		{"unavailable with Retry-After", gh(503, map[string]string{"Retry-After": "7"}), true, 7 * time.Second},
		{"secondary limit 429", gh(429, map[string]string{"Retry-After": "60"}), true, time.Minute},
		{"primary limit 403", gh(403, map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": strconv.FormatInt(now.Add(10*time.Minute).Unix(), 10)}), true, 10*time.Minute + time.Second},
		{"primary limit, reset hours ahead", gh(403, map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": strconv.FormatInt(now.Add(5*time.Hour).Unix(), 10)}), true, time.Hour},
		{"go-github rate limit", fmt.Errorf("x: %w", &github.RateLimitError{Rate: github.Rate{Reset: github.Timestamp{Time: now.Add(time.Minute)}}, Response: answer(403, nil)}), true, time.Minute + time.Second},
		{"go-github abuse limit", &github.AbuseRateLimitError{RetryAfter: &retryAfter, Response: answer(403, nil)}, true, retryAfter},
		{"network", &url.Error{Op: "Get", URL: "http://x", Err: &net.OpError{Op: "dial", Err: errors.New("connection refused")}}, true, 0},
		{"token request unreachable", &url.Error{Op: "Get", URL: "http://x", Err: &ghinstallation.HTTPError{Message: "could not refresh", RootCause: errors.New("connection refused")}}, true, 0},
		{"token request 503", &url.Error{Op: "Get", URL: "http://x", Err: &ghinstallation.HTTPError{Message: "could not refresh", Response: answer(503, nil)}}, true, 0},
		{"token request 404 (uninstalled)", &url.Error{Op: "Get", URL: "http://x", Err: &ghinstallation.HTTPError{Message: "could not refresh", Response: answer(404, nil)}}, false, 0},
		{"token request rate limited", &url.Error{Op: "Post", URL: "http://x", Err: &ghinstallation.HTTPError{Message: "could not refresh", Response: answer(403, map[string]string{"Retry-After": "5"})}}, true, 5 * time.Second},
		{"pacing", fmt.Errorf("resync: %w", WaitError{Wait: time.Minute, Why: "low budget"}), true, time.Minute},
		{"not sent: GitHub away", &url.Error{Op: "Get", URL: "http://x", Err: &ghhealth.AwayError{Scope: 7, Cause: "503"}}, true, 0},
		{"store unreachable is not GitHub", fmt.Errorf("pop applied effect: %w", storeDown(t)), false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hint, waiting := GitHubWait(tc.err, now)
			if waiting != tc.waiting || hint != tc.hint {
				t.Fatalf("GitHubWait(%v) = %v, %v; want %v, %v", tc.err, hint, waiting, tc.hint, tc.waiting)
			}
		})
	}
}

func TestWaitDelay(t *testing.T) {
	for streak := 0; streak < 40; streak++ {
		d := WaitDelay(streak, 0, 5*time.Minute)
		full := min(time.Second<<min(streak, 20), 5*time.Minute)
		if d < full/2 || d > full {
			t.Fatalf("WaitDelay(%d) = %v; want within [%v, %v]", streak, d, full/2, full)
		}
	}
	if d := WaitDelay(3, 42*time.Second, time.Second); d != 42*time.Second {
		t.Fatalf("a hint is honoured beyond the cap: got %v", d)
	}
}

// A rate-limited answer is never taken for a refusal: not the App uninstalled
// (which skips the delivery), nor a permanent failure (which drops an effect).
func TestRateLimitedIsNeverPermanent(t *testing.T) {
	resp := &http.Response{StatusCode: 403, Header: http.Header{"Retry-After": {"5"}}, Request: &http.Request{Method: "GET", URL: &url.URL{Path: "/x"}}}
	token := &url.Error{Op: "Post", URL: "http://x", Err: &ghinstallation.HTTPError{Message: "could not refresh", Response: resp}}
	if InstallationGone(token) {
		t.Fatal("a rate-limited token request taken for an uninstalled App")
	}
	for _, err := range []error{token, &github.ErrorResponse{Response: resp, Message: "slow down"}} {
		if IsPermanent(Classify(err)) {
			t.Fatalf("Classify(%v) is permanent", err)
		}
	}
	refused := &http.Response{StatusCode: 403, Header: http.Header{}, Request: resp.Request}
	if !IsPermanent(Classify(&github.ErrorResponse{Response: refused, Message: "Resource not accessible by integration"})) {
		t.Fatal("a plain 403 is a refusal")
	}
}
