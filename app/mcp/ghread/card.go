package ghread

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/countersign/countersign/rules"
	"github.com/countersign/countersign/templates"
)

// GoalIssues splits a milestone's issues into countersign's goal issue (nil
// if it has none yet) and the tasks. The goal issue is the one countersign's
// bot opened, labeled goal, whose body is its dashboard: a `goal` label on
// anyone else's issue makes it nothing.
func GoalIssues(ctx context.Context, gh GitHub, bot Bot, repo string, m int) (*Issue, []*Issue, error) {
	list, err := gh.Issues(ctx, repo, m, "")
	if err != nil {
		return nil, nil, err
	}
	var goal *Issue
	var tasks []*Issue
	for _, is := range list {
		if goal == nil && bot.Is(is.Author, is.AuthorBot) && hasLabel(is.Labels, rules.LabelGoal) && templates.IsGoal(is.Body) {
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

// Card is countersign's task card on issue n and the record it carries, when
// they can be believed: the comment is the bot's own and nobody but the bot
// ever left it edited (GitHub's GraphQL says who last edited it). Otherwise
// the record is nil and why says why the details are unavailable. The
// record's signature is the server's to check (its key never leaves it): the
// author and editor are what make the card countersign's here.
func Card(ctx context.Context, gh GitHub, bot Bot, repo string, n int) (rec *rules.Task, cm *Comment, why string, err error) {
	comments, err := gh.CommentsSince(ctx, repo, n, time.Time{})
	if err != nil {
		return nil, nil, "", err
	}
	for _, x := range comments {
		if bot.Is(x.Author, x.Bot) && templates.IsCard(x.Body) {
			cm = x
			break
		}
	}
	if cm == nil {
		return nil, nil, "countersign has not written a task card on it yet", nil
	}
	return trustCard(ctx, gh, bot, repo, n, cm)
}

// trustCard checks who last edited card cm and reads its record.
func trustCard(ctx context.Context, gh GitHub, bot Bot, repo string, n int, cm *Comment) (*rules.Task, *Comment, string, error) {
	editors, err := gh.Editors(ctx, repo, n)
	if err != nil {
		return nil, cm, "", err
	}
	if e, ok := editors[cm.ID]; ok && !bot.isActor(e) {
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
