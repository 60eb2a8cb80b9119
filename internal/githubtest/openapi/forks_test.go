package openapi_test

import (
	"encoding/json"
	"testing"

	"github.com/countersign/countersign/internal/githubtest"
)

// A pull request from a fork on a commit another pull request already has as
// its head: its webhook is GitHub's (head.repo is the fork), and the check
// runs on that commit name only the base repository's own pull request
// (check_run.pull_requests leaves forks' out).
func TestForkPullRequestConforms(t *testing.T) {
	_, hooks := specs(t)
	gh := githubtest.New(githubtest.Options{})
	t.Cleanup(gh.Close)
	gh.AddRepo("acme/widgets", 7)
	alice, sha := gh.OpenPR("acme/widgets", "alice", githubtest.PROptions{Title: "Login form", Body: "Fixes #9"})
	mallory := gh.OpenPRAt("acme/widgets", "mallory", sha, githubtest.SharedPROptions{Fork: true, Title: "Mine", Body: "Fixes #9"})
	release := gh.OpenPRAt("acme/widgets", "alice", sha, githubtest.SharedPROptions{Base: "release-1", Title: "Backport"})
	gh.CheckRun("acme/widgets", sha, "test", "", "success", "")
	ty := &tally{ops: map[string]bool{}, missing: map[string]int{}}
	var heads = map[int]map[string]any{}
	var runPRs []int
	for _, d := range gh.Deliveries() {
		checkHook(t, hooks, d, ty)
		var ev struct {
			PullRequest struct {
				Number int `json:"number"`
				Head   struct {
					Label string `json:"label"`
					SHA   string `json:"sha"`
					Repo  map[string]any
				} `json:"head"`
				Base struct {
					Ref string `json:"ref"`
				} `json:"base"`
			} `json:"pull_request"`
			CheckRun struct {
				PullRequests []struct {
					Number int `json:"number"`
				} `json:"pull_requests"`
			} `json:"check_run"`
		}
		if err := json.Unmarshal(d.Payload, &ev); err != nil {
			t.Fatal(err)
		}
		switch d.Event + "." + d.Action {
		case "pull_request.opened":
			h := ev.PullRequest.Head
			if h.SHA != sha {
				t.Errorf("#%d opened with head %s, want %s", ev.PullRequest.Number, h.SHA, sha)
			}
			heads[ev.PullRequest.Number] = map[string]any{"label": h.Label, "full_name": h.Repo["full_name"], "fork": h.Repo["fork"], "base": ev.PullRequest.Base.Ref}
		case "check_run.completed":
			for _, p := range ev.CheckRun.PullRequests {
				runPRs = append(runPRs, p.Number)
			}
		}
	}
	if h := heads[mallory]; h["full_name"] != "mallory/widgets" || h["fork"] != true || h["label"] != "mallory:alice-patch-1" {
		t.Errorf("the fork's pull request's head = %v, want mallory's fork", h)
	}
	if h := heads[alice]; h["full_name"] != "acme/widgets" || h["fork"] != false {
		t.Errorf("alice's pull request's head = %v, want acme/widgets", h)
	}
	if h := heads[release]; h["full_name"] != "acme/widgets" || h["base"] != "release-1" {
		t.Errorf("the release pull request = %v, want acme/widgets into release-1", h)
	}
	if len(runPRs) != 2 || runPRs[0] != alice || runPRs[1] != release {
		t.Errorf("check_run.pull_requests = %v, want [%d %d] (not the fork's #%d)", runPRs, alice, release, mallory)
	}
	if ty.hooks == 0 {
		t.Fatal("no webhook validated")
	}
}
