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
		{"longer word", "/verifyx", nil},
		{"longer hyphenated word", "/verify-goals", nil},
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
		{"two backticks are no fence", "``\n/verify\n``", []Command{verify}},
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
		{"unclosed comment after a command", "/verify ok <!-- x\n/status", []Command{cmd(CmdVerify, "ok", "/verify ok")}},
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
	})
}
