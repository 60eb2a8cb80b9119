package openapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/countersign/countersign/internal/githubtest"
)

// Base changes as the fake makes them (retarget.go) are GitHub's:
// pull_request.edited carries changes.base.ref.from and changes.base.sha.from
// and validates against the webhooks description, the file list is the
// three-dot comparison against the new base, and the calls that read it
// conform to the REST description.
func TestRetargetConforms(t *testing.T) {
	rest, hooks := specs(t)
	s := githubtest.New(githubtest.Options{RecordBodies: true})
	defer s.Close()
	const repo = "acme/widgets"
	s.AddRepo(repo, 7)
	ctx := context.Background()
	itr, err := ghinstallation.New(http.DefaultTransport, s.AppID(), 7, s.PrivateKeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	itr.BaseURL = strings.TrimRight(s.URL(), "/") + "/api/v3"
	tok, err := itr.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) []byte {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, "GET", strings.TrimRight(s.URL(), "/")+"/api/v3"+path, nil)
		req.Header.Set("Authorization", "token "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
		}
		return b
	}
	files := func(n int) []string {
		t.Helper()
		var list []struct{ Filename, Patch string }
		if err := json.Unmarshal(get(fmt.Sprintf("/repos/%s/pulls/%d/files", repo, n)), &list); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, f := range list {
			if f.Patch == "" {
				t.Errorf("#%d's %s has no patch", n, f.Filename)
			}
			out = append(out, f.Filename)
		}
		slices.Sort(out)
		return out
	}
	commits := func(n int) int {
		t.Helper()
		var list []any
		if err := json.Unmarshal(get(fmt.Sprintf("/repos/%s/pulls/%d/commits", repo, n)), &list); err != nil {
			t.Fatal(err)
		}
		return len(list)
	}

	// A branch holding X, a pull request stacked on it: only its own change.
	xSHA := s.CreateBranch(repo, "alice", "alice-base", githubtest.Commit{Message: "X", Files: []string{"x.go"}})
	pr, _ := s.OpenPROn(repo, "alice", "alice-base", githubtest.PROptions{Files: []string{"task.go"}})
	if got := files(pr); strings.Join(got, ",") != "task.go" || commits(pr) != 1 {
		t.Fatalf("stacked: files %v, %d commits", got, commits(pr))
	}
	// On main it merges X too; back on the branch, only its own change.
	s.EditPRBase(repo, pr, "alice", "main")
	if got := files(pr); strings.Join(got, ",") != "task.go,x.go" || commits(pr) != 2 {
		t.Fatalf("on main: files %v, %d commits", got, commits(pr))
	}
	s.EditPRBase(repo, pr, "alice", "alice-base")
	if got := files(pr); strings.Join(got, ",") != "task.go" || commits(pr) != 1 {
		t.Fatalf("back on the branch: files %v, %d commits", got, commits(pr))
	}

	// A stack whose lower pull request is squash-merged: the upper one is
	// retargeted to main and lists the lower one's commits and files again.
	lower, _ := s.OpenPR(repo, "bob", githubtest.PROptions{HeadRef: "lower", Files: []string{"api.go"}})
	upper, _ := s.OpenPROn(repo, "bob", "lower", githubtest.PROptions{Files: []string{"ui.go"}})
	s.MergeStacked(repo, lower, "carol", "squash")
	if v, _ := s.Issue(repo, upper); v.BaseRef != "main" {
		t.Fatalf("upper base %q after the lower one merged", v.BaseRef)
	}
	if got := files(upper); strings.Join(got, ",") != "api.go,ui.go" || commits(upper) != 2 {
		t.Fatalf("upper after a squash merge: files %v, %d commits", got, commits(upper))
	}
	// Merged with a merge commit, the lower one's commits are main's.
	lower2, _ := s.OpenPR(repo, "bob", githubtest.PROptions{HeadRef: "lower2", Files: []string{"db.go"}})
	upper2, _ := s.OpenPROn(repo, "bob", "lower2", githubtest.PROptions{Files: []string{"cli.go"}})
	s.MergeStacked(repo, lower2, "carol", "merge")
	if got := files(upper2); strings.Join(got, ",") != "cli.go" || commits(upper2) != 1 {
		t.Fatalf("upper after a merge commit: files %v, %d commits", got, commits(upper2))
	}

	ty := &tally{ops: map[string]bool{}, missing: map[string]int{}}
	edited := 0
	for _, d := range s.Deliveries() {
		checkHook(t, hooks, d, ty)
		if d.Event != "pull_request" || d.Action != "edited" {
			continue
		}
		edited++
		var p struct {
			Changes struct {
				Base struct {
					Ref struct{ From string }
					SHA struct{ From string }
				}
			}
			PullRequest struct {
				Number int
				Base   struct{ Ref, SHA string }
			} `json:"pull_request"`
		}
		if err := json.Unmarshal(d.Payload, &p); err != nil {
			t.Fatal(err)
		}
		if p.Changes.Base.Ref.From == "" || p.Changes.Base.SHA.From == "" || p.Changes.Base.Ref.From == p.PullRequest.Base.Ref {
			t.Errorf("edited #%d: changes.base %+v, base now %+v", p.PullRequest.Number, p.Changes.Base, p.PullRequest.Base)
		}
		if p.PullRequest.Number == pr && p.Changes.Base.Ref.From == "alice-base" && p.Changes.Base.SHA.From != xSHA {
			t.Errorf("changes.base.sha.from %s, want alice-base's head %s", p.Changes.Base.SHA.From, xSHA)
		}
	}
	if edited != 4 {
		t.Errorf("%d pull_request.edited webhooks, want 4 (two by hand, two by GitHub after a merge)", edited)
	}
	for _, r := range s.Requests() {
		checkCall(t, rest, r, ty)
	}
}
