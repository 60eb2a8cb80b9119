package rules

import (
	"iter"
	"strings"
)

// CommandName is a slash command's name, lower case, without the slash.
type CommandName string

// The commands (DESIGN §6).
const (
	CmdStart         CommandName = "start"
	CmdSubmit        CommandName = "submit"
	CmdApprove       CommandName = "approve"
	CmdVerify        CommandName = "verify"
	CmdReject        CommandName = "reject"
	CmdStatus        CommandName = "status"
	CmdReopen        CommandName = "reopen"
	CmdContract      CommandName = "contract"
	CmdSkipVerify    CommandName = "skip-verify"
	CmdForceComplete CommandName = "force-complete"
	CmdVerifyGoal    CommandName = "verify-goal"
	CmdRejectGoal    CommandName = "reject-goal"
)

var commandNames = map[CommandName]bool{
	CmdStart: true, CmdSubmit: true, CmdApprove: true, CmdVerify: true,
	CmdReject: true, CmdStatus: true, CmdReopen: true, CmdContract: true,
	CmdSkipVerify: true, CmdForceComplete: true, CmdVerifyGoal: true, CmdRejectGoal: true,
}

// Command is one command line found in a comment.
type Command struct {
	Name CommandName
	Args string // the rest of the line after the command word, trimmed ("" if none)
	Line string // the whole command line as written, trimmed (for quoting in replies)
}

// ParseCommands returns the commands in a comment body, in order.
//
// A command is a line that starts, after at most 3 spaces, with a slash and a
// command's name (in any case), followed by a space, a tab or the end of the
// line. Lines in fenced code blocks, indented code, block quotes and HTML
// comments are not commands, nor is any line that begins inside an HTML
// comment. A comment later on a command's line ends it: Args and Line stop
// where the comment begins. Arguments are not checked: a command that needs
// some is returned with the Args it has, possibly none.
func ParseCommands(body string) []Command {
	var cmds []Command
	for l := range markdownLines(body) {
		if c, ok := parseCommand(l.lead); ok {
			cmds = append(cmds, c)
		}
	}
	return cmds
}

// parseCommand reads line as a command line.
func parseCommand(line string) (Command, bool) {
	s := strings.TrimLeft(line, " ")
	if len(line)-len(s) > 3 || !strings.HasPrefix(s, "/") {
		return Command{}, false // indented code (tabs included), or not a command
	}
	end := strings.IndexAny(s, " \t")
	if end < 0 {
		end = len(s)
	}
	name := CommandName(lowerASCII(s[1:end]))
	if !commandNames[name] {
		return Command{}, false
	}
	return Command{Name: name, Args: strings.TrimSpace(s[end:]), Line: strings.TrimSpace(s)}, true
}

// lowerASCII lower-cases the ASCII letters of s, and only those: byte offsets
// are kept, and no other character folds into an ASCII one (as the Kelvin
// sign would into k).
func lowerASCII(s string) string {
	var b []byte
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			if b == nil {
				b = []byte(s)
			}
			b[i] = c + 'a' - 'A'
		}
	}
	if b == nil {
		return s
	}
	return string(b)
}

// mdLine is one line of a comment body, read as GitHub renders its Markdown,
// closely enough to tell what people wrote as text from code and hidden text.
type mdLine struct {
	code    bool     // in a fenced code block, or one of its fences
	lead    string   // the line up to its first HTML comment, if it begins outside one; else ""
	visible []string // the line's non-empty parts outside HTML comments; none when code
}

// markdownLines yields the lines of body (ended by \n, \r\n or \r).
//
// It follows CommonMark for fenced code blocks (``` or ~~~, 3 or more, at most
// 3 spaces in; closed by a fence of the same character, at least as long, and
// nothing else on its line; also when one opens on a list item's first line,
// as in "- ```", in which case it also ends with the item) and for HTML
// comments (<!-- ... -->, also across lines; <!--> and <!---> are whole
// comments). An unclosed fence or comment runs to the end of body. Comment
// marks in code are code, fences in comments are hidden. It does not follow
// inline code spans, indented code, or blocks that other containers end.
func markdownLines(body string) iter.Seq[mdLine] {
	return func(yield func(mdLine) bool) {
		var open fence
		inComment := false
		for rest := body; rest != ""; {
			var line string
			line, rest = cutLine(rest)
			if open.n > 0 {
				if !open.leftBy(line) {
					if open.closedBy(line) {
						open = fence{}
					}
					if !yield(mdLine{code: true}) {
						return
					}
					continue
				}
				open = fence{} // and the line is read afresh
			}
			if !inComment {
				if f, ok := openingFence(line); ok {
					open = f
					if !yield(mdLine{code: true}) {
						return
					}
					continue
				}
			}
			var l mdLine
			l.lead, l.visible, inComment = uncomment(line, inComment)
			if !yield(l) {
				return
			}
		}
	}
}

// cutLine cuts s after its first line ending.
func cutLine(s string) (line, rest string) {
	i := strings.IndexAny(s, "\r\n")
	if i < 0 {
		return s, ""
	}
	j := i + 1
	if s[i] == '\r' && j < len(s) && s[j] == '\n' {
		j++
	}
	return s[:i], s[j:]
}

// fence is an open fenced code block.
type fence struct {
	char byte // '`' or '~'
	n    int  // the opening fence's length; 0 when none is open
	col  int  // the content column of the list item it opened in, else 0
}

// openingFence reports whether line opens a fenced code block, and which.
func openingFence(line string) (fence, bool) {
	col, i := indent(line, 0)
	if col > 3 {
		return fence{}, false
	}
	s, item := line[i:], 0
	for {
		m := listMarker(s)
		if m == 0 {
			break
		}
		c, k := indent(s[m:], col+m)
		if k == 0 || c-(col+m) > 4 {
			break // not a list item, or its content is indented code
		}
		col, s, item = c, s[m+k:], c
	}
	if s == "" || s[0] != '`' && s[0] != '~' {
		return fence{}, false
	}
	n := len(s) - len(strings.TrimLeft(s, s[:1]))
	if n < 3 || s[0] == '`' && strings.Contains(s[n:], "`") {
		return fence{}, false // too short, or inline code
	}
	return fence{char: s[0], n: n, col: item}, true
}

// leftBy reports whether line ends the list item f opened in, and with it f.
func (f fence) leftBy(line string) bool {
	col, i := indent(line, 0)
	return i < len(line) && col < f.col
}

// closedBy reports whether line is f's closing fence.
func (f fence) closedBy(line string) bool {
	col, i := indent(line, 0)
	if col-f.col > 3 {
		return false
	}
	s := line[i:]
	n := len(s) - len(strings.TrimLeft(s, string(f.char)))
	return n >= f.n && strings.Trim(s[n:], " \t") == ""
}

// indent measures the spaces and tabs s starts with, from column col with
// tab stops every 4 columns: it returns the column they reach and their length.
func indent(s string, col int) (int, int) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ':
			col++
		case '\t':
			col += 4 - col%4
		default:
			return col, i
		}
	}
	return col, len(s)
}

// listMarker returns the length of the list item marker s starts with
// (-, +, *, or 1 to 9 digits and . or )), or 0.
func listMarker(s string) int {
	if s != "" && strings.IndexByte("-+*", s[0]) >= 0 {
		return 1
	}
	d := 0
	for d < len(s) && d < 10 && '0' <= s[d] && s[d] <= '9' {
		d++
	}
	if d >= 1 && d <= 9 && d < len(s) && (s[d] == '.' || s[d] == ')') {
		return d + 1
	}
	return 0
}

// uncomment splits line at its HTML comments, given whether one is open where
// it begins. It returns the line's lead (its text before the first comment, if
// it begins outside one), its non-empty parts outside comments, and whether a
// comment is open where it ends.
func uncomment(line string, open bool) (lead string, visible []string, stillOpen bool) {
	for i := 0; ; {
		if open {
			j := strings.Index(line[i:], "-->")
			if j < 0 {
				return lead, visible, true
			}
			i += j + len("-->")
			open = false
			continue
		}
		j := strings.Index(line[i:], "<!--")
		if j < 0 {
			j = len(line) - i
		}
		if i == 0 {
			lead = line[:j]
		}
		if j > 0 {
			visible = append(visible, line[i:i+j])
		}
		if i+j == len(line) {
			return lead, visible, false
		}
		i += j + len("<!") // so that <!--> and <!---> close themselves
		open = true
	}
}
