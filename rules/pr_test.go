package rules

import (
	"regexp"
	"slices"
	"strings"
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

func TestCoAuthors(t *testing.T) {
	tests := []struct {
		name    string
		message string
		want    []string
	}{
		{"noreply email with an id", "Fix login\n\nCo-authored-by: Bob Smith <1234+bob@users.noreply.github.com>", []string{"bob"}},
		{"noreply email without an id", "Fix\n\nCo-authored-by: Bob Smith <bob@users.noreply.github.com>", []string{"bob"}},
		{"noreply email in another case", "Co-authored-by: B <12+Bob@Users.NoReply.GitHub.com>", []string{"Bob"}},
		{"noreply email of a bot", "Co-authored-by: dependabot[bot] <49699333+dependabot[bot]@users.noreply.github.com>", []string{"dependabot[bot]"}},
		{"noreply email wins over the name", "Co-authored-by: erin <7+bob@users.noreply.github.com>", []string{"bob"}},
		{"a login-shaped name", "Co-authored-by: erin <erin@example.com>", []string{"erin"}},
		{"a login-shaped name with hyphens and digits", "Co-authored-by: erin-2 <e@example.com>", []string{"erin-2"}},
		{"a name with spaces: ignored", "Co-authored-by: Erin Smith <erin@example.com>", nil},
		{"a name with a dot: ignored", "Co-authored-by: erin.smith <erin@example.com>", nil},
		{"a name starting with a hyphen: ignored", "Co-authored-by: -erin <erin@example.com>", nil},
		{"a 40-character name: ignored", "Co-authored-by: " + strings.Repeat("a", 40) + " <a@example.com>", nil},
		{"a 39-character name", "Co-authored-by: " + strings.Repeat("a", 39) + " <a@example.com>", []string{strings.Repeat("a", 39)}},
		{"no name, not a noreply email: ignored", "Co-authored-by: <erin@example.com>", nil},
		{"no email: ignored", "Co-authored-by: erin", nil},
		{"several trailers, in order", "Fix\n\nCo-authored-by: erin <e@x.org>\nCo-authored-by: B <1+bob@users.noreply.github.com>\nCo-authored-by: carol <c@x.org>",
			[]string{"erin", "bob", "carol"}},
		{"several trailers, duplicates in another case once", "Co-authored-by: erin <e@x.org>\nCo-authored-by: Erin <1+ERIN@users.noreply.github.com>",
			[]string{"erin"}},
		{"trailer key in upper case", "CO-AUTHORED-BY: erin <e@x.org>", []string{"erin"}},
		{"trailer key in lower case", "co-authored-by: erin <e@x.org>", []string{"erin"}},
		{"trailer key in mixed case", "Co-Authored-By: erin <e@x.org>", []string{"erin"}},
		{"no space after the colon", "Co-authored-by:erin <e@x.org>", []string{"erin"}},
		{"indented trailer", "  Co-authored-by: erin <e@x.org>", []string{"erin"}},
		{"trailing spaces", "Co-authored-by: erin <e@x.org>  \n", []string{"erin"}},
		{"CRLF line endings", "Fix\r\n\r\nCo-authored-by: erin <e@x.org>\r\nCo-authored-by: bob <b@x.org>\r\n", []string{"erin", "bob"}},
		{"inside a sentence: not a trailer", "thanks to Co-authored-by: erin <e@x.org>", nil},
		{"another trailer key: ignored", "Signed-off-by: erin <e@x.org>", nil},
		{"text after the email: not a trailer", "Co-authored-by: erin <e@x.org> and bob", nil},
		{"empty message", "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := CoAuthors(tc.message); !slices.Equal(got, tc.want) {
				t.Errorf("CoAuthors = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLoginFromAuthor(t *testing.T) {
	tests := []struct {
		name, author, email, want string
	}{
		{"noreply with an id", "Bob Smith", "1234+bob@users.noreply.github.com", "bob"},
		{"noreply without an id", "Bob Smith", "bob@users.noreply.github.com", "bob"},
		{"noreply with spaces around", "Bob Smith", "  1+bob@users.noreply.github.com ", "bob"},
		{"noreply of a bot", "", "41898282+github-actions[bot]@users.noreply.github.com", "github-actions[bot]"},
		{"noreply of another domain: the name", "erin", "1+bob@users.noreply.example.com", "erin"},
		{"login-shaped name", "erin", "erin@example.com", "erin"},
		{"login-shaped name with spaces around", " erin ", "", "erin"},
		{"name with spaces", "Erin Smith", "erin@example.com", ""},
		{"name with a non-ASCII letter", "ërin", "erin@example.com", ""},
		{"nothing", "", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := LoginFromAuthor(tc.author, tc.email); got != tc.want {
				t.Errorf("LoginFromAuthor(%q, %q) = %q, want %q", tc.author, tc.email, got, tc.want)
			}
		})
	}
}

// loginChars is what every login CoAuthors returns is made of (logins compare
// case-insensitively, "[Bot]" included).
var loginChars = regexp.MustCompile(`^[A-Za-z0-9-]+(\[(?i:bot)\])?$`)

func FuzzCoAuthors(f *testing.F) {
	for _, s := range []string{
		"",
		"Fix\n\nCo-authored-by: Bob <1234+bob@users.noreply.github.com>",
		"Co-authored-by: erin <erin@example.com>\nCo-authored-by: Erin Smith <e@x.org>",
		"co-authored-by: dependabot[bot] <49699333+dependabot[bot]@users.noreply.github.com>\r\n",
		"Co-authored-by: <>",
		"Co-authored-by: a <b@users.noreply.github.com\n>",
		"  CO-AUTHORED-BY:\terin\t<e@x>\t",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		got := CoAuthors(msg)
		for i, login := range got {
			if !loginChars.MatchString(login) {
				t.Fatalf("CoAuthors(%q) returned %q, not shaped like a login", msg, login)
			}
			if !loginRE.MatchString(login) && !botRE.MatchString(login) {
				t.Fatalf("CoAuthors(%q) returned %q, not a GitHub login", msg, login)
			}
			if !strings.Contains(msg, login) {
				t.Fatalf("CoAuthors(%q) returned %q, which the message does not contain", msg, login)
			}
			for _, other := range got[:i] {
				if SameLogin(other, login) {
					t.Fatalf("CoAuthors(%q) returned %q twice", msg, login)
				}
			}
		}
		if !strings.Contains(strings.ToLower(msg), "co-authored-by:") && len(got) > 0 {
			t.Fatalf("CoAuthors(%q) = %q without a trailer", msg, got)
		}
		if again := CoAuthors(msg); !slices.Equal(again, got) {
			t.Fatalf("CoAuthors(%q) is not deterministic: %q then %q", msg, got, again)
		}
	})
}
