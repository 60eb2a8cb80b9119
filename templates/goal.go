package templates

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/countersign/countersign/rules"
)

// goalMarker starts the hidden first line of a goal issue's body; the goal's
// compact record (rules.Goal.Compact) follows it as JSON (json.Marshal escapes
// '<' and '>', so the record cannot end the HTML comment early).
const goalMarker = "<!-- countersign:goal "

// GoalMarker returns the hidden line that identifies a goal issue and carries
// its record (any JSON-encodable value), then, when sign is not nil, the
// hidden line that carries sign's signature of the record's exact bytes.
func GoalMarker(record any, sign func([]byte) string) (string, error) {
	b, err := json.Marshal(record)
	if err != nil {
		return "", fmt.Errorf("encode goal record: %w", err)
	}
	return goalMarker + string(b) + " -->" + sigLine(b, sign), nil
}

// IsGoal reports whether an issue body is a goal dashboard.
func IsGoal(body string) bool { return strings.HasPrefix(body, goalMarker) }

// GoalRecord returns the JSON record carried by a goal dashboard's marker.
func GoalRecord(body string) ([]byte, bool) {
	if !IsGoal(body) {
		return nil, false
	}
	line, _, _ := strings.Cut(body[len(goalMarker):], "\n")
	rec, ok := strings.CutSuffix(strings.TrimRight(line, "\r"), " -->")
	if !ok || !json.Valid([]byte(rec)) {
		return nil, false
	}
	return []byte(rec), true
}

// MaxGoalBody bounds a goal issue's body, below GitHub's 65,536 characters:
// a goal with more tasks or history than fits shows fewer rows.
const MaxGoalBody = 60000

// goalCaps are how many rows each part of the dashboard shows, from the most
// generous down; the first that fits is used.
var goalCaps = []struct {
	tasks, history, listed, reason int
	picture                        bool
}{
	{tasks: 100, history: 20, listed: 20, reason: 300, picture: true},
	{tasks: 50, history: 10, listed: 10, reason: 200, picture: true},
	{tasks: 50, history: 10, listed: 10, reason: 200},
	{tasks: 20, history: 5, listed: 5, reason: 100},
	{tasks: 0, history: 0, listed: 0, reason: 60},
}

// RenderGoal is the goal issue's body for goal g: its marker (carrying
// g.Compact(), signed by sign unless it is nil), then the dashboard.
// integrationCheck is goals.integration_check ("" for none).
func RenderGoal(g *rules.Goal, integrationCheck string, sign func([]byte) string) (string, error) {
	marker, err := GoalMarker(g.Compact(), sign)
	if err != nil {
		return "", err
	}
	var body string
	for _, c := range goalCaps {
		v := goalViewOf(g, integrationCheck, marker, c.tasks, c.history, c.listed, c.reason)
		if c.picture {
			v.Picture, v.PictureNote = Picture(g)
		} else if len(g.Tasks) > 0 {
			v.PictureNote = "The picture is left out to keep this dashboard within GitHub's size limit for an issue; the counts above say where the tasks stand."
		}
		body, err = Render("goal", v)
		if err != nil || len(body) <= MaxGoalBody {
			break
		}
	}
	return body, err
}

// goalView is what goal.md.tmpl renders: every text people wrote is already
// made safe (one line, no table break, no @-mention, no HTML).
type goalView struct {
	Marker           string
	Title            string
	Milestone        int
	State            string
	MilestoneClosed  bool
	MilestoneDeleted bool
	Verified         int
	Counted          int
	Dropped          int
	Verifier         string
	VerifiedAt       time.Time
	Notes            string // for quote
	IntegrationCheck string
	Stats            rules.Stats
	Counts           []rules.StateCount
	// Progress is the bar of verified tasks; Picture the Mermaid diagram
	// (goalpicture.go), or PictureNote why it is left out.
	Progress    string
	Picture     string
	PictureNote string

	Tasks         []goalRow
	MoreTasks     int
	Failures      []failureRow
	Advisory      []goalRow
	MoreAdvisory  int
	Overrides     []goalRow
	MoreOverrides int
	Rejections    []rejectionRow
	History       []historyRow
	MoreHistory   int
}

type goalRow struct {
	Number  int
	Title   string
	State   string
	Attempt int
	Flags   string
	Waits   string // the blockers that block it now, "—" for none
}

type failureRow struct {
	Task    int
	Attempt int
	At      time.Time
	By      string
	Reason  string
}

type rejectionRow struct {
	N      int
	At     time.Time
	By     string
	Reason string
}

type historyRow struct {
	At     time.Time
	Change string
	By     string
	Why    string
}

const maxTitle = 80

func goalViewOf(g *rules.Goal, integrationCheck, marker string, tasks, history, listed, reason int) goalView {
	st := rules.GoalStats(g.Tasks)
	v := goalView{Marker: marker, Title: inline(g.Title, 200), Milestone: g.Milestone, State: string(g.State),
		MilestoneClosed: g.MilestoneClosed, MilestoneDeleted: g.MilestoneDeleted, Counted: len(g.Counted()), Dropped: st.Dropped,
		VerifiedAt: g.VerifiedAt, IntegrationCheck: inline(integrationCheck, 100), Stats: st, Counts: st.ByState}
	v.Verified = v.Counted - len(g.Unverified())
	v.Progress = Progress(v.Verified, v.Counted)
	if g.Verifier != "" {
		v.Verifier = person(g.Verifier)
	}
	if n := strings.TrimSpace(g.Notes); n != "" {
		v.Notes = strings.ReplaceAll(clipText(n, 1000), "<", "&lt;")
	}

	// Tasks: what is not verified first, then verified, then dropped.
	var order []rules.GoalTask
	for pass := 0; pass < 3; pass++ {
		for _, t := range g.Tasks {
			k := 0
			switch {
			case t.Dropped():
				k = 2
			case t.State == rules.Verified:
				k = 1
			}
			if k == pass {
				order = append(order, t)
			}
		}
	}
	v.Tasks, v.MoreTasks = rows(order, tasks)
	v.Advisory, v.MoreAdvisory = rows(st.Advisory, listed)
	v.Overrides, v.MoreOverrides = rows(st.Overrides, listed)
	for _, f := range st.RecentFailures {
		by := "CI"
		if f.By != "" {
			by = person(f.By)
		}
		v.Failures = append(v.Failures, failureRow{Task: f.Task, Attempt: f.Attempt, At: f.At, By: by, Reason: inline(f.Reason, reason)})
	}
	rej := g.Rejections
	if len(rej) > listed {
		rej = rej[len(rej)-listed:]
	}
	for _, r := range rej {
		v.Rejections = append(v.Rejections, rejectionRow{N: r.Attempt, At: r.At, By: person(r.By.Login), Reason: inline(r.Reason, reason)})
	}
	h := g.History
	if len(h) > history {
		v.MoreHistory = len(h) - history
		h = h[len(h)-history:]
	}
	for _, t := range h {
		change := "`" + string(t.To) + "`"
		if t.From != "" && t.From != t.To {
			change = "`" + string(t.From) + "` → " + change
		}
		v.History = append(v.History, historyRow{At: t.At, Change: change, By: person(t.Actor), Why: inline(t.Why, reason)})
	}
	return v
}

// rows are up to n of tasks as table rows, and how many more there are.
func rows(tasks []rules.GoalTask, n int) ([]goalRow, int) {
	var out []goalRow
	for i, t := range tasks {
		if i == n {
			return out, len(tasks) - n
		}
		var flags []string
		for _, f := range []struct {
			on   bool
			name string
		}{{t.Escalated && t.State != rules.Verified, "escalated"}, {t.Unverified, "unverified"}, {t.Forced, "forced"},
			{t.Advisory, "advisory"}, {t.Dropped(), "closed as not planned"}, {t.Cycle, "dependency cycle"}} {
			if f.on {
				flags = append(flags, f.name)
			}
		}
		flag := strings.Join(flags, ", ")
		if flag == "" {
			flag = "—"
		}
		waits := "—"
		if len(t.Waits) > 0 {
			waits = inline(strings.Join(t.Waits, ", "), 200)
		}
		out = append(out, goalRow{Number: t.Number, Title: inline(t.Title, maxTitle), State: string(t.State), Attempt: max(t.Attempt, 1), Flags: flag, Waits: waits})
	}
	return out, 0
}

// inline makes s safe inside one Markdown table cell or line: at most n
// characters, on one line, no cell break, no @-mention, no HTML (a "<!--"
// would hide the rest of the body).
func inline(s string, n int) string {
	s = clipText(strings.Join(strings.Fields(s), " "), n)
	s = strings.ReplaceAll(s, "|", `\|`)
	s = strings.ReplaceAll(s, "<", "&lt;")
	return noMention(s)
}

// person shows a login without pinging them: the dashboard is an issue
// body, and a mention in it would notify at every creation.
func person(login string) string {
	if login == "" {
		return "—"
	}
	return noMention("@" + strings.TrimPrefix(login, "@"))
}

func clipText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n <= 1 {
		return "…"
	}
	return string(r[:n-1]) + "…"
}
