package templates

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/rules"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func at(min int) time.Time {
	return time.Date(2025, 5, 6, 9, 0, 0, 0, time.UTC).Add(time.Duration(min) * time.Minute)
}

// exampleGoal is the goal confirmation flow, played through
// rules.DecideGoal: three tasks verified (one after a rejection, one by a
// lead's /skip-verify), the goal rejected by the lead for CSS conflicts, a fix
// task in review after a failed CI run, and an advisory task awaiting the
// lead's review.
func exampleGoal(t *testing.T) *rules.Goal {
	t.Helper()
	var g *rules.Goal
	min := 0
	apply := func(ev rules.GoalEvent, lead bool) {
		t.Helper()
		min += 7
		ev.Repo, ev.Milestone, ev.At = "acme/app", 3, at(min)
		if ev.Title == "" {
			ev.Title = "Login page v2"
		}
		d := rules.DecideGoal(g, ev, rules.GoalFacts{IntegrationCheck: "e2e", Ask: rules.Known(rules.Answers{
			Person: rules.Person{Lead: lead}, Integration: rules.IntegrationSuccess, Leads: []string{"carol"}})})
		if d.Goal != nil {
			g = d.Goal
		}
	}
	task := func(k rules.GoalTask) {
		apply(rules.GoalEvent{Kind: rules.GoalTaskChanged, Actor: "alice", Task: &k, In: true}, false)
	}
	comment := func(actor, line string) {
		apply(rules.GoalEvent{Kind: rules.GoalCommented, Actor: actor, CommentID: int64(min), Commands: rules.ParseCommands(line)}, actor == "carol")
	}

	apply(rules.GoalEvent{Kind: rules.GoalMilestoneSeen, Actor: "carol"}, true)
	apply(rules.GoalEvent{Kind: rules.GoalIssueCreated, Actor: "countersign[bot]", Issue: 100}, false)
	form := rules.GoalTask{Number: 11, Title: "Create login form component", State: rules.InProgress, Attempt: 1}
	email := rules.GoalTask{Number: 12, Title: "Validate email | password fields @security", State: rules.Assigned, Attempt: 1}
	cookie := rules.GoalTask{Number: 13, Title: "Session cookie handling", State: rules.Pending, Attempt: 1}
	task(form)
	task(email)
	task(cookie)
	form.State = rules.Verified
	task(form)
	email.State, email.Attempt, email.FailedAttempts, email.Rejections = rules.InProgress, 2, 1, 1
	email.Failures = []rules.GoalFailure{{Attempt: 1, At: at(40), By: "bob", Reason: "Form doesn't validate email format - accepts 'abc' as valid email"}}
	task(email)
	email.State = rules.Verified
	task(email)
	cookie.State, cookie.Unverified = rules.Verified, true
	task(cookie) // every task verified: pending-verify
	comment("carol", "/reject-goal Tasks work individually but CSS conflicts between login and dashboard @frontend")
	fix := rules.GoalTask{Number: 15, Title: "Fix CSS conflicts between login and dashboard", State: rules.InProgress, Attempt: 2, FailedAttempts: 1,
		Failures: []rules.GoalFailure{{Attempt: 1, At: at(120), Reason: "unit-test (test: failure) <!-- on #31"}}}
	task(fix)
	fix.State = rules.Review
	task(fix)
	sso := rules.GoalTask{Number: 16, Title: "Research SSO providers", State: rules.Completed, Attempt: 1, Advisory: true}
	task(sso)
	apply(rules.GoalEvent{Kind: rules.GoalMilestoneClosed, Actor: "dave"}, false) // refused: reopened
	comment("dave", "/verify-goal")
	return g
}

func TestGoalDashboard(t *testing.T) {
	g := exampleGoal(t)
	if g.State != rules.GoalActive || len(g.Tasks) != 5 || len(g.Rejections) != 1 {
		t.Fatalf("example goal = %+v", g)
	}
	body, err := RenderGoal(g, "e2e", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"## Goal: Login page v2",
		"**State:** `active` · milestone open · **3 of 5** tasks verified",
		"| pending | assigned | in-progress | review | completed | verified |",
		"| 0 | 0 | 0 | 1 | 1 | 3 |",
		"| #15 | Fix CSS conflicts between login and dashboard | `review` | 2 | — | — |",
		"| #16 | Research SSO providers | `completed` | 1 | — | advisory |",
		"| #13 | Session cookie handling | `verified` | 1 | — | unverified |",
		`| #12 | Validate email \| password fields @` + "\u200b" + `security | ` + "`verified`" + ` | 2 | — | — |`,
		"- pass rate: **33%** (1 of 3 verified tasks passed the gate at their first attempt)",
		"- average attempts: **1.3** per verified task",
		"| #15 | 1 | 2025-05-06 11:00 UTC | CI | unit-test (test: failure) &lt;!-- on #31 |",
		"### Awaiting a lead's review",
		"- #16 Research SSO providers (`completed`)",
		"- #13 Session cookie handling: unverified",
		"| 1 | 2025-05-06 10:10 UTC | @\u200bcarol | Tasks work individually but CSS conflicts between login and dashboard @\u200bfrontend |",
		"`pending-verify` → `active` | @\u200bcarol | /reject-goal: Tasks work",
		"milestone closed by @\u200bdave while `active`: reopened",
		"close the milestone or comment `/verify-goal [notes]` to confirm it; `/reject-goal <reason>` sends it back.",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("dashboard lacks %q", want)
		}
	}
	if strings.Count(body, "<!--") != 1 || strings.Count(body, "-->") != 1 {
		t.Errorf("the dashboard has HTML comments besides its marker")
	}
	for _, l := range strings.Split(body, "\n")[1:] {
		if i := strings.Index(l, "@"); i >= 0 && !strings.HasPrefix(l[i+1:], "\u200b") {
			t.Errorf("line mentions someone: %q", l)
		}
	}

	// The marker carries the compact record.
	rec, ok := GoalRecord(body)
	if !ok {
		t.Fatal("no goal record in the dashboard")
	}
	var back rules.Goal
	if err := json.Unmarshal(rec, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, g.Compact()) {
		t.Errorf("record =\n%+v\nwant\n%+v", back, g.Compact())
	}
	if IsCard(body) || !IsGoal(body) {
		t.Error("a goal dashboard is not a task card")
	}

	golden := filepath.Join("testdata", "goal-example.md")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (regenerate with go test ./templates -run Goal -update)", err)
	}
	if string(want) != body {
		t.Errorf("the dashboard differs from %s (regenerate with go test ./templates -run Goal -update):\n%s", golden, body)
	}
}

func TestGoalDashboardStates(t *testing.T) {
	for _, tc := range []struct {
		state rules.GoalState
		says  string
	}{
		{rules.GoalOpen, "When every task is verified, a lead confirms the goal"},
		{rules.GoalPendingVerify, "**Lead:** every task is verified. Test the integrated result (the integration check `e2e` must be green"},
		{rules.GoalVerified, "Confirmed by a lead."},
	} {
		g := &rules.Goal{Repo: "acme/app", Milestone: 1, Title: "Empty", State: tc.state, Verifier: "carol", VerifiedAt: at(1),
			Notes: "works end-to-end\n<!-- hidden --> @team"}
		body, err := RenderGoal(g, "e2e", nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{tc.says, "No task yet", "- pass rate: — (no task verified yet)", "None.", "confirmed by @\u200bcarol on 2025-05-06 09:01 UTC",
			"> works end-to-end\n> &lt;!-- hidden --> @\u200bteam"} {
			if !strings.Contains(body, want) {
				t.Errorf("%s: dashboard lacks %q:\n%s", tc.state, want, body)
			}
		}
	}
}

// TestGoalDashboardBounded: a goal of 200 tasks with long, hostile text
// stays far below GitHub's 65,536 characters.
func TestGoalDashboardBounded(t *testing.T) {
	long := strings.Repeat("<@x|y> ", 200)
	g := &rules.Goal{Repo: "acme/app", Milestone: 9, Title: long, Issue: 500, State: rules.GoalActive, Notes: long}
	for n := 1; n <= 200; n++ {
		k := rules.GoalTask{Number: 1000 + n, Title: long, State: rules.States[n%len(rules.States)], Attempt: 1 + n%4,
			FailedAttempts: n % 3, Rejections: n % 2, Advisory: n%5 == 0, Unverified: n%7 == 0, Forced: n%11 == 0, Escalated: n%13 == 0}
		for a := range 3 {
			k.Failures = append(k.Failures, rules.GoalFailure{Attempt: a + 1, At: at(n*3 + a), By: "bob", Reason: long})
		}
		g.Tasks = append(g.Tasks, k)
	}
	for i := range 300 {
		g.History = append(g.History, rules.GoalTransition{From: rules.GoalActive, To: rules.GoalActive, Actor: "alice", At: at(i), Why: long})
	}
	for i := range 30 {
		g.Rejections = append(g.Rejections, rules.Rejection{By: rules.User{ID: 3, Login: "carol"}, At: at(i), Reason: long, Attempt: i + 1})
	}
	body, err := RenderGoal(g, "e2e", nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len([]rune(body)); n > MaxGoalBody {
		t.Fatalf("dashboard is %d characters", n)
	}
	if !strings.Contains(body, "more (verified ones last): see the milestone.") || !strings.Contains(body, "earlier lines not shown") {
		t.Errorf("a capped dashboard says what it leaves out")
	}
	if strings.Count(body, "<!--") != 1 || strings.Count(body, "-->") != 1 {
		t.Errorf("hostile text opened an HTML comment")
	}
	if _, ok := GoalRecord(body); !ok {
		t.Errorf("no record in a capped dashboard")
	}
	t.Logf("200-task dashboard: %d characters", len([]rune(body)))

	// Even a realistic 200-task goal shows 100 rows.
	for i := range g.Tasks {
		g.Tasks[i].Title = fmt.Sprintf("Task number %d", i)
		g.Tasks[i].Failures = g.Tasks[i].Failures[:1]
		g.Tasks[i].Failures[0].Reason = "unit-test (test: failure)"
	}
	g.Title, g.Notes, g.History, g.Rejections = "Big", "", g.History[:5], nil
	for i := range g.History {
		g.History[i].Why = "short"
	}
	body, err = RenderGoal(g, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("realistic 200-task dashboard: %d bytes", len(body))
	if !strings.Contains(body, "…and 100 more") || len(body) > 30000 {
		t.Errorf("realistic 200-task dashboard: %d bytes, rows capped? %v", len(body), strings.Contains(body, "…and 100 more"))
	}
}

func TestGoalMarkerRejects(t *testing.T) {
	for _, body := range []string{
		"",
		"a comment that quotes <!-- countersign:goal {} -->",
		"<!-- countersign:goal {not json} -->",
		"<!-- countersign:card {\"a\":1} -->",
	} {
		if _, ok := GoalRecord(body); ok {
			t.Errorf("GoalRecord(%q) ok, want not a goal", body)
		}
	}
}

// TestGoalNotices renders every goal notice as the adapter does.
func TestGoalNotices(t *testing.T) {
	type noticeData struct { // as app.noticeData
		*rules.Notice
		Repo    string
		Where   int
		Record  *rules.Task
		Missing string
	}
	for _, tc := range []struct {
		n    rules.Notice
		says []string
	}{
		{rules.Notice{Kind: rules.NoticeGoalRefused, Actor: "dave", Reason: "the milestone was closed, but #2 (`review`) is not verified. It was reopened."},
			[]string{"**Undone:** the milestone was closed, but #2", "@dave, a goal is confirmed by a lead"}},
		{rules.Notice{Kind: rules.NoticeGoalReady, Actor: "alice", Reason: "all 3 tasks of the milestone are verified", Mentions: []string{"carol"}},
			[]string{"**Goal ready for confirmation:** all 3 tasks", "@carol: a lead tests the integrated result"}},
		{rules.Notice{Kind: rules.NoticeGoalVerified, Actor: "carol", Reason: "login flow works @team"},
			[]string{"**Goal verified** by @carol:", "> login flow works @\u200bteam"}},
		{rules.Notice{Kind: rules.NoticeGoalVerified, Actor: "carol"}, []string{"**Goal verified** by @carol."}},
		{rules.Notice{Kind: rules.NoticeGoalRejected, Actor: "carol", Reason: "CSS conflicts"},
			[]string{"**Goal rejected** by @carol; it is back to `active`.", "> CSS conflicts", "Add fix tasks to the milestone"}},
		{rules.Notice{Kind: rules.NoticeGoalReopened, Actor: "alice", Reason: "#4 added to the milestone (`pending`); the goal is `active` again", Mentions: []string{"carol"}},
			[]string{"**Goal no longer confirmed:** #4 added", "@carol: a lead confirms it again"}},
		{rules.Notice{Kind: rules.NoticeGoalStatus, Actor: "alice", Reason: "The goal is `active`: 1 of 2 tasks verified"},
			[]string{"The goal is `active`: 1 of 2 tasks verified.", "The dashboard"}},
		{rules.Notice{Kind: rules.NoticeRefused, Task: 100, Actor: "alice", Refusals: []rules.Refusal{{Quote: "/start", Reason: "/start works on a task"}}},
			[]string{"> /start", "@alice **Refused:** /start works on a task"}},
	} {
		n := tc.n
		body, err := Render("notice-"+string(n.Kind), noticeData{Notice: &n, Repo: "acme/app", Where: 100})
		if err != nil {
			t.Fatalf("%s: %v", n.Kind, err)
		}
		for _, want := range tc.says {
			if !strings.Contains(body, want) {
				t.Errorf("%s: notice lacks %q:\n%s", n.Kind, want, body)
			}
		}
		if strings.Contains(body, "(Task #") {
			t.Errorf("%s: a goal notice names the goal issue as a task:\n%s", n.Kind, body)
		}
	}
}
