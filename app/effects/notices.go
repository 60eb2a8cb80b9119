package effects

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/app/card"
	"github.com/countersign/countersign/app/fault"
	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/rules"
	"github.com/countersign/countersign/templates"
	"github.com/google/go-github/v60/github"
)

// notice posts a comment that needs someone's attention. Its hidden marker
// carries the effect's unique key: a leftover notice (maybe posted before a
// crash) is looked for first, so it is never posted twice.
func (x *Executor) notice(ctx context.Context, c Client, owner, name string, oe records.OutboxEffect, leftover bool) error {
	e := oe.Effect
	if e.Notice == nil {
		return fault.Permanent(fmt.Errorf("notice effect without a notice"))
	}
	marker := templates.NoticeMarker(oe.Key)
	if leftover {
		bot, err := x.gh.BotLogin(ctx)
		if err != nil {
			return err
		}
		since := oe.At.Add(-time.Minute)
		found, err := card.FindComment(ctx, c, owner, name, e.Number, &since, func(cm *github.IssueComment) bool {
			return cm.GetUser().GetLogin() == bot && strings.Contains(cm.GetBody(), marker)
		})
		if err != nil || found != nil {
			return err
		}
	}
	if held, err := x.replyHeld(ctx, oe); err != nil || held {
		return err
	}
	data := noticeData{Notice: e.Notice, Repo: e.Repo, Where: e.Number}
	if e.Notice.Kind == rules.NoticeStatus {
		task, err := records.LoadTask(ctx, x.store, e.Repo, e.Notice.Task)
		if err != nil {
			return err
		}
		if task != nil {
			data.Record, data.Missing = task, rules.Missing(task)
		}
	}
	body, err := templates.Render("notice-"+string(e.Notice.Kind), data)
	if err != nil {
		return fault.Permanent(err)
	}
	_, _, err = c.CreateComment(ctx, owner, name, e.Number, &github.IssueComment{Body: github.String(templates.FitComment(body, "\n"+marker))})
	if err != nil {
		return fmt.Errorf("post %s notice: %w", e.Notice.Kind, err)
	}
	return nil
}

// Replies to one person are bounded so that nobody can make countersign spam
// (DESIGN §5): at most maxReplies replies to one person on one issue or pull
// request within replyWindow; past that a reply is logged and counted
// (countersign_replies_held_total), not posted. Replies are the notices a
// person's own action calls for; what needs someone else's attention (a
// rejection, a failure, an escalation, a regression) is always posted. A
// pull request's refused links are a reply to its author like any other: its
// description edited back and forth must not make countersign reply each time.
const (
	maxReplies  = 3
	replyWindow = time.Hour
)

// replyKinds are the notices that answer their actor.
var replyKinds = map[rules.NoticeKind]bool{
	rules.NoticeRefused: true, rules.NoticeIgnored: true, rules.NoticeStatus: true,
	rules.NoticeContradiction: true, rules.NoticeReopened: true, rules.NoticeHelp: true,
	rules.NoticeGoalRefused: true, rules.NoticeGoalStatus: true,
}

// replyHeld counts reply oe against its person's share and reports whether it
// is over it. A reply is counted once, however often posting it is tried (a
// GitHub outage must not use up someone's share): a retry of a reply that was
// allowed is allowed.
func (x *Executor) replyHeld(ctx context.Context, oe records.OutboxEffect) (bool, error) {
	e := oe.Effect
	n := e.Notice
	if !replyKinds[n.Kind] || n.Actor == "" {
		return false, nil
	}
	tries, err := x.store.Count(ctx, "reply-tries/"+oe.Key, replyWindow)
	if err != nil {
		return false, fmt.Errorf("count reply tries: %w", err)
	}
	if tries > 1 {
		return false, nil // held replies are dropped, never tried again: this one was allowed
	}
	who := strings.ToLower(n.Actor)
	if n.ActorID != 0 {
		who = strconv.FormatInt(n.ActorID, 10)
	}
	count, err := x.store.Count(ctx, fmt.Sprintf("replies/%s#%d/%s", e.Repo, e.Number, who), replyWindow)
	if err != nil {
		return false, fmt.Errorf("count replies: %w", err)
	}
	if count <= maxReplies {
		return false, nil
	}
	x.log.Info("reply held: its person had their share", "kind", n.Kind, "repo", e.Repo, "number", e.Number,
		"actor", n.Actor, "replies", count, "window", replyWindow.String())
	if x.metrics != nil {
		x.metrics.RepliesHeld.WithLabelValues(string(n.Kind)).Inc()
	}
	return true, nil
}

// noticeData is what notice templates render.
type noticeData struct {
	*rules.Notice
	Repo    string
	Where   int         // the issue or pull request it is posted on
	Record  *rules.Task // status: the task as it is
	Missing string      // status: what the task needs next
}
