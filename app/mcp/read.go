package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/countersign/countersign/rules"
	"github.com/countersign/countersign/templates"
)

// taskRef is a task: an issue of a repository.
type taskRef struct {
	Repo   string
	Number int
}

func (t taskRef) String() string { return fmt.Sprintf("%s#%d", t.Repo, t.Number) }

var taskRE = regexp.MustCompile(`^([A-Za-z0-9](?:[A-Za-z0-9-]*)?/[A-Za-z0-9._-]+)#([0-9]+)$`)
var repoRE = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]*)?/[A-Za-z0-9._-]+$`)

func parseTask(id string) (taskRef, error) {
	m := taskRE.FindStringSubmatch(strings.TrimSpace(id))
	if m == nil {
		return taskRef{}, fmt.Errorf("task %q is not owner/repo#N (e.g. octo/app#12)", id)
	}
	n, err := strconv.Atoi(m[2])
	if err != nil || n < 1 {
		return taskRef{}, fmt.Errorf("task %q: %q is not an issue number", id, m[2])
	}
	return taskRef{Repo: m[1], Number: n}, nil
}

func checkRepo(repo string) error {
	if !repoRE.MatchString(repo) {
		return fmt.Errorf("repository %q is not owner/name", repo)
	}
	return nil
}

// GoalRef names a goal within a repository: a milestone's number or its title.
// In JSON a number is a milestone number and a string is a title; a string of
// digits that no milestone has as its title falls back to that number (see
// milestone).
type GoalRef struct {
	Number int
	Title  string
}

func (g *GoalRef) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*g = GoalRef{Title: s}
		return nil
	}
	var n int
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("a goal is a milestone number or title")
	}
	*g = GoalRef{Number: n}
	return nil
}

func (g GoalRef) MarshalJSON() ([]byte, error) {
	if g.Title != "" {
		return json.Marshal(g.Title)
	}
	return json.Marshal(g.Number)
}

func (g GoalRef) String() string {
	if g.Title != "" {
		return strconv.Quote(g.Title)
	}
	return strconv.Itoa(g.Number)
}

func (g GoalRef) zero() bool { return g.Number <= 0 && strings.TrimSpace(g.Title) == "" }

// notVisible explains a 404 on a repository or issue.
func notVisible(what string, err error) error {
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("%s: GitHub answered 404: it does not exist, or this token cannot see it", what)
	}
	return err
}

// task reads a task's issue; an unknown task, a pull request and a repository
// the token cannot see are argument errors.
func (s *server) task(ctx context.Context, c *caller, id string) (taskRef, *Issue, error) {
	ref, err := parseTask(id)
	if err != nil {
		return ref, nil, err
	}
	is, err := c.gh.Issue(ctx, ref.Repo, ref.Number)
	if err != nil {
		return ref, nil, notVisible("unknown task "+ref.String(), err)
	}
	if is.PR {
		return ref, nil, fmt.Errorf("%s is a pull request: a task is an issue (the pull request's closing issue is the task)", ref)
	}
	return ref, is, nil
}

// untracked is what a state reads when countersign has not labeled it.
const untracked = "untracked"

// milestone resolves a goal reference to its milestone.
func (s *server) milestone(ctx context.Context, c *caller, repo string, ref GoalRef) (Milestone, error) {
	if err := checkRepo(repo); err != nil {
		return Milestone{}, err
	}
	if ref.zero() {
		return Milestone{}, fmt.Errorf("a goal is required: a milestone's number or title")
	}
	ms, err := c.gh.Milestones(ctx, repo)
	if err != nil {
		return Milestone{}, notVisible("repository "+repo, err)
	}
	if m, ok := findMilestone(ms, ref); ok {
		return m, nil
	}
	return Milestone{}, fmt.Errorf("unknown goal %s in %s: no milestone has that number or title", ref, repo)
}

// findMilestone resolves ref among ms. A number is a milestone number. A
// title is a milestone's title, exactly, else ignoring case and surrounding
// spaces; only when no milestone has it as its title does a title of digits
// fall back to the milestone of that number.
func findMilestone(ms []Milestone, ref GoalRef) (Milestone, bool) {
	number := ref.Number
	if ref.Title != "" {
		for _, m := range ms {
			if m.Title == ref.Title {
				return m, true
			}
		}
		for _, m := range ms {
			if strings.EqualFold(strings.TrimSpace(m.Title), strings.TrimSpace(ref.Title)) {
				return m, true
			}
		}
		n, err := strconv.Atoi(strings.TrimSpace(ref.Title))
		if err != nil || n < 1 {
			return Milestone{}, false
		}
		number = n
	}
	for _, m := range ms {
		if number > 0 && m.Number == number {
			return m, true
		}
	}
	return Milestone{}, false
}

// goalIssues splits a milestone's issues into countersign's goal issue (nil
// if it has none yet) and the tasks. The goal issue is the one countersign's
// bot opened, labeled goal, whose body is its dashboard: a `goal` label on
// anyone else's issue makes it nothing.
func (s *server) goalIssues(ctx context.Context, c *caller, repo string, m int) (*Issue, []*Issue, error) {
	list, err := c.gh.Issues(ctx, repo, m, "")
	if err != nil {
		return nil, nil, err
	}
	var goal *Issue
	var tasks []*Issue
	for _, is := range list {
		if goal == nil && s.isBot(is.Author, is.AuthorBot) && hasLabel(is.Labels, rules.LabelGoal) && templates.IsGoal(is.Body) {
			goal = is
			continue
		}
		tasks = append(tasks, is)
	}
	return goal, tasks, nil
}

func hasLabel(labels []string, name string) bool {
	for _, l := range labels {
		if strings.EqualFold(l, name) {
			return true
		}
	}
	return false
}

// card is countersign's task card on issue n and the record it carries, when
// they can be believed: the comment is the bot's own and nobody but the bot
// ever left it edited (GitHub's GraphQL says who last edited it). Otherwise
// the record is nil and why says why the details are unavailable. The
// record's signature is the server's to check (its key never leaves it): the
// author and editor are what make the card countersign's here.
func (s *server) card(ctx context.Context, c *caller, repo string, n int) (rec *rules.Task, cm *Comment, why string, err error) {
	comments, err := c.gh.CommentsSince(ctx, repo, n, zeroTime)
	if err != nil {
		return nil, nil, "", err
	}
	for _, x := range comments {
		if s.isBot(x.Author, x.Bot) && templates.IsCard(x.Body) {
			cm = x
			break
		}
	}
	if cm == nil {
		return nil, nil, "countersign has not written a task card on it yet", nil
	}
	return s.trustCard(ctx, c, repo, n, cm)
}

// trustCard checks who last edited card cm and reads its record.
func (s *server) trustCard(ctx context.Context, c *caller, repo string, n int, cm *Comment) (*rules.Task, *Comment, string, error) {
	editors, err := c.gh.Editors(ctx, repo, n)
	if err != nil {
		return nil, cm, "", err
	}
	if e, ok := editors[cm.ID]; ok && !s.isBotActor(e) {
		return nil, cm, fmt.Sprintf("its card was last edited by %s at %s, not by countersign: its details cannot be trusted until countersign writes it back (it does so at once)",
			e.Login, e.At.UTC().Format("2006-01-02 15:04 UTC")), nil
	}
	raw, ok := templates.CardRecord(cm.Body)
	if !ok {
		return nil, cm, "its card carries no record", nil
	}
	var t rules.Task
	if err := json.Unmarshal(raw, &t); err != nil || !strings.EqualFold(t.Repo, repo) || t.Number != n {
		return nil, cm, "its card's record is not this task's", nil
	}
	return &t, cm, "", nil
}

// isBotActor reports whether a GraphQL Actor is countersign's bot: GitHub
// names an App's bot by its slug, at /apps/<slug>.
func (s *server) isBotActor(e Editor) bool {
	return strings.EqualFold(e.Path, "/apps/"+s.botSlug()) &&
		(strings.EqualFold(e.Login, s.botSlug()) || strings.EqualFold(e.Login, s.opts.Bot))
}
