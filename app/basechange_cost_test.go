package app_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/githubtest"
)

// What a base change costs (run with go test ./app -run TestCostReport -v):
// what the pull request merges is read once (its files, one paginated
// read); when that differs from before, the merged pull requests from the old
// base branch into the new one are listed and their files read (a stack's
// lower pull request, squash-merged), and when changes no one approved
// remain, who built its commits is read again.
func TestCostReportBaseChange(t *testing.T) {
	t.Parallel()
	reads := func(c cost, pr int) (files, lists, commits, graphql int) {
		for _, d := range c.detail {
			switch {
			case strings.HasPrefix(d, "GET /repos/"+testRepo+"/pulls/") && strings.Contains(d, "/files"):
				files++
			case strings.HasPrefix(d, "GET /repos/"+testRepo+"/pulls?") || strings.HasPrefix(d, "GET /repos/"+testRepo+"/pulls "):
				lists++
			case strings.HasPrefix(d, fmt.Sprintf("GET /repos/%s/pulls/%d/commits", testRepo, pr)):
				commits++
			case strings.HasPrefix(d, "POST /graphql"):
				graphql++
			}
		}
		return
	}
	type want struct{ files, lists, commits, graphql int }
	check := func(t *testing.T, c cost, pr int, w want) {
		t.Helper()
		f, l, cm, g := reads(c, pr)
		if (want{f, l, cm, g}) != w {
			t.Errorf("%s: %d file reads, %d lists, %d commit reads, %d GraphQL queries; want %+v\n    %s", c.step, f, l, cm, g, w, strings.Join(c.detail, "\n    "))
		}
	}

	t.Run("nothing new", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		baseTeam(h)
		h.gh.CreateBranch(testRepo, "carol", "release")
		_, pr, _ := verifiedOn(t, h, "Login form", "main", githubtest.PROptions{Title: "Login form", Files: []string{"login.go"}})
		rows, _ := runCosts(t, h, "a base change that brings nothing new", []costStep{
			{"retarget to a branch at main's head", func() { h.gh.EditPRBase(testRepo, pr, "alice", "release") }},
		})
		check(t, rows[0], pr, want{files: 1})
	})
	t.Run("stack, lower squash-merged", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		baseTeam(h)
		_, pr, _, lower := stack(t, h, []string{"api.go"}, []string{"ui.go"})
		rows, _ := runCosts(t, h, "a stack's lower pull request squash-merged, the upper one retargeted by GitHub", []costStep{
			{"lower merged (squash), upper retargeted", func() { h.gh.MergeStacked(testRepo, lower, "carol", "squash") }},
		})
		check(t, rows[0], pr, want{files: 2, lists: 1})
	})
	t.Run("stack, lower merged with a merge commit", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		baseTeam(h)
		_, pr, _, lower := stack(t, h, []string{"api.go"}, []string{"ui.go"})
		rows, _ := runCosts(t, h, "a stack's lower pull request merged with a merge commit, the upper one retargeted by GitHub", []costStep{
			{"lower merged (merge commit), upper retargeted", func() { h.gh.MergeStacked(testRepo, lower, "carol", "merge") }},
		})
		check(t, rows[0], pr, want{files: 1})
	})
	t.Run("brings X", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		baseTeam(h)
		h.gh.CreateBranch(testRepo, "alice", "alice-base", githubtest.Commit{Message: "X", Files: []string{"backdoor.go"}})
		_, pr, _ := verifiedOn(t, h, "Login form", "alice-base", githubtest.PROptions{Title: "Login form", Files: []string{"login.go"}})
		rows, _ := runCosts(t, h, "a base change that brings a commit no one approved", []costStep{
			{"retarget to main → review", func() { h.gh.EditPRBase(testRepo, pr, "alice", "main") }},
		})
		check(t, rows[0], pr, want{files: 1, lists: 1, commits: 1, graphql: 1})
	})
}
