package rules

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The board (DESIGN §5): an organization's GitHub Projects board on which
// countersign keeps every task and goal issue of the repository, with one
// single-select field (board.field) at the task's or goal's state. The field
// is countersign's, as its labels are: a person's change of it is put back
// and recorded on the task card, an item removed from the project is added
// again, and reconciliation covers the board.

// DefaultBoardField is the name of the single-select field countersign keeps.
const DefaultBoardField = "countersign"

// BoardConfig is board: in the configuration file.
type BoardConfig struct {
	Project string `yaml:"project" doc:"The URL of an organization's GitHub Projects board (https://HOST/orgs/ORG/projects/N) on which countersign keeps every task and goal issue. Empty: no board."`
	Field   string `yaml:"field" doc:"The single-select field of the board countersign keeps at each task's and goal's state (created with its options if missing)."`
}

// rawBoard is board: as written (nil: not given, keep the default).
type rawBoard struct {
	Project *string `yaml:"project"`
	Field   *string `yaml:"field"`
}

// apply overlays the keys b sets on c.
func (b *rawBoard) apply(c *BoardConfig) {
	if b == nil {
		return
	}
	set(&c.Project, b.Project)
	set(&c.Field, b.Field)
}

// boardProjectRE is an organization's project URL: the scheme, a host, then
// /orgs/ORG/projects/N (a trailing slash, or a view of it, allowed).
var boardProjectRE = regexp.MustCompile(`^https://([A-Za-z0-9.-]+(?::[0-9]+)?)/orgs/(` + loginPattern + `)/projects/([1-9][0-9]{0,8})(?:/views/[0-9]+)?/?$`)

// userProjectRE is a user's project URL, which an App cannot keep.
var userProjectRE = regexp.MustCompile(`^https://[^/]+/users/[^/]+/projects/[0-9]+`)

// boardProjectPattern is boardProjectRE for the schema (no groups needed).
var boardProjectPattern = `^(https://[A-Za-z0-9.-]+(:[0-9]+)?/orgs/` + loginPattern + `/projects/[1-9][0-9]{0,8}(/views/[0-9]+)?/?)?$`

// maxBoardField bounds the field's name (GitHub's own limit on a field's name).
const maxBoardField = 50

// normalize checks board: (see Config.normalize).
func (b *BoardConfig) normalize(at locator) error {
	var errs problems
	b.Project = strings.TrimSpace(b.Project)
	b.Field = strings.TrimSpace(b.Field)
	if b.Project != "" {
		if _, err := ParseBoardProject(b.Project); err != nil {
			errs.add(at.errorf("board.project "+err.Error(), "board", "project"))
		}
	}
	switch {
	case b.Field == "":
		errs.add(at.errorf("board.field must name the board's field countersign keeps (default "+DefaultBoardField+")", "board", "field"))
	case len(b.Field) > maxBoardField:
		errs.add(at.errorf(fmt.Sprintf("board.field must be at most %d characters long", maxBoardField), "board", "field"))
	case reservedBoardField(b.Field):
		errs.add(at.errorf("board.field must not be one of GitHub's own fields ("+quote(b.Field)+")", "board", "field"))
	}
	return errs.err()
}

// githubFields are the names of the fields every GitHub project has: a
// single-select field cannot be created under one of them.
var githubFields = []string{"title", "assignees", "status", "labels", "linked pull requests", "milestone", "repository",
	"reviewers", "parent issue", "sub-issues progress", "type"}

func reservedBoardField(name string) bool {
	return slices.Contains(githubFields, strings.ToLower(name))
}

// BoardProject is an organization's project, as its URL names it.
type BoardProject struct {
	Host   string // github.com, or a GitHub Enterprise Server host
	Org    string
	Number int
}

// URL is the project's canonical URL.
func (p BoardProject) URL() string {
	return fmt.Sprintf("https://%s/orgs/%s/projects/%d", p.Host, p.Org, p.Number)
}

// ParseBoardProject reads a board.project URL. Its error says what is wrong
// (to follow "board.project").
func ParseBoardProject(url string) (BoardProject, error) {
	m := boardProjectRE.FindStringSubmatch(strings.TrimSpace(url))
	if m == nil {
		if userProjectRE.MatchString(url) {
			return BoardProject{}, fmt.Errorf("must be an organization's project (https://HOST/orgs/ORG/projects/N), not a user's: countersign keeps only an organization's board, not %s", quote(url))
		}
		return BoardProject{}, fmt.Errorf("must be the URL of an organization's project, https://HOST/orgs/ORG/projects/N, not %s", quote(url))
	}
	n, _ := strconv.Atoi(m[3]) // at most 9 digits
	return BoardProject{Host: strings.ToLower(m[1]), Org: m[2], Number: n}, nil
}

// On reports whether the configuration keeps a board.
func (b BoardConfig) On() bool { return b.Project != "" }

// BoardOptions are the options of the board's single-select field, in the
// order the field lists them: the task states, escalated, then the goal
// states a task has not (a goal's verified is the task's).
func BoardOptions() []string {
	out := make([]string, 0, len(States)+4)
	for _, s := range States {
		out = append(out, string(s))
	}
	out = append(out, LabelEscalated)
	for _, g := range GoalStates {
		if !slices.Contains(out, string(g)) {
			out = append(out, string(g))
		}
	}
	return out
}

// BoardValue is the option a task shows on the board: escalated while it is
// escalated (the leads must act), else its state.
func BoardValue(t *Task) string {
	if t.Escalated && t.State != Verified {
		return LabelEscalated
	}
	return string(t.State)
}

// GoalBoardValue is the option a goal shows on the board: its state.
func GoalBoardValue(g *Goal) string { return string(g.State) }

// EffectBoard makes issue Number of Repo an item of the configured board
// (Project), its field (Field) at Value: the item is added when countersign
// does not know it on the board (or it was removed), then the field is set.
// Goal: Number is a milestone, and the issue is its goal issue.
const EffectBoard EffectKind = "board"

// BoardEffect is the effect that shows task t at its value on board b.
func BoardEffect(b BoardConfig, t *Task) Effect {
	return Effect{Kind: EffectBoard, Repo: t.Repo, Number: t.Number, Project: b.Project, Field: b.Field, Value: BoardValue(t)}
}

// GoalBoardEffect is the effect that shows goal g at its value on board b.
func GoalBoardEffect(b BoardConfig, g *Goal) Effect {
	return Effect{Kind: EffectBoard, Repo: g.Repo, Number: g.Milestone, Project: b.Project, Field: b.Field, Value: GoalBoardValue(g), Goal: true}
}

// The board's events of a task: someone other than countersign changed its
// field on the board (BoardEdited; Text: the value they set) or removed its
// item from the project (BoardRemoved). Either is put back and recorded.
const (
	BoardEdited  EventKind = "board.edited"
	BoardRemoved EventKind = "board.removed"
)

// maxBoardRepairs bounds the board repairs a task's history records (as
// maxCardRepairs does the card's): past it, the board is still put back.
const maxBoardRepairs = 20

// boardRepairPrefix starts the history entry of a board repair.
const boardRepairPrefix = "board "

// BoardRepairWhy is the history entry of a board repair.
func BoardRepairWhy(ev Event, field string) string {
	if ev.Kind == BoardRemoved {
		return fmt.Sprintf("board item removed by @%s: added again", ev.Actor.Login)
	}
	to := ev.Text
	if to == "" {
		to = "nothing"
	}
	return fmt.Sprintf("board field %s set to %s by @%s: put back", field, clip(to, 60), ev.Actor.Login)
}

// boardRepaired records a person's change of the board (DESIGN §5) and has
// the task put back on it.
func (d *decider) boardRepaired() {
	d.board = true
	n := 0
	for _, h := range d.t.History {
		if strings.HasPrefix(h.Why, boardRepairPrefix) {
			n++
		}
	}
	if n < maxBoardRepairs {
		d.note(BoardRepairWhy(d.ev, d.f.Config.Board.Field))
		return
	}
	d.changed = true // put back all the same
}

// boardEffect is the board effect of a decision: when a board is kept and the
// task's value on it changed (or it is new, or a repair asks for it).
func (d *decider) boardEffect() []Effect {
	b := d.f.Config.Board
	if !b.On() || d.t == nil {
		return nil
	}
	if d.board || d.old == nil || BoardValue(d.old) != BoardValue(d.t) {
		return []Effect{BoardEffect(b, d.t)}
	}
	return nil
}
