package openapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/countersign/countersign/internal/githubtest"
	"github.com/countersign/countersign/internal/githubtest/openapi"
	"github.com/google/go-github/v60/github"
)

// Branch pushes and the repository activity, as GitHub has them: a branch
// pushed before any pull request sends a push webhook (sender and pusher: who
// pushed; created: true for a new branch), every push is in the activity of
// its ref with its actor (pull request pushes too, force pushes as
// force_push), and GET /repos/{owner}/{repo}/activity answers GitHub's
// "activity" schema, filtered by ref, actor and activity_type, newest first,
// paged with cursors in the Link header.
func TestBranchPushesAndActivity(t *testing.T) {
	rest, hooks := specs(t)
	gh := githubtest.New(githubtest.Options{})
	defer gh.Close()
	gh.AddRepo("acme/widgets", 9)
	gh.DropWebhooks(true) // kept in Deliveries, sent to no one
	first := gh.PushBranch("acme/widgets", "feature", "bob", githubtest.Commit{Message: "one", Files: []string{"a.go"}})
	second := gh.PushBranch("acme/widgets", "refs/heads/feature", "erin", githubtest.Commit{Message: "two"})
	pr, head := gh.OpenPRFrom("acme/widgets", "dave", "feature", githubtest.PROptions{Title: "Feature"})
	if head != second || pr == 0 {
		t.Fatalf("pull request #%d at %s, want the branch's head %s", pr, head, second)
	}
	third := gh.PushAs("acme/widgets", pr, "dave", githubtest.Commit{Message: "three"})
	gh.ForcePush("acme/widgets", pr, "mallory", second)
	gh.PushBranch("acme/widgets", "other", "carol")

	var pushes []map[string]any
	for _, d := range gh.Deliveries() {
		if d.Event != "push" {
			continue
		}
		sch, err := hooks.HookSchema(openapi.HookOperation("push", ""), true)
		if err != nil || sch == nil {
			t.Fatalf("push schema: %v", err)
		}
		v, _ := openapi.Decode(d.Payload)
		if err := sch.Validate(v); err != nil {
			t.Errorf("push webhook is not GitHub's: %v", err)
		}
		var m map[string]any
		_ = json.Unmarshal(d.Payload, &m)
		pushes = append(pushes, m)
	}
	if len(pushes) != 3 {
		t.Fatalf("%d push webhooks, want 3 (feature twice, other once)", len(pushes))
	}
	if p := pushes[0]; p["ref"] != "refs/heads/feature" || p["created"] != true || p["after"] != first ||
		p["before"] != strings.Repeat("0", 40) || p["sender"].(map[string]any)["login"] != "bob" || p["pusher"].(map[string]any)["name"] != "bob" {
		t.Errorf("first push: %v", p)
	}
	if p := pushes[1]; p["created"] != false || p["before"] != first || p["after"] != second || p["sender"].(map[string]any)["login"] != "erin" {
		t.Errorf("second push: %v", p)
	}

	itr, err := ghinstallation.New(http.DefaultTransport, gh.AppID(), 9, gh.PrivateKeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	client, _ := github.NewClient(&http.Client{Transport: itr}).WithEnterpriseURLs(gh.URL(), gh.URL())
	itr.BaseURL = strings.TrimRight(client.BaseURL.String(), "/")
	tpl, ok := openapi.TemplateFor("/repos/{owner}/{repo}/activity", rest.Templates())
	if !ok {
		t.Fatal("the activity route is not in the description")
	}
	sch, err := rest.ResponseSchema("GET", tpl, "200", true) // relaxed, as the conformance check: the fake leaves out users' hypermedia URLs
	if err != nil || sch == nil {
		t.Fatalf("activity schema: %v", err)
	}
	type item struct {
		ID           int64  `json:"id"`
		Before       string `json:"before"`
		After        string `json:"after"`
		Ref          string `json:"ref"`
		ActivityType string `json:"activity_type"`
		Actor        struct {
			Login string `json:"login"`
		} `json:"actor"`
	}
	list := func(query string) ([]item, *github.Response) {
		t.Helper()
		req, err := client.NewRequest("GET", "repos/acme/widgets/activity?"+query, nil)
		if err != nil {
			t.Fatal(err)
		}
		var raw json.RawMessage
		resp, err := client.Do(context.Background(), req, &raw)
		if err != nil {
			t.Fatalf("GET activity?%s: %v", query, err)
		}
		v, _ := openapi.Decode(raw)
		if err := sch.Validate(v); err != nil {
			t.Errorf("activity?%s is not GitHub's: %v", query, err)
		}
		var out []item
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatal(err)
		}
		return out, resp
	}
	got, _ := list("ref=feature")
	var seen []string
	for _, a := range got {
		seen = append(seen, a.ActivityType+":"+a.Actor.Login)
	}
	if want := "force_push:mallory push:dave push:erin branch_creation:bob"; strings.Join(seen, " ") != want {
		t.Fatalf("activity of feature, newest first: %v, want %s", seen, want)
	}
	if got[0].Before != third || got[0].After != second || got[0].Ref != "refs/heads/feature" {
		t.Errorf("force push: %+v", got[0])
	}

	page1, resp := list("ref=refs/heads/feature&direction=asc&per_page=3")
	if len(page1) != 3 || page1[0].Actor.Login != "bob" || resp.After == "" {
		t.Fatalf("first page %+v, next cursor %q", page1, resp.After)
	}
	page2, resp := list("ref=refs/heads/feature&direction=asc&per_page=3&after=" + resp.After)
	if len(page2) != 1 || page2[0].Actor.Login != "mallory" || resp.After != "" {
		t.Fatalf("second page %+v, next cursor %q", page2, resp.After)
	}
	if got, _ := list("actor=erin"); len(got) != 1 || got[0].After != second {
		t.Errorf("actor=erin: %+v", got)
	}
	if got, _ := list("activity_type=force_push"); len(got) != 1 || got[0].Actor.Login != "mallory" {
		t.Errorf("activity_type=force_push: %+v", got)
	}
	req, _ := client.NewRequest("GET", "repos/acme/widgets/activity?direction=sideways", nil)
	if _, err := client.Do(context.Background(), req, nil); !strings.Contains(err.Error(), "422") {
		t.Errorf("a bad direction: %v, want 422", err)
	}
}

// A branch copied (`git push origin wip:login`, or a commit of it:
// `git push origin SHA:login`) and a branch force pushed back send push
// webhooks as GitHub's: after is the commit the branch now points at,
// head_commit that commit, no commits are new (none listed), and a force
// push says forced; the activity lists every ref, or one (ref is optional).
func TestBranchCopiesAndForcePushes(t *testing.T) {
	_, hooks := specs(t)
	gh := githubtest.New(githubtest.Options{})
	defer gh.Close()
	gh.AddRepo("acme/widgets", 9)
	gh.DropWebhooks(true)
	tip := gh.PushBranch("acme/widgets", "wip", "bob", githubtest.Commit{Message: "A"}, githubtest.Commit{Message: "B"})
	a := gh.BranchCommits("acme/widgets", "wip")[0]
	if got := gh.CopyBranch("acme/widgets", "dave", "wip", "login"); got != tip {
		t.Fatalf("copy at %s, want %s", got, tip)
	}
	if got := gh.CopyBranchAt("acme/widgets", "dave", "wip", "part", a); got != a || len(gh.BranchCommits("acme/widgets", "part")) != 1 {
		t.Fatalf("copy of A at %s (%v), want %s", got, gh.BranchCommits("acme/widgets", "part"), a)
	}
	base := gh.HeadSHA("acme/widgets")
	if got := gh.ForcePushBranch("acme/widgets", "wip", "bob", ""); got != base || len(gh.BranchCommits("acme/widgets", "wip")) != 0 {
		t.Fatalf("force push to %s, want the default branch's head %s", got, base)
	}
	var pushes []map[string]any
	for _, d := range gh.Deliveries() {
		if d.Event != "push" {
			continue
		}
		sch, err := hooks.HookSchema(openapi.HookOperation("push", ""), true)
		if err != nil || sch == nil {
			t.Fatalf("push schema: %v", err)
		}
		v, _ := openapi.Decode(d.Payload)
		if err := sch.Validate(v); err != nil {
			t.Errorf("push webhook is not GitHub's: %v\n%s", err, d.Payload)
		}
		var m map[string]any
		_ = json.Unmarshal(d.Payload, &m)
		pushes = append(pushes, m)
	}
	if len(pushes) != 4 {
		t.Fatalf("%d push webhooks, want 4", len(pushes))
	}
	headID := func(p map[string]any) any {
		if hc, ok := p["head_commit"].(map[string]any); ok {
			return hc["id"]
		}
		return nil
	}
	for i, want := range []struct {
		ref, after, head, sender string
		created, forced          bool
	}{
		{"refs/heads/login", tip, tip, "dave", true, false},
		{"refs/heads/part", a, a, "dave", true, false},
		{"refs/heads/wip", base, "", "bob", false, true},
	} {
		p := pushes[i+1]
		commits, _ := p["commits"].([]any)
		var head any
		if want.head != "" {
			head = want.head
		}
		if p["ref"] != want.ref || p["after"] != want.after || headID(p) != head || len(commits) != 0 ||
			p["created"] != want.created || p["forced"] != want.forced || p["sender"].(map[string]any)["login"] != want.sender {
			t.Errorf("push %d: %v", i+1, p)
		}
	}
}
