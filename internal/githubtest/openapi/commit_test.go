package openapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/countersign/countersign/internal/githubtest"
	"github.com/countersign/countersign/internal/githubtest/openapi"
	"github.com/google/go-github/v60/github"
)

// GET /repos/{owner}/{repo}/commits/{ref} answers GitHub's "commit" schema:
// a merge group's commit with its parents (first what the group is built
// on) and files, a pull request's head by sha, the default branch by name;
// a commit no one made is 422, as GitHub documents for the operation. (The
// fake keeps files per commit for the commits it builds itself: a merge
// group's, a push's; a pull request's commits list none.)
func TestGetCommit(t *testing.T) {
	rest, _ := specs(t)
	gh := githubtest.New(githubtest.Options{})
	defer gh.Close()
	gh.AddRepo("acme/widgets", 9)
	gh.DropWebhooks(true)
	n, head := gh.OpenPR("acme/widgets", "alice", githubtest.PROptions{Title: "A", Files: []string{"a.go"}})
	group := gh.EnqueuePR("acme/widgets", n, "alice")
	base := gh.MergeQueue("acme/widgets")[0].BaseSHA

	itr, err := ghinstallation.New(http.DefaultTransport, gh.AppID(), 9, gh.PrivateKeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	client, _ := github.NewClient(&http.Client{Transport: itr}).WithEnterpriseURLs(gh.URL(), gh.URL())
	itr.BaseURL = strings.TrimRight(client.BaseURL.String(), "/")
	tpl, ok := openapi.TemplateFor("/repos/{owner}/{repo}/commits/{ref}", rest.Templates())
	if !ok || !rest.HasOperation("GET", tpl) {
		t.Fatal("GET a commit is not in the description")
	}
	sch, err := rest.ResponseSchema("GET", tpl, "200", true)
	if err != nil || sch == nil {
		t.Fatalf("commit schema: %v", err)
	}
	get := func(ref string) (*github.RepositoryCommit, int) {
		t.Helper()
		req, err := client.NewRequest("GET", "repos/acme/widgets/commits/"+ref, nil)
		if err != nil {
			t.Fatal(err)
		}
		var raw json.RawMessage
		resp, err := client.Do(context.Background(), req, &raw)
		if err != nil {
			return nil, resp.StatusCode
		}
		v, _ := openapi.Decode(raw)
		if err := sch.Validate(v); err != nil {
			t.Errorf("commits/%s is not GitHub's: %v", ref, err)
		}
		var c github.RepositoryCommit
		if err := json.Unmarshal(raw, &c); err != nil {
			t.Fatal(err)
		}
		return &c, resp.StatusCode
	}
	c, _ := get(group)
	if c == nil || c.GetSHA() != group || len(c.Parents) != 2 || c.Parents[0].GetSHA() != base || c.Parents[1].GetSHA() != head {
		t.Fatalf("the group's commit %+v, want parents %s, %s", c, base, head)
	}
	// The files a merge group's commit changes are its pull request's.
	if len(c.Files) != 1 || c.Files[0].GetFilename() != "a.go" || c.Files[0].GetStatus() != "added" {
		t.Fatalf("the group's commit's files %+v", c.Files)
	}
	if c, _ := get(head); c == nil || c.GetSHA() != head || len(c.Parents) != 1 {
		t.Fatalf("the pull request's head %+v", c)
	}
	if c, _ := get("main"); c == nil || c.GetSHA() != base {
		t.Fatalf("main is %+v, want %s", c, base)
	}
	if _, status := get(strings.Repeat("e", 40)); status != http.StatusUnprocessableEntity {
		t.Fatalf("an unknown commit: %d, want 422", status)
	}
	if !slices.Contains(rest.Statuses("GET", tpl), "422") {
		t.Error("the description does not document 422 for GET a commit")
	}
}
