package app_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/githubtest"
	"github.com/countersign/countersign/rules"
)

// A check run belongs to a commit, not to a pull request: countersign's
// check on a commit answers for every open pull request whose head it is.
// Anyone else's pull request on the same commit (an outsider's, one that
// closes no task) never overrides a tracked one's answer; several tracked
// pull requests on one head pass only if each passes (DESIGN §2).

// Mallory (read access) opens a pull request from her fork whose head is
// alice's verified commit, and says Fixes #n: her link is refused, and
// alice's pull request stays green. Once alice's is closed, the commit
// answers for mallory's alone: it does not pass.
func TestSharedHeadOutsiderForkKeepsVerifiedGreen(t *testing.T) {
	h := newHarness(t)
	team(h)
	n, pr, sha := verifiedPR(t, h, "Login form")
	fork := h.gh.OpenPRAt(testRepo, "mallory", sha, githubtest.SharedPROptions{Fork: true, Title: "Login form", Body: fmt.Sprintf("Fixes #%d", n)})
	h.settle()
	wantState(t, h, n, "verified")
	wantCheck(t, h, sha, "success")
	h.gh.EditPR(testRepo, fork, "mallory", "", fmt.Sprintf("Fixes #%d\n\nPlease merge mine.", n))
	h.settle()
	wantCheck(t, h, sha, "success")

	h.gh.ClosePR(testRepo, pr, "alice")
	h.settle()
	r := wantCheck(t, h, sha, "failure")
	wantContains(t, "the check once only mallory's pull request is left", r.Summary, "may not build here")
}

// The outsider's pull request is opened before the tracked one links the
// task: once alice's pull request closes the task and it is verified, the
// commit's check passes.
func TestSharedHeadOutsiderFirst(t *testing.T) {
	h := newHarness(t)
	team(h)
	n := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	h.gh.Assign(testRepo, n, "carol", "alice")
	pr, sha := h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "Login form", Body: "Work."})
	h.settle()
	fork := h.gh.OpenPRAt(testRepo, "mallory", sha, githubtest.SharedPROptions{Fork: true, Title: "Login form", Body: fmt.Sprintf("Fixes #%d", n)})
	h.settle()
	wantCheck(t, h, sha, "failure")
	h.gh.EditPR(testRepo, pr, "alice", "", fmt.Sprintf("Fixes #%d", n))
	ciPasses(h, sha)
	h.settle()
	wantCheck(t, h, sha, "in_progress")
	h.gh.Review(testRepo, pr, "carol", "APPROVED", "")
	h.settle()
	h.gh.Comment(testRepo, n, "bob", "/verify works")
	h.settle()
	wantState(t, h, n, "verified")
	wantCheck(t, h, sha, "success")
	h.gh.EditPR(testRepo, fork, "mallory", "", fmt.Sprintf("Fixes #%d, really", n))
	h.settle()
	wantCheck(t, h, sha, "success")
}

// Under gate.untracked: allow, a pull request that closes no task passes. On
// the head of a linked, unverified pull request it must not paint success
// over that pull request's answer.
func TestSharedHeadUntrackedAllowDoesNotPaint(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetFile(testRepo, rules.ConfigPath, "gate:\n  untracked: allow\n")
	n, _, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login form"})
	ciPasses(h, sha)
	h.settle()
	wantState(t, h, n, "review")
	wantCheck(t, h, sha, "in_progress")
	h.gh.OpenPRAt(testRepo, "mallory", sha, githubtest.SharedPROptions{Fork: true, Title: "Same", Body: "No task."})
	h.settle()
	wantCheck(t, h, sha, "in_progress")
	h.gh.OpenPRAt(testRepo, "carol", sha, githubtest.SharedPROptions{Base: "release-1", Title: "Backport", Body: "No task."})
	h.settle()
	wantCheck(t, h, sha, "in_progress")
}

// Two tracked pull requests share a head (one into main, one into a release
// branch): the check passes only when both pass; closing the one that does
// not pass re-answers for the other.
func TestSharedHeadTwoTrackedPRs(t *testing.T) {
	h := newHarness(t)
	team(h)
	one, pr, sha := verifiedPR(t, h, "Login form")
	two := h.gh.OpenIssue(testRepo, "carol", "Backport login form", "")
	h.gh.Assign(testRepo, two, "carol", "alice")
	back := h.gh.OpenPRAt(testRepo, "alice", sha, githubtest.SharedPROptions{Base: "release-1", Title: "Backport", Body: fmt.Sprintf("Fixes #%d", two)})
	h.settle()
	wantState(t, h, two, "review")
	r := wantCheck(t, h, sha, "in_progress")
	wantContains(t, "the shared check", r.Summary, fmt.Sprintf("#%d", two))
	h.gh.EditPR(testRepo, pr, "alice", "", fmt.Sprintf("Fixes #%d\n\nThe login form.", one))
	h.settle()
	wantCheck(t, h, sha, "in_progress")

	h.gh.Review(testRepo, back, "carol", "APPROVED", "")
	h.settle()
	wantState(t, h, two, "completed")
	wantCheck(t, h, sha, "in_progress")
	h.gh.Comment(testRepo, two, "bob", "/verify works")
	h.settle()
	wantState(t, h, two, "verified")
	wantCheck(t, h, sha, "success")

	h.gh.Comment(testRepo, two, "carol", "/reopen the backport breaks the release")
	h.settle()
	wantCheck(t, h, sha, "in_progress")
	h.gh.ClosePR(testRepo, back, "alice")
	h.settle()
	wantCheck(t, h, sha, "success")
}

// What the shared heads cost: the requests of each step, settled. An
// outsider's pull request on a verified head writes no check run (the check
// there already says what it must), and neither does its edit.
func TestSharedHeadCost(t *testing.T) {
	h := newHarness(t)
	team(h)
	n, _, sha := verifiedPR(t, h, "Login form")
	two := h.gh.OpenIssue(testRepo, "carol", "Backport login form", "")
	h.gh.Assign(testRepo, two, "carol", "alice")
	h.settle()
	var fork, back int
	rows, _ := runCosts(t, h, "Pull requests sharing a verified head", []costStep{
		{"mallory's fork pull request (Fixes #n) on the verified head", func() {
			fork = h.gh.OpenPRAt(testRepo, "mallory", sha, githubtest.SharedPROptions{Fork: true, Title: "Mine", Body: fmt.Sprintf("Fixes #%d", n)})
		}},
		{"mallory edits it", func() { h.gh.EditPR(testRepo, fork, "mallory", "", fmt.Sprintf("Fixes #%d, mine", n)) }},
		{"a tracked backport pull request on the same head", func() {
			back = h.gh.OpenPRAt(testRepo, "alice", sha, githubtest.SharedPROptions{Base: "release-1", Title: "Backport", Body: fmt.Sprintf("Fixes #%d", two)})
		}},
		{"the backport closed", func() { h.gh.ClosePR(testRepo, back, "alice") }},
	})
	wantCheck(t, h, sha, "success")
	for _, c := range rows[:2] {
		for _, d := range c.detail {
			if strings.Contains(d, "/check-runs") && !strings.HasPrefix(d, "GET ") {
				t.Errorf("%s: wrote a check run: %s", c.step, d)
			}
		}
	}
}

// An exempt author's pull request that closes no task passes; an outsider's
// pull request on its head (closing no task either) does not block it.
func TestSharedHeadOutsiderOnExemptHead(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetFile(testRepo, rules.ConfigPath, "gate:\n  exempt: [\"dependabot[bot]\"]\n")
	_, sha := h.gh.OpenPR(testRepo, "dependabot[bot]", githubtest.PROptions{Title: "Bump x", Body: "Bumps x."})
	h.settle()
	wantCheck(t, h, sha, "success")
	h.gh.OpenPRAt(testRepo, "mallory", sha, githubtest.SharedPROptions{Fork: true, Title: "Bump x too", Body: "Mine."})
	h.settle()
	wantCheck(t, h, sha, "success")
}
