// Package templates holds every text countersign writes on GitHub (comments,
// the task card, check-run summaries) as embedded text/template files, and the
// hidden markers by which the bot finds its own comments again.
package templates

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"text/template"
	"time"

	"github.com/countersign/countersign/rules"
)

//go:embed *.md.tmpl
var files embed.FS

var all = template.Must(template.New("").Funcs(template.FuncMap{
	"when": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") },
	"user": func(v any) string {
		login := ""
		switch u := v.(type) {
		case string:
			login = u
		case rules.User:
			login = u.Login
		}
		if login == "" {
			return "—"
		}
		return "@" + login
	},
	"users": func(v any) string {
		var logins []string
		switch list := v.(type) {
		case []string:
			logins = list
		case []rules.User:
			logins = rules.Logins(list)
		}
		if len(logins) == 0 {
			return "—"
		}
		out := make([]string, len(logins))
		for i, l := range logins {
			out[i] = "@" + l
		}
		return strings.Join(out, ", ")
	},
	"inc": func(n int) int { return n + 1 },
	"short": func(sha string) string { // a commit's short sha
		if len(sha) > 7 {
			return sha[:7]
		}
		return sha
	},
	"last": func(n int, list any) any { // the last n elements of a slice
		v := reflect.ValueOf(list)
		if v.Kind() != reflect.Slice || v.Len() <= n {
			return list
		}
		return v.Slice(v.Len()-n, v.Len()).Interface()
	},
	"quote": func(s string) string { // a Markdown block quote of s, cut to MaxQuote characters
		lines := strings.Split(strings.TrimRight(strings.ReplaceAll(clipQuote(s), "\r", ""), "\n"), "\n")
		for i, l := range lines {
			lines[i] = "> " + noMention(l)
		}
		return strings.Join(lines, "\n")
	},
	"plain": func(s string) string { // people's or CI's text on one line, pinging no one
		return noMention(strings.Join(strings.Fields(s), " "))
	},
	"detail": func(s string) string { // countersign's words with CI's names in them: code spans kept, links and HTML not
		return noMention(detailEscaper.Replace(strings.Join(strings.Fields(s), " ")))
	},
	"literal": func(s string) string { // people's or CI's text on one line, shown as written: no markup, no HTML, no mentions
		return noMention(markdownEscaper.Replace(strings.Join(strings.Fields(s), " ")))
	},
	"link": func(text, url string) string { // a Markdown link to an https URL, else nothing
		if !strings.HasPrefix(url, "https://") && !strings.HasPrefix(url, "http://") || strings.ContainsAny(url, " \t\r\n()<>[]") {
			return ""
		}
		return "[" + text + "](" + url + ")"
	},
	"mark": func(r any) string { // a criterion's result as a symbol
		switch fmt.Sprint(r) {
		case "pass":
			return "✅"
		case "fail":
			return "❌"
		case "deferred":
			return "⏭️"
		case "unchecked":
			return "👤"
		}
		return "⏳"
	},
	"celltext": func(s string) string { // words (people's among them) in one table cell: no HTML, link or image
		return cellTextEscaper.Replace(strings.Join(strings.Fields(s), " "))
	},
	"cell": func(s string) string { // keep a value inside one Markdown table cell
		s = strings.ReplaceAll(s, "\r", "")
		s = strings.ReplaceAll(s, "\n", " ")
		return strings.ReplaceAll(s, "|", `\|`)
	},
}).ParseFS(files, "*.md.tmpl"))

// Render executes the named template (file name without ".md.tmpl").
func Render(name string, data any) (string, error) {
	var b bytes.Buffer
	if err := all.ExecuteTemplate(&b, name+".md.tmpl", data); err != nil {
		return "", fmt.Errorf("render %s: %w", name, err)
	}
	return b.String(), nil
}

// cardMarker starts the hidden first line of a task card; the task record follows
// it as JSON (json.Marshal escapes '<' and '>', so the record cannot end the
// HTML comment early).
const cardMarker = "<!-- countersign:card "

// CardMarker returns the hidden line that identifies a task card and carries its
// record (any JSON-encodable value), then, when sign is not nil, the hidden
// line that carries sign's signature of the record's exact bytes.
func CardMarker(record any, sign func([]byte) string) (string, error) {
	b, err := json.Marshal(record)
	if err != nil {
		return "", fmt.Errorf("encode card record: %w", err)
	}
	return cardMarker + string(b) + " -->" + sigLine(b, sign), nil
}

// sigMarker starts the hidden line, right after a record's marker line, that
// carries the record's signature.
const sigMarker = "<!-- countersign:sig "

func sigLine(record []byte, sign func([]byte) string) string {
	if sign == nil {
		return ""
	}
	sig := sign(record)
	if strings.ContainsAny(sig, "\r\n<>") {
		return "" // not a signature this package writes
	}
	return "\n" + sigMarker + sig + " -->"
}

// RecordSignature returns the signature carried on the line after the record
// marker that starts body (a task card or a goal issue's body), if any.
func RecordSignature(body string) (string, bool) {
	_, rest, ok := strings.Cut(body, "\n")
	if !ok {
		return "", false
	}
	line, _, _ := strings.Cut(rest, "\n")
	sig, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), sigMarker)
	if !ok {
		return "", false
	}
	sig, ok = strings.CutSuffix(sig, " -->")
	return sig, ok && sig != ""
}

// IsCard reports whether a comment body is a task card.
func IsCard(body string) bool { return strings.HasPrefix(body, cardMarker) }

// CardRecord returns the JSON record carried by a task card's marker.
func CardRecord(body string) ([]byte, bool) {
	if !IsCard(body) {
		return nil, false
	}
	line, _, _ := strings.Cut(body[len(cardMarker):], "\n")
	rec, ok := strings.CutSuffix(strings.TrimRight(line, "\r"), " -->")
	if !ok || !json.Valid([]byte(rec)) {
		return nil, false
	}
	return []byte(rec), true
}

// noticeMarker starts the hidden last line of a notice: its unique key, by
// which a retry finds a notice it already posted.
const noticeMarker = "<!-- countersign:notice "

// NoticeMarker is the hidden line that identifies the notice with key.
func NoticeMarker(key string) string {
	return noticeMarker + strings.ReplaceAll(key, "--", "- -") + " -->"
}

// IsNotice reports whether body is a notice: it carries a notice's marker.
func IsNotice(body string) bool { return strings.Contains(body, noticeMarker) }

// noMention keeps quoted text from @-mentioning anyone (a zero-width space
// after each "@"): a command or reason quoted back must not notify a team.
func noMention(s string) string { return strings.ReplaceAll(s, "@", "@\u200b") }

// markdownEscaper backslash-escapes the ASCII punctuation that Markdown (and
// GitHub's HTML) reads as markup, so text shows as written.
var markdownEscaper = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`, "<", `\<`, ">", `\>`,
	"!", `\!`, "|", `\|`, "~", `\~`, "&", `\&`)

// detailEscaper escapes what could make a link, an image, HTML or a table
// cell's end, and leaves code spans alone.
var detailEscaper = strings.NewReplacer("[", `\[`, "]", `\]`, "<", `\<`, ">", `\>`, "!", `\!`, "|", `\|`, "&", `\&`)

// cellTextEscaper keeps text inside one table cell (or line) as written: it
// escapes what could make HTML (which could close the card's table or its
// <details> and write anything under them), a link or an image, or end the
// cell; code spans, mentions and brackets ("copilot[bot]") are kept.
var cellTextEscaper = strings.NewReplacer(`\`, `\\`, "<", `\<`, ">", `\>`, "&", `\&`, "](", `]\(`, "|", `\|`)

// MaxQuote is how many characters of people's text (a command, a reason)
// a comment quotes: a reason may be as long as a comment, and the comment
// that quotes it must still fit, with its own words, in one.
const MaxQuote = 1000

// clipQuote cuts s to MaxQuote characters, saying so.
func clipQuote(s string) string {
	n := 0
	for i := range s {
		if n == MaxQuote {
			return strings.TrimRight(s[:i], " \t\r\n") + " … (cut)"
		}
		n++
	}
	return s
}

// MaxComment is the most an issue comment may hold: GitHub refuses more
// than 65,536 characters (a byte count is never less than the characters).
const MaxComment = 65536

// FitComment cuts body (at a line) so that it and then suffix fit in a
// comment.
func FitComment(body, suffix string) string {
	return fitText(body, MaxComment-len(suffix), "\n\n… cut to fit a comment.\n") + suffix
}

// MaxCheckText is the most a check run's output text may hold (GitHub
// refuses more than 65,535 characters).
const MaxCheckText = 65535

// CheckText is the text of the verification check run: the evidence chain of
// each task it covers, cut (at a line) to fit GitHub's limit with a pointer
// to the task cards, which hold everything.
func CheckText(c rules.Check) (string, error) {
	text, err := Render("check-text", c)
	if err != nil {
		return "", err
	}
	return fitText(text, MaxCheckText, "\n\n… cut to fit the check run: each task's card holds its whole evidence.\n"), nil
}

// fitText cuts text at a line so that it and tail fit in max bytes.
func fitText(text string, max int, tail string) string {
	if len(text) <= max {
		return text
	}
	cut := text[:max-len(tail)]
	if i := strings.LastIndexByte(cut, '\n'); i > 0 {
		cut = cut[:i]
	}
	return strings.ToValidUTF8(cut, "") + tail
}
