package openapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/countersign/countersign/internal/githubtest"
	"github.com/google/go-github/v60/github"
)

// A push to the default branch (PushBranch, RevertDefault) and the
// comparison of two commits are GitHub's: the push webhook lists each
// commit's added, modified and removed files and validates against the
// webhooks description; GET /repos/{owner}/{repo}/compare/{basehead} says
// how the two relate and which files changed since the merge base, and
// conforms to the REST description.
func TestPushToDefaultAndCompareConform(t *testing.T) {
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
	gc, err := github.NewClient(&http.Client{Transport: itr}).WithEnterpriseURLs(s.URL()+"api/v3/", s.URL()+"api/uploads/")
	if err != nil {
		t.Fatal(err)
	}
	compare := func(base, head string) (status string, ahead, behind int, files []string) {
		t.Helper()
		cmp, _, err := gc.Repositories.CompareCommits(ctx, "acme", "widgets", base, head, nil)
		if err != nil {
			t.Fatalf("compare %s...%s: %v", base, head, err)
		}
		for _, f := range cmp.Files {
			files = append(files, f.GetFilename()+":"+f.GetStatus())
		}
		slices.Sort(files)
		return cmp.GetStatus(), cmp.GetAheadBy(), cmp.GetBehindBy(), files
	}

	// A stack's lower pull request squash-merged: main holds its change.
	lower, _ := s.OpenPR(repo, "bob", githubtest.PROptions{HeadRef: "lower", Files: []string{"api.go"}})
	s.OpenPROn(repo, "bob", "lower", githubtest.PROptions{HeadRef: "upper", Files: []string{"ui.go"}})
	squash := s.MergeStacked(repo, lower, "carol", "squash")
	if st, a, b, f := compare(squash, "main"); st != "identical" || a != 0 || b != 0 || len(f) != 0 {
		t.Fatalf("squash...main right after: %s +%d -%d %v", st, a, b, f)
	}
	// An unrelated push: main is ahead, by a change of another file.
	s.PushBranch(repo, "main", "carol", githubtest.Commit{Message: "Docs", Files: []string{"README.md"}})
	if st, a, b, f := compare(squash, "main"); st != "ahead" || a != 1 || b != 0 || strings.Join(f, ",") != "README.md:added" {
		t.Fatalf("squash...main after a docs push: %s +%d -%d %v", st, a, b, f)
	}
	// The squash commit reverted: api.go changed since (removed).
	revert := s.RevertDefault(repo, "carol", squash)
	if st, a, _, f := compare(squash, "main"); st != "ahead" || a != 2 || strings.Join(f, ",") != "README.md:added,api.go:removed" {
		t.Fatalf("squash...main after the revert: %s +%d %v", st, a, f)
	}
	// The other way round: the squash commit is behind main.
	if st, a, b, _ := compare("main", squash); st != "behind" || a != 0 || b != 2 {
		t.Fatalf("main...squash: %s +%d -%d", st, a, b)
	}
	// A branch off an older main has diverged from the new one.
	if st, a, b, _ := compare("main", "upper"); st != "diverged" || a != 2 || b != 3 {
		t.Fatalf("main...upper: %s +%d -%d", st, a, b)
	}
	if _, resp, err := gc.Repositories.CompareCommits(ctx, "acme", "widgets", "nosuchbranch", "main", nil); err == nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("compare with an unknown ref: %v", err)
	}

	ty := &tally{ops: map[string]bool{}, missing: map[string]int{}}
	var pushes []string
	for _, d := range s.Deliveries() {
		checkHook(t, hooks, d, ty)
		if d.Event != "push" {
			continue
		}
		var p github.PushEvent
		if err := json.Unmarshal(d.Payload, &p); err != nil {
			t.Fatal(err)
		}
		if p.GetRef() != "refs/heads/main" {
			continue
		}
		hc := p.GetHeadCommit()
		pushes = append(pushes, fmt.Sprintf("%.7s +%v ~%v -%v", p.GetAfter(), hc.Added, hc.Modified, hc.Removed))
	}
	want := fmt.Sprintf("%.7s +[] ~[] -[api.go]", revert)
	if !slices.Contains(pushes, want) {
		t.Errorf("pushes to main %q, want one %q", pushes, want)
	}
	for _, r := range s.Requests() {
		checkCall(t, rest, r, ty)
	}
	if !ty.ops["GET /repos/{owner}/{repo}/compare/{basehead}"] {
		t.Errorf("no comparison was checked against the description: %v", ty.ops)
	}
}
