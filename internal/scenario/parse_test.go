package scenario

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

const head = "scenario: t\npeople: alice=write bob=write carol=admin\n"

// opened are steps that open #1 (issue) and #2 (PR closing #1), for cases
// that refer to them.
const opened = "carol opens issue #1 \"Task\"\nalice opens PR #2 \"Work\" closing #1\n"

func TestParseSetup(t *testing.T) {
	src := `# A comment line.
scenario: Simple three-person workflow (seed 000)   # trailing comment
people: alice=write bob=write   # two people
people: carol=admin minion[bot]=write
team: acme/leads = carol, dave and erin
config:
  leads: [carol]

  agents:
    "minion[bot]": alice
# back at column 0
carol opens issue #1 "Create login form component"
`
	sc, err := Parse("x.scenario", strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	if sc.Name != "x.scenario" || sc.Title != "Simple three-person workflow (seed 000)" {
		t.Errorf("name %q title %q", sc.Name, sc.Title)
	}
	wantPeople := []Person{{"alice", "write"}, {"bob", "write"}, {"carol", "admin"}, {"minion[bot]", "write"}}
	if !reflect.DeepEqual(sc.People, wantPeople) {
		t.Errorf("people = %+v", sc.People)
	}
	if want := []Team{{"acme", "leads", []string{"carol", "dave", "erin"}}}; !reflect.DeepEqual(sc.Teams, want) {
		t.Errorf("teams = %+v", sc.Teams)
	}
	if want := "leads: [carol]\n\nagents:\n  \"minion[bot]\": alice\n"; sc.Config != want {
		t.Errorf("config = %q, want %q", sc.Config, want)
	}
	if len(sc.Steps) != 1 || sc.Steps[0].Line != 12 || sc.Steps[0].Action == nil {
		t.Fatalf("steps = %+v", sc.Steps)
	}

	sc, err = Parse("y", strings.NewReader("scenario: t\nconfig: {leads: [carol]}\ncarol opens issue #1 \"x\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if sc.Config != "{leads: [carol]}\n" {
		t.Errorf("inline config = %q", sc.Config)
	}
}

func TestParseSteps(t *testing.T) {
	tests := []struct {
		name   string
		line   string // parsed after head + opened
		action *Action
		expect *Expect
	}{
		{"open issue with body", `carol opens issue #3 "Title" with body "line 1\nline \"2\""`,
			&Action{Kind: OpenIssue, Actor: "carol", Number: 3, Title: "Title", Body: "line 1\nline \"2\"", HasBody: true}, nil},
		{"open PR all clauses", `alice opens PR #3 "Login" closing #1 co-authored by dave and eve changing a.go "b c.go" with body "Body"`,
			&Action{Kind: OpenPR, Actor: "alice", Number: 3, PR: true, Title: "Login", Closes: []int{1},
				CoAuthors: []string{"dave", "eve"}, Files: []string{"a.go", "b c.go"}, Body: "Body", HasBody: true}, nil},
		{"open draft PR", `minion[bot] opens draft PR #3 "Data" closing #1`,
			&Action{Kind: OpenPR, Actor: "minion[bot]", Number: 3, PR: true, Draft: true, Title: "Data", Closes: []int{1}}, nil},
		{"edit body", `alice edits PR #2 body "Fixes #3"`,
			&Action{Kind: Edit, Actor: "alice", Number: 2, PR: true, Body: "Fixes #3", HasBody: true}, nil},
		{"edit title", `carol edits issue #1 title "New"`,
			&Action{Kind: Edit, Actor: "carol", Number: 1, Title: "New"}, nil},
		{"edit empty body", `carol edits #1 body ""`,
			&Action{Kind: Edit, Actor: "carol", Number: 1, HasBody: true}, nil},
		{"assign", `carol assigns #1 to alice, bob and minion[bot]`,
			&Action{Kind: AssignUsers, Actor: "carol", Number: 1, Users: []string{"alice", "bob", "minion[bot]"}}, nil},
		{"unassign", `carol unassigns alice from #1`,
			&Action{Kind: UnassignUsers, Actor: "carol", Number: 1, Users: []string{"alice"}}, nil},
		{"ready", `alice marks PR #2 ready for review`,
			&Action{Kind: MarkReady, Actor: "alice", Number: 2, PR: true}, nil},
		{"push", `bob pushes to PR #2`,
			&Action{Kind: PushCommit, Actor: "bob", Number: 2, PR: true}, nil},
		{"push with clauses", `bob pushes to PR #2 changing x.go co-authored by eve`,
			&Action{Kind: PushCommit, Actor: "bob", Number: 2, PR: true, Files: []string{"x.go"}, CoAuthors: []string{"eve"}}, nil},
		{"approve", `carol approves PR #2`,
			&Action{Kind: ReviewPR, Actor: "carol", Number: 2, PR: true, Review: "APPROVED"}, nil},
		{"approve with body", `carol approves PR #2 "LGTM"`,
			&Action{Kind: ReviewPR, Actor: "carol", Number: 2, PR: true, Review: "APPROVED", Body: "LGTM", HasBody: true}, nil},
		{"request changes", `carol requests changes on PR #2 "Needs tests"`,
			&Action{Kind: ReviewPR, Actor: "carol", Number: 2, PR: true, Review: "CHANGES_REQUESTED", Body: "Needs tests", HasBody: true}, nil},
		{"review comment", `carol comments on PR #2 review "Nice"`,
			&Action{Kind: ReviewPR, Actor: "carol", Number: 2, PR: true, Review: "COMMENTED", Body: "Nice", HasBody: true}, nil},
		{"comment", `bob comments on #1: /verify Form renders correctly # not a comment`,
			&Action{Kind: CommentOn, Actor: "bob", Number: 1, Body: "/verify Form renders correctly # not a comment", HasBody: true}, nil},
		{"comment escapes", `bob comments on PR #2: ok\n` + "```" + `\n/verify\n` + "```",
			&Action{Kind: CommentOn, Actor: "bob", Number: 2, PR: true, Body: "ok\n```\n/verify\n```", HasBody: true}, nil},
		{"named comment", `bob comments on #1 as c1: later`,
			&Action{Kind: CommentOn, Actor: "bob", Number: 1, Comment: "c1", Body: "later", HasBody: true}, nil},
		{"close", `carol closes #1`, &Action{Kind: CloseIssue, Actor: "carol", Number: 1}, nil},
		{"close not planned", `carol closes #1 as not planned`,
			&Action{Kind: CloseIssue, Actor: "carol", Number: 1, Reason: "not_planned"}, nil},
		{"close completed", `carol closes issue #1 as completed`,
			&Action{Kind: CloseIssue, Actor: "carol", Number: 1, Reason: "completed"}, nil},
		{"close PR", `carol closes PR #2`, &Action{Kind: CloseIssue, Actor: "carol", Number: 2, PR: true}, nil},
		{"reopen", `carol reopens #1`, &Action{Kind: ReopenIssue, Actor: "carol", Number: 1}, nil},
		{"labels", `mallory labels #1 state:verified "needs triage"`,
			&Action{Kind: AddLabels, Actor: "mallory", Number: 1, Labels: []string{"state:verified", "needs triage"}}, nil},
		{"unlabel", `mallory unlabels #1 state:review`,
			&Action{Kind: RemoveLabels, Actor: "mallory", Number: 1, Labels: []string{"state:review"}}, nil},
		{"merge", `carol merges PR #2`, &Action{Kind: MergePR, Actor: "carol", Number: 2, PR: true}, nil},
		{"edit the card", `mallory edits the card on #1 replacing "\"review\"" with "\"verified\""`,
			&Action{Kind: EditCard, Actor: "mallory", Number: 1, Replace: `"review"`, With: `"verified"`}, nil},
		{"lose the store", `countersign loses its store`, &Action{Kind: LoseStore, Actor: "countersign"}, nil},
		{"post statuses", `alice posts status test, lint and e2e error on PR #2`,
			&Action{Kind: PostStatus, Actor: "alice", Number: 2, PR: true, Checks: []string{"test", "lint", "e2e"}, Status: "error"}, nil},
		{"co-author written out", `alice pushes to PR #2 co-authored by "Alice Liddell <alice@company.example>" and bob`,
			&Action{Kind: PushCommit, Actor: "alice", Number: 2, PR: true, CoAuthors: []string{"Alice Liddell <alice@company.example>", "bob"}}, nil},
		{"redeliver", `github redelivers the last issue_comment`,
			&Action{Kind: RedeliverLast, Actor: "github", Event: "issue_comment"}, nil},
		{"redeliver action", `github redelivers the last pull_request_review.submitted`,
			&Action{Kind: RedeliverLast, Actor: "github", Event: "pull_request_review", EvAction: "submitted"}, nil},
		{"ci", `ci reports test success on PR #2`,
			&Action{Kind: ReportCheckRun, Actor: "ci", Number: 2, PR: true, Checks: []string{"test"}, Status: "success"}, nil},
		{"ci several", `ci reports typecheck, lint and test pending on PR #2`,
			&Action{Kind: ReportCheckRun, Actor: "ci", Number: 2, PR: true, Checks: []string{"typecheck", "lint", "test"}, Status: "pending"}, nil},

		{"rename label", `mallory renames label state:in-progress to state:verified`,
			&Action{Kind: RenameLabel, Actor: "mallory", Label: "state:in-progress", NewName: "state:verified"}, nil},
		{"rename label quoted", `mallory renames label "good first issue" to state:review   # onto an owned name`,
			&Action{Kind: RenameLabel, Actor: "mallory", Label: "good first issue", NewName: "state:review"}, nil},
		{"delete label", `mallory deletes label state:pending`,
			&Action{Kind: DeleteLabel, Actor: "mallory", Label: "state:pending"}, nil},
		{"rename account", `github renames account alice to alice-renamed`,
			&Action{Kind: RenameAccount, Actor: "github", Users: []string{"alice"}, NewName: "alice-renamed"}, nil},
		{"drop webhooks", `github drops webhooks   # not installed yet`,
			&Action{Kind: DropWebhooks, Actor: "github"}, nil},
		{"open PR assigned", `copilot[bot] opens PR #3 "Login" closing #1 assigned to dave and erin changing a.go`,
			&Action{Kind: OpenPR, Actor: "copilot[bot]", Number: 3, PR: true, Title: "Login", Closes: []int{1},
				Users: []string{"dave", "erin"}, Files: []string{"a.go"}}, nil},
		{"open PR assigned first", `copilot[bot] opens draft PR #3 "Login" assigned to dave closing #1`,
			&Action{Kind: OpenPR, Actor: "copilot[bot]", Number: 3, PR: true, Draft: true, Title: "Login", Closes: []int{1},
				Users: []string{"dave"}}, nil},
		{"comment times", `mallory comments on #1 60 times: /verify`,
			&Action{Kind: CommentOn, Actor: "mallory", Number: 1, Body: "/verify", HasBody: true, Times: 60}, nil},
		{"comment on PR times", `mallory comments on PR #2 2 times: /verify 3 times: really`,
			&Action{Kind: CommentOn, Actor: "mallory", Number: 2, PR: true, Body: "/verify 3 times: really", HasBody: true, Times: 2}, nil},

		{"expect state", `expect #1 state in-progress`, nil, &Expect{Kind: ExpectState, Number: 1, State: "in-progress"}},
		{"expect labeled", `  expect #1 labeled escalated unverified`, nil,
			&Expect{Kind: ExpectLabeled, Number: 1, Labels: []string{"escalated", "unverified"}}},
		{"expect not labeled", `expect #1 not labeled escalated`, nil,
			&Expect{Kind: ExpectLabeled, Number: 1, Not: true, Labels: []string{"escalated"}}},
		{"expect open", `expect #1 open`, nil, &Expect{Kind: ExpectOpen, Number: 1}},
		{"expect closed PR", `expect PR #2 closed`, nil, &Expect{Kind: ExpectClosed, Number: 2, PR: true}},
		{"expect assigned", `expect #1 assigned to alice and bob`, nil,
			&Expect{Kind: ExpectAssigned, Number: 1, Users: []string{"alice", "bob"}}},
		{"expect check", `expect check on PR #2 in_progress`, nil,
			&Expect{Kind: ExpectCheck, Number: 2, PR: true, Status: "in_progress"}},
		{"expect check none", `expect check on PR #2 none   # no run yet`, nil,
			&Expect{Kind: ExpectCheck, Number: 2, PR: true, Status: "none"}},
		{"expect reply", `expect reply on #1 containing "> /verify"`, nil,
			&Expect{Kind: ExpectReply, Number: 1, Text: "> /verify"}},
		{"expect any reply", `expect reply on PR #2`, nil, &Expect{Kind: ExpectReply, Number: 2, PR: true}},
		{"expect no reply", `expect no reply on #1`, nil, &Expect{Kind: ExpectReply, Number: 1, Not: true}},
		{"expect no reply containing", `expect no reply on PR #2 containing "rejected 0 times"`, nil,
			&Expect{Kind: ExpectReply, Number: 2, PR: true, Not: true, Text: "rejected 0 times"}},
		{"expect no card", `expect no card on #1`, nil, &Expect{Kind: ExpectCard, Number: 1, Not: true}},
		{"expect replies", `expect 3 replies on #1`, nil, &Expect{Kind: ExpectReplies, Number: 1, Count: 3}},
		{"expect one reply", `expect 1 reply on PR #2`, nil, &Expect{Kind: ExpectReplies, Number: 2, PR: true, Count: 1}},
		{"expect at most", `expect at most 3 replies on PR #2`, nil,
			&Expect{Kind: ExpectReplies, Number: 2, PR: true, Count: 3, AtMost: true}},
		{"expect at most one", `expect at most 1 reply on #1`, nil,
			&Expect{Kind: ExpectReplies, Number: 1, Count: 1, AtMost: true}},
		{"expect repo label present", `expect repository label state:in-progress present`, nil,
			&Expect{Kind: ExpectRepoLabel, Label: "state:in-progress"}},
		{"expect repo label colored", `expect repository label "state:in-progress" present colored 1D76DB`, nil,
			&Expect{Kind: ExpectRepoLabel, Label: "state:in-progress", Color: "1d76db"}},
		{"expect repo label absent", `expect repository label state:verified absent`, nil,
			&Expect{Kind: ExpectRepoLabel, Label: "state:verified", Not: true}},
		{"expect card", `expect card on #1 containing "State"`, nil,
			&Expect{Kind: ExpectCard, Number: 1, Text: "State"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := Parse("t.scenario", strings.NewReader(head+opened+tc.line+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			st := sc.Steps[len(sc.Steps)-1]
			if st.Line != 5 {
				t.Errorf("line = %d, want 5", st.Line)
			}
			if !reflect.DeepEqual(st.Action, tc.action) {
				t.Errorf("action = %+v\nwant     %+v", st.Action, tc.action)
			}
			if !reflect.DeepEqual(st.Expect, tc.expect) {
				t.Errorf("expect = %+v\nwant     %+v", st.Expect, tc.expect)
			}
		})
	}
}

// created is a step that creates the milestone "Login page" (line 5 after
// head + opened), for cases that refer to it.
const created = "carol creates milestone \"Login page\"\n"

func TestParseMilestoneSteps(t *testing.T) {
	tests := []struct {
		name   string
		line   string // parsed after head + opened + created
		action *Action
		expect *Expect
	}{
		{"create", `carol creates milestone "Sprint 2: \"beta\""`,
			&Action{Kind: CreateMilestone, Actor: "carol", Milestone: `Sprint 2: "beta"`}, nil},
		{"add", `carol adds #1 to milestone "Login page"   # the first task`,
			&Action{Kind: SetMilestone, Actor: "carol", Number: 1, Milestone: "Login page"}, nil},
		{"add PR", `carol adds PR #2 to milestone "Login page"`,
			&Action{Kind: SetMilestone, Actor: "carol", Number: 2, PR: true, Milestone: "Login page"}, nil},
		{"remove", `carol removes issue #1 from its milestone`,
			&Action{Kind: ClearMilestone, Actor: "carol", Number: 1}, nil},
		{"close", `dave closes milestone "Login page"`,
			&Action{Kind: CloseMilestone, Actor: "dave", Milestone: "Login page"}, nil},
		{"reopen", `carol reopens milestone "Login page"`,
			&Action{Kind: ReopenMilestone, Actor: "carol", Milestone: "Login page"}, nil},
		{"goal comment", `carol comments on goal "Login page": /reject-goal CSS conflicts # not a comment`,
			&Action{Kind: CommentOn, Actor: "carol", Goal: "Login page", Body: "/reject-goal CSS conflicts # not a comment", HasBody: true}, nil},
		{"named goal comment", `carol comments on goal "Login page" as g1: /verify-goal\nall good`,
			&Action{Kind: CommentOn, Actor: "carol", Goal: "Login page", Comment: "g1", Body: "/verify-goal\nall good", HasBody: true}, nil},

		{"expect goal state", `expect goal "Login page" state pending-verify`, nil,
			&Expect{Kind: ExpectGoalState, Goal: "Login page", State: "pending-verify"}},
		{"expect goal text", `expect goal "Login page" containing "3 of 3"`, nil,
			&Expect{Kind: ExpectGoal, Goal: "Login page", Text: "3 of 3"}},
		{"expect goal closed", `expect goal "Login page" closed`, nil,
			&Expect{Kind: ExpectClosed, Goal: "Login page"}},
		{"expect reply on goal", `expect reply on goal "Login page" containing "@dave"`, nil,
			&Expect{Kind: ExpectReply, Goal: "Login page", Text: "@dave"}},
		{"expect replies on goal", `expect at most 2 replies on goal "Login page"`, nil,
			&Expect{Kind: ExpectReplies, Goal: "Login page", Count: 2, AtMost: true}},
		{"expect any reply on goal", `expect reply on goal "Login page"`, nil,
			&Expect{Kind: ExpectReply, Goal: "Login page"}},
		{"expect no reply on goal", `expect no reply on goal "Login page"`, nil,
			&Expect{Kind: ExpectReply, Not: true, Goal: "Login page"}},
		{"expect milestone open", `expect milestone "Login page" open`, nil,
			&Expect{Kind: ExpectOpen, Milestone: "Login page"}},
		{"expect milestone closed", `expect milestone "Login page" closed`, nil,
			&Expect{Kind: ExpectClosed, Milestone: "Login page"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := Parse("t.scenario", strings.NewReader(head+opened+created+tc.line+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			if a := sc.Steps[2].Action; a == nil || a.Kind != CreateMilestone || a.Milestone != "Login page" {
				t.Errorf("step 3 = %+v", a)
			}
			st := sc.Steps[len(sc.Steps)-1]
			if st.Line != 6 {
				t.Errorf("line = %d, want 6", st.Line)
			}
			if !reflect.DeepEqual(st.Action, tc.action) {
				t.Errorf("action = %+v\nwant     %+v", st.Action, tc.action)
			}
			if !reflect.DeepEqual(st.Expect, tc.expect) {
				t.Errorf("expect = %+v\nwant     %+v", st.Expect, tc.expect)
			}
		})
	}
}

// Edited comments are named earlier; the name resolves at play time.
func TestParseEditComment(t *testing.T) {
	sc, err := Parse("t", strings.NewReader(head+opened+"bob comments on #1 as note: later\nbob edits comment note: /verify\\nok\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := &Action{Kind: EditCommentOf, Actor: "bob", Comment: "note", Body: "/verify\nok", HasBody: true}
	if got := sc.Steps[len(sc.Steps)-1].Action; !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if got := sc.Steps[len(sc.Steps)-1].Text; got != `bob edits comment note: /verify\nok` {
		t.Errorf("text = %q", got)
	}
}

// Comments before the title describe the story; comments right before a
// step are its notes; comments before setup lines are dropped.
func TestParseNotes(t *testing.T) {
	sc, err := Parse("n", strings.NewReader(`# The story,
#
# in two lines.
scenario: t
# about people: dropped
people: carol=admin
# First note.

# Second note.
carol opens issue #1 "x"   # not a note
expect #1 open
# Last.
expect #1 state pending
`))
	if err != nil {
		t.Fatal(err)
	}
	if sc.Description != "The story,\nin two lines." {
		t.Errorf("description = %q", sc.Description)
	}
	var notes [][]string
	for _, st := range sc.Steps {
		notes = append(notes, st.Notes)
	}
	if want := [][]string{{"First note.", "Second note."}, nil, {"Last."}}; !reflect.DeepEqual(notes, want) {
		t.Errorf("notes = %q, want %q", notes, want)
	}
}

// Step.Text is the line as written, without its trailing comment.
func TestParseStepText(t *testing.T) {
	sc, err := Parse("t", strings.NewReader(head+"   carol opens issue #1 \"A # b\"   # opens it\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := sc.Steps[0].Text; got != `carol opens issue #1 "A # b"` {
		t.Errorf("text = %q", got)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		line int
		want string // in the message
	}{
		{"empty file", "", 1, "no \"scenario: <title>\" line"},
		{"no title first", "people: alice=write\n", 1, "must start with"},
		{"step before title", "carol opens issue #1 \"x\"\n", 1, "must start with"},
		{"two titles", "scenario: a\nscenario: b\n", 2, "second"},
		{"empty title", "scenario:\n", 1, "needs a title"},
		{"no steps", "scenario: a\npeople: alice=write\n", 2, "no steps"},
		{"bad permission", "scenario: a\npeople: alice=owner\n", 2, "unknown permission"},
		{"bad email", "scenario: a\nemails: alice=nope\n", 2, "is not login=address"},
		{"email of a bad login", "scenario: a\nemails: -x=x@y.z\n", 2, "login"},
		{"not a pair", "scenario: a\npeople: alice\n", 2, "login=permission"},
		{"bad login", "scenario: a\npeople: -x=write\n", 2, "not a GitHub login"},
		{"person twice", "scenario: a\npeople: alice=write ALICE=read\n", 2, "twice"},
		{"bad team", "scenario: a\nteam: leads = carol\n", 2, "org/team-slug"},
		{"team without =", "scenario: a\nteam: acme/leads carol\n", 2, "team: org/slug = member"},
		{"team twice", "scenario: a\nteam: acme/x = a\nteam: acme/x = b\n", 3, "twice"},
		{"empty config", "scenario: a\nconfig:\ncarol opens issue #1 \"x\"\n", 2, "needs YAML"},
		{"two configs", "scenario: a\nconfig: {}\nconfig: {}\n", 3, "second"},
		{"setup after steps", head + "carol opens issue #1 \"x\"\npeople: dave=write\n", 4, "before the first"},
		{"unknown verb", head + "carol dances\n", 3, "unknown action \"dances\""},
		{"unknown line", head + "hello world\n", 3, "unknown action"},
		{"actor missing verb", head + "carol\n", 3, "what does carol do"},
		{"reserved actor", head + "github\n", 3, "redelivers"},
		{"reserved login", head + opened + "carol assigns #1 to ci\n", 5, "reserved"},
		{"quoted actor", head + "\"carol\" opens issue #1 \"x\"\n", 3, "who acts"},
		{"unterminated string", head + "carol opens issue #1 \"x\n", 3, "unterminated"},
		{"bad escape", head + "carol opens issue #1 \"x\\q\"\n", 3, "unknown escape"},
		{"quote in word", head + "carol opens issue #1 x\"y\"\n", 3, "unexpected quote"},
		{"glued quote", head + "carol opens issue #1 \"x\"y\n", 3, "followed by a space"},
		{"title not quoted", head + "carol opens issue #1 Title\n", 3, "a title in double quotes"},
		{"empty title string", head + "carol opens issue #1 \"  \"\n", 3, "title is empty"},
		{"no number", head + "carol opens issue \"x\"\n", 3, "number"},
		{"zero number", head + "carol opens issue #0 \"x\"\n", 3, "not an issue number"},
		{"leading zero", head + "carol opens issue #01 \"x\"\n", 3, "not an issue number"},
		{"comment without space", head + "carol opens issue #1 \"x\" #note\n", 3, "needs a space after #"},
		{"opened twice", head + "carol opens issue #1 \"x\"\ncarol opens issue #1 \"y\"\n", 4, "already opened"},
		{"unknown number", head + "carol assigns #4 to alice\n", 3, "#4 is not opened earlier"},
		{"issue as PR", head + "carol opens issue #1 \"x\"\nalice marks PR #1 ready for review\n", 4, "is an issue, not a pull request"},
		{"PR as issue", head + opened + "carol closes issue #2\n", 5, "is a pull request, not an issue"},
		{"close PR with reason", head + opened + "carol closes PR #2 as not planned\n", 5, "without a reason"},
		{"close bad reason", head + opened + "carol closes #1 as done\n", 5, "as not planned"},
		{"closing a PR", head + opened + "alice opens PR #3 \"y\" closing #2\n", 5, "not an issue opened earlier"},
		{"closing nothing", head + opened + "alice opens PR #3 \"y\" closing\n", 5, "needs issue numbers"},
		{"clause twice", head + opened + "alice opens PR #3 \"y\" closing #1 closing #1\n", 5, "unexpected \"closing\""},
		{"co-authored without by", head + opened + "alice opens PR #3 \"y\" co-authored dave\n", 5, "expected \"by\""},
		{"changing nothing", head + opened + "alice opens PR #3 \"y\" changing\n", 5, "needs file paths"},
		{"issue with closing", head + opened + "carol opens issue #3 \"y\" closing #1\n", 5, "unexpected \"closing\""},
		{"trailing words", head + opened + "carol approves PR #2 now\n", 5, "unexpected \"now\""},
		{"assign nobody", head + opened + "carol assigns #1 to\n", 5, "one or more logins"},
		{"assign without to", head + opened + "carol assigns #1 alice\n", 5, "expected \"to\""},
		{"unassign without from", head + opened + "carol unassigns alice #1\n", 5, "not a GitHub login"},
		{"ready without PR word", head + opened + "alice marks #2 ready for review\n", 5, "expected \"PR\""},
		{"ready incomplete", head + opened + "alice marks PR #2 ready\n", 5, "expected \"for\""},
		{"push without to", head + opened + "alice pushes PR #2\n", 5, "expected \"to\""},
		{"push closing", head + opened + "alice pushes to PR #2 closing #1\n", 5, "unexpected \"closing\""},
		{"review comment no text", head + opened + "carol comments on PR #2 review\n", 5, "review text"},
		{"comment without colon", head + opened + "bob comments on #1 /verify\n", 5, "comments on #N: text"},
		{"empty comment", head + opened + "bob comments on #1:   \n", 5, "comment is empty"},
		{"comment on unknown", head + opened + "bob comments on #9: hi\n", 5, "#9 is not opened earlier"},
		{"comment issue word on PR", head + opened + "bob comments on issue #2: hi\n", 5, "is a pull request"},
		{"bad comment name", head + opened + "bob comments on #1 as a/b: hi\n", 5, "not a comment name"},
		{"comment name twice", head + opened + "bob comments on #1 as c: hi\nbob comments on #1 as c: yo\n", 6, "already used at line 5"},
		{"edit unnamed comment", head + opened + "bob edits comment c9: /verify\n", 5, "no comment named \"c9\""},
		{"edit comment empty", head + opened + "bob comments on #1 as c: hi\nbob edits comment c: \n", 6, "empty"},
		{"edit nothing", head + opened + "carol edits #1\n", 5, "title"},
		{"labels nothing", head + opened + "mallory labels #1\n", 5, "label names"},
		{"empty label", head + opened + "mallory labels #1 \"\"\n", 5, "empty label"},
		{"github other", head + opened + "github deletes #1\n", 5, "expected \"redelivers\""},
		{"bad co-author", head + opened + "alice pushes to PR #2 co-authored by \"Alice\"\n", 5, "Name <email>"},
		{"post status bad state", head + opened + "alice posts status test green on PR #2\n", 5, "unknown status state"},
		{"post status nothing", head + opened + "alice posts status success on PR #2\n", 5, "contexts and a state"},
		{"countersign other", head + opened + "countersign forgets #1\n", 5, "countersign loses its store"},
		{"edit the card without text", head + opened + "mallory edits the card on #1 replacing \"a\"\n", 5, "expected \"with\""},
		{"redeliver bad event", head + opened + "github redelivers the last Issue-Comment\n", 5, "webhook event"},
		{"ci other", head + opened + "ci fails PR #2\n", 5, "expected \"reports\""},
		{"ci bad status", head + opened + "ci reports test green on PR #2\n", 5, "unknown CI status"},
		{"ci no name", head + opened + "ci reports success on PR #2\n", 5, "check names"},
		{"ci no on", head + opened + "ci reports test success PR #2\n", 5, "ci reports NAME"},
		{"ci issue", head + opened + "ci reports test success on PR #1\n", 5, "is an issue"},
		{"expect nothing", head + opened + "expect\n", 5, "expected an issue number"},
		{"expect bad state", head + opened + "expect #1 state done\n", 5, "expected a state"},
		{"expect bad predicate", head + opened + "expect #1 verified\n", 5, "expected state, labeled"},
		{"expect check status", head + opened + "expect check on PR #2 green\n", 5, "check status"},
		{"expect check on issue", head + opened + "expect check on PR #1 success\n", 5, "is an issue"},
		{"expect reply text unquoted", head + opened + "expect reply on #1 containing refused\n", 5, "double quotes"},
		{"expect card no text", head + opened + "expect card on #1\n", 5, "expected \"containing\""},
		{"expect no", head + opened + "expect no label on #1\n", 5, "expected \"reply\""},
		{"expect trailing", head + opened + "expect #1 open now\n", 5, "unexpected \"now\""},
		{"milestone not created", head + opened + "carol adds #1 to milestone \"Login page\"\n", 5, "milestone \"Login page\" is not created earlier"},
		{"milestone other case", head + opened + created + "carol closes milestone \"login page\"\n", 6, "not created earlier"},
		{"milestone created twice", head + opened + created + created, 6, "already created at line 5"},
		{"milestone title unquoted", head + opened + "carol creates milestone Login\n", 5, "the milestone's title in double quotes"},
		{"milestone title empty", head + opened + "carol creates milestone \" \"\n", 5, "title is empty"},
		{"creates other", head + opened + "carol creates issue #3 \"x\"\n", 5, "expected \"milestone\""},
		{"add without to", head + opened + created + "carol adds #1 milestone \"Login page\"\n", 6, "expected \"to\""},
		{"add unknown issue", head + opened + created + "carol adds #9 to milestone \"Login page\"\n", 6, "#9 is not opened earlier"},
		{"add no title", head + opened + created + "carol adds #1 to milestone\n", 6, "the milestone's title"},
		{"remove named", head + opened + created + "carol removes #1 from milestone \"Login page\"\n", 6, "expected \"its\""},
		{"close milestone trailing", head + opened + created + "carol closes milestone \"Login page\" now\n", 6, "unexpected \"now\""},
		{"reopen milestone unknown", head + opened + created + "carol reopens milestone \"v2\"\n", 6, "not created earlier"},
		{"goal comment not created", head + opened + "carol comments on goal \"Login page\": hi\n", 5, "not created earlier"},
		{"goal comment empty", head + opened + created + "carol comments on goal \"Login page\":  \n", 6, "comment is empty"},
		{"goal comment bad escape", head + opened + created + "carol comments on goal \"Login\\q\": hi\n", 6, "unknown escape"},
		{"goal comment without colon", head + opened + created + "carol comments on goal \"Login page\" /reject-goal x\n", 6, "on a goal"},
		{"goal comment name twice", head + opened + created + "carol comments on #1 as c: hi\ncarol comments on goal \"Login page\" as c: yo\n", 7, "already used at line 6"},
		{"expect goal not created", head + opened + "expect goal \"Login page\" state open\n", 5, "not created earlier"},
		{"expect goal bad state", head + opened + created + "expect goal \"Login page\" state in-progress\n", 6, "expected a goal state"},
		{"expect goal nothing", head + opened + created + "expect goal \"Login page\"\n", 6, "expected state, containing, open or closed after goal"},
		{"expect goal unquoted", head + opened + created + "expect goal Login state open\n", 6, "double quotes"},
		{"expect goal text unquoted", head + opened + created + "expect goal \"Login page\" containing CSS\n", 6, "double quotes"},
		{"expect milestone bad", head + opened + created + "expect milestone \"Login page\" verified\n", 6, "expected open or closed after milestone"},
		{"expect reply on unknown goal", head + opened + created + "expect reply on goal \"v2\"\n", 6, "not created earlier"},
		{"expect goal trailing", head + opened + created + "expect milestone \"Login page\" open now\n", 6, "unexpected \"now\""},
		{"rename label without to", head + opened + "mallory renames label a b\n", 5, "expected \"to\""},
		{"rename label to itself", head + opened + "mallory renames label a to a\n", 5, "renamed to itself"},
		{"rename an issue", head + opened + "mallory renames #1 to x\n", 5, "renames label OLD to NEW"},
		{"rename label no name", head + opened + "mallory renames label to b\n", 5, "expected a label name, got \"to\""},
		{"rename label trailing", head + opened + "mallory renames label a to b c\n", 5, "unexpected \"c\""},
		{"delete label nothing", head + opened + "mallory deletes label\n", 5, "expected a label name"},
		{"delete issue", head + opened + "mallory deletes #1\n", 5, "expected \"label\""},
		{"rename account to itself", head + opened + "github renames account alice to ALICE\n", 5, "renamed to itself"},
		{"rename two accounts", head + opened + "github renames account alice bob to x\n", 5, "one account is renamed at a time"},
		{"rename bot account", head + opened + "github renames account minion[bot] to minion2\n", 5, "bot account"},
		{"rename onto a person", head + opened + "github renames account alice to bob\n", 5, "another person's login"},
		{"rename without account", head + opened + "github renames alice to alice2\n", 5, "expected \"account\""},
		{"old login acts", head + opened + "github renames account alice to alice2\nalice comments on #1: /verify\n", 6,
			"alice was renamed to alice2 at line 5"},
		{"old login assigned", head + opened + "github renames account alice to alice2\ncarol assigns #1 to bob, alice\n", 6,
			"alice was renamed to alice2"},
		{"old login co-author", head + opened + "github renames account alice to alice2\nbob pushes to PR #2 co-authored by alice\n", 6,
			"alice was renamed to alice2"},
		{"old login renamed again", head + opened + "github renames account alice to alice2\ngithub renames account alice to alice3\n", 6,
			"alice was renamed to alice2"},
		{"rename onto an old login", head + opened + "github renames account alice to a2\ngithub renames account bob to alice\n", 6,
			"alice was another account's login until line 5"},
		{"drop twice", head + opened + "github drops webhooks\ngithub drops webhooks\n", 6, "already dropped since line 5"},
		{"resume undropped", head + opened + "github resumes webhooks\n", 5, "are not dropped"},
		{"drop what", head + opened + "github drops\n", 5, "expected \"webhooks\""},
		{"github other verb", head + opened + "github sleeps\n", 5, "github drops webhooks"},
		{"assigned without to", head + opened + "alice opens PR #3 \"y\" assigned dave\n", 5, "expected \"to\""},
		{"assigned nobody", head + opened + "alice opens PR #3 \"y\" assigned to\n", 5, "one or more logins"},
		{"push assigned", head + opened + "alice pushes to PR #2 assigned to dave\n", 5, "unexpected \"assigned\""},
		{"comment once times", head + opened + "bob comments on #1 1 times: /verify\n", 5, "repeated 2 to 100 times"},
		{"comment too many times", head + opened + "bob comments on #1 101 times: /verify\n", 5, "repeated 2 to 100 times"},
		{"named repeated comment", head + opened + "bob comments on #1 as c 3 times: /verify\n", 5, "cannot be named"},
		{"expect zero replies", head + opened + "expect 0 replies on #1\n", 5, "expect no reply on #N"},
		{"expect replies singular", head + opened + "expect 2 reply on #1\n", 5, "expected \"replies\""},
		{"expect reply plural", head + opened + "expect 1 replies on #1\n", 5, "expected \"reply\""},
		{"expect at", head + opened + "expect at 3 replies on #1\n", 5, "expected \"most\""},
		{"expect at most what", head + opened + "expect at most replies on #1\n", 5, "number of replies"},
		{"expect replies leading zero", head + opened + "expect 03 replies on #1\n", 5, "number of replies"},
		{"expect replies on unknown", head + opened + "expect 3 replies on #9\n", 5, "#9 is not opened earlier"},
		{"expect repo label what", head + opened + "expect repository label bug\n", 5, "present or absent"},
		{"expect repo label color", head + opened + "expect repository label bug present colored red\n", 5, "6 hex digits"},
		{"expect repo label absent colored", head + opened + "expect repository label bug absent colored 1d76db\n", 5, "unexpected \"colored\""},
		{"expect repository what", head + opened + "expect repository bug present\n", 5, "expected \"label\""},
		{"expect no card what", head + opened + "expect no card #1\n", 5, "expected \"on\""},
		{"control char", head + "carol opens issue #1 \"a\x01\"\n", 3, "not valid UTF-8 text"},
		{"bad utf8", head + "carol opens issue #1 \"a\xff\"\n", 3, "not valid UTF-8 text"},
		{"config bad utf8", "scenario: a\nconfig:\n  a: \xff\n", 3, "not valid UTF-8 text"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("bad.scenario", strings.NewReader(tc.src))
			if err == nil {
				t.Fatal("parsed without error")
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T %v is not a *ParseError", err, err)
			}
			prefix := "bad.scenario:" + strconv.Itoa(tc.line) + ": "
			if !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want prefix %q and %q", err, prefix, tc.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add(head + opened + "expect #1 state pending\n")
	f.Add("scenario: x\nconfig:\n  leads: [a]\n\tb: c\n\na opens issue #1 \"t\\n\"\n")
	f.Add(head + opened + "bob comments on #1 as c: hi\nbob edits comment c: /verify\\n```\n")
	f.Add(head + opened + "ci reports a, b and c pending on PR #2\ngithub redelivers the last a.b\n")
	f.Add(head + opened + "alice opens draft PR #3 \"x\" closing #1 and #1 co-authored by a and b changing \"c d\" with body \"e\"\n")
	f.Add("scenario: x # y\nteam: a/b = c, d\n\"\n#")
	f.Add(head + opened + "github drops webhooks\ngithub renames account alice to a2\ngithub resumes webhooks\n" +
		"a2 renames label x to \"y z\"\na2 deletes label y\nbob opens PR #3 \"t\" assigned to a2 closing #1\nbob comments on #3 4 times: hi\n" +
		"expect at most 3 replies on PR #3\nexpect 1 reply on #1\nexpect repository label x present colored 00ff00\nexpect no card on #1\n")
	f.Add(head + opened + created + "carol adds #1 to milestone \"Login page\"\ncarol comments on goal \"Login page\" as g: /reject-goal x\n" +
		"expect goal \"Login page\" state active\nexpect reply on goal \"Login page\" containing \"x\"\nexpect milestone \"Login page\" open\n")
	f.Fuzz(func(t *testing.T, src string) {
		sc, err := Parse("f", strings.NewReader(src))
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Line < 1 {
				t.Fatalf("error %v is not a ParseError with a line", err)
			}
			return
		}
		if sc.Title == "" || len(sc.Steps) == 0 {
			t.Fatalf("parsed a scenario without title or steps: %+v", sc)
		}
		for _, st := range sc.Steps {
			if (st.Action == nil) == (st.Expect == nil) || st.Line < 1 {
				t.Fatalf("bad step %+v", st)
			}
		}
	})
}

// A renamed account's old login is free again once it is renamed back; webhooks
// dropped are resumed.
func TestParseRenameBackAndResume(t *testing.T) {
	sc, err := Parse("t", strings.NewReader(head+opened+`github drops webhooks
github renames account alice to alice2
alice2 comments on #1: hi
github renames account alice2 to alice
github resumes webhooks
alice comments on #1: /start
`))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []ActionKind
	for _, st := range sc.Steps[2:] {
		kinds = append(kinds, st.Action.Kind)
	}
	want := []ActionKind{DropWebhooks, RenameAccount, CommentOn, RenameAccount, ResumeWebhooks, CommentOn}
	if !reflect.DeepEqual(kinds, want) {
		t.Errorf("kinds = %v, want %v", kinds, want)
	}
	if a := sc.Steps[5].Action; !reflect.DeepEqual(a.Users, []string{"alice2"}) || a.NewName != "alice" {
		t.Errorf("rename back = %+v", a)
	}
}

// "links #N blocked by #M" is GitHub's issue dependency, between two issues.
func TestParseBlockedBy(t *testing.T) {
	head := "scenario: s\npeople: carol=admin alice=write\ncarol opens issue #1 \"A\"\ncarol opens issue #2 \"B\"\nalice opens PR #3 \"Work\" closing #1\n"
	sc, err := Parse("t.scenario", strings.NewReader(head+"carol links #2 blocked by #1\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := sc.Steps[len(sc.Steps)-1].Action
	if want := (&Action{Kind: BlockedBy, Actor: "carol", Number: 2, Blocker: 1}); !reflect.DeepEqual(got, want) {
		t.Fatalf("action = %+v, want %+v", got, want)
	}
	for _, bad := range []string{"carol links #2 blocked by PR #3", "carol links #2 blocked by #2", "carol links #2 by #1"} {
		if _, err := Parse("t.scenario", strings.NewReader(head+bad+"\n")); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
