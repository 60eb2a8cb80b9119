package githubtest

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-github/v60/github"
)

// keysOf lists the keys of the JSON object at path (dotted) in payload.
func keysOf(t *testing.T, payload map[string]any, path string) []string {
	t.Helper()
	var v any = payload
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%s: not an object", path)
		}
		v = m[k]
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s: not an object: %v", path, v)
	}
	return slices.Sorted(maps.Keys(m))
}

func TestMergeQueue(t *testing.T) {
	e := newEnv(t)
	a, _ := e.s.OpenPR(repoName, "alice", PROptions{Title: "A"})
	b, _ := e.s.OpenPR(repoName, "bob", PROptions{Title: "B"})
	e.wait()
	start := e.hooks.count()
	groupA := e.s.EnqueuePR(repoName, a, "alice")
	groupB := e.s.EnqueuePR(repoName, b, "bob")
	e.wait()
	hooks := e.hooks.since(start)
	if got := kinds(hooks); !slices.Equal(got, []string{"merge_group.checks_requested", "merge_group.checks_requested"}) {
		t.Fatalf("webhooks %v", got)
	}
	// Shaped like the real payload (testdata/github-webhooks/merge_group).
	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "github-webhooks", "merge_group", "checks_requested.payload.json"))
	if err != nil {
		t.Fatal(err)
	}
	var real map[string]any
	if err := json.Unmarshal(raw, &real); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"merge_group", "merge_group.head_commit", "merge_group.head_commit.author"} {
		got, want := keysOf(t, hooks[0].Payload, path), keysOf(t, real, path)
		for _, k := range want {
			if !slices.Contains(got, k) {
				t.Errorf("%s lacks %q (has %v)", path, k, got)
			}
		}
	}
	var ev github.MergeGroupEvent
	if err := json.Unmarshal(hooks[1].Raw, &ev); err != nil {
		t.Fatal(err)
	}
	mg := ev.GetMergeGroup()
	if mg.GetHeadSHA() != groupB || mg.GetBaseSHA() != groupA || mg.GetBaseRef() != "refs/heads/main" ||
		mg.GetHeadRef() != "refs/heads/gh-readonly-queue/main/pr-"+strconv.Itoa(b)+"-"+groupA || ev.GetInstallation().GetID() != instID {
		t.Fatalf("second group %+v", mg)
	}

	// The group's commit takes check runs, and the queue's branches are refs.
	if _, _, err := e.client.Checks.CreateCheckRun(e.ctx, "acme", "widgets", github.CreateCheckRunOptions{Name: "ci", HeadSHA: groupA}); err != nil {
		t.Fatalf("a check run on the group's commit: %v", err)
	}
	refs, _, err := e.client.Git.ListMatchingRefs(e.ctx, "acme", "widgets", &github.ReferenceListOptions{Ref: "heads/gh-readonly-queue/"})
	if err != nil || len(refs) != 2 || refs[0].GetObject().GetSHA() == "" || !strings.HasPrefix(refs[0].GetRef(), "refs/heads/gh-readonly-queue/main/pr-") {
		t.Fatalf("matching refs %+v %v", refs, err)
	}

	// A group's commit, read as GitHub serves it (GET a commit): its first
	// parent is the commit the group is built on, the second the queued
	// pull request's head; a commit no one made is 422.
	cm, _, err := e.client.Repositories.GetCommit(e.ctx, "acme", "widgets", groupB, nil)
	if err != nil || len(cm.Parents) != 2 || cm.Parents[0].GetSHA() != groupA || cm.GetSHA() != groupB || cm.Stats == nil {
		t.Fatalf("group B's commit %+v, %v", cm, err)
	}
	if pr, _, err := e.client.PullRequests.Get(e.ctx, "acme", "widgets", b); err != nil || cm.Parents[1].GetSHA() != pr.GetHead().GetSHA() {
		t.Fatalf("group B's second parent %s, pull request %v", cm.Parents[1].GetSHA(), err)
	}
	if _, resp, err := e.client.Repositories.GetCommit(e.ctx, "acme", "widgets", strings.Repeat("e", 40), nil); err == nil || resp.StatusCode != 422 {
		t.Fatalf("an unknown commit: %v", err)
	}

	// Taking A out destroys its group and rebuilds B's on the branch.
	e.wait() // the check run's own webhook first
	start = e.hooks.count()
	e.s.DequeuePR(repoName, a, "alice")
	e.wait()
	hooks = e.hooks.since(start)
	if got := kinds(hooks); !slices.Equal(got, []string{"merge_group.destroyed", "merge_group.destroyed", "merge_group.checks_requested"}) {
		t.Fatalf("webhooks %v", got)
	}
	if hooks[0].Payload["reason"] != "dequeued" || hooks[1].Payload["reason"] != "invalidated" {
		t.Fatalf("reasons %v, %v", hooks[0].Payload["reason"], hooks[1].Payload["reason"])
	}
	q := e.s.MergeQueue(repoName)
	if len(q) != 1 || q[0].PR != b || q[0].HeadSHA == groupB {
		t.Fatalf("queue %+v", q)
	}
	// A push takes a queued pull request out; merging the head merges it.
	e.s.EnqueuePR(repoName, a, "alice")
	e.s.Push(repoName, a)
	if q := e.s.MergeQueue(repoName); len(q) != 1 {
		t.Fatalf("after a push: queue %+v", q)
	}
	if got := e.s.MergeQueueHead(repoName, "bob"); got != b {
		t.Fatalf("merged #%d", got)
	}
	if iv, _ := e.s.Issue(repoName, b); iv.State != "closed" {
		t.Fatal("the merged pull request is open")
	}
	if err := e.s.Err(); err != nil {
		t.Fatal(err)
	}
}
