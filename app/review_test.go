package app_test

import (
	"fmt"
	"testing"

	"github.com/countersign/countersign/internal/githubtest"
)

// A pull request that closes a verified task and also names an issue that is
// no task (here one that does not exist) passes its own check: that issue is
// left out of it (app/decide/check.go). Its merge group must answer the same
// way, or the queue takes out a pull request whose check passes, saying the
// issue "is not a task countersign tracks", and it can never merge.
func TestMergeQueueGroupLeavesOutUntrackedIssuesLikeThePRCheck(t *testing.T) {
	h := newHarness(t)
	team(h)
	n, pr, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login form", Body: "Also fixes #999"})
	ciPasses(h, sha)
	h.settle()
	h.gh.Review(testRepo, pr, "carol", "APPROVED", "")
	h.settle()
	h.gh.Comment(testRepo, n, "bob", "/verify works")
	h.settle()
	wantState(t, h, n, "verified")
	wantCheck(t, h, sha, "success")

	group := h.gh.EnqueuePR(testRepo, pr, "alice")
	h.settle()
	r := wantCheck(t, h, group, "success")
	if t.Failed() {
		t.Logf("the group's check: %s\n%s", r.Title, fmt.Sprint(r.Summary))
	}
}
