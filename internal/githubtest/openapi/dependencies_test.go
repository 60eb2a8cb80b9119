package openapi_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/countersign/countersign/internal/githubtest"
)

// The issue dependencies and sub-issues the fake serves are GitHub's: every
// response of the REST routes validates against @octokit/openapi, every
// issue_dependencies and sub_issues webhook (to both repositories of a
// cross-repository link) against @octokit/openapi-webhooks, and issues carry
// the summaries the descriptions name.
func TestDependenciesConform(t *testing.T) {
	rest, hooks := specs(t)
	s := githubtest.New(githubtest.Options{RecordBodies: true})
	defer s.Close()
	const repo, api = "acme/widgets", "acme/api"
	s.AddRepo(repo, 7)
	s.AddRepo(api, 7)
	a := s.OpenIssue(repo, "alice", "Login form", "")
	b := s.OpenIssue(repo, "alice", "Session store", "")
	c := s.OpenIssue(api, "alice", "Token endpoint", "")
	d := s.OpenIssue(repo, "alice", "Password rules", "")
	s.AddBlockedBy(repo, a, "carol", repo, b)
	s.AddBlockedBy(repo, a, "carol", api, c)
	s.AddSubIssue(repo, a, "carol", repo, d)
	s.CloseIssue(repo, d, "alice", "completed")
	s.Comment(repo, a, "bob", "/verify")

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
	call := func(method, path, body string, want int) string {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, method, strings.TrimRight(s.URL(), "/")+"/api/v3"+path, strings.NewReader(body))
		req.Header.Set("Authorization", "token "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
		return string(b)
	}
	listed := call("GET", fmt.Sprintf("/repos/%s/issues/%d/dependencies/blocked_by", repo, a), "", 200)
	if !strings.Contains(listed, `"title":"Session store"`) || !strings.Contains(listed, `"title":"Token endpoint"`) {
		t.Fatalf("blocked_by lists %s", listed)
	}
	call("GET", fmt.Sprintf("/repos/%s/issues/%d/dependencies/blocking", repo, b), "", 200)
	call("GET", fmt.Sprintf("/repos/%s/issues/%d/sub_issues", repo, a), "", 200)
	call("GET", fmt.Sprintf("/repos/%s/issues/%d/parent", repo, d), "", 200)
	is := call("GET", fmt.Sprintf("/repos/%s/issues/%d", repo, a), "", 200)
	if !strings.Contains(is, `"total_blocked_by":2`) || !strings.Contains(is, `"total":1`) {
		t.Fatalf("the issue's summaries: %s", is)
	}
	call("DELETE", fmt.Sprintf("/repos/%s/issues/%d/dependencies/blocked_by/%d", repo, a, issueID(t, s, api, c)), "", 200)
	call("POST", fmt.Sprintf("/repos/%s/issues/%d/dependencies/blocked_by", repo, a), fmt.Sprintf(`{"issue_id":%d}`, issueID(t, s, api, c)), 201)
	call("DELETE", fmt.Sprintf("/repos/%s/issues/%d/sub_issue", repo, a), fmt.Sprintf(`{"sub_issue_id":%d}`, issueID(t, s, repo, d)), 200)
	call("POST", fmt.Sprintf("/repos/%s/issues/%d/sub_issues", repo, a), fmt.Sprintf(`{"sub_issue_id":%d}`, issueID(t, s, repo, d)), 201)
	s.RemoveBlockedBy(repo, a, "carol", repo, b)
	s.RemoveSubIssue(repo, a, "carol", repo, d)
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	ty := &tally{ops: map[string]bool{}, missing: map[string]int{}}
	for _, r := range s.Requests() {
		checkCall(t, rest, r, ty)
	}
	events := map[string]int{}
	for _, d := range s.Deliveries() {
		checkHook(t, hooks, d, ty)
		events[d.Event+"."+d.Action]++
	}
	for _, e := range []string{"issue_dependencies.blocked_by_added", "issue_dependencies.blocking_added",
		"issue_dependencies.blocked_by_removed", "issue_dependencies.blocking_removed",
		"sub_issues.sub_issue_added", "sub_issues.parent_issue_added", "sub_issues.sub_issue_removed", "sub_issues.parent_issue_removed"} {
		if events[e] == 0 {
			t.Errorf("no %s webhook was sent: %v", e, events)
		}
	}
	if ty.responses < 9 {
		t.Fatalf("%d responses validated, want at least 9", ty.responses)
	}
	for m, n := range ty.missing {
		t.Logf("required but left out (%d): %s", n, m)
	}
}

// issueID is the id GitHub gives issue n of repo (the REST calls that link
// issues name them by id).
func issueID(t *testing.T, s *githubtest.Server, repo string, n int) int64 {
	t.Helper()
	is, ok := s.Issue(repo, n)
	if !ok {
		t.Fatalf("%s#%d does not exist", repo, n)
	}
	return is.ID
}
