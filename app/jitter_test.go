package app_test

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/githubtest"
)

// JitterSeedEnv, when set to a number, makes the fake GitHub of every
// end-to-end test send each webhook after an independent random delay (up to
// githubtest.DefaultJitter, or COUNTERSIGN_TEST_JITTER_MAX, a Go duration),
// drawn from that seed: GitHub promises no order of deliveries, and the
// tests must pass whatever order they come in. A test that inspects the exact
// order or timing of deliveries opts out with noJitter, saying why.
const (
	JitterSeedEnv = "COUNTERSIGN_TEST_JITTER_SEED"
	JitterMaxEnv  = "COUNTERSIGN_TEST_JITTER_MAX"
)

// jitterFromEnv turns gh's jitter on when JitterSeedEnv says so, and with
// seed 1 (unless JitterSeedEnv gives one) in TestOrderTolerantUnderJitter.
func jitterFromEnv(t testing.TB, gh *githubtest.Server) {
	t.Helper()
	v := os.Getenv(JitterSeedEnv)
	if v == "" {
		if !strings.HasPrefix(t.Name(), "TestOrderTolerantUnderJitter/") {
			return
		}
		v = "1"
	}
	seed, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: not a number: %v", JitterSeedEnv, v, err)
	}
	var max time.Duration
	if m := os.Getenv(JitterMaxEnv); m != "" {
		if max, err = time.ParseDuration(m); err != nil || max <= 0 {
			t.Fatalf("%s=%q: not a positive duration", JitterMaxEnv, m)
		}
	}
	gh.SetWebhookJitter(seed, max)
	t.Logf("webhooks jittered: seed %d", seed)
}

// noJitter sends h's webhooks in order again, for a test that inspects the
// exact order or timing of deliveries (why says which).
func noJitter(h *harness, why string) {
	h.t.Helper()
	if os.Getenv(JitterSeedEnv) != "" {
		h.t.Logf("webhooks sent in order: %s", why)
	}
	h.gh.SetWebhookJitter(0, -1)
}

// GitHub promises no order of webhook deliveries: the end-to-end tests that
// hold whatever the order run once more, here, with the fake GitHub sending
// every webhook after its own random delay (up to 1.5 s), from seed 1 (any
// seed must pass: JitterSeedEnv gives another, and jitters the whole
// package). They run beside the package's other tests, their delays spent
// while those work. Left out: tests that fire commands whose meaning depends
// on their order (TestConfiguredVerifiers: /start, /submit, /approve,
// /verify with no wait), as commands are judged in the order they arrive;
// and TestBurstOfIssuesIsPaced, whose fake takes no jitter (it measures the
// writes' rate).
func TestOrderTolerantUnderJitter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		test func(*testing.T)
	}{
		{"TestBurstApproveThenVerify", TestBurstApproveThenVerify},
		{"TestBurstLastCIRunThenVerify", TestBurstLastCIRunThenVerify},
		{"TestBurstReadyThenApprove", TestBurstReadyThenApprove},
		{"TestBurstPushThenApproveNewHead", TestBurstPushThenApproveNewHead},
		{"TestBurstApproveThenPush", TestBurstApproveThenPush},
		{"TestPullRequestClosingTwoTasks", TestPullRequestClosingTwoTasks},
		{"TestUnconfiguredRepositoryVerifiesWithItsOwnCI", TestUnconfiguredRepositoryVerifiesWithItsOwnCI},
		{"TestEditingThePullRequestRelinks", TestEditingThePullRequestRelinks},
	} {
		t.Run(tc.name, tc.test)
	}
}
