package rules

import (
	"slices"
	"testing"
)

func fanPR(n int, open, merged bool, links ...int) *PullRequest {
	return &PullRequest{Repo: fxRepo, Links: links, PRFacts: PRFacts{Number: n, Author: u("dave"), Head: "h1", Open: open, Merged: merged}}
}

func TestFanout(t *testing.T) {
	te := func(n int, k EventKind) TaskEvent { return TaskEvent{Number: n, Kind: k} }
	tests := []struct {
		name     string
		old, cur *PullRequest
		kind     EventKind
		want     []TaskEvent
	}{
		{"opened: each link linked", nil, fanPR(20, true, false, 3, 4), PRLinked,
			[]TaskEvent{te(3, PRLinked), te(4, PRLinked)}},
		{"opened without links: nothing", nil, fanPR(20, true, false), PRLinked, nil},
		{"edited: new link linked, kept link nothing, removed link unlinked", fanPR(20, true, false, 3, 4), fanPR(20, true, false, 4, 5), PRLinked,
			[]TaskEvent{te(5, PRLinked), te(3, PRUnlinked)}},
		{"edited: every link removed", fanPR(20, true, false, 3, 4), fanPR(20, true, false), PRLinked,
			[]TaskEvent{te(3, PRUnlinked), te(4, PRUnlinked)}},
		{"edited: links unchanged, nothing", fanPR(20, true, false, 3), fanPR(20, true, false, 3), PRLinked, nil},
		{"edited: description changed, kept links restated", fanPR(20, true, false, 3, 4),
			func() *PullRequest {
				p := fanPR(20, true, false, 3, 4)
				p.Body = "now without the contradiction"
				return p
			}(), PRLinked,
			[]TaskEvent{te(3, PRLinked), te(4, PRLinked)}},
		{"pushed: kept link gets the push", fanPR(20, true, false, 3), fanPR(20, true, false, 3), PRPushed,
			[]TaskEvent{te(3, PRPushed)}},
		{"pushed: a new link gets PRLinked only", fanPR(20, true, false, 3), fanPR(20, true, false, 3, 5), PRPushed,
			[]TaskEvent{te(3, PRPushed), te(5, PRLinked)}},
		{"ready: kept link", fanPR(20, true, false, 3), fanPR(20, true, false, 3), PRReady, []TaskEvent{te(3, PRReady)}},
		{"ready: first seen, PRLinked carries it", nil, fanPR(20, true, false, 3), PRReady, []TaskEvent{te(3, PRLinked)}},
		{"draft: kept link", fanPR(20, true, false, 3), fanPR(20, true, false, 3), PRDraft, []TaskEvent{te(3, PRDraft)}},
		{"pushed: first seen, PRLinked carries it", nil, fanPR(20, true, false, 3), PRPushed, []TaskEvent{te(3, PRLinked)}},
		{"reviewed: kept link", fanPR(20, true, false, 3), fanPR(20, true, false, 3), PRReviewed, []TaskEvent{te(3, PRReviewed)}},
		{"reviewed on a first-seen PR: linked, then the review", nil, fanPR(20, true, false, 3, 4), PRReviewed,
			[]TaskEvent{te(3, PRLinked), te(3, PRReviewed), te(4, PRLinked), te(4, PRReviewed)}},
		{"commented on a first-seen PR: linked, then the comment", nil, fanPR(20, true, false, 3), Commented,
			[]TaskEvent{te(3, PRLinked), te(3, Commented)}},
		{"commented: kept link", fanPR(20, true, false, 3), fanPR(20, true, false, 3), Commented, []TaskEvent{te(3, Commented)}},
		{"closed unmerged: every link unlinked, old and new", fanPR(20, true, false, 3, 4), fanPR(20, false, false, 4, 5), PRUnlinked,
			[]TaskEvent{te(3, PRUnlinked), te(4, PRUnlinked), te(5, PRUnlinked)}},
		{"closed unmerged, first seen: unlinked", nil, fanPR(20, false, false, 3), PRUnlinked, []TaskEvent{te(3, PRUnlinked)}},
		{"closed unmerged, whatever the kind", fanPR(20, true, false, 3), fanPR(20, false, false, 3), PRReviewed,
			[]TaskEvent{te(3, PRUnlinked)}},
		{"merged: kept link gets the merge", fanPR(20, true, false, 3), fanPR(20, false, true, 3), PRMerged, []TaskEvent{te(3, PRMerged)}},
		{"merged, first seen: linked, then merged", nil, fanPR(20, false, true, 3), PRMerged,
			[]TaskEvent{te(3, PRLinked), te(3, PRMerged)}},
		{"reopened: the links of a closed record are linked again", fanPR(20, false, false, 3), fanPR(20, true, false, 3), PRLinked,
			[]TaskEvent{te(3, PRLinked)}},
		{"a PR linking itself: ignored when opened", nil, fanPR(20, true, false, 20, 3), PRLinked, []TaskEvent{te(3, PRLinked)}},
		{"a PR linking itself: ignored when pushed", fanPR(20, true, false, 20, 3), fanPR(20, true, false, 20, 3), PRPushed,
			[]TaskEvent{te(3, PRPushed)}},
		{"a PR linking only itself: nothing", nil, fanPR(20, true, false, 20), PRReviewed, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var oldLinks []int
			if tc.old != nil {
				oldLinks = slices.Clone(tc.old.Links)
			}
			curLinks := slices.Clone(tc.cur.Links)
			got := Fanout(tc.old, tc.cur, tc.kind)
			if !slices.Equal(got, tc.want) {
				t.Errorf("Fanout = %v, want %v", got, tc.want)
			}
			if tc.old != nil && !slices.Equal(tc.old.Links, oldLinks) || !slices.Equal(tc.cur.Links, curLinks) {
				t.Error("Fanout modified its input")
			}
		})
	}
}

func TestPullRequestFacts(t *testing.T) {
	p := &PullRequest{Repo: fxRepo, PRFacts: PRFacts{Number: 12, Author: u("dave"), Head: "h1", Draft: true, Open: true,
		Committers: []Member{MemberOf(u("erin"), "co-author on #12")}}}
	f := p.Facts()
	want := PRFacts{Number: 12, Author: u("dave"), Head: "h1", Draft: true, Open: true, Committers: []Member{MemberOf(u("erin"), "co-author on #12")}}
	if f.Number != want.Number || f.Author != want.Author || f.Head != want.Head || f.Draft != want.Draft || f.Open != want.Open ||
		f.Merged != want.Merged || !slices.Equal(f.Committers, want.Committers) {
		t.Errorf("Facts = %+v, want %+v", *f, want)
	}
	f.Committers[0].Login = "mallory"
	if p.Committers[0].Login != "erin" {
		t.Error("Facts shares the committers with the record")
	}
}
