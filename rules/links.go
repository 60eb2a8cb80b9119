package rules

import (
	"math"
	"regexp"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// closingRef matches a closing keyword and the issue reference after it, in
// text lower-cased by lowerASCII. Group 1 is the repository of an
// owner/name#N reference, group 2 that of an issue URL, group 3 the number.
// Whole words are checked by the caller (RE2 has no look-around).
var closingRef = regexp.MustCompile(
	`(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?):?[ \t]+` +
		`(?:#|([\w.-]+/[\w.-]+)#|https?://[^\s/]+/([\w.-]+/[\w.-]+)/issues/)(\d+)`)

// ClosingRefs returns the numbers of the issues of repo ("owner/name") that text
// closes with GitHub's closing keywords, in order of first appearance, without duplicates.
//
// A keyword (close, closes, closed, fix, fixes, fixed, resolve, resolves,
// resolved, in any case, as a whole word, optionally followed by a colon) and
// whitespace come before each reference: #N, owner/name#N or an issue's URL
// (any host); references to other repositories are ignored. The keyword and
// its reference must be on one line, outside fenced code blocks and HTML
// comments.
func ClosingRefs(text, repo string) []int {
	repo = lowerASCII(repo)
	var refs []int
	seen := map[int]bool{}
	for l := range markdownLines(text) {
		for _, part := range l.visible {
			s := lowerASCII(part)
			for _, m := range closingRef.FindAllStringSubmatchIndex(s, -1) {
				before, _ := utf8.DecodeLastRuneInString(s[:m[0]])
				after, _ := utf8.DecodeRuneInString(s[m[1]:])
				if m[0] > 0 && isWordRune(before) || m[1] < len(s) && isWordRune(after) {
					continue // inside a word, as in "prefix #3" or "#12abc"
				}
				if m[2] >= 0 && s[m[2]:m[3]] != repo || m[4] >= 0 && s[m[4]:m[5]] != repo {
					continue
				}
				n, err := strconv.Atoi(s[m[6]:m[7]])
				if err != nil || n <= 0 || n > math.MaxInt32 || seen[n] {
					continue
				}
				seen[n] = true
				refs = append(refs, n)
			}
		}
	}
	return refs
}

func isWordRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}
