package rules

import (
	"bytes"
	"iter"
	"regexp"
	"strings"
	"sync"
	"unicode"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// CommandName is a slash command's name, lower case, without the slash.
type CommandName string

// The commands (docs/design.md, Commands).
const (
	CmdStart         CommandName = "start"
	CmdSubmit        CommandName = "submit"
	CmdApprove       CommandName = "approve"
	CmdVerify        CommandName = "verify"
	CmdReject        CommandName = "reject"
	CmdStatus        CommandName = "status"
	CmdHelp          CommandName = "help"
	CmdReopen        CommandName = "reopen"
	CmdContract      CommandName = "contract"
	CmdSkipVerify    CommandName = "skip-verify"
	CmdForceComplete CommandName = "force-complete"
	CmdVerifyGoal    CommandName = "verify-goal"
	CmdRejectGoal    CommandName = "reject-goal"
)

var commandNames = map[CommandName]bool{
	CmdStart: true, CmdSubmit: true, CmdApprove: true, CmdVerify: true,
	CmdReject: true, CmdStatus: true, CmdHelp: true, CmdReopen: true, CmdContract: true,
	CmdSkipVerify: true, CmdForceComplete: true, CmdVerifyGoal: true, CmdRejectGoal: true,
}

// Command is one command line found in a comment.
type Command struct {
	Name CommandName
	Args string // the rest of the line after the command word, trimmed of what shows nothing ("" if none)
	Line string // the whole command line as written, trimmed (for quoting in replies)
	// DidYouMean is set, and Name empty, for an unknown /word close to a
	// command's name (a typo, as in /verfy): the command it suggests.
	DidYouMean CommandName
}

// ParseCommands returns the commands in a comment body, in order, and the
// near misses: an unknown /word close to a command's name is returned as a
// Command with no Name and DidYouMean set, so that it can be answered.
//
// The body is read as GitHub renders it (CommonMark with GitHub's extensions,
// parsed by goldmark). A command is a line of a top-level paragraph that
// starts, after at most 3 spaces, with a slash and a command's name (in any
// case), followed by a space, a tab or the end of the line. It may follow
// other text of its paragraph ("LGTM" then "/verify" on the next line). Lines
// in block quotes (lazy continuation lines included), list items, tables,
// headings, code blocks and code spans, HTML blocks, HTML comments and inline
// <pre> elements are not commands. A comment later on a command's line ends
// it: Args and Line stop where "<!--" begins. Arguments are not checked: a
// command that needs some is returned with the Args it has, possibly none.
func ParseCommands(body string) []Command {
	src := normalizeNewlines(body)
	if !mayHoldCommand(src) || tooDeep(src) || strings.Count(src, "[") > MaxBrackets {
		return nil
	}
	p := mdParsers.Get().(parser.Parser)
	doc := p.Parse(text.NewReader([]byte(src)))
	mdParsers.Put(p)
	var cmds []Command
	hidden := 0 // <details> elements opened by HTML blocks and not closed: GitHub shows their content collapsed
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		switch n.Kind() {
		case ast.KindHTMLBlock:
			lines := n.Lines()
			for i := 0; i < lines.Len(); i++ {
				sg := lines.At(i)
				hidden = countTags(detailsTagRE, sg.Value([]byte(src)), hidden)
			}
		case ast.KindParagraph:
			if hidden == 0 {
				cmds = paragraphCommands(n, []byte(src), cmds)
			}
		}
		// Anything else (quotes, lists, tables, headings, code) holds no command.
	}
	return cmds
}

// MaxBrackets is how many "[" a comment may hold for it to be read for
// commands: goldmark's link parser takes time quadratic in them, and a
// command may hide in a link's title or an image's description.
const MaxBrackets = 500

// countTags adds the opening tags re finds in b to depth and takes away the
// closing ones (never below 0).
func countTags(re *regexp.Regexp, b []byte, depth int) int {
	for _, m := range re.FindAllSubmatch(b, -1) {
		if len(m[1]) == 0 {
			depth++
		} else if depth > 0 {
			depth--
		}
	}
	return depth
}

// mdParsers are goldmark parsers for GitHub's Markdown as far as commands
// need it: every block (GitHub's tables and footnotes included, and link
// reference definitions, which show nothing), and of the inlines those that
// hide text or make it code (code spans, raw HTML, autolinks, and links and
// images: a title or an image's description is no line of the comment).
// Emphasis is left out: it changes nothing about where a line starts. The
// link parser's time grows with the square of a paragraph's brackets, which
// MaxBrackets bounds. A parser is not documented as safe for concurrent use,
// so each call takes its own.
var mdParsers = sync.Pool{New: func() any {
	return parser.NewParser(
		parser.WithBlockParsers(append(parser.DefaultBlockParsers(),
			util.Prioritized(extension.NewFootnoteBlockParser(), 999))...),
		parser.WithInlineParsers(
			util.Prioritized(parser.NewCodeSpanParser(), 100),
			util.Prioritized(parser.NewLinkParser(), 200),
			util.Prioritized(parser.NewAutoLinkParser(), 300),
			util.Prioritized(parser.NewRawHTMLParser(), 400)),
		parser.WithParagraphTransformers(
			util.Prioritized(parser.LinkReferenceParagraphTransformer, 100),
			util.Prioritized(extension.NewTableParagraphTransformer(), 200)),
	)
}}

// normalizeNewlines makes every line ending (\r\n, \r) a \n.
func normalizeNewlines(s string) string {
	if !strings.Contains(s, "\r") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}

// mayHoldCommand reports whether a line of s starts, after at most 3 spaces,
// with a slash: every command line does, and most comments have none, so
// they are not parsed at all.
func mayHoldCommand(s string) bool {
	for line := range strings.Lines(s) {
		if t := strings.TrimLeft(line, " "); len(line)-len(t) <= 3 && strings.HasPrefix(t, "/") {
			return true
		}
	}
	return false
}

// MaxNesting is how deeply the lines of a comment may nest block quotes,
// list items and footnotes (written on the line, as in "> > - x") for it to
// be read for commands. Parsing deeper nesting takes time quadratic in it, and no one
// writes it by hand.
const MaxNesting = 32

// tooDeep reports whether a line of s opens more than MaxNesting block
// quotes, list items and footnote definitions.
func tooDeep(s string) bool {
	for line := range strings.Lines(s) {
		depth := 0
		for {
			t := strings.TrimLeft(line, " \t")
			switch {
			case strings.HasPrefix(t, ">"):
				line = t[1:]
			case listMarker(t) > 0 && len(t) > listMarker(t) && (t[listMarker(t)] == ' ' || t[listMarker(t)] == '\t'):
				line = t[listMarker(t):]
			case strings.HasPrefix(t, "[^") && strings.Contains(t, "]:"):
				line = t[strings.Index(t, "]:")+2:]
			default:
				depth = -1
			}
			if depth < 0 {
				break
			}
			if depth++; depth > MaxNesting {
				return true
			}
		}
	}
	return false
}

// preTagRE finds <pre> and </pre> tags in inline HTML; detailsTagRE finds
// <details> and </details> (what is inside is shown collapsed).
var (
	preTagRE     = regexp.MustCompile(`(?i)<(/?)pre(?:[\s/>]|$)`)
	detailsTagRE = regexp.MustCompile(`(?i)<(/?)details(?:[\s/>]|$)`)
)

// paragraphCommands appends the commands of paragraph para to cmds: the
// lines that begin with text of the paragraph itself (not of a code span, a
// link, emphasis or inline HTML), outside any inline <pre> element.
func paragraphCommands(para ast.Node, src []byte, cmds []Command) []Command {
	lines := para.Lines()
	stops := make(map[int]int, lines.Len()) // line start (after its indent) -> its end
	for i := 0; i < lines.Len(); i++ {
		sg := lines.At(i)
		stops[sg.Start] = sg.Stop
	}
	inPre, inDetails := 0, 0
	for n := para.FirstChild(); n != nil; n = n.NextSibling() {
		switch v := n.(type) {
		case *ast.RawHTML:
			for i := 0; i < v.Segments.Len(); i++ {
				sg := v.Segments.At(i)
				inPre = countTags(preTagRE, sg.Value(src), inPre)
				inDetails = countTags(detailsTagRE, sg.Value(src), inDetails)
			}
		case *ast.Text:
			stop, ok := stops[v.Segment.Start]
			if !ok || inPre > 0 || inDetails > 0 || indentBefore(src, v.Segment.Start) > 3 {
				continue
			}
			line := string(src[v.Segment.Start:stop])
			line = strings.TrimRight(line, "\n")
			if i := strings.Index(line, "<!--"); i >= 0 {
				line = line[:i]
			}
			if c, ok := parseCommand(line); ok {
				cmds = append(cmds, c)
			}
		}
	}
	return cmds
}

// indentBefore is the column at which the line holding offset i of src
// reaches i (tabs stop every 4 columns), or 4 if anything but spaces and
// tabs comes before it on its line.
func indentBefore(src []byte, i int) int {
	start := bytes.LastIndexByte(src[:i], '\n') + 1
	col, n := indent(string(src[start:i]), 0)
	if n != i-start {
		return 4
	}
	return col
}

// parseCommand reads line as a command line: a command, or a near miss.
func parseCommand(line string) (Command, bool) {
	s := strings.TrimLeft(line, " ")
	if len(line)-len(s) > 3 || !strings.HasPrefix(s, "/") {
		return Command{}, false // indented code (tabs included), or not a command
	}
	end := strings.IndexAny(s, " \t")
	if end < 0 {
		end = len(s)
	}
	word := lowerASCII(s[1:end])
	name := CommandName(word)
	if !commandNames[name] {
		if near := nearestCommand(word); near != "" {
			return Command{DidYouMean: near, Line: strings.TrimSpace(s)}, true
		}
		return Command{}, false
	}
	return Command{Name: name, Args: strings.TrimFunc(s[end:], invisible), Line: strings.TrimSpace(s)}, true
}

// invisible reports whether r shows nothing: a space, a format character
// (zero-width spaces and joiners, the byte order mark, the soft hyphen) or a
// blank letter (the Hangul fillers, the blank Braille pattern). Arguments
// are trimmed of them, so that a reason made of them is none.
func invisible(r rune) bool {
	switch r {
	case '\u115f', '\u1160', '\u3164', '\uffa0', '\u2800':
		return true
	}
	return unicode.IsSpace(r) || unicode.Is(unicode.Cf, r)
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

// mdLine is one line of an issue or pull request body, read closely enough to
// tell what people wrote as text from fenced code and hidden text: for the
// contract's words and the closing references, which look at every line's
// visible text (commands are read with goldmark, see ParseCommands).
type mdLine struct {
	code    bool     // in a fenced code block, or one of its fences
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
			_, l.visible, inComment = uncomment(line, inComment)
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

// commandOrder is every command, in the order /help lists them.
var commandOrder = []CommandName{
	CmdStart, CmdSubmit, CmdApprove, CmdVerify, CmdReject, CmdStatus, CmdHelp,
	CmdReopen, CmdContract, CmdSkipVerify, CmdForceComplete, CmdVerifyGoal, CmdRejectGoal,
}

// nearestCommand returns the command whose name word is a typo of: within
// one edit (an insertion, a deletion, a substitution or a swap of two
// neighbours) of its name, or two of a name of 8 characters or more; the
// closest, the first listed on a tie. (Two edits of a short name reach other
// bots' commands: /retest is two from /reject.) "" when none is, or word is not a
// plausible command word (ASCII letters and hyphens, 2 to 24 of them).
func nearestCommand(word string) CommandName {
	if len(word) < 2 || len(word) > 24 || strings.Trim(word, "abcdefghijklmnopqrstuvwxyz-") != "" {
		return ""
	}
	best, bestD := CommandName(""), 3
	for _, name := range commandOrder {
		limit := 1
		if len(name) >= 8 {
			limit = 2
		}
		if d := editDistance(word, string(name)); d <= limit && d < bestD {
			best, bestD = name, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance between a and b
// (Levenshtein's, plus swaps of two neighbouring letters), for short ASCII
// words.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
