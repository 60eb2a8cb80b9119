package openapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/countersign/countersign/internal/githubtest"
	"github.com/countersign/countersign/internal/githubtest/openapi"
)

// The fake refuses (422, GitHub's error shape) the request bodies GitHub
// refuses and accepts those it accepts: for each body, the description (its
// schema, and the rules it states in prose: proseRules) and the fake agree.
// These are the bodies the fake used to accept: more than 50 annotations,
// the conclusion stale, completed_at without a conclusion, labels that are
// not an array.
func TestFakeRefusesWhatGitHubRefuses(t *testing.T) {
	rest, _ := specs(t)
	s := githubtest.New(githubtest.Options{RecordBodies: true})
	defer s.Close()
	const repo = "acme/widgets"
	s.AddRepo(repo, 7)
	n := s.OpenIssue(repo, "alice", "Target", "")
	_, sha := s.OpenPR(repo, "alice", githubtest.PROptions{})
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
	call := func(method, path string, body any) (int, []byte) {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequestWithContext(ctx, method, strings.TrimRight(s.URL(), "/")+"/api/v3"+path, bytes.NewReader(b))
		req.Header.Set("Authorization", "token "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, out
	}
	annotations := func(k int) []any {
		out := make([]any, k)
		for i := range out {
			out[i] = map[string]any{"path": "a.go", "start_line": 1, "end_line": 1, "annotation_level": "warning", "message": "m"}
		}
		return out
	}
	output := func(k int) map[string]any {
		return map[string]any{"title": "t", "summary": "s", "annotations": annotations(k)}
	}
	_, created := call("POST", "/repos/"+repo+"/check-runs", map[string]any{"name": "x", "head_sha": sha, "status": "in_progress"})
	var run struct{ ID int64 }
	if err := json.Unmarshal(created, &run); err != nil || run.ID == 0 {
		t.Fatalf("creating a check run: %s", created)
	}
	runPath := fmt.Sprintf("/repos/%s/check-runs/%d", repo, run.ID)
	issuePath := fmt.Sprintf("/repos/%s/issues/%d", repo, n)

	// Documented drift, kept on purpose: the fake answers 422 to a change of
	// a completed check run's status or conclusion (countersign then makes a
	// new run), where GitHub accepts it (the description documents only 200
	// for the operation). If the fake ever accepts it, drop this exception.
	t.Run("documented drift: PATCH of a completed check run", func(t *testing.T) {
		const tpl = "/repos/{owner}/{repo}/check-runs/{check_run_id}"
		if got := rest.Statuses("PATCH", tpl); strings.Join(got, ",") != "200" {
			t.Errorf("the description now documents %v for PATCH %s: revisit this exception", got, tpl)
		}
		_, b := call("POST", "/repos/"+repo+"/check-runs", map[string]any{"name": "done", "head_sha": sha, "conclusion": "success"})
		var done struct{ ID int64 }
		_ = json.Unmarshal(b, &done)
		status, resp := call("PATCH", fmt.Sprintf("/repos/%s/check-runs/%d", repo, done.ID), map[string]any{"conclusion": "failure"})
		if status != http.StatusUnprocessableEntity {
			t.Errorf("the fake answered %d %s; the documented drift says 422 (GitHub: 200): update the exception", status, resp)
		}
		t.Logf("known drift: the fake answers %d to a completed run's change of conclusion; GitHub accepts it", status)
	})

	cases := []struct {
		name, method, path, tpl string
		body                    any
	}{
		{"50 annotations", "POST", "/repos/" + repo + "/check-runs", "/repos/{owner}/{repo}/check-runs",
			map[string]any{"name": "a", "head_sha": sha, "status": "in_progress", "output": output(50)}},
		{"51 annotations", "POST", "/repos/" + repo + "/check-runs", "/repos/{owner}/{repo}/check-runs",
			map[string]any{"name": "a", "head_sha": sha, "status": "in_progress", "output": output(51)}},
		{"51 annotations on update", "PATCH", runPath, "/repos/{owner}/{repo}/check-runs/{check_run_id}",
			map[string]any{"output": output(51)}},
		{"an annotation without a message", "PATCH", runPath, "/repos/{owner}/{repo}/check-runs/{check_run_id}",
			map[string]any{"output": map[string]any{"title": "t", "summary": "s", "annotations": []any{map[string]any{"path": "a.go", "start_line": 1, "end_line": 1, "annotation_level": "warning"}}}}},
		{"conclusion stale", "POST", "/repos/" + repo + "/check-runs", "/repos/{owner}/{repo}/check-runs",
			map[string]any{"name": "a", "head_sha": sha, "conclusion": "stale"}},
		{"conclusion stale on update", "PATCH", runPath, "/repos/{owner}/{repo}/check-runs/{check_run_id}",
			map[string]any{"conclusion": "stale"}},
		{"conclusion weird", "POST", "/repos/" + repo + "/check-runs", "/repos/{owner}/{repo}/check-runs",
			map[string]any{"name": "a", "head_sha": sha, "conclusion": "weird"}},
		{"completed_at without a conclusion", "POST", "/repos/" + repo + "/check-runs", "/repos/{owner}/{repo}/check-runs",
			map[string]any{"name": "a", "head_sha": sha, "completed_at": "2024-01-01T00:00:00Z"}},
		{"status completed without a conclusion", "POST", "/repos/" + repo + "/check-runs", "/repos/{owner}/{repo}/check-runs",
			map[string]any{"name": "a", "head_sha": sha, "status": "completed"}},
		{"completed with a conclusion", "POST", "/repos/" + repo + "/check-runs", "/repos/{owner}/{repo}/check-runs",
			map[string]any{"name": "a", "head_sha": sha, "status": "completed", "conclusion": "success", "completed_at": "2024-01-01T00:00:00Z"}},
		{"labels a string", "PATCH", issuePath, "/repos/{owner}/{repo}/issues/{issue_number}",
			map[string]any{"labels": "bug"}},
		{"labels a number", "PATCH", issuePath, "/repos/{owner}/{repo}/issues/{issue_number}",
			map[string]any{"labels": 5}},
		{"labels an array", "PATCH", issuePath, "/repos/{owner}/{repo}/issues/{issue_number}",
			map[string]any{"labels": []any{"bug"}}},
		{"new issue with labels a string", "POST", "/repos/" + repo + "/issues", "/repos/{owner}/{repo}/issues",
			map[string]any{"title": "t", "labels": "bug"}},
		{"new issue with labels an array", "POST", "/repos/" + repo + "/issues", "/repos/{owner}/{repo}/issues",
			map[string]any{"title": "t", "labels": []any{"bug"}}},
		{"adding labels a string", "POST", issuePath + "/labels", "/repos/{owner}/{repo}/issues/{issue_number}/labels",
			map[string]any{"labels": "bug"}},
		{"adding labels an array", "POST", issuePath + "/labels", "/repos/{owner}/{repo}/issues/{issue_number}/labels",
			map[string]any{"labels": []any{"bug"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := json.Marshal(tc.body)
			v, _ := openapi.Decode(b)
			sch, err := rest.RequestSchema(tc.method, tc.tpl)
			if err != nil || sch == nil {
				t.Fatalf("%s %s: no request schema (%v)", tc.method, tc.tpl, err)
			}
			verr := sch.Validate(v)
			prose := proseRules(tc.method+" "+tc.tpl, v)
			githubAccepts := verr == nil && len(prose) == 0
			status, resp := call(tc.method, tc.path, tc.body)
			fakeAccepts := status < 300
			if githubAccepts != fakeAccepts {
				t.Errorf("GitHub accepts: %v (schema: %v; prose: %v); the fake answered %d %s", githubAccepts, verr, prose, status, resp)
			}
			if !fakeAccepts {
				if status != http.StatusUnprocessableEntity {
					t.Errorf("the fake refused with %d, want 422", status)
				}
				rv, _ := openapi.Decode(resp)
				be, _ := rest.ComponentSchema("validation-error", false)
				se, _ := rest.ComponentSchema("basic-error", true)
				if be == nil || se == nil {
					t.Fatal("no error schemas in the subset")
				}
				if be.Validate(rv) != nil && se.Validate(rv) != nil {
					t.Errorf("the fake's refusal is not GitHub's error shape: %s", resp)
				}
			}
		})
	}
}
