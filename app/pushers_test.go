package app_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/githubtest"
	"github.com/countersign/countersign/rules"
)

// Whoever pushed the commits a pull request carries is a builder (DESIGN §1),
// also when they pushed them before the pull request was opened, by someone
// else. Bob pushes the work to a branch, in commits that name dave as their
// author (a git identity is anyone's to write); dave opens the pull request
// and is its sender. erin approves; bob's /verify is refused.

// branchThenPR has bob push branch "login" with dave's identity on the
// commits (push hidden: bob's push delivery is dropped), and h2, if set, take
// over after that (the store lost); dave then opens the pull request for a
// task assigned to him, CI passes and erin approves. It returns the harness
// in use, the task and the pull request's head.
func branchThenPR(t *testing.T, h *harness, hidden bool, after func(*harness) *harness) (*harness, int, string) {
	t.Helper()
	team(h)
	h.gh.SetPermission(testRepo, "dave", "write")
	h.gh.SetPermission(testRepo, "erin", "write")
	n := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	h.gh.Assign(testRepo, n, "carol", "dave")
	h.settle()
	h.gh.DropWebhooks(hidden)
	h.gh.PushBranch(testRepo, "login", "bob", githubtest.Commit{Author: "dave", Message: "the login form", Files: []string{"login.go"}})
	h.gh.DropWebhooks(false)
	h.settle()
	if after != nil {
		h = after(h)
	}
	pr, sha := h.gh.OpenPRFrom(testRepo, "dave", "login", githubtest.PROptions{Title: "Login", Body: fmt.Sprintf("Fixes #%d", n)})
	ciPasses(h, sha)
	h.settle()
	h.gh.Review(testRepo, pr, "erin", "APPROVED", "")
	h.settle()
	wantState(t, h, n, "completed")
	return h, n, sha
}

// bobRefused has bob /verify task n and checks he is refused as a builder
// (the card names him as the one who pushed), then alice verifies.
func bobRefused(t *testing.T, h *harness, n int, sha string) {
	t.Helper()
	h.gh.Comment(testRepo, n, "bob", "/verify")
	h.settle()
	wantState(t, h, n, "completed")
	wantCheck(t, h, sha, "in_progress")
	if !anyCommentContains(h, n, "built this task") {
		t.Fatalf("the /verify of bob, who pushed the commits, got no refusal: %v", replies(h, n))
	}
	wantContains(t, "the card", card(t, h, n), "@bob (pushed to #")
	h.gh.Comment(testRepo, n, "alice", "/verify")
	h.settle()
	wantState(t, h, n, "verified")
}

func TestPusherBeforePullRequestIsBuilder(t *testing.T) {
	h, n, sha := branchThenPR(t, newHarness(t), false, nil)
	bobRefused(t, h, n, sha)
}

// The same with bob's push delivery missed: GitHub's repository activity
// for the head branch still names him.
func TestPusherBeforePullRequestIsBuilderPushMissed(t *testing.T) {
	h, n, sha := branchThenPR(t, newHarness(t), true, nil)
	bobRefused(t, h, n, sha)
}

// The same with the store lost between bob's push and the pull request.
func TestPusherBeforePullRequestIsBuilderAfterStoreLoss(t *testing.T) {
	h, n, sha := branchThenPR(t, newHarness(t), false, func(h *harness) *harness { return freshStore(t, h) })
	bobRefused(t, h, n, sha)
}

// A gate.exempt author's pull request stays exempt only while everyone who
// pushed to it or wrote its commits is exempt too: eve pushes her commit
// onto dependabot's pull request (under dependabot's name). Its new head is
// answered as anyone's pull request that closes no task (gate.untracked:
// require: it does not pass), and the check says why.
func TestExemptPullRequestPushedByAnotherIsNotExempt(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetPermission(testRepo, "eve", "write")
	h.gh.SetFile(testRepo, rules.ConfigPath, "gate:\n  exempt: [\"dependabot[bot]\"]\n")
	pr, sha := h.gh.OpenPR(testRepo, "dependabot[bot]", githubtest.PROptions{Title: "Bump x", Body: "Bumps x."})
	h.settle()
	if r, _ := verification(h, sha); r.Conclusion != "success" {
		t.Fatalf("first: %s", r.Summary+r.Text)
	}

	sha2 := h.gh.PushAs(testRepo, pr, "eve", githubtest.Commit{Message: "bump x, and a little more"})
	h.settle()
	if r, _ := verification(h, sha); r.Conclusion != "success" {
		t.Logf("first: %s", r.Summary+r.Text)
	}
	r := wantCheck(t, h, sha2, "failure")
	wantContains(t, "the check", r.Summary+r.Text, "@eve pushed to it", "eve is not in `gate.exempt`")

	// dependabot pushing again does not make it exempt again: eve's commit is
	// still in it.
	sha3 := h.gh.PushAs(testRepo, pr, "dependabot[bot]", githubtest.Commit{Message: "bump again"})
	h.settle()
	wantCheck(t, h, sha3, "failure")
}

// An exempt author's pull request whose commits someone else wrote is not
// exempt either.
func TestExemptPullRequestWithAnothersCommitIsNotExempt(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetFile(testRepo, rules.ConfigPath, "gate:\n  exempt: [\"dependabot[bot]\"]\n")
	_, sha := h.gh.OpenPR(testRepo, "dependabot[bot]", githubtest.PROptions{Title: "Bump x", Body: "Bumps x.",
		Commits: []githubtest.Commit{{Message: "bump x"}, {Author: "eve", Message: "and mine"}}})
	h.settle()
	r := wantCheck(t, h, sha, "failure")
	wantContains(t, "the check", r.Summary+r.Text, "@eve", "eve is not in `gate.exempt`")
	if strings.Contains(r.Summary+r.Text, "@dependabot[bot] pushed") {
		t.Fatalf("the check blames the exempt author:\n%s", r.Summary)
	}
}
