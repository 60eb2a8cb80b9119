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

	"github.com/countersign/countersign/app/mcp/ghread"
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
	if errors.Is(err, ghread.ErrNotFound) {
		return fmt.Errorf("%s: GitHub answered 404: it does not exist, or this token cannot see it", what)
	}
	return err
}

// task reads a task's issue; an unknown task, a pull request and a repository
// the token cannot see are argument errors.
func (s *server) task(ctx context.Context, c *caller, id string) (taskRef, *ghread.Issue, error) {
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

// milestone resolves a goal reference to its milestone.
func (s *server) milestone(ctx context.Context, c *caller, repo string, ref GoalRef) (ghread.Milestone, error) {
	if err := checkRepo(repo); err != nil {
		return ghread.Milestone{}, err
	}
	if ref.zero() {
		return ghread.Milestone{}, fmt.Errorf("a goal is required: a milestone's number or title")
	}
	ms, err := c.gh.Milestones(ctx, repo)
	if err != nil {
		return ghread.Milestone{}, notVisible("repository "+repo, err)
	}
	if m, ok := findMilestone(ms, ref); ok {
		return m, nil
	}
	return ghread.Milestone{}, fmt.Errorf("unknown goal %s in %s: no milestone has that number or title", ref, repo)
}

// findMilestone resolves ref among ms. A number is a milestone number. A
// title is a milestone's title, exactly, else ignoring case and surrounding
// spaces; only when no milestone has it as its title does a title of digits
// fall back to the milestone of that number.
func findMilestone(ms []ghread.Milestone, ref GoalRef) (ghread.Milestone, bool) {
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
			return ghread.Milestone{}, false
		}
		number = n
	}
	for _, m := range ms {
		if number > 0 && m.Number == number {
			return m, true
		}
	}
	return ghread.Milestone{}, false
}
