// Package card is countersign's own writings on GitHub as countersign reads
// them back: the task card (rendered with its signed record, found by its
// marker), the goal issue found by its marker, comments found by a match, and
// the labels the bot itself applied (the issue's events); and, from these, a
// task's record rebuilt when the store lost it (recover.go).
package card

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/seal"
	"github.com/countersign/countersign/rules"
	"github.com/countersign/countersign/templates"
	"github.com/google/go-github/v60/github"
)

// Client is what reading countersign's writings back needs of GitHub.
type Client interface {
	ListIssuesByRepo(ctx context.Context, owner string, repo string, opts *github.IssueListByRepoOptions) ([]*github.Issue, *github.Response, error)
	ListComments(ctx context.Context, owner string, repo string, number int, opts *github.IssueListCommentsOptions) ([]*github.IssueComment, *github.Response, error)
	ListIssueEvents(ctx context.Context, owner, repo string, number int, opts *github.ListOptions) ([]*github.IssueEvent, *github.Response, error)
}

// Find looks through the issue's comments for the bot's task card.
func Find(ctx context.Context, c Client, owner, name string, n int, bot string) (*github.IssueComment, error) {
	return FindComment(ctx, c, owner, name, n, nil, func(cm *github.IssueComment) bool {
		return cm.GetUser().GetLogin() == bot && templates.IsCard(cm.GetBody())
	})
}

// FindComment returns the first comment on issue n (since a time, if given)
// that match accepts.
func FindComment(ctx context.Context, c Client, owner, name string, n int, since *time.Time, match func(*github.IssueComment) bool) (*github.IssueComment, error) {
	opt := &github.IssueListCommentsOptions{Since: since, ListOptions: github.ListOptions{PerPage: 100}}
	for {
		cs, resp, err := c.ListComments(ctx, owner, name, n, opt)
		if err != nil {
			return nil, fmt.Errorf("list comments: %w", err)
		}
		for _, cm := range cs {
			if match(cm) {
				return cm, nil
			}
		}
		if resp.NextPage == 0 {
			return nil, nil
		}
		opt.Page = resp.NextPage
	}
}

// Record is the task record a card's marker carries.
func Record(body string) ([]byte, bool) { return templates.CardRecord(body) }

// MaxText is the most a comment may hold: GitHub refuses more than 65,536
// characters (a byte count is never less than the characters it holds).
const MaxText = 65536

// Render is the task card's text for t, its record signed with keys. The card
// shows, and its record carries, t's CardView: the most of it that fits in a
// comment.
func Render(t *rules.Task, keys *seal.Keys) (string, error) {
	var body string
	for level := range rules.CardViewLevels {
		v := t.CardView(level)
		marker, err := templates.CardMarker(v, func(rec []byte) string { return keys.Sign(records.TaskScope(t.Repo, t.Number), rec) })
		if err != nil {
			return "", err
		}
		if body, err = templates.Render("card", struct {
			Marker string
			Task   *rules.Task
		}{marker, v}); err != nil {
			return "", err
		}
		if len(body) <= MaxText {
			return body, nil
		}
	}
	return "", fmt.Errorf("task card of %s: %d bytes even at its shortest, more than a comment holds", t.Key(), len(body))
}

// MarkedGoalIssue is the issue bot opened in milestone m that carries a goal
// marker, or nil.
func MarkedGoalIssue(ctx context.Context, c Client, owner, name string, m int, bot string) (*github.Issue, error) {
	opt := &github.IssueListByRepoOptions{Milestone: strconv.Itoa(m), State: "all", Creator: bot, ListOptions: github.ListOptions{PerPage: 100}}
	list, _, err := c.ListIssuesByRepo(ctx, owner, name, opt)
	if err != nil {
		return nil, fmt.Errorf("look for the goal issue: %w", err)
	}
	for _, is := range list {
		if !is.IsPullRequest() && templates.IsGoal(is.GetBody()) {
			return is, nil
		}
	}
	return nil, nil
}

// maxEventPages bounds the issue events read to rebuild one task.
const maxEventPages = 10

// Labeled is one label bot applied, with when.
type Labeled[S comparable] struct {
	Value S
	At    time.Time
}

// BotStateLabels are the state labels bot applied to issue n, oldest first,
// consecutive repeats removed (a revert re-applies the same label), with
// when each was applied.
func BotStateLabels(ctx context.Context, c Client, owner, name string, n int, bot string) ([]Labeled[rules.State], error) {
	return botLabels(ctx, c, owner, name, n, bot, rules.StateFromLabel)
}

// BotLabels are the labels of one kind (those parse accepts) that bot
// applied to issue n, oldest first, consecutive repeats removed.
func BotLabels[S comparable](ctx context.Context, c Client, owner, name string, n int, bot string, parse func(string) (S, bool)) ([]S, error) {
	ls, err := botLabels(ctx, c, owner, name, n, bot, parse)
	out := make([]S, len(ls))
	for i, l := range ls {
		out[i] = l.Value
	}
	return out, err
}

func botLabels[S comparable](ctx context.Context, c Client, owner, name string, n int, bot string, parse func(string) (S, bool)) ([]Labeled[S], error) {
	var out []Labeled[S]
	opt := &github.ListOptions{PerPage: 100}
	for page := 0; page < maxEventPages; page++ {
		evs, resp, err := c.ListIssueEvents(ctx, owner, name, n, opt)
		if err != nil {
			return nil, fmt.Errorf("list events of #%d: %w", n, err)
		}
		for _, e := range evs {
			if e.GetEvent() != "labeled" || e.GetActor().GetLogin() != bot {
				continue
			}
			if s, ok := parse(e.GetLabel().GetName()); ok && (len(out) == 0 || out[len(out)-1].Value != s) {
				out = append(out, Labeled[S]{Value: s, At: e.GetCreatedAt().Time})
			}
		}
		if resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	return out, nil
}
