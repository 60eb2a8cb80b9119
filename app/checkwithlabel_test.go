package app_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/githubtest"
)

// The check with its label (DESIGN §9: one decision's writes go together):
// when a decision opens the gate (a /verify), its pull request's check turns
// green before the task shows verified, so nobody sees a verified task whose
// pull request is still blocked; when it closes the gate (a /reopen), the
// task's label changes before the check turns back, so nobody merges on a
// green check a task no longer has. The order is that of the fake GitHub's
// recorded writes.
func TestCheckGoesWithItsLabel(t *testing.T) {
	t.Parallel() // its subtests' harnesses, each its own, leave it serial otherwise
	t.Run("the gate opens", func(t *testing.T) {
		knownGap(t, "open gap (issue 30): a decision's check run is decided in a delivery of its own (the pull request's, then its head's), after the task's label; it must go in the label's group of turns, check first when the gate opens")
		h := newHarness(t)
		team(h)
		n, _, _, _ := approvedPR(t, h, "Login form", "carol", githubtest.PROptions{})
		h.gh.ResetRequests()
		h.gh.Comment(testRepo, n, "bob", "/verify works")
		h.settle()
		wantState(t, h, n, "verified")
		if label, check := labelAndCheck(t, h.gh.Requests(), n); check > label {
			t.Errorf("the check was written (write %d) after the verified label (write %d), want before\n%s", check, label, describe(h.gh.Requests()))
		}
	})
	t.Run("the gate closes", func(t *testing.T) {
		h := newHarness(t)
		team(h)
		n, _, _, _ := approvedPR(t, h, "Login form", "carol", githubtest.PROptions{})
		h.gh.Comment(testRepo, n, "bob", "/verify works")
		h.settle()
		wantState(t, h, n, "verified")
		h.gh.ResetRequests()
		h.gh.Comment(testRepo, n, "carol", "/reopen the form lost its validation")
		h.settle()
		wantState(t, h, n, "in-progress")
		if label, check := labelAndCheck(t, h.gh.Requests(), n); label > check {
			t.Errorf("the label was written (write %d) after the check (write %d), want before\n%s", label, check, describe(h.gh.Requests()))
		}
	})
}

// labelAndCheck are the positions, among reqs' writes, of the label added to
// issue n and of the last check run written.
func labelAndCheck(t *testing.T, reqs []githubtest.Request, n int) (label, check int) {
	t.Helper()
	labels := regexp.MustCompile(fmt.Sprintf(`^/repos/%s/issues/%d/labels$`, testRepo, n))
	label, check = -1, -1
	i := 0
	for _, r := range reqs {
		if !isWrite(r) || r.Status >= 400 {
			continue
		}
		switch {
		case r.Method == "POST" && labels.MatchString(r.Path) && label < 0:
			label = i
		case strings.HasPrefix(r.Path, "/repos/"+testRepo+"/check-runs"):
			check = i
		}
		i++
	}
	if label < 0 || check < 0 {
		t.Fatalf("no label added to #%d (%d) or no check run written (%d):\n%s", n, label, check, describe(reqs))
	}
	return label, check
}
