package rules

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestClosingRefs(t *testing.T) {
	const repo = "acme/app"
	tests := []struct {
		name string
		text string
		want []int
	}{
		// Keywords.
		{"close", "close #1", []int{1}},
		{"closes", "closes #1", []int{1}},
		{"closed", "closed #1", []int{1}},
		{"fix", "fix #1", []int{1}},
		{"fixes", "Fixes #1", []int{1}},
		{"fixed", "fixed #1", []int{1}},
		{"resolve", "resolve #1", []int{1}},
		{"resolves", "Resolves #1", []int{1}},
		{"resolved", "resolved #1", []int{1}},
		{"any case", "FIXES #3", []int{3}},
		{"colon", "Closes: #4", []int{4}},
		{"tab and spaces", "fixes \t  #5", []int{5}},
		{"in a sentence", "This PR fixes #6.", []int{6}},
		{"in parentheses", "(fixes #7)", []int{7}},
		{"not a keyword", "see #1", nil},
		{"inside a word", "prefix #3", nil},
		{"prefixed word", "unfixed #3", nil},
		{"suffixed word", "fixesx #3", nil},
		{"underscore before", "_fixes #3", nil},
		{"letter before", "éfixes #3", nil},
		{"no whitespace", "fixes#3", nil},
		{"space before colon", "fixes : #3", nil},
		{"no Unicode folding into a keyword", "clo\u017fes #3", nil}, // long s
		{"keyword and reference on different lines", "Fixes\n#3", nil},

		// Several references.
		{"a keyword before each", "Fixes #1, fixes #2", []int{1, 2}},
		{"one keyword, two references", "Fixes #1 and #2", []int{1}},
		{"on several lines", "closes #3\r\nresolves #1\n", []int{3, 1}},
		{"duplicates dropped", "Fixes #2, closes #2, fixes #1", []int{2, 1}},

		// Reference forms.
		{"owner/name", "fixes acme/app#5", []int{5}},
		{"owner/name in another case", "Fixes ACME/App#5", []int{5}},
		{"another repository", "fixes other/app#5", nil},
		{"another repository's fork name", "fixes acme/app2#5", nil},
		{"URL", "Resolves https://github.com/acme/app/issues/6", []int{6}},
		{"http URL on another host", "fixes http://ghe.example.com/Acme/App/issues/6", []int{6}},
		{"URL with a trailing slash", "fixes https://github.com/acme/app/issues/6/", []int{6}},
		{"URL with a fragment", "fixes https://github.com/acme/app/issues/6#issuecomment-123", []int{6}},
		{"URL then a full stop", "fixes https://github.com/acme/app/issues/6.", []int{6}},
		{"URL of another repository", "fixes https://github.com/other/app/issues/6", nil},
		{"pull request URL", "fixes https://github.com/acme/app/pull/6", nil},
		{"URL with letters after the number", "fixes https://github.com/acme/app/issues/12abc", nil},
		{"letters after the number", "fixes #12abc", nil},
		{"punctuation after the number", "fixes #12; done", []int{12}},

		// Numbers.
		{"zero", "fixes #0", nil},
		{"largest int32", "fixes #2147483647", []int{2147483647}},
		{"beyond int32", "fixes #2147483648", nil},
		{"beyond int64", "fixes #99999999999999999999", nil},
		{"leading zeros", "fixes #007", []int{7}},

		// Hidden text.
		{"in a fenced block", "```\nfixes #1\n```\nfixes #2", []int{2}},
		{"in a tilde fence", "~~~md\nfixes #1\n~~~", nil},
		{"in an HTML comment", "<!-- fixes #1 -->fixes #2", []int{2}},
		{"in a multi-line HTML comment", "<!--\nFixes #1\n-->\nFixes #2", []int{2}},
		{"across a comment", "fixes <!-- x --> #1", nil},
		{"in an unclosed HTML comment", "<!-- template\nfixes #1", nil},
		{"empty", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ClosingRefs(tt.text, repo); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ClosingRefs(%q, %q) = %v, want %v", tt.text, repo, got, tt.want)
			}
		})
	}
}

func FuzzClosingRefs(f *testing.F) {
	for _, s := range []string{
		"Fixes #1, fixes #2", "closes acme/app#3", "resolved: https://github.com/acme/app/issues/4#x",
		"```\nfixes #5\n```", "<!-- fixes #6 -->", "fixes #2147483648", "fixes #007", "prefix #8",
	} {
		f.Add(s, "acme/app")
	}
	f.Fuzz(func(t *testing.T, text, repo string) {
		refs := ClosingRefs(text, repo)
		seen := map[int]bool{}
		for _, n := range refs {
			if n <= 0 {
				t.Errorf("%q: non-positive %d", text, n)
			}
			if seen[n] {
				t.Errorf("%q: %d twice", text, n)
			}
			seen[n] = true
			if !strings.Contains(text, strconv.Itoa(n)) {
				t.Errorf("%q: %d is not in the text", text, n)
			}
		}
	})
}
