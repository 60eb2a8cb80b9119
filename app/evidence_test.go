package app_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/githubtest"
)

// The verification check explains itself (DESIGN §2, seed 004's proofpack):
// its text is the evidence chain of each task it covers, and its details link
// the task card.
func TestVerificationCheckCarriesTheEvidence(t *testing.T) {
	h := newHarness(t)
	team(h)
	n, pr, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login", Files: []string{"internal/login/login.go"}})
	h.settle()
	for _, name := range []string{"typecheck", "lint", "test"} {
		h.gh.CheckRun(testRepo, sha, name, "", "success", "")
	}
	h.gh.Review(testRepo, pr, "carol", "APPROVED", "")
	h.settle()
	h.gh.Comment(testRepo, n, "bob", "/verify ran the login flow by hand")
	h.settle()
	r := wantCheck(t, h, sha, "success")

	cardURL := ""
	for _, c := range h.gh.Comments(testRepo, n) {
		if c.User == h.gh.BotLogin() && strings.Contains(c.Body, "countersign:card") {
			cardURL = c.HTMLURL
		}
	}
	if cardURL == "" || r.DetailsURL != cardURL {
		t.Fatalf("details_url %q, want the task card %q", r.DetailsURL, cardURL)
	}
	wantContains(t, "the check's text", r.Text,
		fmt.Sprintf("### #%d Login form · `verified`", n),
		"| built | @alice (assignee)",
		fmt.Sprintf("| approved | @carol on #%d at `%s`", pr, sha[:7]),
		"| verified | @bob |", "ran the login flow by hand",
		"| ci | ✅ `pass`", "`lint`, `test`, `typecheck` passed", "[run](",
		"[The task card]("+cardURL+")")
}
