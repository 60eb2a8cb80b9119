package mergequeue

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/rules"
)

const (
	shaA = "929f8209d40f77f4abc622a499c93a83babdbe64"
	shaB = "2ffea6db159f6b6c47a24e778fb9ef40cf6b1c7d"
)

func TestParseHeadRef(t *testing.T) {
	sha256 := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		ref  string
		want Ref
		err  string
	}{
		{ref: RefPrefix + "main/pr-104-" + shaA, want: Ref{Base: "main", PR: 104, SHA: shaA}},
		{ref: RefPrefix + "release/1.x/pr-7-" + shaA, want: Ref{Base: "release/1.x", PR: 7, SHA: shaA}},
		{ref: RefPrefix + "main/pr-7-" + sha256, want: Ref{Base: "main", PR: 7, SHA: sha256}},
		{ref: "refs/heads/main", err: "not under"},
		{ref: "refs/heads/gh-readonly-queue/pr-7-" + shaA, err: "names no base branch"},
		{ref: RefPrefix + "main/pr-7", err: "does not end in pr-<number>-<sha>"},
		{ref: RefPrefix + "main/issue-7-" + shaA, err: "does not end in pr-<number>-<sha>"},
		{ref: RefPrefix + "main/pr-0-" + shaA, err: "not a pull request number"},
		{ref: RefPrefix + "main/pr-007-" + shaA, err: "not a pull request number"},
		{ref: RefPrefix + "main/pr--7-" + shaA, err: "not a pull request number"},
		{ref: RefPrefix + "main/pr-99999999999999999999-" + shaA, err: "not a pull request number"},
		{ref: RefPrefix + "main/pr-7-" + strings.ToUpper(shaA), err: "not a commit id"},
		{ref: RefPrefix + "main/pr-7-" + shaA[:39], err: "not a commit id"},
		{ref: RefPrefix + "main/pr-7-" + shaA + "-x", err: "not a commit id"},
		{ref: RefPrefix + "a//b/pr-7-" + shaA, err: "not a branch name"},
	} {
		got, err := ParseHeadRef(tc.ref)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseHeadRef(%q) = %+v, %v; want an error with %q", tc.ref, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseHeadRef(%q) = %+v, %v; want %+v", tc.ref, got, err, tc.want)
		}
	}
}

// The real payload GitHub documents parses, and its entry is checked.
func TestParseEventRealPayload(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "github-webhooks", "merge_group", "checks_requested.payload.json"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := ParseEvent(b)
	if err != nil {
		t.Fatal(err)
	}
	if e.Action != ChecksRequested || e.MergeGroup.HeadSHA != shaB || e.Repository.FullName != "octo-org/octo-repo" {
		t.Fatalf("event = %+v", e)
	}
	r, err := e.Entry()
	if err != nil || r != (Ref{Base: "main", PR: 104, SHA: shaA}) {
		t.Fatalf("Entry = %+v, %v", r, err)
	}
	e.MergeGroup.BaseRef = "refs/heads/develop"
	if _, err := e.Entry(); err == nil || !strings.Contains(err.Error(), "base_ref") {
		t.Fatalf("a head_ref into another branch than base_ref: %v", err)
	}
	e.MergeGroup.BaseRef, e.MergeGroup.HeadSHA = "refs/heads/main", "HEAD"
	if _, err := e.Entry(); err == nil {
		t.Fatal("a head_sha that is no commit id must be refused")
	}
}

func TestTrackAndForget(t *testing.T) {
	var gs []Group
	for i := 0; i < MaxGroups+2; i++ {
		var dropped []string
		gs, dropped = Track(gs, Group{HeadSHA: strings.Repeat(string(rune('a'+i)), 40)})
		if want := i >= MaxGroups; (len(dropped) == 1) != want {
			t.Fatalf("track %d: dropped %v", i, dropped)
		}
	}
	if len(gs) != MaxGroups || gs[0].HeadSHA[0] != 'c' {
		t.Fatalf("kept %d groups, oldest %s", len(gs), gs[0].HeadSHA)
	}
	again, _ := Track(gs, Group{HeadSHA: gs[0].HeadSHA, Conclusion: "failure"})
	if len(again) != MaxGroups || again[len(again)-1].Conclusion != "failure" {
		t.Fatal("tracking a group again replaces it")
	}
	left, ok := Forget(gs, gs[1].HeadSHA)
	if !ok || len(left) != MaxGroups-1 {
		t.Fatal("Forget drops the group")
	}
	if _, ok := Forget(left, "nope"); ok {
		t.Fatal("Forget of an unknown group")
	}
}

func TestDecide(t *testing.T) {
	const head, old = "1111111111111111111111111111111111111111", "0000000000000000000000000000000000000000"
	alice := rules.User{ID: 1, Login: "alice"}
	pr := func(links ...int) *rules.PullRequest {
		return &rules.PullRequest{Repo: "acme/widgets", Links: links, PRFacts: rules.PRFacts{Number: 12, Author: alice, Head: head, Open: true}}
	}
	builtBy := func(pushers ...rules.User) *rules.PullRequest { // who built its head read: these pushed
		p := pr()
		p.CommittersHead, p.Pushers = head, pushers
		return p
	}
	task := func(n int, s rules.State, seenHead string) *rules.Task {
		return &rules.Task{Repo: "acme/widgets", Number: n, State: s, PRs: []rules.LinkedPR{{Number: 12, Head: seenHead, Open: true}}}
	}
	entry := rules.QueueEntry{PR: 12, Ref: "gh-readonly-queue/main/pr-12-" + shaA, Base: "main", Head: head}
	closed := pr(3)
	closed.Open = false
	behind := pr(3)
	behind.Head = old
	tooMany := pr()
	tooMany.TooMany = 11
	for _, tc := range []struct {
		name               string
		in                 Input
		status, conclusion string
		note               string
	}{
		{"every task verified for the queued head", Input{PR: pr(3, 4), Tasks: []*rules.Task{task(3, rules.Verified, head), task(4, rules.Verified, head)}},
			"completed", "success", ""},
		{"one task in review", Input{PR: pr(3, 4), Tasks: []*rules.Task{task(3, rules.Verified, head), task(4, rules.Review, head)}},
			"completed", "failure", "#4 is `review`"},
		{"a task reopened", Input{PR: pr(3), Tasks: []*rules.Task{task(3, rules.InProgress, head)}},
			"completed", "failure", "#3 is `in-progress`"},
		{"a task verified for an older head only", Input{PR: pr(3), Tasks: []*rules.Task{task(3, rules.Verified, old)}},
			"in_progress", "", "has not yet taken in the head"},
		{"an older head and a task not verified: fails at once", Input{PR: pr(3, 4), Tasks: []*rules.Task{task(3, rules.Verified, old), task(4, rules.Completed, head)}},
			"completed", "failure", "#4 is `completed`"},
		{"a linked issue with no record", Input{PR: pr(3), Tasks: []*rules.Task{nil}},
			"completed", "failure", "#3 is not a task countersign tracks"},
		{"the record is behind the queued head", Input{PR: behind, Tasks: []*rules.Task{task(3, rules.Verified, old)}},
			"in_progress", "", "countersign's record of it is at 000000000000"},
		{"the pull request is gone", Input{},
			"completed", "failure", "finds no pull request #12"},
		{"the pull request is closed", Input{PR: closed, Tasks: []*rules.Task{task(3, rules.Verified, head)}},
			"completed", "failure", "#12 is closed"},
		{"the queued head is unknown", Input{PR: pr(3), Tasks: []*rules.Task{task(3, rules.Verified, head)}, Entry: rules.QueueEntry{PR: 12}},
			"completed", "failure", "could not tell which head"},
		{"closes no task, require", Input{PR: pr(), Gate: rules.GateConfig{Untracked: rules.UntrackedRequire}},
			"completed", "failure", ""},
		{"closes no task, allow", Input{PR: pr(), Gate: rules.GateConfig{Untracked: rules.UntrackedAllow}},
			"completed", "success", ""},
		{"closes no task, exempt author", Input{PR: builtBy(alice), Gate: rules.GateConfig{Untracked: rules.UntrackedRequire, Exempt: []string{"alice"}}},
			"completed", "success", ""},
		{"closes no task, exempt author, bob pushed to it", Input{PR: builtBy(alice, rules.User{ID: 2, Login: "bob"}), Gate: rules.GateConfig{Untracked: rules.UntrackedRequire, Exempt: []string{"alice"}}},
			"completed", "failure", "@bob pushed to it"},
		{"names too many tasks, allow", Input{PR: tooMany, Gate: rules.GateConfig{Untracked: rules.UntrackedAllow}},
			"completed", "failure", "names 11 issues"},
	} {
		in := tc.in
		if in.Entry == (rules.QueueEntry{}) {
			in.Entry = entry
		}
		c := Decide(in)
		if c.Status != tc.status || c.Conclusion != tc.conclusion || !strings.Contains(c.Note, tc.note) {
			t.Errorf("%s: check %s/%s, note %q; want %s/%s noting %q", tc.name, c.Status, c.Conclusion, c.Note, tc.status, tc.conclusion, tc.note)
		}
		if c.Queue == nil || c.Queue.PR != 12 {
			t.Errorf("%s: the check must name its queue entry: %+v", tc.name, c.Queue)
		}
	}
}

// fakeGitHub holds queue branches (full ref -> sha) and commits' first
// parents (sha -> parent); reads counts FirstParent's calls.
type fakeGitHub struct {
	refs, parents map[string]string
	reads         int
}

func (f *fakeGitHub) PullHead(context.Context, string, int) (string, bool, error) {
	return "", false, ErrGone
}
func (f *fakeGitHub) QueueBranches(context.Context, string) (map[string]string, error) {
	return f.refs, nil
}
func (f *fakeGitHub) FirstParent(_ context.Context, _, sha string) (string, error) {
	f.reads++
	return f.parents[sha], nil
}

// A group found again from the queue branches is built on its commit's
// first parent (the lost payload's base_sha); none known, none (it waits:
// Resolve).
func TestFind(t *testing.T) {
	gh := &fakeGitHub{refs: map[string]string{
		RefPrefix + "main/pr-12-" + shaA:    shaB,
		RefPrefix + "main/pr-13-" + shaB:    shaA,
		RefPrefix + "main/pr-12-nonsense":   shaA,
		RefPrefix + "release/pr-12-" + shaB: "not-a-sha",
	}, parents: map[string]string{shaB: shaA}}
	got, err := Find(context.Background(), gh, "acme/widgets", 12)
	if err != nil || len(got) != 1 || got[0].HeadSHA != shaB || got[0].BaseSHA != shaA || got[0].Ref != "gh-readonly-queue/main/pr-12-"+shaA || got[0].Base != "main" {
		t.Fatalf("Find = %+v, %v", got, err)
	}
	if gh.reads != 1 {
		t.Errorf("%d commits read, want 1 (one per group found)", gh.reads)
	}
	gh.parents = nil
	if got, err = Find(context.Background(), gh, "acme/widgets", 12); err != nil || len(got) != 1 || got[0].BaseSHA != "" {
		t.Fatalf("a group whose commit cannot be read: Find = %+v, %v", got, err)
	}
}
