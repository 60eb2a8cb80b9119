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
func TestCheckWithLabel(t *testing.T) {
	t.Parallel() // its subtests' harnesses, each its own, leave it serial otherwise
	t.Run("the gate opens", func(t *testing.T) {
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

// Two tracked pull requests share a head, each closing its own task: the
// check there passes only when both tasks are verified (DESIGN §2). The
// /verify of the first leaves it in progress; that of the second writes it
// green before the second task shows verified; a /reopen of the first turns
// the first task's label before the check, which no longer passes. The order
// is that of the fake GitHub's recorded writes, the check as GitHub shows it
// after each step.
func TestCheckWithLabelOnASharedHead(t *testing.T) {
	h := newHarness(t)
	team(h)
	one, pr, sha, _ := approvedPR(t, h, "Login form", "carol", githubtest.PROptions{Title: "Login form"})
	two := h.gh.OpenIssue(testRepo, "carol", "Backport login form", "")
	h.gh.Assign(testRepo, two, "carol", "alice")
	back := h.gh.OpenPRAt(testRepo, "alice", sha, githubtest.SharedPROptions{Base: "release-1", Title: "Backport", Body: fmt.Sprintf("Fixes #%d", two)})
	h.settle()
	h.gh.EditPR(testRepo, pr, "alice", "", fmt.Sprintf("Fixes #%d\n\nThe login form.", one))
	h.gh.Review(testRepo, back, "carol", "APPROVED", "")
	h.settle()
	wantState(t, h, one, "completed")
	wantState(t, h, two, "completed")
	wantCheck(t, h, sha, "in_progress")

	h.gh.Comment(testRepo, one, "bob", "/verify works")
	h.settle()
	wantState(t, h, one, "verified")
	wantCheck(t, h, sha, "in_progress")

	h.gh.ResetRequests()
	h.gh.Comment(testRepo, two, "bob", "/verify works too")
	h.settle()
	wantState(t, h, two, "verified")
	wantCheck(t, h, sha, "success")
	if label, check := labelAndCheck(t, h.gh.Requests(), two); check > label {
		t.Errorf("the shared check was written (write %d) after #%d's verified label (write %d), want before\n%s", check, two, label, describe(h.gh.Requests()))
	}

	h.gh.ResetRequests()
	h.gh.Comment(testRepo, one, "carol", "/reopen the form lost its validation")
	h.settle()
	wantState(t, h, one, "in-progress")
	wantCheck(t, h, sha, "in_progress")
	if label, check := labelAndCheck(t, h.gh.Requests(), one); label > check {
		t.Errorf("#%d's label was written (write %d) after the shared check (write %d), want before\n%s", one, label, check, describe(h.gh.Requests()))
	}
}

// GitHub fails the decision's first write until the retries inside a
// request give up: the effect stays in the outbox and the key tries again
// later (its leftover effects first). The order holds across the failure (no
// label before the check when the gate opens, no check before the label
// when it closes), and nothing is lost or written twice: one successful
// check write and one label addition.
func TestCheckWithLabelAcrossAFailure(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fail  func(n int) func(method, path string) bool
		steps func(h *harness, n int)
		first string // "check" or "label"
	}{
		{"the gate opens, the check write fails", func(int) func(string, string) bool {
			return func(method, path string) bool { return method == "PATCH" && strings.Contains(path, "/check-runs/") }
		}, func(h *harness, n int) { h.gh.Comment(testRepo, n, "bob", "/verify works") }, "check"},
		{"the gate closes, the label write fails", func(n int) func(string, string) bool {
			return func(method, path string) bool {
				return method == "POST" && path == fmt.Sprintf("/repos/%s/issues/%d/labels", testRepo, n)
			}
		}, func(h *harness, n int) { h.gh.Comment(testRepo, n, "carol", "/reopen the form lost its validation") }, "label"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			team(h)
			n, _, _, _ := approvedPR(t, h, "Login form", "carol", githubtest.PROptions{})
			if tc.first == "label" {
				h.gh.Comment(testRepo, n, "bob", "/verify works")
				h.settle()
				wantState(t, h, n, "verified")
			}
			h.gh.ResetRequests()
			h.gh.FailNextFor(5, 502, nil, tc.fail(n))
			tc.steps(h, n)
			h.settle()
			reqs := h.gh.Requests()
			failed, checks, labels := 0, 0, 0
			for _, r := range reqs {
				switch {
				case !isWrite(r):
				case r.Status >= 500:
					failed++
				case strings.HasPrefix(r.Path, "/repos/"+testRepo+"/check-runs"):
					checks++
				case r.Method == "POST" && r.Path == fmt.Sprintf("/repos/%s/issues/%d/labels", testRepo, n):
					labels++
				}
			}
			if failed < 5 {
				t.Fatalf("GitHub failed %d writes, want 5 (the fault was not hit)\n%s", failed, describe(reqs))
			}
			if checks != 1 || labels != 1 {
				t.Errorf("%d check writes and %d label additions succeeded, want one each\n%s", checks, labels, describe(reqs))
			}
			label, check := labelAndCheck(t, reqs, n)
			if (tc.first == "check") != (check < label) {
				t.Errorf("the %s went first? label at write %d, check at write %d\n%s", tc.first, label, check, describe(reqs))
			}
		})
	}
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
