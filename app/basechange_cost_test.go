package app_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/githubtest"
)

// What a base change costs (run with go test ./app -run TestCostReportBaseChange -v):
// what the pull request merges is read once (its files, one paginated
// read); when that differs from before, the merged pull requests from the old
// base branch into the new one are listed (one page of 100 normally), and
// for each one countersign gated (its record, no request) its files are read
// and its merge commit compared with the new base's head (one comparison);
// when changes no one approved remain, who built its commits is read again.
// Changes excused that way are read again once after the decision is
// recorded (one comparison), and on each push to the base (one comparison
// per pull request so excused; none for the other pull requests on it).
func TestCostReportBaseChange(t *testing.T) {
	t.Parallel()
	reads := func(c cost, pr int) (files, lists, commits, graphql, compares int) {
		for _, d := range c.detail {
			switch {
			case strings.HasPrefix(d, "GET /repos/"+testRepo+"/compare/"):
				compares++
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
	type want struct{ files, lists, commits, graphql, compares int }
	check := func(t *testing.T, c cost, pr int, w want) {
		t.Helper()
		f, l, cm, g, cp := reads(c, pr)
		if (want{f, l, cm, g, cp}) != w {
			t.Errorf("%s: %d file reads, %d lists, %d commit reads, %d GraphQL queries, %d comparisons; want %+v\n    %s", c.step, f, l, cm, g, cp, w, strings.Join(c.detail, "\n    "))
		}
	}

	t.Run("nothing new", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		noJitter(h, "counts each step's requests: the merge's push decided after the retarget costs one more comparison")
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
		noJitter(h, "counts each step's requests: the merge's push decided after the retarget costs one more comparison")
		baseTeam(h)
		_, pr, _, lower := stack(t, h, []string{"api.go"}, []string{"ui.go"})
		rows, _ := runCosts(t, h, "a stack's lower pull request squash-merged, the upper one retargeted by GitHub", []costStep{
			{"lower merged (squash), upper retargeted", func() { h.gh.MergeStacked(testRepo, lower, "carol", "squash") }},
		})
		check(t, rows[0], pr, want{files: 2, lists: 1, compares: 2})
	})
	t.Run("stack, then pushes to main", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		noJitter(h, "counts each step's requests: the merge's push decided after the retarget costs one more comparison")
		baseTeam(h)
		_, pr, _, lower := stack(t, h, []string{"api.go"}, []string{"ui.go"})
		var squash string
		rows, _ := runCosts(t, h, "pushes to main under a stack's upper pull request kept verified by the lower one's squash merge", []costStep{
			{"lower merged (squash), upper retargeted", func() { squash = h.gh.MergeStacked(testRepo, lower, "carol", "squash") }},
			{"an unrelated push to main", func() {
				h.gh.PushBranch(testRepo, "main", "carol", githubtest.Commit{Message: "Docs", Files: []string{"README.md"}})
			}},
			{"the squash commit reverted on main → review", func() { h.gh.RevertDefault(testRepo, "carol", squash) }},
			{"another push to main", func() {
				h.gh.PushBranch(testRepo, "main", "carol", githubtest.Commit{Message: "More docs", Files: []string{"CONTRIBUTING.md"}})
			}},
		})
		check(t, rows[0], pr, want{files: 2, lists: 1, compares: 2})
		check(t, rows[1], pr, want{compares: 1})
		check(t, rows[2], pr, want{compares: 1, commits: 1, graphql: 1})
		check(t, rows[3], pr, want{})
	})
	t.Run("stack, lower merged past the gate", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		noJitter(h, "counts each step's requests: the merge's push decided after the retarget costs one more comparison")
		baseTeam(h)
		lower, lsha := h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "API", HeadRef: "lower", Files: []string{"api.go"}})
		ciPasses(h, lsha)
		_, pr, _ := verifiedOn(t, h, "UI", "lower", githubtest.PROptions{Title: "UI", HeadRef: "upper", Files: []string{"ui.go"}})
		rows, _ := runCosts(t, h, "a stack's lower pull request, never gated, squash-merged by an admin", []costStep{
			{"lower merged (squash), upper retargeted → review", func() { h.gh.MergeStacked(testRepo, lower, "carol", "squash") }},
		})
		check(t, rows[0], pr, want{files: 1, lists: 1, commits: 1, graphql: 1})
	})
	t.Run("stack, lower merged with a merge commit", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		noJitter(h, "counts each step's requests: the merge's push decided after the retarget costs one more comparison")
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
		noJitter(h, "counts each step's requests: the merge's push decided after the retarget costs one more comparison")
		baseTeam(h)
		h.gh.CreateBranch(testRepo, "alice", "alice-base", githubtest.Commit{Message: "X", Files: []string{"backdoor.go"}})
		_, pr, _ := verifiedOn(t, h, "Login form", "alice-base", githubtest.PROptions{Title: "Login form", Files: []string{"login.go"}})
		rows, _ := runCosts(t, h, "a base change that brings a commit no one approved", []costStep{
			{"retarget to main → review", func() { h.gh.EditPRBase(testRepo, pr, "alice", "main") }},
		})
		check(t, rows[0], pr, want{files: 1, lists: 1, commits: 1, graphql: 1})
	})
}
