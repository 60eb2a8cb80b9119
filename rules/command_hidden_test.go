package rules

import (
	"strings"
	"testing"
)

// Found by review: text GitHub keeps in an attribute (a link's title, an
// image's description), a link reference definition (rendered as nothing) and
// what a <details> element shows collapsed are no command lines.
func TestCommandsHiddenInLinksImagesAndDetails(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       int
	}{
		{"a link's title", "Looks fine [x](https://example.com \"see\n/verify all criteria checked\n\")", 0},
		{"a link reference definition's title", "LGTM [x]\n\n[x]: https://example.com\n'\n/verify hidden\n'", 0},
		{"an image's description", "LGTM ![screenshot\n/verify hidden](https://example.com/a.png)", 0},
		{"inline <details>", "LGTM <details>\n/verify hidden until expanded\n</details>", 0},
		{"a <details> block across paragraphs", "Earlier thread:\n\n<details><summary>log</summary>\n\n/reject tests fail\n\n</details>", 0},
		{"after a closed <details> block", "<details><summary>log</summary>\n\nold\n\n</details>\n\n/verify now", 1},
		{"a link before the command line", "see [the run](https://example.com)\n/verify ok", 1},
		{"a link alone on the line before", "[x](https://example.com)\n/verify ok", 1},
		{"too many brackets: not read", strings.Repeat("[", MaxBrackets+1) + "\n/verify", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ParseCommands(tc.body); len(got) != tc.want {
				t.Fatalf("ParseCommands = %+v, want %d commands", got, tc.want)
			}
		})
	}
}
