package app_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/githubtest"
)

// A fact rules asks for that GitHub does not answer fails the delivery: the
// /verify is decided again once GitHub answers, and never on the missing
// answer (which would have refused bob as not eligible).
func TestMissingFactFailsTheDelivery(t *testing.T) {
	h := newHarness(t)
	team(h)
	n := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	h.gh.Assign(testRepo, n, "carol", "alice")
	pr, sha := h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "Login", Body: fmt.Sprintf("Fixes #%d", n)})
	ciPasses(h, sha)
	h.gh.Review(testRepo, pr, "carol", "APPROVED", "")
	h.settle()
	wantState(t, h, n, "completed")

	permission := func(method, path string) bool { return strings.HasSuffix(path, "/collaborators/bob/permission") }
	// Three failures: the transport stops retrying once GitHub is marked away
	// for the installation, so the delivery itself fails and waits for the
	// probe (fewer than the worker's parking streak, so it never backs off
	// on its own clock).
	const faults = 3
	h.gh.FailNextFor(faults, http.StatusBadGateway, nil, permission)
	h.gh.ResetRequests()
	h.gh.Comment(testRepo, n, "bob", "/verify works")
	h.settle()
	wantState(t, h, n, "verified")
	failed, read := 0, 0
	for _, r := range h.gh.Requests() {
		if permission(r.Method, r.Path) {
			read++
			if r.Status == http.StatusBadGateway {
				failed++
			}
		}
	}
	if failed != faults || read != faults+1 {
		t.Fatalf("bob's permission read %d times, %d failed; want %d, %d", read, failed, faults+1, faults)
	}
	for _, c := range h.gh.Comments(testRepo, n) {
		if c.User == h.gh.BotLogin() && strings.Contains(c.Body, "permission") {
			t.Fatalf("decided on the missing answer:\n%s", c.Body)
		}
	}
}
