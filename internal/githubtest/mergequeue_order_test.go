package githubtest

import (
	"slices"
	"testing"

	"github.com/google/go-github/v60/github"
)

// Groups built on groups, their merge_group webhooks sent in the order a
// test picks, and groups merged together as GitHub does: the base branch
// fast-forwarded to the last merged group's commit.
func TestMergeQueueOrderAndMergeThrough(t *testing.T) {
	e := newEnv(t)
	a, _ := e.s.OpenPR(repoName, "alice", PROptions{Title: "A"})
	b, _ := e.s.OpenPR(repoName, "bob", PROptions{Title: "B"})
	c, _ := e.s.OpenPR(repoName, "bob", PROptions{Title: "C"})
	e.wait()
	start := e.hooks.count()
	e.s.DropWebhooks(true)
	groupA := e.s.EnqueuePR(repoName, a, "alice")
	groupB := e.s.EnqueuePR(repoName, b, "bob")
	groupC := e.s.EnqueuePR(repoName, c, "bob")
	e.s.DropWebhooks(false)
	held := e.s.DroppedWebhooks("merge_group", "checks_requested")
	if len(held) != 3 {
		t.Fatalf("%d held", len(held))
	}
	if err := e.s.SendDropped(held[2].ID, held[0].ID, held[1].ID); err != nil {
		t.Fatal(err)
	}
	if err := e.s.SendDropped(held[0].ID); err == nil {
		t.Fatal("a held webhook was sent twice")
	}
	e.wait()
	hooks := e.hooks.since(start)
	var heads, bases []string
	for _, h := range hooks {
		mg := h.Payload["merge_group"].(map[string]any)
		heads, bases = append(heads, mg["head_sha"].(string)), append(bases, mg["base_sha"].(string))
		if h.ID == "" || !slices.ContainsFunc(held, func(w SentWebhook) bool { return w.ID == h.ID }) {
			t.Fatalf("delivery %q is not one of the held ones", h.ID)
		}
	}
	if !slices.Equal(heads, []string{groupC, groupA, groupB}) || !slices.Equal(bases[1:], []string{e.s.HeadSHA(repoName), groupA}) || bases[0] != groupB {
		t.Fatalf("sent heads %v on bases %v", heads, bases)
	}
	if len(e.s.DroppedWebhooks("merge_group", "")) != 0 {
		t.Fatal("sent webhooks are still listed as dropped")
	}

	// B's group passes: GitHub merges A and B, the branch moves to B's group.
	start = e.hooks.count()
	if !e.s.MergeQueueThrough(repoName, b, "bob") {
		t.Fatal("B not queued")
	}
	e.wait()
	if got := kinds(e.hooks.since(start)); !slices.Equal(got, []string{"merge_group.destroyed", "merge_group.destroyed",
		"pull_request.closed", "pull_request.closed", "push"}) {
		t.Fatalf("webhooks %v", got)
	}
	if e.s.HeadSHA(repoName) != groupB {
		t.Fatalf("the base branch is at %s, want B's group %s", e.s.HeadSHA(repoName), groupB)
	}
	for _, n := range []int{a, b} {
		pr, _, err := e.client.PullRequests.Get(e.ctx, "acme", "widgets", n)
		if err != nil || !pr.GetMerged() {
			t.Fatalf("#%d not merged: %v", n, err)
		}
	}
	if q := e.s.MergeQueue(repoName); len(q) != 1 || q[0].HeadSHA != groupC || q[0].BaseSHA != groupB {
		t.Fatalf("queue %+v: C stays, built on the branch's new head", q)
	}
	refs, _, err := e.client.Git.ListMatchingRefs(e.ctx, "acme", "widgets", &github.ReferenceListOptions{Ref: "heads/main"})
	if err != nil || len(refs) != 1 || refs[0].GetObject().GetSHA() != groupB {
		t.Fatalf("refs/heads/main: %+v %v", refs, err)
	}
	if err := e.s.Err(); err != nil {
		t.Fatal(err)
	}
}
