package app_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/githubtest"
	"github.com/countersign/countersign/rules"
)

// Issue 11 item 8: a builder cannot pass their own criteria. alice built the
// task; she posts commit statuses test, typecheck and lint = success on her
// pull request's head. They count for nothing: /verify is refused while the
// criteria wait for a trusted result, and the card says what was ignored and
// why. A check run from an App other than the one contracts.apps pins is
// ignored the same way; the real CI's results then pass the contract.
func TestBuilderCannotPassTheirOwnCriteria(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetFile(testRepo, rules.ConfigPath, "contracts:\n  apps: {test: github-actions}\n")
	n, pr, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login form", Files: []string{"internal/login.go"}})
	for _, name := range []string{"test", "typecheck", "lint"} {
		h.gh.SetStatusBy(testRepo, sha, "alice", name, "success", "")
	}
	h.gh.CheckRun(testRepo, sha, "test", "", "success", "alices-app")
	h.gh.Review(testRepo, pr, "carol", "APPROVED", "")
	h.settle()
	wantState(t, h, n, "completed")

	h.gh.Comment(testRepo, n, "bob", "/verify looks green")
	h.settle()
	wantState(t, h, n, "completed")
	cards := cardsOn(t, h, n)
	for _, want := range []string{
		"`lint` (success) ignored: posted by @alice, who built this task",
		"`test` (success) ignored: created by the App alices-app, not github-actions (contracts.apps)",
	} {
		if len(cards) != 1 || !strings.Contains(cards[0], want) {
			t.Fatalf("the card does not say %q:\n%s", want, cards)
		}
	}

	ciPasses(h, sha) // github-actions' check runs
	h.settle()
	h.gh.Comment(testRepo, n, "bob", "/verify checked")
	h.settle()
	wantState(t, h, n, "verified")
}

// A status posted by someone who did not build the task (a CI service's
// account) counts; contracts.status_creators narrows it to the listed ones.
func TestStatusCreatorsArePinned(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetFile(testRepo, rules.ConfigPath, "contracts:\n  status_creators: ["+githubtest.StatusCreator+"]\n")
	n, pr, sha := taskWithPR(h, "Docs typo", githubtest.PROptions{Title: "Fix typo"})
	h.gh.SetStatusBy(testRepo, sha, "erin", "typecheck", "success", "") // erin built nothing, but is not listed
	h.gh.SetStatus(testRepo, sha, "lint", "success", "")                // by the listed CI account
	h.gh.Review(testRepo, pr, "carol", "APPROVED", "")
	h.settle()
	cards := cardsOn(t, h, n)
	if len(cards) != 1 || !strings.Contains(cards[0], "posted by @erin, not one of contracts.status_creators") ||
		!strings.Contains(cards[0], "`lint` passed") {
		t.Fatalf("card:\n%s", cards)
	}
	h.gh.SetStatus(testRepo, sha, "typecheck", "success", "")
	h.settle()
	h.gh.Comment(testRepo, n, "bob", "/verify")
	h.settle()
	wantState(t, h, n, "verified")
}

// What trusting CI sources costs: nothing more per event. A status's creator
// comes with its webhook (the sender) and with GET .../commits/{sha}/statuses,
// which replaces the combined status read; a check run's App comes with it.
func TestTrustedSourcesCost(t *testing.T) {
	h := newHarness(t)
	team(h)
	n := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	h.gh.Assign(testRepo, n, "carol", "alice")
	h.settle()
	h.gh.ResetRequests()
	_, sha := h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "Login form", Body: fmt.Sprintf("Fixes #%d", n)})
	h.settle()
	var statusReads int
	for _, r := range h.gh.Requests() {
		if r.Method == http.MethodGet && strings.Contains(r.Path, "/status") {
			statusReads++
		}
	}
	t.Logf("PR opened: %d status reads (of %d requests)", statusReads, len(h.gh.Requests()))
	if statusReads != 1 {
		t.Errorf("%d status reads when the PR is linked, want 1:\n%s", statusReads, describe(h.gh.Requests()))
	}
	h.gh.ResetRequests()
	h.gh.SetStatusBy(testRepo, sha, "alice", "lint", "success", "")
	h.settle()
	for _, r := range h.gh.Requests() {
		if strings.Contains(r.Path, "/status") || strings.Contains(r.Path, "/users/") {
			t.Errorf("a status event read %s %s", r.Method, r.Path)
		}
	}
	t.Logf("a status event: %d requests", len(h.gh.Requests()))
}
