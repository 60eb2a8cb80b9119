package rules

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseCommands(t *testing.T) {
	cmd := func(name CommandName, args, line string) Command {
		return Command{Name: name, Args: args, Line: line}
	}
	verify := cmd(CmdVerify, "", "/verify")
	tests := []struct {
		name string
		body string
		want []Command
	}{
		// Each command.
		{"start", "/start", []Command{cmd(CmdStart, "", "/start")}},
		{"submit with a summary", "/submit login form done", []Command{cmd(CmdSubmit, "login form done", "/submit login form done")}},
		{"approve", "/approve", []Command{cmd(CmdApprove, "", "/approve")}},
		{"verify", "/verify", []Command{verify}},
		{"verify with notes", "/verify ran it locally", []Command{cmd(CmdVerify, "ran it locally", "/verify ran it locally")}},
		{"reject with a reason", "/reject tests fail on main", []Command{cmd(CmdReject, "tests fail on main", "/reject tests fail on main")}},
		{"status", "/status", []Command{cmd(CmdStatus, "", "/status")}},
		{"reopen with a reason", "/reopen login broke again", []Command{cmd(CmdReopen, "login broke again", "/reopen login broke again")}},
		{"contract", "/contract advisory", []Command{cmd(CmdContract, "advisory", "/contract advisory")}},
		{"skip-verify", "/skip-verify docs only", []Command{cmd(CmdSkipVerify, "docs only", "/skip-verify docs only")}},
		{"force-complete keeps OVERRIDE in Args", "/force-complete OVERRIDE release day", []Command{cmd(CmdForceComplete, "OVERRIDE release day", "/force-complete OVERRIDE release day")}},
		{"verify-goal", "/verify-goal all green", []Command{cmd(CmdVerifyGoal, "all green", "/verify-goal all green")}},
		{"reject-goal", "/reject-goal flaky e2e", []Command{cmd(CmdRejectGoal, "flaky e2e", "/reject-goal flaky e2e")}},

		// Required arguments are the caller's business.
		{"reject without a reason", "/reject", []Command{cmd(CmdReject, "", "/reject")}},
		{"reopen without a reason", "/reopen  ", []Command{cmd(CmdReopen, "", "/reopen")}},
		{"skip-verify without a reason", "/skip-verify", []Command{cmd(CmdSkipVerify, "", "/skip-verify")}},
		{"force-complete without anything", "/force-complete", []Command{cmd(CmdForceComplete, "", "/force-complete")}},

		// Names.
		{"upper case", "/VERIFY", []Command{cmd(CmdVerify, "", "/VERIFY")}},
		{"mixed case", "/Verify-Goal OK", []Command{cmd(CmdVerifyGoal, "OK", "/Verify-Goal OK")}},
		{"verify-goal is not verify", "/verify-goal", []Command{cmd(CmdVerifyGoal, "", "/verify-goal")}},
		{"reject-goal is not reject", "/reject-goal why", []Command{cmd(CmdRejectGoal, "why", "/reject-goal why")}},
		{"longer word is a near miss", "/verifyx", []Command{{DidYouMean: CmdVerify, Line: "/verifyx"}}},
		{"longer hyphenated word is a near miss", "/verify-goals", []Command{{DidYouMean: CmdVerifyGoal, Line: "/verify-goals"}}},
		{"help", "/help", []Command{cmd(CmdHelp, "", "/help")}},
		{"punctuation after the name", "/verify, thanks", nil},
		{"no-break space after the name", "/verify\u00a0ok", nil},
		{"unknown command", "/foo bar", nil},
		{"bare slash", "/", nil},
		{"no Unicode case folding into the name", "/\u212aeep", nil}, // Kelvin sign
		{"dotted capital I", "/VER\u0130FY", nil},
		{"double slash", "//verify", nil},

		// Where the line starts.
		{"text before", "x /verify", nil},
		{"sentence", "please /verify", nil},
		{"inline code", "`/verify`", nil},
		{"escaped slash", `\/verify`, nil},
		{"one space", " /verify", []Command{verify}},
		{"three spaces", "   /verify", []Command{verify}},
		{"four spaces is indented code", "    /verify", nil},
		{"tab is indented code", "\t/verify", nil},
		{"space and tab is indented code", "  \t/verify", nil},
		{"zero-width space", "\u200b/verify", nil},
		{"byte order mark", "\ufeff/verify", nil},
		{"no-break space", "\u00a0/verify", nil},

		// Arguments and line endings.
		{"args trimmed", "/verify   ran   it  \t", []Command{cmd(CmdVerify, "ran   it", "/verify   ran   it")}},
		{"tab before args", "/verify\tran it", []Command{cmd(CmdVerify, "ran it", "/verify\tran it")}},
		{"CRLF", "/verify ok\r\n/status\r\n", []Command{cmd(CmdVerify, "ok", "/verify ok"), cmd(CmdStatus, "", "/status")}},
		{"lone CR ends a line", "looks good\r/verify", []Command{verify}},
		{"empty body", "", nil},

		// Several commands.
		{"several in order", "Thanks!\n/verify ran it\n\n/status\n", []Command{cmd(CmdVerify, "ran it", "/verify ran it"), cmd(CmdStatus, "", "/status")}},
		{"same command twice", "/verify\n/verify", []Command{verify, verify}},
		{"commands around prose", "/start\nworking on it\n/submit done", []Command{cmd(CmdStart, "", "/start"), cmd(CmdSubmit, "done", "/submit done")}},

		// Fenced code.
		{"backtick fence", "```\n/verify\n```", nil},
		{"tilde fence", "~~~\n/verify\n~~~", nil},
		{"fence with info string", "```sh\n/verify\n```", nil},
		{"indented fence", "   ```\n/verify\n   ```", nil},
		{"after a closed fence", "```\n/reject no\n```\n/verify", []Command{verify}},
		{"tildes do not close backticks", "```\n~~~\n/verify\n```\n/status", []Command{cmd(CmdStatus, "", "/status")}},
		{"shorter fence does not close", "````\n```\n/verify\n````\n/status", []Command{cmd(CmdStatus, "", "/status")}},
		{"longer fence closes", "```\n/reject\n`````\n/verify", []Command{verify}},
		{"closing fence has nothing after it", "```\n``` x\n/verify", nil},
		{"unclosed fence runs to the end", "```\n/verify\n\n/status", nil},
		{"two backticks are no fence but a code span", "``\n/verify\n``", nil},
		{"backticks in the info string make inline code", "```a`\n/verify", []Command{verify}},
		{"fence indented four spaces is no fence", "    ```\n/verify", []Command{verify}},
		{"fence on a list item's first line", "- ```\n  /verify\n  ```\n/status", []Command{cmd(CmdStatus, "", "/status")}},
		{"fence in an ordered list item", "1. ```\n   /verify\n   ```", nil},
		{"fence in a list item ends with the item", "- ```\n  /reject\n/verify", []Command{verify}},
		{"blank lines stay in a list item's fence", "- ```\n\n  /reject\n\n  ```\n/verify", []Command{verify}},

		// Block quotes.
		{"quoted", "> /verify", nil},
		{"quoted without a space", ">/verify", nil},
		{"quoted and indented", "  > /verify", nil},
		{"reply under a quote", "> /reject why\n\n/verify", []Command{verify}},

		// A paragraph's later lines, as GitHub renders them.
		{"after text in its paragraph", "LGTM\n/verify", []Command{verify}},
		{"after text, indented", "LGTM\n   /verify", []Command{verify}},
		{"after text, indented four spaces", "LGTM\n    /verify", nil},
		{"after a hard line break", "LGTM  \n/verify", []Command{verify}},
		{"after a heading", "# Done\n/verify", []Command{verify}},
		{"a setext heading is no command", "/verify\n---", nil},
		// Emphasis and links hide nothing: the line still starts with the command.
		{"in emphasis across lines", "*x\n/verify ok*", []Command{cmd(CmdVerify, "ok*", "/verify ok*")}},
		{"in a link's text across lines: part of a link, not a line of the comment", "[x\n/verify ok](https://example.com)", nil},
		{"emphasis right after the name", "*x\n/verify*", nil},
		{"inside a multi-line code span", "`x\n/verify`", nil},

		// Block quotes, as GitHub renders them.
		{"lazy continuation of a quote", "> alice wrote: done\n/verify", nil},
		{"lazy continuation after a nested quote", "> > x\n> y\n/verify", nil},
		{"nested quote", "> > /verify", nil},
		{"quote in a list item", "- > /verify", nil},
		{"after a quote and a blank line", "> x\n\n/verify", []Command{verify}},
		{"GitHub alert", "> [!NOTE]\n> /verify", nil},

		// Lists (a list item is a plan or a checklist entry, not a command).
		{"list item", "- /verify", nil},
		{"ordered list item", "1. /verify", nil},
		{"task list item", "- [ ] /verify", nil},
		{"list item's second line", "- x\n  /verify", nil},
		{"lazy continuation of a list item", "- x\n/verify", nil},
		{"after a list and a blank line", "- x\n\n/verify", []Command{verify}},
		{"loose list item", "- x\n\n  /verify", nil},

		// Tables.
		{"table cell", "| a |\n|---|\n| /verify |", nil},
		{"table cell without pipes", "a\n-\n/verify", []Command{verify}}, // "a" is a setext heading, /verify a paragraph
		{"table row", "a | b\n--|--\n/verify | x", nil},
		{"before a table", "/verify\n\n| a |\n|---|", []Command{verify}},

		// HTML.
		{"pre block", "<pre>\n/verify\n</pre>", nil},
		{"pre block with text after", "<pre>\n/reject\n</pre>\n\n/verify", []Command{verify}},
		{"inline pre", "x <pre>\n/verify\n</pre>", nil},
		{"after an inline pre closes", "x <pre>\ny\n</pre>\n/verify", []Command{verify}},
		{"div block", "<div>\n/verify\n</div>", nil},
		{"inside a details element across blank lines: shown collapsed, not a command", "<details>\n\n/verify\n\n</details>", nil},
		{"inline HTML before", "<b>x</b>\n/verify", []Command{verify}},
		{"inline HTML at the start of the line", "x\n<b>/verify</b>", nil},

		// Near misses.
		{"typo", "/verfy", []Command{{DidYouMean: CmdVerify, Line: "/verfy"}}},
		{"typo with args", "/rejcet because", []Command{{DidYouMean: CmdReject, Line: "/rejcet because"}}},
		{"swapped letters", "/aprpove", []Command{{DidYouMean: CmdApprove, Line: "/aprpove"}}},
		{"two typos in a long name", "/forcecomplet", []Command{{DidYouMean: CmdForceComplete, Line: "/forcecomplet"}}},
		{"two typos in a short name", "/hlpe", nil},
		{"far from every command", "/deploy", nil},
		{"other bots' commands", "/retest\n/hold\n/lgtm\n/assign @bob\n/cc @bob\n/test all\n/retitle x\n/unhold", nil},
		{"two typos in a six-letter name", "/vrefiy", nil},
		{"a path", "/usr/bin", nil},
		{"a near miss in a quote", "> /verfy", nil},

		// HTML comments.
		{"in a comment", "<!-- /verify -->", nil},
		{"in a multi-line comment", "<!--\n/verify\n-->", nil},
		{"after a comment on its line", "<!-- x -->/verify", nil},
		{"after a multi-line comment ends on its line", "<!--\nx\n-->/verify", nil},
		{"after a multi-line comment", "<!--\n/reject\n-->\n/verify", []Command{verify}},
		{"comment after the command", "/verify ok <!-- x -->", []Command{cmd(CmdVerify, "ok", "/verify ok")}},
		{"comment right after the name", "/verify<!-- x -->", []Command{verify}},
		{"text after a comment on the command's line is dropped", "/reject <!-- x --> why", []Command{cmd(CmdReject, "", "/reject")}},
		{"unclosed comment hides the rest", "<!--\n/verify\n/status", nil},
		// GitHub shows an unclosed inline comment as text: the next line is seen.
		{"unclosed comment after a command", "/verify ok <!-- x\n/status", []Command{cmd(CmdVerify, "ok", "/verify ok"), cmd(CmdStatus, "", "/status")}},
		{"<!--> is a whole comment", "<!-->\n/verify", []Command{verify}},
		{"<!---> is a whole comment", "<!--->\n/verify", []Command{verify}},
		{"fence in a comment is hidden", "<!--\n```\n-->\n/verify", []Command{verify}},
		{"comment marks in code are code", "```\n<!--\n```\n/verify", []Command{verify}},
		{"comment close in code is code", "<!--\n-->\n```\n-->\n/reject\n```\n/verify", []Command{verify}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ParseCommands(tt.body); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseCommands(%q) = %#v, want %#v", tt.body, got, tt.want)
			}
		})
	}
}

// quoteLines prefixes every line of s with "> ", ending lines as
// markdownLines does.
func quoteLines(s string) string {
	var b strings.Builder
	b.WriteString("> ")
	for i := 0; i < len(s); i++ {
		b.WriteByte(s[i])
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			continue
		}
		if s[i] == '\r' || s[i] == '\n' {
			b.WriteString("> ")
		}
	}
	return b.String()
}

// listed puts s in a list item that opens with a line of its own: every line
// of s is indented to the item's content.
func listed(s string) string {
	return "- x\n  " + strings.ReplaceAll(normalizeNewlines(s), "\n", "\n  ")
}

// fenced wraps s in a fenced code block that nothing in s can close.
func fenced(s string) string {
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	f := strings.Repeat("`", max(3, longest+1))
	return f + "\n" + s + "\n" + f
}

func FuzzParseCommands(f *testing.F) {
	for _, s := range []string{
		"/verify", "/VERIFY ok\r\n/status", "/reject why <!-- x", "<!--\n/verify\n-->\n/start",
		"```\n/verify\n```", "- ```\n  /verify\n/status", "> /verify", "    /verify", "/force-complete OVERRIDE now",
		"~~~~\n~~~\n/verify", "x\r/submit\r\n", "/verify-goal", "\u200b/verify",
		"> alice wrote: done\n/verify", "> > x\n/verify", "- x\n/verify", "| a |\n|---|\n| /verify |",
		"x <pre>\n/verify\n</pre>\n/status", "<div>\n/verify\n</div>", "LGTM\n/verfy", "``\n/verify\n``",
		"/reject \u200b", "/reject \u200bwhy\u2060", "<details>\n\n/verify\n\n</details>", "$$\n/verify\n$$",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		cmds := ParseCommands(body)
		for _, c := range cmds {
			if !strings.HasPrefix(strings.ToLower(c.Line), "/"+string(c.Name)) {
				t.Errorf("%q: Line %q does not start with /%s", body, c.Line, c.Name)
			}
			if !strings.Contains(body, c.Line) {
				t.Errorf("%q: Line %q is not in the body", body, c.Line)
			}
			if !strings.Contains(c.Line, c.Args) {
				t.Errorf("%q: Args %q are not in Line %q", body, c.Args, c.Line)
			}
		}
		if !strings.Contains(body, "/") && len(cmds) > 0 {
			t.Errorf("%q: commands without a slash: %v", body, cmds)
		}
		if got := ParseCommands(quoteLines(body)); len(got) > 0 {
			t.Errorf("%q quoted: %v", body, got)
		}
		if got := ParseCommands(fenced(body)); len(got) > 0 {
			t.Errorf("%q fenced: %v", body, got)
		}
		if got := ParseCommands(listed(body)); len(got) > 0 {
			t.Errorf("%q in a list item: %v", body, got)
		}
		for _, c := range cmds {
			if (c.Name == "") == (c.DidYouMean == "") {
				t.Errorf("%q: %#v is neither a command nor a near miss", body, c)
			}
		}
	})
}

// BenchmarkParseCommands measures the CPU cost of reading one comment: a
// typical short one, and the largest GitHub accepts (65,536 characters) in
// shapes that are costly for Markdown parsers.
func BenchmarkParseCommands(b *testing.B) {
	const max = 65536
	// fill makes a 64 KiB comment of unit repeated, with a command on its
	// first line (comments without one are not parsed at all).
	fill := func(unit string) string {
		return "/verify\n" + strings.Repeat(unit, (max-8)/len(unit))
	}
	for _, bc := range []struct{ name, body string }{
		{"short", "Thanks, looks good.\n\n> alice wrote: done\n\n/verify ran the e2e suite locally\n"},
		{"short-no-command", "Thanks, looks good.\n\n> alice wrote: done\n\nI ran the e2e suite locally.\n"},
		{"prose-64k-no-command", strings.Repeat("Some words of prose, with a `code span` and a [link](https://example.com).\n", 800)},
		{"prose-64k", fill("Some words of prose, with a `code span` and a [link](https://example.com).\n")},
		{"commands-64k", fill("/verify\n")},
		{"quotes-64k", fill(">")},
		{"quotes-32-deep-64k", fill(strings.Repeat("> ", 32) + "x\n")},
		{"list-quotes-64k", fill("- > ")},
		{"ordered-lists-64k", fill("1. ")},
		{"links-64k", fill("[a](")},
		{"brackets-64k", fill("[")},
		{"emphasis-64k", fill("*a ")},
		{"backticks-64k", fill("`a ")},
		{"backtick-runs-64k", fill("` `` ``` ")},
		{"lists-64k", fill("- ")},
		{"html-64k", fill("<a ")},
		{"html-quotes-64k", fill("<a b='")},
		{"html-comments-64k", fill("x <!-- ")},
		{"html-instructions-64k", fill("x <? ")},
		{"html-cdata-64k", fill("x <![CDATA[ ")},
		{"html-declarations-64k", fill("x <!X ")},
		{"autolinks-64k", fill("<http://a")},
		{"table-64k", "| a | b |\n|---|---|\n" + fill("| x | /verify |\n")},
		{"footnotes-64k", fill("[^a]: ")},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.body)))
			for b.Loop() {
				ParseCommands(bc.body)
			}
		})
	}
}
