// Package card is countersign's own writings on GitHub as countersign reads
// them back: the task card (rendered with its signed record, found by its
// marker), the goal issue found by its marker, comments found by a match, and
// the labels the bot itself applied (the issue's events).
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

// Find looks through the issue's comments for the bot's task card.
func Find(ctx context.Context, c *github.Client, owner, name string, n int, bot string) (*github.IssueComment, error) {
	return FindComment(ctx, c, owner, name, n, nil, func(cm *github.IssueComment) bool {
		return cm.GetUser().GetLogin() == bot && templates.IsCard(cm.GetBody())
	})
}

// FindComment returns the first comment on issue n (since a time, if given)
// that match accepts.
func FindComment(ctx context.Context, c *github.Client, owner, name string, n int, since *time.Time, match func(*github.IssueComment) bool) (*github.IssueComment, error) {
	opt := &github.IssueListCommentsOptions{Since: since, ListOptions: github.ListOptions{PerPage: 100}}
	for {
		cs, resp, err := c.Issues.ListComments(ctx, owner, name, n, opt)
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

// Render is the task card's text for t, its record signed with keys.
func Render(t *rules.Task, keys *seal.Keys) (string, error) {
	marker, err := templates.CardMarker(t, func(rec []byte) string { return keys.Sign(records.TaskScope(t.Repo, t.Number), rec) })
	if err != nil {
		return "", err
	}
	return templates.Render("card", struct {
		Marker string
		Task   *rules.Task
	}{marker, t})
}

// MarkedGoalIssue is the issue bot opened in milestone m that carries a goal
// marker, or nil.
func MarkedGoalIssue(ctx context.Context, c *github.Client, owner, name string, m int, bot string) (*github.Issue, error) {
	opt := &github.IssueListByRepoOptions{Milestone: strconv.Itoa(m), State: "all", Creator: bot, ListOptions: github.ListOptions{PerPage: 100}}
	list, _, err := c.Issues.ListByRepo(ctx, owner, name, opt)
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

// BotStateLabels are the state labels bot applied to issue n, oldest first,
// consecutive repeats removed (a revert re-applies the same label).
func BotStateLabels(ctx context.Context, c *github.Client, owner, name string, n int, bot string) ([]rules.State, error) {
	return BotLabels(ctx, c, owner, name, n, bot, rules.StateFromLabel)
}

// BotLabels are the labels of one kind (those parse accepts) that bot
// applied to issue n, oldest first, consecutive repeats removed.
func BotLabels[S comparable](ctx context.Context, c *github.Client, owner, name string, n int, bot string, parse func(string) (S, bool)) ([]S, error) {
	var out []S
	opt := &github.ListOptions{PerPage: 100}
	for page := 0; page < maxEventPages; page++ {
		evs, resp, err := c.Issues.ListIssueEvents(ctx, owner, name, n, opt)
		if err != nil {
			return nil, fmt.Errorf("list events of #%d: %w", n, err)
		}
		for _, e := range evs {
			if e.GetEvent() != "labeled" || e.GetActor().GetLogin() != bot {
				continue
			}
			if s, ok := parse(e.GetLabel().GetName()); ok && (len(out) == 0 || out[len(out)-1] != s) {
				out = append(out, s)
			}
		}
		if resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	return out, nil
}
