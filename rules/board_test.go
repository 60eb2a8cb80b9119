package rules

import (
	"slices"
	"strings"
	"testing"
)

func TestParseBoardProject(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want BoardProject
		err  string
	}{
		{url: "https://github.com/orgs/acme/projects/7", want: BoardProject{Host: "github.com", Org: "acme", Number: 7}},
		{url: "https://github.com/orgs/acme/projects/7/", want: BoardProject{Host: "github.com", Org: "acme", Number: 7}},
		{url: "https://github.com/orgs/acme/projects/7/views/3", want: BoardProject{Host: "github.com", Org: "acme", Number: 7}},
		{url: "https://GHE.example.com/orgs/Acme-Corp/projects/12", want: BoardProject{Host: "ghe.example.com", Org: "Acme-Corp", Number: 12}},
		{url: "https://ghe.example.com:8443/orgs/acme/projects/1", want: BoardProject{Host: "ghe.example.com:8443", Org: "acme", Number: 1}},
		{url: "https://github.com/users/carol/projects/2", err: "not a user's"},
		{url: "https://github.com/orgs/acme/projects/0", err: "must be the URL of an organization's project"},
		{url: "http://github.com/orgs/acme/projects/1", err: "must be the URL"},
		{url: "https://github.com/acme/widgets/projects/1", err: "must be the URL"},
		{url: "github.com/orgs/acme/projects/1", err: "must be the URL"},
		{url: "https://github.com/orgs/acme/projects/1?pane=issue", err: "must be the URL"},
		{url: "https://github.com/orgs/-bad/projects/1", err: "must be the URL"},
	} {
		got, err := ParseBoardProject(tc.url)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseBoardProject(%q) = %+v, %v; want an error saying %q", tc.url, got, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("ParseBoardProject(%q) = %+v, %v; want %+v", tc.url, got, err, tc.want)
		}
	}
	if u := (BoardProject{Host: "github.com", Org: "acme", Number: 7}).URL(); u != "https://github.com/orgs/acme/projects/7" {
		t.Errorf("URL() = %q", u)
	}
}

func TestBoardConfig(t *testing.T) {
	for _, tc := range []struct {
		file string
		want BoardConfig
		err  string
	}{
		{file: "", want: BoardConfig{Field: DefaultBoardField}},
		{file: "board:\n  project: https://github.com/orgs/acme/projects/1\n", want: BoardConfig{Project: "https://github.com/orgs/acme/projects/1", Field: DefaultBoardField}},
		{file: "board: {project: https://github.com/orgs/acme/projects/1, field: State}\n", want: BoardConfig{Project: "https://github.com/orgs/acme/projects/1", Field: "State"}},
		{file: "board:\n  project: https://github.com/users/carol/projects/2\n", err: ":2:12: board.project must be an organization's project"},
		{file: "board:\n  project: https://github.com/orgs/acme/projects/1\n  field: \"\"\n", err: ":3:10: board.field must name"},
		{file: "board:\n  project: https://github.com/orgs/acme/projects/1\n  field: Status\n", err: "board.field must not be one of GitHub's own fields"},
		{file: "board:\n  project: https://github.com/orgs/acme/projects/1\n  field: " + strings.Repeat("x", 51) + "\n", err: "at most 50 characters"},
		{file: "board:\n  projetc: x\n", err: `unknown key "projetc"`},
	} {
		c, err := ParseConfig([]byte(tc.file))
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want one saying %q", tc.file, err, tc.err)
		case tc.err == "" && (err != nil || c.Board != tc.want):
			t.Errorf("%q: board %+v, %v; want %+v", tc.file, c.Board, err, tc.want)
		}
	}
	if (BoardConfig{Field: DefaultBoardField}).On() || !(BoardConfig{Project: "https://github.com/orgs/a/projects/1"}).On() {
		t.Error("On() says a board is kept exactly when a project is named")
	}
}

func TestBoardOptionsAndValues(t *testing.T) {
	want := []string{"pending", "assigned", "in-progress", "review", "completed", "verified", "escalated", "open", "active", "pending-verify"}
	if got := BoardOptions(); !slices.Equal(got, want) {
		t.Fatalf("BoardOptions() = %v, want %v", got, want)
	}
	for _, tc := range []struct {
		t    Task
		want string
	}{
		{Task{State: Pending}, "pending"},
		{Task{State: InProgress}, "in-progress"},
		{Task{State: InProgress, Escalated: true}, "escalated"},
		{Task{State: Verified, Escalated: true}, "verified"},
		{Task{State: Completed}, "completed"},
	} {
		if got := BoardValue(&tc.t); got != tc.want {
			t.Errorf("BoardValue(%+v) = %q, want %q", tc.t, got, tc.want)
		}
		if !slices.Contains(want, BoardValue(&tc.t)) {
			t.Errorf("value %q is no option", BoardValue(&tc.t))
		}
	}
	for _, s := range GoalStates {
		if !slices.Contains(want, GoalBoardValue(&Goal{State: s})) {
			t.Errorf("goal state %s is no option", s)
		}
	}
}

// boardFacts are fxFacts with a board configured.
func boardFacts(actor string) Facts {
	f := fxFacts(actor)
	f.Config.Board = BoardConfig{Project: "https://github.com/orgs/acme/projects/1", Field: DefaultBoardField}
	return f
}

func boardEffects(d Decision) []Effect {
	var out []Effect
	for _, e := range d.Effects {
		if e.Kind == EffectBoard {
			out = append(out, e)
		}
	}
	return out
}

func TestDecideTaskBoard(t *testing.T) {
	pending := DecideTask(nil, fxEvent(IssueOpened, "alice"), boardFacts("alice")).Task
	assign := fxEvent(IssueAssigned, "carol")
	assign.Issue.Assignees = []User{u("alice")}
	edited := fxEvent(BoardEdited, "mallory")
	edited.Text = "verified"
	removed := fxEvent(BoardRemoved, "mallory")
	for _, tc := range []struct {
		name    string
		task    *Task
		ev      Event
		f       Facts
		want    string // the board effect's value, "" for none
		history string // the task's last history entry must say it
	}{
		{name: "a new task joins the board", ev: fxEvent(IssueOpened, "alice"), f: boardFacts("alice"), want: "pending"},
		{name: "no board configured", ev: fxEvent(IssueOpened, "alice"), f: fxFacts("alice")},
		{name: "a state change", task: pending, ev: assign, f: boardFacts("carol"), want: "assigned"},
		{name: "no state change", task: pending, ev: fxEvent(IssueEdited, "alice"), f: boardFacts("alice")},
		{name: "a person's change is put back and recorded", task: pending, ev: edited, f: boardFacts("mallory"), want: "pending",
			history: "board field countersign set to verified by @mallory: put back"},
		{name: "a removed item is added again and recorded", task: pending, ev: removed, f: boardFacts("mallory"), want: "pending",
			history: "board item removed by @mallory: added again"},
		{name: "a board event of an untracked issue", ev: edited, f: boardFacts("mallory")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := DecideTask(tc.task, tc.ev, tc.f)
			got := boardEffects(d)
			switch {
			case tc.want == "" && len(got) != 0:
				t.Fatalf("board effects %+v, want none", got)
			case tc.want != "" && (len(got) != 1 || got[0].Value != tc.want || got[0].Project != tc.f.Config.Board.Project ||
				got[0].Field != DefaultBoardField || got[0].Number != fxIssue || got[0].Goal):
				t.Fatalf("board effects %+v, want one at %q", got, tc.want)
			}
			if tc.history != "" {
				h := d.Task.History
				if len(h) == 0 || h[len(h)-1].Why != tc.history || h[len(h)-1].From != h[len(h)-1].To {
					t.Fatalf("history %+v, want a note %q", h, tc.history)
				}
			}
		})
	}
}

// Past maxBoardRepairs, a person's change is still put back, and the
// history grows no more.
func TestBoardRepairsBounded(t *testing.T) {
	task := DecideTask(nil, fxEvent(IssueOpened, "alice"), boardFacts("alice")).Task
	for i := 0; i < maxBoardRepairs+5; i++ {
		ev := fxEvent(BoardRemoved, "mallory")
		ev.At = fxAt(200 + i)
		d := DecideTask(task, ev, boardFacts("mallory"))
		if len(boardEffects(d)) != 1 {
			t.Fatalf("repair %d: no board effect", i)
		}
		task = d.Task
	}
	n := 0
	for _, h := range task.History {
		if strings.HasPrefix(h.Why, boardRepairPrefix) {
			n++
		}
	}
	if n > maxBoardRepairs {
		t.Fatalf("%d board repairs in the history, want at most %d", n, maxBoardRepairs)
	}
}

func TestDecideGoalBoard(t *testing.T) {
	f := GoalFacts{Board: BoardConfig{Project: "https://github.com/orgs/acme/projects/1", Field: DefaultBoardField}, Ask: Known(Answers{})}
	ev := GoalEvent{Kind: GoalMilestoneSeen, Repo: fxRepo, Milestone: 3, Title: "v1", At: fxAt(1)}
	d := DecideGoal(nil, ev, f)
	var got []Effect
	for _, e := range d.Effects {
		if e.Kind == EffectBoard {
			got = append(got, e)
		}
	}
	if len(got) != 1 || got[0].Value != "open" || !got[0].Goal || got[0].Number != 3 {
		t.Fatalf("a new goal's board effects %+v, want one at open for milestone 3", got)
	}
	f.Board = BoardConfig{Field: DefaultBoardField}
	for _, e := range DecideGoal(nil, ev, f).Effects {
		if e.Kind == EffectBoard {
			t.Fatalf("a board effect with no board configured: %+v", e)
		}
	}
}
