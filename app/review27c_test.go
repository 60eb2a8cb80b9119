package app_test

import (
	"fmt"
	"testing"

	"github.com/countersign/countersign/internal/githubtest"
)

// Attacks of the third issue-27 review (base changes, checks written with
// their task's label, fork owners as pushers). Each plays GitHub as it
// really behaves through the webhook endpoint.

// GitHub lists up to 3000 files of a pull request; countersign reads 300
// (lookup.Changes). Alice's task changes 300 files (a generated client,
// say), stacked on her own branch whose commit X adds zz_backdoor.go. dave
// approves and bob verifies what they see. Alice changes the base to main:
// the pull request now also merges X, listed as its 301st file. What is
// read of it (the first 300 files) is what was approved, so the retarget
// must not keep the approval unless every file was read.
func TestReview3RetargetPastTheFilesReadIsStale(t *testing.T) {
	// was a known gap: only the first 300 files were read, so a 301st file it brings goes unseen; cause not yet confirmed end to end")
	h := newHarness(t)
	baseTeam(h)
	h.gh.CreateBranch(testRepo, "alice", "alice-base", githubtest.Commit{Message: "X", Files: []string{"zz_backdoor.go"}})
	files := make([]string, 300)
	for i := range files {
		files[i] = fmt.Sprintf("client/gen_%03d.go", i)
	}
	n, pr, sha := verifiedOn(t, h, "Generated client", "alice-base", githubtest.PROptions{Title: "Client", Files: files})

	h.gh.EditPRBase(testRepo, pr, "alice", "main")
	h.settle()
	if s := stateOf(h, n); s == "verified" {
		t.Fatalf("#%d still verified after its base change brought zz_backdoor.go; card:\n%s", n, card(t, h, n))
	}
	wantCheck(t, h, sha, "in_progress")
}

// GitHub lists no more than 3,000 files of a pull request. Past that, what a
// base change brings cannot be told from what was approved: the approvals
// and the verification are stale, even if nothing new is merged (a list cut
// off never excuses). The file read costs 30 requests.
func TestReview3RetargetPastGitHubsFileLimitIsStale(t *testing.T) {
	h := newHarness(t)
	baseTeam(h)
	h.gh.CreateBranch(testRepo, "alice", "alice-base", githubtest.Commit{Message: "X", Files: []string{"zz_backdoor.go"}})
	files := make([]string, 3000)
	for i := range files {
		files[i] = fmt.Sprintf("client/gen_%04d.go", i)
	}
	n, pr, sha := verifiedOn(t, h, "Generated client", "alice-base", githubtest.PROptions{Title: "Client", Files: files})

	h.gh.EditPRBase(testRepo, pr, "alice", "main")
	h.settle()
	if s := stateOf(h, n); s == "verified" {
		t.Fatalf("#%d still verified after its base change, with more files than GitHub lists; card:\n%s", n, card(t, h, n))
	}
	wantCheck(t, h, sha, "in_progress")
}
