package app_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/githubtest"
)

// Issue 11 item 6: co-authors are who GitHub says they are. alice co-authors
// dave's commit under her verified work email (not a noreply address): GitHub
// resolves it to her account, so she is a builder and her /verify is refused.
// A commit's committer builds too.
func TestCoAuthorsAndCommittersAreBuilders(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		commit githubtest.Commit
	}{
		{"co-author by verified email", githubtest.Commit{Author: "dave",
			Message: "Login form\n\nCo-authored-by: Alice Liddell <alice@company.example>"}},
		{"committer", githubtest.Commit{Author: "dave", Message: "Login form", Committer: "alice"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			team(h)
			h.gh.SetPermission(testRepo, "dave", "write")
			h.gh.SetEmails("alice", "alice@company.example")
			n := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
			h.gh.Assign(testRepo, n, "carol", "dave")
			pr, sha := h.gh.OpenPR(testRepo, "dave", githubtest.PROptions{Title: "Login form", Body: fmt.Sprintf("Fixes #%d", n),
				Commits: []githubtest.Commit{tc.commit}})
			ciPasses(h, sha)
			h.gh.Review(testRepo, pr, "carol", "APPROVED", "")
			h.settle()
			wantState(t, h, n, "completed")
			if cards := cardsOn(t, h, n); len(cards) != 1 || !strings.Contains(cards[0], "@alice") {
				t.Fatalf("alice is not on the card as a builder:\n%s", cards)
			}

			h.gh.Comment(testRepo, n, "alice", "/verify looks good")
			h.settle()
			wantState(t, h, n, "completed")
			h.gh.Comment(testRepo, n, "bob", "/verify checked")
			h.settle()
			wantState(t, h, n, "verified")
		})
	}
}

// The cost of co-author resolution: one GraphQL query per pull request head
// read (not per event), none for events that do not move the head.
func TestCoAuthorResolutionCost(t *testing.T) {
	h := newHarness(t)
	team(h)
	n := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	h.gh.Assign(testRepo, n, "carol", "alice")
	h.settle()
	count := func() (gql, rest int) {
		for _, r := range h.gh.Requests() {
			if r.Method == http.MethodPost && strings.HasSuffix(r.Path, "/graphql") {
				gql++
			} else {
				rest++
			}
		}
		return
	}
	steps := []struct {
		name    string
		act     func()
		wantGQL int
	}{
		{"PR opened", func() {
			h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "Login", Body: fmt.Sprintf("Fixes #%d", n)})
		}, 1},
		{"approval", func() { h.gh.Review(testRepo, n+1, "carol", "APPROVED", "") }, 0},
		{"push", func() { h.gh.Push(testRepo, n+1, githubtest.Commit{Author: "alice", Message: "more"}) }, 1},
		{"comment", func() { h.gh.Comment(testRepo, n, "bob", "/status") }, 0},
	}
	for _, s := range steps {
		h.gh.ResetRequests()
		s.act()
		h.settle()
		gql, rest := count()
		t.Logf("%-12s GraphQL queries %d, REST requests %d", s.name, gql, rest)
		if gql != s.wantGQL {
			t.Errorf("%s: %d GraphQL queries, want %d", s.name, gql, s.wantGQL)
		}
	}
}
