package scenario

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// These tests exercise the player itself, with steps whose outcome does not
// depend on the bot's lifecycle rules. Comments "by countersign[bot]" are
// posted by the scenario, standing in for the bot's replies.

func playString(t *testing.T, src string) (*Rig, string, error) {
	t.Helper()
	sc, err := Parse("p.scenario", strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rig, err := NewRig(ctx, RigOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rig.Close)
	var out strings.Builder
	err = sc.Play(ctx, rig, &out)
	return rig, out.String(), err
}

func TestPlayMechanics(t *testing.T) {
	_, out, err := playString(t, `scenario: Player mechanics
people: alice=write bob=write carol=admin
team: acme/leads = carol
config:
  leads: [carol]
carol opens issue #1 "Task" with body "Do it"
expect #1 open
expect card on #1 containing "pending"
expect no reply on #1
carol labels #1 bug "needs triage"
expect #1 labeled bug "needs triage"
carol unlabels #1 bug
expect #1 not labeled bug
carol assigns #1 to alice and bob
carol unassigns bob from #1
expect #1 assigned to alice
countersign[bot] comments on #1: Refused: you built it.\n\n> /verify it
expect reply on #1 containing "refused"
expect reply on #1 containing "> /VERIFY"
expect #1 open
expect reply on #1
carol comments on #1: hello
expect no reply on #1
`)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{
		"Player mechanics\n================",
		"people    alice (write), bob (write), carol (admin)",
		"team      @acme/leads: carol",
		"config    .github/countersign.yml\n              leads: [carol]",
		" 1. carol opens issue #1 \"Task\" with body \"Do it\"\n",
		"countersign posted the task card on #1: State: pending",
		"    ✓ #1 open\n",
		"#1 labels: bug, needs triage",
		"countersign commented on #1:\n        Refused: you built it.\n\n        > /verify it\n",
		"    ✓ reply on #1 containing \"> /VERIFY\"\n",
		"    ✓ no reply on #1\n",
		"Final state of acme/widgets:\n  #1",
		"7 actions, 11 expectations met.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("timeline lacks %q:\n%s", want, out)
		}
	}
}

func TestPlayActions(t *testing.T) {
	rig, out, err := playString(t, `scenario: Actions
people: alice=write bob=write carol=admin
config: {leads: [carol]}
carol opens issue #1 "Task"
carol comments on #1 as c1: hello
carol edits comment c1: hello again
github redelivers the last issue_comment.created
alice opens draft PR #2 "Work" closing #1 co-authored by bob changing a.go
alice marks PR #2 ready for review
ci reports typecheck lint success on PR #2
bob pushes to PR #2 changing b.go
alice edits PR #2 body "Fixes #1\nand more"
carol requests changes on PR #2 "Tests?"
carol comments on PR #2 review "Fine now"
carol closes #1 as not planned
expect #1 closed
`)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	gh := rig.GH()
	pr, _ := gh.Issue(rig.Repo(), 2)
	if pr.Draft || pr.Body != "Fixes #1\nand more" || len(pr.Reviews) != 2 {
		t.Errorf("PR #2 = %+v", pr)
	}
	var redelivered bool
	for _, d := range gh.Deliveries() {
		redelivered = redelivered || (d.Redelivery && d.Event == "issue_comment" && d.Action == "created" && d.Sender == "carol")
	}
	if !redelivered {
		t.Error("carol's comment was not redelivered")
	}
	if f, _ := gh.File(rig.Repo(), ConfigPath); f != "{leads: [carol]}\n" {
		t.Errorf("config file = %q", f)
	}
	for _, want := range []string{
		"github redelivers the last issue_comment.created (delivery ",
		": issue_comment.created by carol on #1)",
		"bob pushes to PR #2 changing b.go (head ",
		"ci reports typecheck lint success on PR #2 (head ",
		"Final state of acme/widgets:",
		"12 actions, 1 expectation met.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("timeline lacks %q:\n%s", want, out)
		}
	}
	var checks []string
	for _, cr := range gh.CheckRuns(rig.Repo(), pr.HeadSHA) {
		if cr.App == "github-actions" {
			checks = append(checks, cr.Name+"="+cr.Conclusion)
		}
	}
	if len(checks) != 0 {
		t.Errorf("CI checks on the pushed head = %v, want none (they ran on the previous head)", checks)
	}
}

// Milestones are named by title; the bot opens a goal issue for each, which
// takes the next number; goal comments land on it.
func TestPlayMilestones(t *testing.T) {
	rig, out, err := playString(t, `scenario: Milestones
people: carol=admin
carol creates milestone "v1"
carol creates milestone "v2"
carol opens issue #3 "Task"
carol adds #3 to milestone "v1"
carol adds #3 to milestone "v2"
expect goal "v2" containing "Task"
carol removes #3 from its milestone
expect goal "v1" state open
expect goal "v2" open
expect milestone "v1" open
carol comments on goal "v1" as g: hello
carol edits comment g: hello again
expect no reply on goal "v1"
`)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	gh := rig.GH()
	if v, _ := gh.Issue(rig.Repo(), 3); v.Milestone != 0 {
		t.Errorf("#3 is in milestone %d, want none", v.Milestone)
	}
	if cs := gh.Comments(rig.Repo(), 1); len(cs) == 0 || cs[len(cs)-1].User != "carol" || cs[len(cs)-1].Body != "hello again" {
		t.Errorf("comments on goal #1 = %+v", cs)
	}
	for _, want := range []string{
		" 1. carol creates milestone \"v1\"\n    goal #1 opened by countersign[bot] for milestone \"v1\": ",
		"    goal #1 labels: goal, goal:open\n",
		"    dashboard on goal #2: State: open · milestone open · 0 of 1 tasks verified\n",
		" 5. carol adds #3 to milestone \"v2\"\n    dashboard on goal #1: ",
		" 7. carol comments on goal \"v1\" as g: hello (goal #1)\n",
		"    ✓ goal \"v2\" open\n",
		"  milestone 2  open",
		"8 actions, 5 expectations met.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("timeline lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "#3 milestone:") {
		t.Errorf("the timeline repeats what the action did:\n%s", out)
	}
}

// The steps of the integrity attacks: label renames and deletions, account
// renames, dropped webhooks, a pull request opened with assignees, repeated
// comments, reply counts, repository labels.
func TestPlayIntegritySteps(t *testing.T) {
	rig, out, err := playString(t, `scenario: Integrity steps
people: alice=write carol=admin
github drops webhooks
carol opens issue #1 "Old"
github resumes webhooks
expect no card on #1
expect no reply on #1
carol labels #1 bug
carol renames label bug to defect
expect repository label bug absent
expect repository label defect present
expect #1 labeled defect
github renames account alice to alice2
alice2 comments on #1: hello
copilot[bot] opens PR #2 "Work" closing #1 assigned to carol
expect PR #2 assigned to carol
countersign[bot] comments on PR #2 3 times: Refused.
expect 3 replies on PR #2
expect at most 3 replies on PR #2
expect no reply on PR #2 containing "accepted"
carol deletes label defect
expect repository label defect absent
expect #1 not labeled defect
`)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	gh := rig.GH()
	cs := gh.Comments(rig.Repo(), 1)
	if len(cs) == 0 || cs[len(cs)-1].User != "alice2" || cs[len(cs)-1].Body != "hello" {
		t.Errorf("comments on #1 = %+v, want the last by alice2", cs)
	}
	dropped := 0
	for _, d := range gh.Deliveries() {
		if d.Dropped {
			dropped++
		}
	}
	if dropped != 1 {
		t.Errorf("%d webhooks dropped, want 1 (issues.opened)", dropped)
	}
	for _, want := range []string{
		" 2. carol opens issue #1 \"Old\"\n    (1 webhook dropped: countersign heard nothing of it)\n 3. github resumes webhooks\n",
		"    ✓ no card on #1\n",
		"    ✓ repository label defect present\n",
		"    ✓ 3 replies on PR #2\n",
		"10. carol deletes label defect\n    #1 labels: ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("timeline lacks %q:\n%s", want, out)
		}
	}
}

// A failed step names the file line, what was expected and what was seen.
func TestPlayFailures(t *testing.T) {
	const open = "scenario: f\npeople: alice=write bob=write carol=admin\ncarol opens issue #1 \"Task\"\n"
	tests := []struct {
		name string
		src  string
		line int
		want []string
	}{
		{"wrong number", "scenario: f\ncarol opens issue #3 \"Task\"\n", 2,
			[]string{"GitHub numbered the issue #1, but the scenario says #3"}},
		{"label missing", open + "expect #1 labeled nope\n", 4,
			[]string{"expect #1 labeled nope: #1 is not labeled nope", "what GitHub shows for issue #1 \"Task\"", "labels: ", "card: "}},
		{"label present", open + "carol labels #1 bug\nexpect #1 not labeled bug\n", 5,
			[]string{"#1 is labeled bug"}},
		{"not closed", open + "expect #1 closed\n", 4, []string{"#1 is open"}},
		{"not assigned", open + "expect #1 assigned to alice\n", 4, []string{"alice is not assigned (assignees: (none))"}},
		{"no reply", open + "carol comments on #1: hi\nexpect reply on #1\n", 5,
			[]string{"countersign did not reply on #1 since the previous action"}},
		{"reply lacks text", open + "countersign[bot] comments on #1: alpha\nexpect reply on #1 containing \"beta\"\n", 5,
			[]string{"no new reply on #1 contains \"beta\"", "alpha"}},
		{"one reply must hold all", open + "countersign[bot] comments on #1: alpha\ncountersign[bot] comments on #1: beta\n" +
			"expect reply on #1 containing \"beta\"\nexpect reply on #1 containing \"alpha\"\n", 7,
			[]string{"no single new reply on #1 contains \"alpha\""}},
		{"unexpected reply", open + "countersign[bot] comments on #1: alpha\nexpect no reply on #1\n", 5,
			[]string{"countersign replied on #1 since the previous action", "alpha"}},
		{"old reply is not new", open + "countersign[bot] comments on #1: alpha\ncarol comments on #1: hi\nexpect reply on #1 containing \"alpha\"\n", 6,
			[]string{"did not reply"}},
		{"card text", open + "expect card on #1 containing \"no such text\"\n", 4, []string{"the card does not contain"}},
		{"own approval", open + "alice opens PR #2 \"Work\" closing #1\nalice approves PR #2\n", 5,
			[]string{"GitHub refused it", "cannot approved their own pull request"}},
		{"ready twice", open + "alice opens PR #2 \"Work\"\nalice marks PR #2 ready for review\n", 5,
			[]string{"PR #2 is not a draft"}},
		{"nothing to redeliver", open + "github redelivers the last milestone\n", 4,
			[]string{"no milestone webhook from a person was sent yet"}},
		{"goal issue takes a number", "scenario: f\ncarol creates milestone \"M\"\ncarol opens issue #1 \"Task\"\n", 3,
			[]string{"GitHub numbered the issue #2, but the scenario says #1", "a goal issue for each milestone"}},
		{"milestone not closed", open + "carol creates milestone \"M\"\nexpect milestone \"M\" closed\n", 5,
			[]string{"milestone \"M\" is open", "what GitHub shows for milestone \"M\": open; 1 open and 0 closed issues",
				"what GitHub shows for goal issue #2"}},
		{"goal state", open + "carol creates milestone \"M\"\nexpect goal \"M\" state active\n", 5,
			[]string{"want goal and exactly goal:active, got goal, goal:open", "milestone \"M\"; dashboard: State: open · milestone open · 0 of 0 tasks verified"}},
		{"goal text", open + "carol creates milestone \"M\"\nexpect goal \"M\" containing \"no such text\"\n", 5,
			[]string{"the dashboard on goal #2 does not contain \"no such text\""}},
		{"no reply on goal", open + "carol creates milestone \"M\"\ncarol comments on goal \"M\": hi\nexpect reply on goal \"M\"\n", 6,
			[]string{"countersign did not reply on goal #2 since the previous action", "no comments by countersign[bot]"}},
		{"reopen open milestone", open + "carol creates milestone \"M\"\ncarol reopens milestone \"M\"\n", 5,
			[]string{"milestone \"M\" is already open", "what GitHub shows for goal issue #2"}},
		{"too many replies", open + "countersign[bot] comments on #1 2 times: x\nexpect at most 1 reply on #1\n", 5,
			[]string{"countersign replied 2 times on #1 since the previous action began, want at most 1"}},
		{"too few replies", open + "carol comments on #1: hi\nexpect 2 replies on #1\n", 5,
			[]string{"countersign replied 0 times on #1 since the previous action began, want 2"}},
		{"reply containing", open + "countersign[bot] comments on #1: rejected 0 times\nexpect no reply on #1 containing \"REJECTED\"\n", 5,
			[]string{"a new reply on #1 contains \"REJECTED\""}},
		{"card present", open + "expect no card on #1\n", 4, []string{"#1 has a task card"}},
		{"repository label present", open + "carol labels #1 bug\nexpect repository label bug absent\n", 5,
			[]string{"the repository has a label bug", "repository labels: "}},
		{"repository label missing", open + "expect repository label nope present\n", 4,
			[]string{"the repository has no label nope", "state:pending"}},
		{"repository label colour", open + "expect repository label state:pending present colored 000000\n", 4,
			[]string{"label state:pending has colour ededed"}},
		{"rename a missing label", open + "carol renames label nope to x\n", 4,
			[]string{"GitHub refused it", "no label \"nope\""}},
		{"remove without milestone", open + "carol removes #1 from its milestone\n", 4, []string{"#1 is in no milestone"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, out, err := playString(t, tc.src)
			var pe *PlayError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a *PlayError\n%s", err, out)
			}
			if pe.Line != tc.line || !strings.HasPrefix(err.Error(), "p.scenario:") {
				t.Errorf("error at line %d, want %d: %v", pe.Line, tc.line, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestTextHelpers(t *testing.T) {
	card := "<!-- countersign:card {} -->\n### countersign · task card\n\n**State:** `review` · **Attempt:** 2\n\n| role | who |\n|---|---|\n| opened by | @carol |\n\n" +
		"| when | change | by | why |\n|---|---|---|---|\n| t1 | `pending` | @carol | opened |\n| t2 | `pending` → `assigned` | @carol | assigned |\n"
	if got := cardSummary(card); got != "State: review · Attempt: 2" {
		t.Errorf("cardSummary = %q", got)
	}
	if got := cardHistory(card, 1); len(got) != 1 || got[0] != "history: t2 · pending → assigned · @carol · assigned" {
		t.Errorf("cardHistory = %q", got)
	}
	older := strings.Replace(card, "| t2 | `pending` → `assigned` | @carol | assigned |\n", "", 1)
	if got := cardNews(older, card); got != "assigned" {
		t.Errorf("cardNews = %q", got)
	}
	if got := cardNews(card, card); got != "" {
		t.Errorf("cardNews without a new row = %q", got)
	}
	if got := replyLines("<!-- countersign:reply -->\nA\n\n\n\nB\n", 10); strings.Join(got, "|") != "A||B" {
		t.Errorf("replyLines = %q", got)
	}
	if got := replyLines("1\n2\n3\n4", 3); strings.Join(got, "|") != "1|2|… (2 more lines)" {
		t.Errorf("replyLines = %q", got)
	}
	if got := commitMessage("T", []string{"dave"}); got != "T\n\nCo-authored-by: dave <dave@users.noreply.github.com>" {
		t.Errorf("commitMessage = %q", got)
	}
}
