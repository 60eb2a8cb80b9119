package decide

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/countersign/countersign/app/deliveries"
	"github.com/countersign/countersign/app/gh"
	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
	"github.com/countersign/countersign/templates"
	"github.com/google/go-github/v60/github"
)

// The task card is countersign's (DESIGN §5): deleted or edited by anyone
// else, it is written back at once, with its signed record and its whole
// history, and the deletion or edit is recorded in that history.

// onCardChange handles an issue comment edited or deleted: when the comment
// is countersign's card and someone else changed it, the task hears of it
// (rules.CardEdited, rules.CardDeleted: recorded in its history) and the card
// is written again. What countersign recorded writing is forgotten, so the
// card is not skipped as unchanged: a deleted card is posted anew (its new id
// recorded for later edits), an edited one written over. countersign's own
// writes come back as webhooks with countersign as sender: they change
// nothing, so nothing loops.
func (p *Decider) onCardChange(ctx context.Context, d *store.Delivery, e *github.IssueCommentEvent, log *slog.Logger) (store.Commit, error) {
	inst, repo, issue, cm := e.GetInstallation().GetID(), e.GetRepo().GetFullName(), e.GetIssue(), e.GetComment()
	if inst == 0 || repo == "" || issue.GetNumber() == 0 || issue.IsPullRequest() {
		return store.Commit{}, nil
	}
	if own, err := p.gh.Own(ctx, e.GetSender()); err != nil || own {
		return store.Commit{}, err
	}
	card, err := p.isCard(ctx, repo, issue.GetNumber(), cm, e.GetChanges().GetBody().GetFrom())
	if err != nil || !card {
		return store.Commit{}, err
	}
	ev := rules.Event{Kind: rules.CardEdited, Actor: gh.User(e.GetSender()), At: deliveries.EventTime(cm.GetUpdatedAt().Time, d), Issue: issueFacts(repo, issue)}
	if e.GetAction() == "deleted" {
		ev.Kind, ev.At = rules.CardDeleted, deliveries.EventTime(time.Time{}, d) // when it was deleted: the delivery's arrival
	}
	log.Info("task card changed by someone else: written back", "action", e.GetAction(), "comment", cm.GetID(), "by", ev.Actor.Login)
	var gone *github.IssueComment
	if ev.Kind == rules.CardDeleted {
		gone = cm // its text, signed record included, is judged as the card on GitHub would be
	}
	w, err := p.decideTaskWith(ctx, inst, d, ev, gone, log)
	if err != nil {
		return w, err
	}
	if w.Records == nil {
		w.Records = map[string][]byte{}
	}
	// Its text is not what countersign wrote: the next sync writes over it
	// without reading it first.
	w.Records[records.CardDigestKey(repo, issue.GetNumber())] = []byte("overwritten by " + ev.Actor.Login)
	if ev.Kind == rules.CardDeleted {
		w.Records[records.CardIDKey(repo, issue.GetNumber())] = nil // gone: post another
	}
	return w, nil
}

// isCard reports whether comment cm (whose text was from before an edit) is
// task n's card: countersign wrote it, and it is the card countersign
// recorded, or, with none recorded, its text (or its text before the edit)
// is a card. A comment that imitates the card's marker is someone else's,
// and nothing to countersign.
func (p *Decider) isCard(ctx context.Context, repo string, n int, cm *github.IssueComment, from string) (bool, error) {
	if cm.GetUser().GetType() != "Bot" {
		return false, nil
	}
	bot, err := p.gh.BotLogin(ctx)
	if err != nil || cm.GetUser().GetLogin() != bot {
		return false, err
	}
	b, err := p.store.Get(ctx, records.CardIDKey(repo, n))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return templates.IsCard(cm.GetBody()) || templates.IsCard(from), nil
	case err != nil:
		return false, fmt.Errorf("read card id: %w", err)
	}
	id, _ := strconv.ParseInt(string(b), 10, 64)
	return id == cm.GetID(), nil
}
