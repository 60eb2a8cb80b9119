package scenario

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Scenario is a parsed scenario file.
type Scenario struct {
	Name  string // file name it was parsed from (for file:line in errors)
	Title string // the "scenario:" line
	// Description is the comment lines before the "scenario:" line, without
	// their "#", one per line.
	Description string
	People      []Person       // "people:" lines, in order
	Emails      []Email        // "emails:" lines, in order
	Teams       []Team         // "team:" lines, in order
	Config      string         // the "config:" block (YAML), dedented; "" if none
	Steps       []Step         // actions and expectations, in order
	issues      map[int]bool   // number -> is a PR, for every "opens" step
	milestones  map[string]int // title -> line of its "creates milestone" step
}

// Person is a repository permission given before the scenario starts.
type Person struct {
	Login, Permission string
}

// Email is a verified email address of an account: GitHub resolves commit
// authors and co-authors by it.
type Email struct {
	Login, Address string
}

// Team is an organization team and its members.
type Team struct {
	Org, Slug string
	Members   []string
}

// Step is one action or expectation line. Exactly one of Action and Expect is set.
type Step struct {
	Line int    // 1-based line in the file
	Text string // the line as written, without its trailing comment
	// Notes are the comment lines right before the step (blank lines
	// between are allowed), without their "#": the timeline shows them.
	Notes  []string
	Action *Action
	Expect *Expect
}

// ActionKind names what a scenario action does on GitHub.
type ActionKind string

// The actions.
const (
	OpenIssue      ActionKind = "open-issue"
	OpenPR         ActionKind = "open-pr"
	Edit           ActionKind = "edit"
	AssignUsers    ActionKind = "assign"
	UnassignUsers  ActionKind = "unassign"
	MarkReady      ActionKind = "ready-for-review"
	PushCommit     ActionKind = "push"
	ReviewPR       ActionKind = "review"
	CommentOn      ActionKind = "comment"
	EditCommentOf  ActionKind = "edit-comment"
	CloseIssue     ActionKind = "close"
	ReopenIssue    ActionKind = "reopen"
	AddLabels      ActionKind = "label"
	RemoveLabels   ActionKind = "unlabel"
	MergePR        ActionKind = "merge"
	RedeliverLast  ActionKind = "redeliver"
	ReportCheckRun ActionKind = "ci-check"
	EditCard       ActionKind = "edit-card"   // someone edits the bot's task card (its hidden record)
	PostStatus     ActionKind = "status"      // someone posts commit statuses on a PR's head
	LoseStore      ActionKind = "lose-store"  // the bot restarts on an empty store
	QueuePR        ActionKind = "queue"       // someone adds a PR to the merge queue
	DequeuePR      ActionKind = "dequeue"     // someone takes a PR out of the merge queue
	MergeQueue     ActionKind = "merge-queue" // GitHub merges the first group of the merge queue

	CreateMilestone ActionKind = "create-milestone"
	SetMilestone    ActionKind = "milestone"
	// BlockedBy: "carol links #3 blocked by #2" (GitHub's issue dependency).
	BlockedBy       ActionKind = "blocked-by"
	ClearMilestone  ActionKind = "demilestone"
	CloseMilestone  ActionKind = "close-milestone"
	ReopenMilestone ActionKind = "reopen-milestone"

	RenameLabel    ActionKind = "rename-label"    // a repository label, on its Labels page
	DeleteLabel    ActionKind = "delete-label"    // a repository label, on its Labels page
	RenameAccount  ActionKind = "rename-account"  // github: a person renames their account
	DropWebhooks   ActionKind = "drop-webhooks"   // github: the App hears nothing from here on
	ResumeWebhooks ActionKind = "resume-webhooks" // github: ... until here

	BoardMove   ActionKind = "board-move"   // someone sets countersign's field of an issue on the board (Status: the option)
	BoardRemove ActionKind = "board-remove" // someone removes an issue's item from the board
)

// Action is one thing a person (or GitHub, or CI) does.
type Action struct {
	Kind   ActionKind
	Actor  string // login; "github" for redeliveries, "ci" for check runs
	Number int    // the issue or PR acted on (opened, for OpenIssue/OpenPR)
	PR     bool   // Number is (written as) a pull request

	Title     string   // OpenIssue, OpenPR, Edit (optional)
	Body      string   // OpenIssue, OpenPR, Edit, CommentOn, EditCommentOf, ReviewPR
	HasBody   bool     // Body was given (Edit: an empty body is a change too)
	Draft     bool     // OpenPR
	Closes    []int    // OpenPR: "closing #1 #3" (a "Fixes #N" line each)
	CoAuthors []string // OpenPR, PushCommit: Co-authored-by trailers
	Files     []string // OpenPR, PushCommit: paths the commit changes
	Users     []string // AssignUsers, UnassignUsers; OpenPR: "assigned to" (the PR's assignees); RenameAccount: the old login
	Labels    []string // AddLabels, RemoveLabels
	Review    string   // ReviewPR: APPROVED | CHANGES_REQUESTED | COMMENTED
	Reason    string   // CloseIssue: completed | not_planned ("" = GitHub's default)
	Comment   string   // CommentOn ("as NAME"), EditCommentOf: the comment's name
	Event     string   // RedeliverLast: webhook event, e.g. "issue_comment"
	EvAction  string   // RedeliverLast: optional payload action, e.g. "created"
	Replace   string   // EditCard: the text of the card replaced ...
	With      string   // EditCard: ... by this
	Checks    []string // ReportCheckRun: check run names
	Status    string   // ReportCheckRun: success | failure | pending
	// Milestone is the title of the milestone acted on (CreateMilestone,
	// SetMilestone, CloseMilestone, ReopenMilestone).
	Milestone string
	// Blocker is the issue of a BlockedBy.
	Blocker int
	// Goal is the title of the milestone whose goal issue is commented on
	// (CommentOn; Number is 0 then).
	Goal string
	// Times is how many times the comment is posted (CommentOn "N times";
	// 0 for once).
	Times   int
	Label   string // RenameLabel, DeleteLabel: the repository label
	NewName string // RenameLabel: the label's new name; RenameAccount: the new login
}

// ExpectKind names what an expectation checks.
type ExpectKind string

// The expectations.
const (
	ExpectState     ExpectKind = "state"
	ExpectLabeled   ExpectKind = "labeled"
	ExpectOpen      ExpectKind = "open"
	ExpectClosed    ExpectKind = "closed"
	ExpectAssigned  ExpectKind = "assigned"
	ExpectCheck     ExpectKind = "check"
	ExpectReply     ExpectKind = "reply"
	ExpectCard      ExpectKind = "card"
	ExpectGoal      ExpectKind = "goal"       // the goal issue's body contains Text
	ExpectGoalState ExpectKind = "goal-state" // the goal issue has goal and goal:State
	ExpectReplies   ExpectKind = "replies"    // how many replies since the previous action began
	ExpectRepoLabel ExpectKind = "repo-label" // a repository label exists (Not: does not)
	ExpectBoard     ExpectKind = "board"      // the issue is on the board, its field at State (Not: it is not on the board)
)

// Expect is one expectation about what GitHub looks like now.
type Expect struct {
	Kind   ExpectKind
	Number int
	PR     bool     // written as "PR #N"
	Not    bool     // "not labeled", "no reply"
	State  string   // ExpectState: pending, assigned, ...; ExpectGoalState: open, active, ...
	Labels []string // ExpectLabeled
	Users  []string // ExpectAssigned
	Status string   // ExpectCheck: success | failure | in_progress | queued | neutral | none
	// Group: ExpectCheck is about the PR's merge-queue group, not its head.
	Group bool
	Text  string // ExpectReply (optional), ExpectCard, ExpectGoal: case-insensitive substring
	// Goal is the title of the milestone whose goal issue is meant (Number
	// is 0 then): ExpectGoal, ExpectGoalState, ExpectReply, ExpectOpen, ExpectClosed.
	Goal string
	// Milestone is the title of the milestone itself: ExpectOpen, ExpectClosed.
	Milestone string
	// Count is the number of replies (ExpectReplies); AtMost makes it a
	// bound.
	Count  int
	AtMost bool
	Label  string // ExpectRepoLabel: the repository label's name
	Color  string // ExpectRepoLabel: its colour (6 hex digits, lower case), optional
}

// States are the task states an "expect #N state" line may name.
var States = []string{"pending", "assigned", "in-progress", "review", "completed", "verified"}

// GoalStates are the goal states an "expect goal "T" state" line may name.
var GoalStates = []string{"open", "active", "pending-verify", "verified"}

var (
	permissions   = map[string]bool{"admin": true, "maintain": true, "write": true, "triage": true, "read": true, "none": true}
	checkStatuses = map[string]bool{"success": true, "failure": true, "in_progress": true, "queued": true, "neutral": true, "none": true}
	ciStatuses    = map[string]bool{"success": true, "failure": true, "pending": true}
	statusStates  = map[string]bool{"success": true, "failure": true, "error": true, "pending": true}
	// reserved cannot be logins: they start other kinds of lines.
	reserved = map[string]bool{"expect": true, "github": true, "ci": true, "scenario": true, "people": true, "team": true, "config": true, "emails": true, "countersign": true}
)

var (
	loginRE   = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,37}[A-Za-z0-9])?(?:\[bot\])?$`)
	nameRE    = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`)
	eventRE   = regexp.MustCompile(`^[a-z_]+(?:\.[a-z_]+)?$`)
	teamRE    = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9-]*)/([A-Za-z0-9][A-Za-z0-9_.-]*)$`)
	commentRE = regexp.MustCompile(`^(\S+)\s+comments\s+on\s+(?:(PR|issue)\s+)?#(\d+)(?:\s+as\s+(\S+?))?(?:\s+(\d+)\s+times)?:(.*)$`)
	colorRE   = regexp.MustCompile(`^[0-9a-fA-F]{6}$`)
	editCmtRE = regexp.MustCompile(`^(\S+)\s+edits\s+comment\s+(\S+):(.*)$`)
	goalCmtRE = regexp.MustCompile(`^(\S+)\s+comments\s+on\s+goal\s+("(?:[^"\\]|\\.)*")(?:\s+as\s+(\S+))?:(.*)$`)
)

// ParseError is a syntax error at a line of a scenario file.
type ParseError struct {
	Name string
	Line int
	Msg  string
}

func (e *ParseError) Error() string { return fmt.Sprintf("%s:%d: %s", e.Name, e.Line, e.Msg) }

// ParseFile parses the scenario file at name in fsys.
func ParseFile(fsys fs.FS, name string) (*Scenario, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(path.Base(name), f)
}

// Parse reads a scenario. name is used in error messages ("name:line: ...").
func Parse(name string, r io.Reader) (*Scenario, error) {
	p := &parser{sc: &Scenario{Name: name, issues: map[int]bool{}, milestones: map[string]int{}}, names: map[string]int{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	var lines, desc, notes []string
	for sc.Scan() {
		lines = append(lines, strings.TrimSuffix(sc.Text(), "\r"))
	}
	if err := sc.Err(); err != nil {
		return nil, &ParseError{name, len(lines) + 1, err.Error()}
	}
	for i := 0; i < len(lines); i++ {
		p.line = i + 1
		raw := lines[i]
		if !validText(raw) {
			return nil, p.errf("the line is not valid UTF-8 text")
		}
		text := strings.TrimSpace(raw)
		if text == "" {
			continue
		}
		if note, ok := strings.CutPrefix(text, "#"); ok {
			if note = strings.TrimSpace(note); note != "" {
				if p.sc.Title == "" {
					desc = append(desc, note)
				} else {
					notes = append(notes, note)
				}
			}
			continue
		}
		if key, rest, ok := header(text); ok {
			notes = nil
			if len(p.sc.Steps) > 0 {
				return nil, p.errf("%q belongs before the first action or expectation", key+":")
			}
			if key == "config" {
				n, err := p.config(rest, lines[i+1:])
				if err != nil {
					return nil, err
				}
				i += n
				continue
			}
			if err := p.header(key, rest); err != nil {
				return nil, err
			}
			continue
		}
		if p.sc.Title == "" {
			return nil, p.errf("the file must start with a \"scenario: <title>\" line")
		}
		st, err := p.step(text)
		if err != nil {
			return nil, err
		}
		st.Notes, notes = notes, nil
		p.sc.Steps = append(p.sc.Steps, st)
	}
	if p.sc.Title == "" {
		return nil, &ParseError{name, 1, "no \"scenario: <title>\" line"}
	}
	p.sc.Description = strings.Join(desc, "\n")
	if len(p.sc.Steps) == 0 {
		p.line = len(lines)
		return nil, p.errf("the scenario has no steps")
	}
	return p.sc, nil
}

func validText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if (r < ' ' && r != '\t') || r == 0x7f {
			return false
		}
	}
	return true
}

// header recognizes "key: rest" setup lines.
func header(text string) (key, rest string, ok bool) {
	for _, k := range []string{"scenario", "people", "team", "emails", "config"} {
		if r, found := strings.CutPrefix(text, k+":"); found {
			return k, strings.TrimSpace(r), true
		}
	}
	return "", "", false
}

type parser struct {
	sc    *Scenario
	line  int
	names map[string]int // comment name -> line that named it
	teams map[string]bool
	who   map[string]bool
	// renamed are the old logins of accounts renamed so far (lower case).
	renamed map[string]rename
	// dropping is the line of the "github drops webhooks" in effect (0: none).
	dropping int
}

// rename is an account rename: the new login and the line that renamed it.
type rename struct {
	to   string
	line int
}

// maxTimes bounds "comments on #N K times".
const maxTimes = 100

func (p *parser) errf(format string, args ...any) error {
	return &ParseError{p.sc.Name, p.line, fmt.Sprintf(format, args...)}
}

func (p *parser) header(key, rest string) error {
	switch key {
	case "scenario":
		if p.sc.Title != "" {
			return p.errf("a second \"scenario:\" line")
		}
		if rest == "" {
			return p.errf("\"scenario:\" needs a title")
		}
		p.sc.Title = stripComment(rest)
		return nil
	}
	if p.sc.Title == "" {
		return p.errf("the file must start with a \"scenario: <title>\" line")
	}
	toks, err := tokenize(rest)
	if err != nil {
		return p.errf("%v", err)
	}
	switch key {
	case "people":
		if len(toks) == 0 {
			return p.errf("\"people:\" needs login=permission pairs, e.g. people: alice=write carol=admin")
		}
		if p.who == nil {
			p.who = map[string]bool{}
		}
		for _, t := range toks {
			login, perm, ok := strings.Cut(t.s, "=")
			if t.quoted || !ok {
				return p.errf("%q is not login=permission", t.s)
			}
			if err := checkLogin(login); err != nil {
				return p.errf("%v", err)
			}
			if !permissions[perm] {
				return p.errf("unknown permission %q for %s (admin, maintain, write, triage, read or none)", perm, login)
			}
			if p.who[strings.ToLower(login)] {
				return p.errf("%s is listed twice", login)
			}
			p.who[strings.ToLower(login)] = true
			p.sc.People = append(p.sc.People, Person{login, perm})
		}
	case "emails":
		if len(toks) == 0 {
			return p.errf("\"emails:\" needs login=address pairs, e.g. emails: alice=alice@company.example")
		}
		for _, t := range toks {
			login, addr, ok := strings.Cut(t.s, "=")
			if t.quoted || !ok || !strings.Contains(addr, "@") || strings.ContainsAny(addr, " <>") {
				return p.errf("%q is not login=address", t.s)
			}
			if err := checkLogin(login); err != nil {
				return p.errf("%v", err)
			}
			p.sc.Emails = append(p.sc.Emails, Email{login, addr})
		}
	case "team":
		if len(toks) < 3 || toks[1].s != "=" || toks[1].quoted {
			return p.errf("want \"team: org/slug = member ...\"")
		}
		m := teamRE.FindStringSubmatch(toks[0].s)
		if m == nil || toks[0].quoted {
			return p.errf("%q is not org/team-slug", toks[0].s)
		}
		if p.teams == nil {
			p.teams = map[string]bool{}
		}
		if p.teams[strings.ToLower(toks[0].s)] {
			return p.errf("team %s is defined twice", toks[0].s)
		}
		p.teams[strings.ToLower(toks[0].s)] = true
		c := &cursor{toks: toks[2:]}
		users, err := c.logins()
		if err != nil {
			return p.errf("%v", err)
		}
		if err := c.end(); err != nil {
			return p.errf("%v", err)
		}
		p.sc.Teams = append(p.sc.Teams, Team{Org: m[1], Slug: m[2], Members: users})
	}
	return nil
}

// config reads "config:" with inline YAML or the indented block that follows
// it; it returns how many following lines it consumed.
func (p *parser) config(rest string, next []string) (int, error) {
	if p.sc.Title == "" {
		return 0, p.errf("the file must start with a \"scenario: <title>\" line")
	}
	if p.sc.Config != "" {
		return 0, p.errf("a second \"config:\"")
	}
	if rest != "" {
		if strings.HasPrefix(rest, "#") {
			rest = ""
		} else {
			p.sc.Config = rest + "\n"
			return 0, nil
		}
	}
	var block []string
	used := 0
	for _, l := range next {
		if strings.TrimSpace(l) == "" {
			block = append(block, "")
			used++
			continue
		}
		if l[0] != ' ' && l[0] != '\t' {
			break
		}
		if !validText(l) {
			p.line += used + 1
			return 0, p.errf("the line is not valid UTF-8 text")
		}
		block = append(block, l)
		used++
	}
	for len(block) > 0 && block[len(block)-1] == "" { // trailing blank lines are not the block's
		block = block[:len(block)-1]
		used--
	}
	if len(block) == 0 {
		return 0, p.errf("\"config:\" needs YAML: inline, or as an indented block on the next lines")
	}
	indent := ""
	first := true
	for _, l := range block {
		if l == "" {
			continue
		}
		lead := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		if first {
			indent, first = lead, false
			continue
		}
		for !strings.HasPrefix(lead, indent) {
			indent = indent[:len(indent)-1]
		}
	}
	var b strings.Builder
	for _, l := range block {
		b.WriteString(strings.TrimRight(strings.TrimPrefix(l, indent), " \t"))
		b.WriteByte('\n')
	}
	p.sc.Config = b.String()
	return used, nil
}

// step parses an action or an expectation.
func (p *parser) step(text string) (Step, error) {
	// Comment bodies run to the end of the line: match them before tokenizing.
	if m := commentRE.FindStringSubmatch(text); m != nil {
		return p.commentStep(text, m)
	}
	if m := editCmtRE.FindStringSubmatch(text); m != nil {
		return p.editCommentStep(text, m)
	}
	if m := goalCmtRE.FindStringSubmatch(text); m != nil {
		return p.goalCommentStep(text, m)
	}
	toks, err := tokenize(text)
	if err != nil {
		return Step{}, p.errf("%v", err)
	}
	st := Step{Line: p.line, Text: source(text, toks)}
	c := &cursor{toks: toks}
	if c.word("expect") {
		e, err := p.expect(c)
		if err != nil {
			return Step{}, p.errf("%v", err)
		}
		st.Expect = e
		return st, nil
	}
	a, err := p.action(c)
	if err != nil {
		return Step{}, p.errf("%v", err)
	}
	st.Action = a
	return st, nil
}

func (p *parser) commentStep(text string, m []string) (Step, error) {
	actor, pr, num, name, repeat, body := m[1], m[2] == "PR", m[3], m[4], m[5], strings.TrimSpace(m[6])
	if err := p.checkActor(actor); err != nil {
		return Step{}, p.errf("%v", err)
	}
	times := 0
	if repeat != "" {
		var err error
		if times, err = strconv.Atoi(repeat); err != nil || times < 2 || times > maxTimes {
			return Step{}, p.errf("%s times: a comment is repeated 2 to %d times", repeat, maxTimes)
		}
		if name != "" {
			return Step{}, p.errf("a repeated comment cannot be named (name a single one: comments on #N as NAME: ...)")
		}
	}
	n, err := p.number("#"+num, pr)
	if err != nil {
		return Step{}, p.errf("%v", err)
	}
	if m[2] == "issue" && p.sc.issues[n] {
		return Step{}, p.errf("#%d is a pull request, not an issue", n)
	}
	if err := p.commentName(name, body); err != nil {
		return Step{}, err
	}
	return Step{Line: p.line, Text: text, Action: &Action{
		Kind: CommentOn, Actor: actor, Number: n, PR: pr, Comment: name, Body: unescape(body), HasBody: true, Times: times,
	}}, nil
}

// goalCommentStep: "ACTOR comments on goal "Title" [as NAME]: body", a
// comment on the goal issue of that milestone.
func (p *parser) goalCommentStep(text string, m []string) (Step, error) {
	actor, quoted, name, body := m[1], m[2], m[3], strings.TrimSpace(m[4])
	if err := p.checkActor(actor); err != nil {
		return Step{}, p.errf("%v", err)
	}
	toks, err := tokenize(quoted)
	if err != nil {
		return Step{}, p.errf("%v", err)
	}
	title, err := p.milestone(&cursor{toks: toks})
	if err != nil {
		return Step{}, p.errf("%v", err)
	}
	if err := p.commentName(name, body); err != nil {
		return Step{}, err
	}
	return Step{Line: p.line, Text: text, Action: &Action{
		Kind: CommentOn, Actor: actor, Goal: title, Comment: name, Body: unescape(body), HasBody: true,
	}}, nil
}

// commentName checks a comment's optional name (and records it) and its body.
func (p *parser) commentName(name, body string) error {
	if name != "" {
		if !nameRE.MatchString(name) {
			return p.errf("%q is not a comment name (letters, digits, _ . -)", name)
		}
		if l, dup := p.names[name]; dup {
			return p.errf("comment name %q is already used at line %d", name, l)
		}
		p.names[name] = p.line
	}
	if body == "" {
		return p.errf("the comment is empty (write its text after the colon)")
	}
	return nil
}

func (p *parser) editCommentStep(text string, m []string) (Step, error) {
	actor, name, body := m[1], m[2], strings.TrimSpace(m[3])
	if err := p.checkActor(actor); err != nil {
		return Step{}, p.errf("%v", err)
	}
	if _, ok := p.names[name]; !ok {
		return Step{}, p.errf("no comment named %q earlier (name one with \"comments on #N as %s: ...\")", name, name)
	}
	if body == "" {
		return Step{}, p.errf("the new comment text is empty")
	}
	return Step{Line: p.line, Text: text, Action: &Action{
		Kind: EditCommentOf, Actor: actor, Comment: name, Body: unescape(body), HasBody: true,
	}}, nil
}

// number resolves an issue reference token ("#3") to an issue the scenario
// opened earlier; pr says it was written "PR #3".
func (p *parser) number(ref string, pr bool) (int, error) {
	n, err := parseRef(ref)
	if err != nil {
		return 0, err
	}
	isPR, ok := p.sc.issues[n]
	if !ok {
		return 0, fmt.Errorf("#%d is not opened earlier in the scenario", n)
	}
	if pr && !isPR {
		return 0, fmt.Errorf("#%d is an issue, not a pull request", n)
	}
	return n, nil
}

func parseRef(ref string) (int, error) {
	s, ok := strings.CutPrefix(ref, "#")
	if !ok || s == "" {
		return 0, fmt.Errorf("expected an issue number like #1, got %q", ref)
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 || n > 1_000_000 || s[0] == '0' {
		return 0, fmt.Errorf("%q is not an issue number like #1 (a comment needs a space after #)", ref)
	}
	return n, nil
}

// target reads "[PR|issue] #N" and resolves it.
func (p *parser) target(c *cursor) (int, bool, error) {
	pr := c.word("PR")
	issue := !pr && c.word("issue")
	t, ok := c.next()
	if !ok {
		return 0, false, fmt.Errorf("expected an issue number like #1")
	}
	if t.quoted {
		return 0, false, fmt.Errorf("expected an issue number like #1, got %q", t.s)
	}
	n, err := p.number(t.s, pr)
	if err != nil {
		return 0, false, err
	}
	if issue && p.sc.issues[n] {
		return 0, false, fmt.Errorf("#%d is a pull request, not an issue", n)
	}
	return n, pr, nil
}

// milestone reads a milestone's "Title" and checks that the scenario created
// it earlier.
func (p *parser) milestone(c *cursor) (string, error) {
	title, err := c.str("the milestone's title")
	if err != nil {
		return "", err
	}
	if _, ok := p.sc.milestones[title]; !ok {
		return "", fmt.Errorf("milestone %q is not created earlier in the scenario (create it first: LOGIN creates milestone %q)", title, title)
	}
	return title, nil
}

// prTarget reads "PR #N".
func (p *parser) prTarget(c *cursor) (int, error) {
	if err := c.expect("PR"); err != nil {
		return 0, err
	}
	t, ok := c.next()
	if !ok || t.quoted {
		return 0, fmt.Errorf("expected a pull request number like #2")
	}
	return p.number(t.s, true)
}

func (p *parser) action(c *cursor) (*Action, error) {
	actor, ok := c.next()
	if !ok {
		return nil, fmt.Errorf("empty step")
	}
	if actor.quoted {
		return nil, fmt.Errorf("a step starts with who acts, e.g. alice, or with expect")
	}
	switch actor.s {
	case "countersign":
		if err := c.expect("loses", "its", "store"); err != nil {
			return nil, fmt.Errorf("%v (countersign can only: countersign loses its store)", err)
		}
		return &Action{Kind: LoseStore, Actor: "countersign"}, c.end()
	case "github":
		return p.github(c)
	case "ci":
		return p.ciReport(c)
	}
	if err := p.checkActor(actor.s); err != nil {
		return nil, err
	}
	a := &Action{Actor: actor.s}
	verb, ok := c.next()
	if !ok {
		return nil, fmt.Errorf("what does %s do? (e.g. \"%s opens issue #1 \\\"Title\\\"\")", actor.s, actor.s)
	}
	var err error
	switch verb.s {
	case "opens":
		err = p.opens(c, a)
	case "edits":
		err = p.edits(c, a)
	case "assigns":
		a.Kind = AssignUsers
		if a.Number, a.PR, err = p.target(c); err == nil {
			if err = c.expect("to"); err == nil {
				if a.Users, err = c.logins(); err == nil {
					err = p.notRenamed(a.Users...)
				}
			}
		}
	case "unassigns":
		a.Kind = UnassignUsers
		if a.Users, err = c.loginsUntil("from"); err == nil {
			if err = p.notRenamed(a.Users...); err == nil {
				if err = c.expect("from"); err == nil {
					a.Number, a.PR, err = p.target(c)
				}
			}
		}
	case "marks":
		a.Kind, a.PR = MarkReady, true
		if a.Number, err = p.prTarget(c); err == nil {
			err = c.expect("ready", "for", "review")
		}
	case "pushes":
		a.Kind, a.PR = PushCommit, true
		if err = c.expect("to"); err == nil {
			if a.Number, err = p.prTarget(c); err == nil {
				err = p.commitClauses(c, a, false)
			}
		}
	case "approves":
		a.Kind, a.PR, a.Review = ReviewPR, true, "APPROVED"
		if a.Number, err = p.prTarget(c); err == nil {
			a.Body, a.HasBody = c.optString()
		}
	case "requests":
		a.Kind, a.PR, a.Review = ReviewPR, true, "CHANGES_REQUESTED"
		if err = c.expect("changes", "on"); err == nil {
			if a.Number, err = p.prTarget(c); err == nil {
				a.Body, a.HasBody = c.optString()
			}
		}
	case "comments":
		// "comments on PR #N review "text"" (issue comments have a colon and
		// were matched before tokenizing).
		a.Kind, a.PR, a.Review = ReviewPR, true, "COMMENTED"
		if err = c.expect("on"); err == nil {
			if a.Number, err = p.prTarget(c); err == nil {
				if err = c.expect("review"); err == nil {
					a.Body, err = c.str("the review text")
					a.HasBody = true
				}
			}
		}
		if err != nil {
			err = fmt.Errorf("%v (an issue comment is written \"%s comments on #N: text\"; on a goal: %s comments on goal \"Title\": text)", err, a.Actor, a.Actor)
		}
	case "creates":
		a.Kind = CreateMilestone
		if err = c.expect("milestone"); err == nil {
			err = p.createsMilestone(c, a)
		}
	case "adds":
		a.Kind = SetMilestone
		if a.Number, a.PR, err = p.target(c); err == nil {
			if err = c.expect("to", "milestone"); err == nil {
				a.Milestone, err = p.milestone(c)
			}
		}
	case "removes":
		a.Kind = ClearMilestone
		if a.Number, a.PR, err = p.target(c); err == nil {
			if c.words("from", "the", "board") {
				a.Kind = BoardRemove
				break
			}
			if err = c.expect("from", "its", "milestone"); err != nil {
				err = fmt.Errorf("%v (an issue leaves its milestone with: %s removes #N from its milestone; the board: %s removes #N from the board)", err, a.Actor, a.Actor)
			}
		}
	case "moves":
		a.Kind = BoardMove
		if a.Number, a.PR, err = p.target(c); err == nil {
			if err = c.expect("on", "the", "board", "to"); err == nil {
				t, ok := c.next()
				if !ok || t.quoted || t.s == "" {
					err = fmt.Errorf("expected the option to move #%d to (e.g. verified)", a.Number)
				} else {
					a.Status = t.s
				}
			}
		}
	case "closes":
		if c.word("milestone") {
			a.Kind = CloseMilestone
			a.Milestone, err = p.milestone(c)
			break
		}
		a.Kind = CloseIssue
		if a.Number, a.PR, err = p.target(c); err == nil && c.word("as") {
			switch {
			case c.word("not"):
				err = c.expect("planned")
				a.Reason = "not_planned"
			case c.word("completed"):
				a.Reason = "completed"
			default:
				err = fmt.Errorf("expected \"as not planned\" or \"as completed\"")
			}
			if err == nil && p.sc.issues[a.Number] {
				err = fmt.Errorf("a pull request is closed without a reason")
			}
		}
	case "links":
		// GitHub's issue dependency: "carol links #3 blocked by #2".
		a.Kind = BlockedBy
		var pr, bpr bool
		if a.Number, pr, err = p.target(c); err == nil {
			if err = c.expect("blocked", "by"); err == nil {
				a.Blocker, bpr, err = p.target(c)
			}
		}
		if err == nil && (pr || bpr || p.sc.issues[a.Number] || p.sc.issues[a.Blocker]) {
			err = fmt.Errorf("a dependency links two issues, not pull requests")
		}
		if err == nil && a.Number == a.Blocker {
			err = fmt.Errorf("an issue cannot block itself")
		}
	case "reopens":
		if c.word("milestone") {
			a.Kind = ReopenMilestone
			a.Milestone, err = p.milestone(c)
			break
		}
		a.Kind = ReopenIssue
		a.Number, a.PR, err = p.target(c)
	case "labels", "unlabels":
		a.Kind = AddLabels
		if verb.s == "unlabels" {
			a.Kind = RemoveLabels
		}
		if a.Number, a.PR, err = p.target(c); err == nil {
			a.Labels, err = c.labels()
		}
	case "merges":
		a.Kind, a.PR = MergePR, true
		a.Number, err = p.prTarget(c)
	case "queues", "dequeues":
		a.Kind, a.PR = QueuePR, true
		if verb.s == "dequeues" {
			a.Kind = DequeuePR
		}
		a.Number, err = p.prTarget(c)
	case "posts":
		err = p.postStatus(c, a)
	case "renames":
		a.Kind = RenameLabel
		if err = c.expect("label"); err == nil {
			if a.Label, err = labelName(c); err == nil {
				if err = c.expect("to"); err == nil {
					a.NewName, err = labelName(c)
				}
			}
		}
		if err == nil && a.Label == a.NewName {
			err = fmt.Errorf("label %s is renamed to itself", a.Label)
		}
		if err != nil {
			err = fmt.Errorf("%v (a repository label is renamed with: %s renames label OLD to NEW; an account: github renames account OLD to NEW)", err, a.Actor)
		}
	case "deletes":
		a.Kind = DeleteLabel
		if err = c.expect("label"); err == nil {
			a.Label, err = labelName(c)
		}
	default:
		return nil, fmt.Errorf("unknown action %q (see internal/scenarios/README.md)", verb.s)
	}
	if err != nil {
		return nil, err
	}
	if err := c.end(); err != nil {
		return nil, err
	}
	return a, nil
}

// opens: "opens issue #N "Title" [with body "..."]" or
// "opens [draft] PR #N "Title" [clauses]".
func (p *parser) opens(c *cursor, a *Action) error {
	switch {
	case c.word("issue"):
		a.Kind = OpenIssue
	case c.word("draft"):
		if err := c.expect("PR"); err != nil {
			return err
		}
		a.Kind, a.PR, a.Draft = OpenPR, true, true
	case c.word("PR"):
		a.Kind, a.PR = OpenPR, true
	default:
		return fmt.Errorf("expected \"opens issue #N\", \"opens PR #N\" or \"opens draft PR #N\"")
	}
	t, ok := c.next()
	if !ok || t.quoted {
		return fmt.Errorf("expected the number GitHub will give it, like #1")
	}
	n, err := parseRef(t.s)
	if err != nil {
		return err
	}
	if _, dup := p.sc.issues[n]; dup {
		return fmt.Errorf("#%d is already opened earlier in the scenario", n)
	}
	a.Number = n
	if a.Title, err = c.str("a title"); err != nil {
		return err
	}
	if strings.TrimSpace(a.Title) == "" {
		return fmt.Errorf("the title is empty")
	}
	if a.Kind == OpenIssue {
		if c.word("with") {
			if err := c.expect("body"); err != nil {
				return err
			}
			if a.Body, err = c.str("the body"); err != nil {
				return err
			}
			a.HasBody = true
		}
	} else if err := p.commitClauses(c, a, true); err != nil {
		return err
	}
	p.sc.issues[n] = a.PR
	return nil
}

// createsMilestone: "creates milestone "Title"" (after "milestone"); the
// title names the milestone in the rest of the file.
func (p *parser) createsMilestone(c *cursor, a *Action) error {
	title, err := c.str("the milestone's title")
	if err != nil {
		return err
	}
	if strings.TrimSpace(title) == "" {
		return fmt.Errorf("the title is empty")
	}
	if l, dup := p.sc.milestones[title]; dup {
		return fmt.Errorf("milestone %q is already created at line %d", title, l)
	}
	p.sc.milestones[title] = p.line
	a.Milestone = title
	return nil
}

// commitClauses reads the clauses of "opens PR" (all) and "pushes to PR"
// (co-authored by, changing), in any order, each at most once.
func (p *parser) commitClauses(c *cursor, a *Action, opening bool) error {
	seen := map[string]bool{}
	for !c.done() {
		t, _ := c.peek()
		if t.quoted || seen[t.s] {
			break
		}
		seen[t.s] = true
		switch {
		case t.s == "closing" && opening:
			c.next()
			for {
				r, ok := c.peek()
				if !ok || r.quoted || !strings.HasPrefix(r.s, "#") {
					break
				}
				c.next()
				n, err := parseRef(r.s)
				if err != nil {
					return err
				}
				if isPR, ok := p.sc.issues[n]; !ok || isPR {
					return fmt.Errorf("closing #%d: not an issue opened earlier in the scenario", n)
				}
				a.Closes = append(a.Closes, n)
				c.word("and")
			}
			if len(a.Closes) == 0 {
				return fmt.Errorf("\"closing\" needs issue numbers, e.g. closing #1")
			}
		case t.s == "with" && opening:
			c.next()
			if err := c.expect("body"); err != nil {
				return err
			}
			var err error
			if a.Body, err = c.str("the body"); err != nil {
				return err
			}
			a.HasBody = true
		case t.s == "co-authored":
			c.next()
			if err := c.expect("by"); err != nil {
				return err
			}
			users, err := c.coAuthors("closing", "with", "changing", "assigned")
			if err != nil {
				return err
			}
			if err := p.notRenamed(users...); err != nil {
				return err
			}
			a.CoAuthors = users
		case t.s == "assigned" && opening:
			c.next()
			if err := c.expect("to"); err != nil {
				return err
			}
			users, err := c.loginsUntil("closing", "with", "changing", "co-authored")
			if err != nil {
				return err
			}
			if err := p.notRenamed(users...); err != nil {
				return err
			}
			a.Users = users
		case t.s == "changing":
			c.next()
			for {
				f, ok := c.peek()
				if !ok || (!f.quoted && (f.s == "closing" || f.s == "with" || f.s == "co-authored" || f.s == "assigned")) {
					break
				}
				c.next()
				if f.s == "" || strings.ContainsAny(f.s, "\n") {
					return fmt.Errorf("bad file path %q", f.s)
				}
				a.Files = append(a.Files, f.s)
			}
			if len(a.Files) == 0 {
				return fmt.Errorf("\"changing\" needs file paths, e.g. changing login.js login.css")
			}
		default:
			return nil // c.end reports it
		}
	}
	return nil
}

// edits: "edits [PR|issue] #N [title "T"] [body "B"]".
func (p *parser) edits(c *cursor, a *Action) error {
	a.Kind = Edit
	var err error
	if c.word("the") {
		// "edits the card on #N replacing "X" with "Y""
		a.Kind = EditCard
		if err := c.expect("card", "on"); err != nil {
			return err
		}
		if a.Number, a.PR, err = p.target(c); err != nil {
			return err
		}
		if err := c.expect("replacing"); err != nil {
			return err
		}
		if a.Replace, err = c.str("the text to replace"); err != nil {
			return err
		}
		if err := c.expect("with"); err != nil {
			return err
		}
		a.With, err = c.str("the new text")
		return err
	}
	if a.Number, a.PR, err = p.target(c); err != nil {
		return err
	}
	if c.word("title") {
		if a.Title, err = c.str("the new title"); err != nil {
			return err
		}
		if strings.TrimSpace(a.Title) == "" {
			return fmt.Errorf("the title is empty")
		}
	}
	if c.word("body") {
		if a.Body, err = c.str("the new body"); err != nil {
			return err
		}
		a.HasBody = true
	}
	if a.Title == "" && !a.HasBody {
		return fmt.Errorf("expected title \"...\" and/or body \"...\"")
	}
	return nil
}

// github reads what GitHub itself does: "github redelivers the last ...",
// "github renames account OLD to NEW", "github drops webhooks", "github
// resumes webhooks".
func (p *parser) github(c *cursor) (*Action, error) {
	switch {
	case c.word("renames"):
		return p.renameAccount(c)
	case c.word("drops"):
		if err := c.expect("webhooks"); err != nil {
			return nil, err
		}
		if p.dropping != 0 {
			return nil, fmt.Errorf("webhooks are already dropped since line %d", p.dropping)
		}
		p.dropping = p.line
		return &Action{Kind: DropWebhooks, Actor: "github"}, c.end()
	case c.word("merges"):
		// GitHub merges the first group of the merge queue, as its merge
		// queue's bot does once the group's required checks pass.
		if err := c.expect("the", "queue"); err != nil {
			return nil, err
		}
		return &Action{Kind: MergeQueue, Actor: "github-merge-queue[bot]"}, c.end()
	case c.word("resumes"):
		if err := c.expect("webhooks"); err != nil {
			return nil, err
		}
		if p.dropping == 0 {
			return nil, fmt.Errorf("webhooks are not dropped (github drops webhooks comes first)")
		}
		p.dropping = 0
		return &Action{Kind: ResumeWebhooks, Actor: "github"}, c.end()
	}
	return p.redeliver(c)
}

// renameAccount: "github renames account OLD to NEW" (after "renames"): the
// account keeps its id; later steps must use NEW.
func (p *parser) renameAccount(c *cursor) (*Action, error) {
	if err := c.expect("account"); err != nil {
		return nil, err
	}
	old, err := c.loginsUntil("to")
	if err != nil {
		return nil, err
	}
	if err := c.expect("to"); err != nil {
		return nil, err
	}
	to, err := c.logins()
	if err != nil {
		return nil, err
	}
	if len(old) != 1 || len(to) != 1 {
		return nil, fmt.Errorf("one account is renamed at a time: github renames account alice to alice2")
	}
	if err := p.notRenamed(old[0]); err != nil {
		return nil, err
	}
	from, newLogin := old[0], to[0]
	prev, back := p.renamed[strings.ToLower(newLogin)]
	back = back && strings.EqualFold(prev.to, from) // the account takes its old login back
	switch {
	case strings.EqualFold(from, newLogin):
		return nil, fmt.Errorf("%s is renamed to itself", from)
	case strings.HasSuffix(from, "[bot]") || strings.HasSuffix(newLogin, "[bot]"):
		return nil, fmt.Errorf("a bot account's login cannot be changed")
	case prev.line > 0 && !back:
		return nil, fmt.Errorf("%s was another account's login until line %d", newLogin, prev.line)
	case p.who[strings.ToLower(newLogin)] && !back:
		return nil, fmt.Errorf("%s is another person's login (people:)", newLogin)
	}
	if p.renamed == nil {
		p.renamed = map[string]rename{}
	}
	for k, r := range p.renamed { // the account's earlier logins now lead to the new one
		if strings.EqualFold(r.to, from) {
			p.renamed[k] = rename{to: newLogin, line: r.line}
		}
	}
	delete(p.renamed, strings.ToLower(newLogin))
	p.renamed[strings.ToLower(from)] = rename{to: newLogin, line: p.line}
	return &Action{Kind: RenameAccount, Actor: "github", Users: []string{from}, NewName: newLogin}, nil
}

// redeliver: "github redelivers the last EVENT[.ACTION]".
func (p *parser) redeliver(c *cursor) (*Action, error) {
	if err := c.expect("redelivers", "the", "last"); err != nil {
		return nil, fmt.Errorf("%v (GitHub can: github redelivers the last issue_comment, github renames account alice to alice2, github drops webhooks, github resumes webhooks)", err)
	}
	t, ok := c.next()
	if !ok || t.quoted || !eventRE.MatchString(t.s) {
		return nil, fmt.Errorf("expected a webhook event, e.g. issue_comment or pull_request_review.submitted")
	}
	a := &Action{Kind: RedeliverLast, Actor: "github"}
	a.Event, a.EvAction, _ = strings.Cut(t.s, ".")
	return a, c.end()
}

// postStatus: "posts status NAME... STATE on PR #N" (a person's commit
// statuses, with their own token).
func (p *parser) postStatus(c *cursor, a *Action) error {
	if err := c.expect("status"); err != nil {
		return fmt.Errorf("%v (e.g. alice posts status test success on PR #2)", err)
	}
	a.Kind, a.PR = PostStatus, true
	var words []string
	for {
		t, ok := c.next()
		if !ok {
			return fmt.Errorf("expected \"posts status NAME... success|failure|error|pending on PR #N\"")
		}
		if !t.quoted && t.s == "on" {
			break
		}
		if w := strings.TrimSuffix(t.s, ","); w != "and" {
			words = append(words, w)
		}
	}
	if len(words) < 2 {
		return fmt.Errorf("expected status contexts and a state before \"on\", e.g. posts status test success on PR #2")
	}
	a.Status, a.Checks = words[len(words)-1], words[:len(words)-1]
	if !statusStates[a.Status] {
		return fmt.Errorf("unknown status state %q (success, failure, error or pending)", a.Status)
	}
	for _, w := range a.Checks {
		if w == "" {
			return fmt.Errorf("empty status context")
		}
	}
	var err error
	a.Number, err = p.prTarget(c)
	return err
}

// ciReport: "ci reports NAME... STATUS on PR #N".
func (p *parser) ciReport(c *cursor) (*Action, error) {
	if err := c.expect("reports"); err != nil {
		return nil, fmt.Errorf("%v (CI can only: ci reports test success on PR #2)", err)
	}
	a := &Action{Kind: ReportCheckRun, Actor: "ci", PR: true}
	var words []string
	for {
		t, ok := c.next()
		if !ok {
			return nil, fmt.Errorf("expected \"ci reports NAME... success|failure|pending on PR #N\"")
		}
		if !t.quoted && t.s == "on" {
			break
		}
		words = append(words, t.s)
	}
	if len(words) < 2 {
		return nil, fmt.Errorf("expected check names and a status before \"on\", e.g. ci reports test success on PR #2")
	}
	a.Status = words[len(words)-1]
	if !ciStatuses[a.Status] {
		return nil, fmt.Errorf("unknown CI status %q (success, failure or pending)", a.Status)
	}
	for _, w := range words[:len(words)-1] {
		w = strings.TrimSuffix(w, ",")
		if w == "and" {
			continue
		}
		if w == "" {
			return nil, fmt.Errorf("empty check name")
		}
		a.Checks = append(a.Checks, w)
	}
	var err error
	if a.Number, err = p.prTarget(c); err != nil {
		return nil, err
	}
	return a, c.end()
}

func (p *parser) expect(c *cursor) (*Expect, error) {
	e := &Expect{}
	var err error
	switch {
	case c.word("check"):
		e.Kind, e.PR = ExpectCheck, true
		if err = c.expect("on"); err != nil {
			return nil, err
		}
		if c.word("group") {
			e.Group = true
			if err = c.expect("of"); err != nil {
				return nil, err
			}
		}
		if e.Number, err = p.prTarget(c); err != nil {
			return nil, err
		}
		t, ok := c.next()
		if !ok || t.quoted || !checkStatuses[t.s] {
			return nil, fmt.Errorf("expected a check status: success, failure, in_progress, queued, neutral or none")
		}
		e.Status = t.s
	case c.word("no"):
		e.Not = true
		if c.word("card") {
			e.Kind = ExpectCard
			if err = c.expect("on"); err != nil {
				return nil, err
			}
			if e.Number, e.PR, err = p.target(c); err != nil {
				return nil, err
			}
			break
		}
		e.Kind = ExpectReply
		if err = c.expect("reply", "on"); err != nil {
			return nil, fmt.Errorf("%v (expect no reply on #N, expect no card on #N)", err)
		}
		if err = p.replyTarget(c, e); err != nil {
			return nil, err
		}
		if c.word("containing") {
			if e.Text, err = c.str("the text no reply may contain"); err != nil {
				return nil, err
			}
		}
	case c.word("reply"):
		e.Kind = ExpectReply
		if err = c.expect("on"); err != nil {
			return nil, err
		}
		if err = p.replyTarget(c, e); err != nil {
			return nil, err
		}
		if c.word("containing") {
			if e.Text, err = c.str("the text to find"); err != nil {
				return nil, err
			}
		}
	case c.word("at"):
		if err = c.expect("most"); err != nil {
			return nil, err
		}
		e.AtMost = true
		if err = p.replyCount(c, e); err != nil {
			return nil, err
		}
	case isCount(c):
		if err = p.replyCount(c, e); err != nil {
			return nil, err
		}
	case c.word("repository"):
		e.Kind = ExpectRepoLabel
		if err = c.expect("label"); err != nil {
			return nil, err
		}
		if e.Label, err = labelName(c); err != nil {
			return nil, err
		}
		switch {
		case c.word("present"):
			if c.word("colored") {
				t, ok := c.next()
				if !ok || t.quoted || !colorRE.MatchString(t.s) {
					return nil, fmt.Errorf("expected a colour of 6 hex digits after colored, e.g. colored 1d76db")
				}
				e.Color = strings.ToLower(t.s)
			}
		case c.word("absent"):
			e.Not = true
		default:
			return nil, fmt.Errorf("expected present or absent after repository label %s", e.Label)
		}
	case c.word("card"):
		e.Kind = ExpectCard
		if err = c.expect("on"); err != nil {
			return nil, err
		}
		if e.Number, e.PR, err = p.target(c); err != nil {
			return nil, err
		}
		if err = c.expect("containing"); err != nil {
			return nil, err
		}
		if e.Text, err = c.str("the text to find"); err != nil {
			return nil, err
		}
	case c.word("goal"):
		if e.Goal, err = p.milestone(c); err != nil {
			return nil, err
		}
		switch {
		case c.word("state"):
			e.Kind = ExpectGoalState
			t, ok := c.next()
			if !ok || t.quoted || !contains(GoalStates, t.s) {
				return nil, fmt.Errorf("expected a goal state: %s", strings.Join(GoalStates, ", "))
			}
			e.State = t.s
		case c.word("containing"):
			e.Kind = ExpectGoal
			if e.Text, err = c.str("the text to find"); err != nil {
				return nil, err
			}
		case c.word("open"):
			e.Kind = ExpectOpen
		case c.word("closed"):
			e.Kind = ExpectClosed
		default:
			return nil, fmt.Errorf("expected state, containing, open or closed after goal %q", e.Goal)
		}
	case c.word("milestone"):
		if e.Milestone, err = p.milestone(c); err != nil {
			return nil, err
		}
		switch {
		case c.word("open"):
			e.Kind = ExpectOpen
		case c.word("closed"):
			e.Kind = ExpectClosed
		default:
			return nil, fmt.Errorf("expected open or closed after milestone %q", e.Milestone)
		}
	default:
		if e.Number, e.PR, err = p.target(c); err != nil {
			return nil, fmt.Errorf("%v (expectations: expect #N state|labeled|not labeled|open|closed|assigned to, expect check|reply|no reply|card on ..., expect [at most] N replies on ..., expect goal|milestone \"Title\" ..., expect repository label NAME present|absent)", err)
		}
		switch {
		case c.word("state"):
			e.Kind = ExpectState
			t, ok := c.next()
			if !ok || t.quoted || !isState(t.s) {
				return nil, fmt.Errorf("expected a state: %s", strings.Join(States, ", "))
			}
			e.State = t.s
		case c.word("labeled"):
			e.Kind = ExpectLabeled
			e.Labels, err = c.labels()
		case c.words("not", "on", "the", "board"):
			e.Kind, e.Not = ExpectBoard, true
		case c.words("on", "the", "board", "at"):
			e.Kind = ExpectBoard
			t, ok := c.next()
			if !ok || t.quoted || t.s == "" {
				return nil, fmt.Errorf("expected the option #%d shows on the board (e.g. pending)", e.Number)
			}
			e.State = t.s
		case c.word("not"):
			e.Kind, e.Not = ExpectLabeled, true
			if err = c.expect("labeled"); err == nil {
				e.Labels, err = c.labels()
			}
		case c.word("open"):
			e.Kind = ExpectOpen
		case c.word("closed"):
			e.Kind = ExpectClosed
		case c.word("assigned"):
			e.Kind = ExpectAssigned
			if err = c.expect("to"); err == nil {
				e.Users, err = c.logins()
			}
		default:
			return nil, fmt.Errorf("expected state, labeled, not labeled, open, closed, assigned to, on the board at or not on the board after #%d", e.Number)
		}
		if err != nil {
			return nil, err
		}
	}
	return e, c.end()
}

// isCount reports whether a bare number is next (expect N replies on ...).
func isCount(c *cursor) bool {
	t, ok := c.peek()
	if !ok || t.quoted || t.s == "" {
		return false
	}
	for _, r := range t.s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// replyCount reads "N replies on TARGET" ("1 reply on" too), after
// "expect" or "expect at most".
func (p *parser) replyCount(c *cursor, e *Expect) error {
	e.Kind = ExpectReplies
	t, _ := c.next()
	n, err := strconv.Atoi(t.s)
	if err != nil || t.quoted || n < 0 || n > maxTimes*10 || (len(t.s) > 1 && t.s[0] == '0') {
		return fmt.Errorf("expected a number of replies, e.g. expect at most 3 replies on #1")
	}
	if n == 0 && !e.AtMost {
		return fmt.Errorf("expect 0 replies is written: expect no reply on #N")
	}
	e.Count = n
	word := "replies"
	if n == 1 {
		word = "reply"
	}
	if err := c.expect(word); err != nil {
		return err
	}
	if err := c.expect("on"); err != nil {
		return err
	}
	return p.replyTarget(c, e)
}

// replyTarget reads the "#N", "PR #N" or "goal "Title"" of a reply expectation.
func (p *parser) replyTarget(c *cursor, e *Expect) error {
	var err error
	if c.word("goal") {
		e.Goal, err = p.milestone(c)
		return err
	}
	e.Number, e.PR, err = p.target(c)
	return err
}

func isState(s string) bool {
	for _, v := range States {
		if v == s {
			return true
		}
	}
	return false
}

func checkLogin(s string) error {
	if !loginRE.MatchString(s) {
		return fmt.Errorf("%q is not a GitHub login", s)
	}
	if reserved[strings.ToLower(s)] {
		return fmt.Errorf("%q is a reserved word, not a login here", s)
	}
	return nil
}

func (p *parser) checkActor(s string) error {
	if err := checkLogin(s); err != nil {
		return fmt.Errorf("a step starts with who acts (a login), with github, ci or expect: %v", err)
	}
	return p.notRenamed(s)
}

// notRenamed refuses a login whose account was renamed earlier in the
// scenario: later steps use the new login.
func (p *parser) notRenamed(logins ...string) error {
	for _, l := range logins {
		if r, ok := p.renamed[strings.ToLower(l)]; ok {
			return fmt.Errorf("%s was renamed to %s at line %d: later steps use the new login", l, r.to, r.line)
		}
	}
	return nil
}

// unescape turns \n, \t, \" and \\ into what they stand for; other
// backslashes stay.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case 'n':
				b.WriteByte('\n')
				i++
				continue
			case 't':
				b.WriteByte('\t')
				i++
				continue
			case '\\', '"':
				b.WriteByte(s[i+1])
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ---- tokens ----

type token struct {
	s      string
	quoted bool
	end    int // byte offset just past the token in the line
}

// tokenize splits a line into words and "quoted strings" (with \n, \t, \"
// and \\ escapes). A lone # (followed by a space or the end) starts a comment.
func tokenize(line string) ([]token, error) {
	var toks []token
	i := 0
	for {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		if i >= len(line) {
			return toks, nil
		}
		if line[i] == '#' && (i+1 == len(line) || line[i+1] == ' ' || line[i+1] == '\t') {
			return toks, nil
		}
		if line[i] == '"' {
			var b strings.Builder
			j := i + 1
			closed := false
			for j < len(line) {
				ch := line[j]
				if ch == '"' {
					closed = true
					j++
					break
				}
				if ch == '\\' && j+1 < len(line) {
					switch line[j+1] {
					case 'n':
						b.WriteByte('\n')
					case 't':
						b.WriteByte('\t')
					case '"', '\\':
						b.WriteByte(line[j+1])
					default:
						return nil, fmt.Errorf("unknown escape \\%c in a quoted string (use \\n, \\t, \\\" or \\\\)", line[j+1])
					}
					j += 2
					continue
				}
				b.WriteByte(ch)
				j++
			}
			if !closed {
				return nil, fmt.Errorf("unterminated quoted string")
			}
			if j < len(line) && line[j] != ' ' && line[j] != '\t' {
				return nil, fmt.Errorf("a quoted string must be followed by a space")
			}
			toks = append(toks, token{s: b.String(), quoted: true, end: j})
			i = j
			continue
		}
		j := i
		for j < len(line) && line[j] != ' ' && line[j] != '\t' {
			if line[j] == '"' {
				return nil, fmt.Errorf("unexpected quote inside %q (quoted strings start with a quote)", line[i:])
			}
			j++
		}
		toks = append(toks, token{s: line[i:j], end: j})
		i = j
	}
}

// source is the line up to its last token (its trailing comment removed).
func source(line string, toks []token) string {
	if len(toks) == 0 {
		return ""
	}
	return line[:toks[len(toks)-1].end]
}

// stripComment removes a trailing " # comment" outside quotes.
func stripComment(s string) string {
	inQuote := false
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '"':
			inQuote = !inQuote
		case s[i] == '#' && !inQuote && i > 0 && (s[i-1] == ' ' || s[i-1] == '\t') &&
			(i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\t'):
			return strings.TrimSpace(s[:i])
		}
	}
	return strings.TrimSpace(s)
}

type cursor struct {
	toks []token
	i    int
}

func (c *cursor) done() bool { return c.i >= len(c.toks) }

func (c *cursor) peek() (token, bool) {
	if c.done() {
		return token{}, false
	}
	return c.toks[c.i], true
}

func (c *cursor) next() (token, bool) {
	t, ok := c.peek()
	if ok {
		c.i++
	}
	return t, ok
}

// word consumes the bare word w if it is next.
func (c *cursor) word(w string) bool {
	if t, ok := c.peek(); ok && !t.quoted && t.s == w {
		c.i++
		return true
	}
	return false
}

// words consumes the bare words ws, in order, if they come next (all or
// none).
func (c *cursor) words(ws ...string) bool {
	at := c.i
	for _, w := range ws {
		if !c.word(w) {
			c.i = at
			return false
		}
	}
	return true
}

// expect consumes the bare words ws, in order.
func (c *cursor) expect(ws ...string) error {
	for _, w := range ws {
		if !c.word(w) {
			if t, ok := c.peek(); ok {
				return fmt.Errorf("expected %q, got %q", w, t.s)
			}
			return fmt.Errorf("expected %q at the end of the line", w)
		}
	}
	return nil
}

// str consumes a quoted string.
func (c *cursor) str(what string) (string, error) {
	t, ok := c.peek()
	if !ok {
		return "", fmt.Errorf("expected %s in double quotes", what)
	}
	if !t.quoted {
		return "", fmt.Errorf("expected %s in double quotes, got %q", what, t.s)
	}
	c.i++
	return t.s, nil
}

// optString consumes a quoted string if one is next.
func (c *cursor) optString() (string, bool) {
	if t, ok := c.peek(); ok && t.quoted {
		c.i++
		return t.s, true
	}
	return "", false
}

// logins reads "alice", "alice bob", "alice and bob", "alice, bob" up to the
// end of the line.
func (c *cursor) logins() ([]string, error) { return c.loginsUntil() }

// loginsUntil reads logins up to one of the stop words (or the end).
// coAuthors reads co-authors until a stop word: logins (a noreply address
// each) or quoted trailers "Name <email>".
func (c *cursor) coAuthors(stop ...string) ([]string, error) {
	var out []string
	for {
		t, ok := c.peek()
		if !ok || (!t.quoted && contains(stop, t.s)) {
			break
		}
		c.i++
		if !t.quoted && t.s == "and" && len(out) > 0 {
			continue
		}
		name := strings.TrimSuffix(t.s, ",")
		if t.quoted {
			if !trailerRE.MatchString(t.s) {
				return nil, fmt.Errorf("a quoted co-author must be \"Name <email>\", got %q", t.s)
			}
			out = append(out, t.s)
			continue
		}
		if err := checkLogin(name); err != nil {
			return nil, err
		}
		out = append(out, name)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("expected one or more co-authors")
	}
	return out, nil
}

// trailerRE is a co-author written out: "Name <email>".
var trailerRE = regexp.MustCompile(`^[^<>\n]+ <[^<>\s@]+@[^<>\s]+>$`)

func (c *cursor) loginsUntil(stop ...string) ([]string, error) {
	var out []string
	for {
		t, ok := c.peek()
		if !ok {
			break
		}
		if !t.quoted && contains(stop, t.s) {
			break
		}
		c.i++
		if !t.quoted && t.s == "and" && len(out) > 0 {
			continue
		}
		name := strings.TrimSuffix(t.s, ",")
		if t.quoted {
			return nil, fmt.Errorf("expected a login, got a quoted string")
		}
		if err := checkLogin(name); err != nil {
			return nil, err
		}
		out = append(out, name)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("expected one or more logins")
	}
	return out, nil
}

// labels reads label names (bare words or quoted) to the end of the line.
func (c *cursor) labels() ([]string, error) {
	var out []string
	for {
		t, ok := c.next()
		if !ok {
			break
		}
		if strings.TrimSpace(t.s) == "" {
			return nil, fmt.Errorf("empty label name")
		}
		out = append(out, t.s)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("expected one or more label names")
	}
	return out, nil
}

// labelName reads one label name (a bare word or quoted).
func labelName(c *cursor) (string, error) {
	t, ok := c.next()
	if !ok || strings.TrimSpace(t.s) == "" {
		return "", fmt.Errorf("expected a label name")
	}
	if !t.quoted && (t.s == "to" || strings.HasPrefix(t.s, "#")) {
		return "", fmt.Errorf("expected a label name, got %q", t.s)
	}
	return t.s, nil
}

// end reports leftover tokens.
func (c *cursor) end() error {
	if t, ok := c.peek(); ok {
		if !t.quoted && strings.HasPrefix(t.s, "#") {
			return fmt.Errorf("unexpected %q (a comment needs a space after #)", t.s)
		}
		return fmt.Errorf("unexpected %q", t.s)
	}
	return nil
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
