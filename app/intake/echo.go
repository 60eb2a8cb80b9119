package intake

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/rules"
	"github.com/countersign/countersign/templates"
)

// Echoes. Every write countersign makes comes back as a webhook: its label
// on an opened issue as issues.labeled, its card as issue_comment.created,
// its check runs as check_run. Decided, each would be dropped as the bot's
// own (app/decide skips its sender), but queueing and claiming it costs as
// much as a person's event. So intake recognises them and answers 202
// without queueing: the sender is the App's bot account (the signature was
// verified, so that is GitHub's word, and no person can take a login ending
// in [bot]) and the payload is what countersign recorded writing: an owned
// label change its label record agrees with, a comment carrying its card's or
// a notice's marker, a goal issue carrying its marker, a check run or suite
// of the App itself. Anything else the bot's account sent (a label set
// countersign did not record, say one a person added in the same second, or
// an issue's close) is queued as before, and so is everything while the
// bot's login is not yet known.

// Self is what intake knows of the App itself.
type Self interface {
	AppID() int64
	// KnownBotLogin is the bot account's login, "" while unknown; it must
	// not ask GitHub.
	KnownBotLogin() string
	// LabelExpected reports whether countersign was about to add (or
	// remove) label on issue n of repo a moment ago.
	LabelExpected(repo string, n int, label string, added bool) bool
}

// Records reads the records countersign keeps (its label record of an
// issue).
type Records interface {
	Get(ctx context.Context, key string) ([]byte, error)
}

// RecogniseEchoes makes intake answer countersign's own writes coming back
// without queueing them (see above).
func (in *Intake) RecogniseEchoes(self Self, recs Records) {
	in.self, in.records = self, recs
}

// echoIssue is what intake reads of a payload's issue.
type echoIssue struct {
	Number int    `json:"number"`
	Body   string `json:"body"`
	Labels []struct {
		Name string `json:"name"`
	} `json:"labels"`
}

// echoFields are what recognising an echo reads of a payload besides its
// envelope (decoded with it: the payload is read once).
type echoFields struct {
	Label *struct {
		Name string `json:"name"`
	} `json:"label"`
	Comment *struct {
		Body string `json:"body"`
	} `json:"comment"`
	CheckRun *struct {
		App *struct {
			ID int64 `json:"id"`
		} `json:"app"`
	} `json:"check_run"`
	CheckSuite *struct {
		App *struct {
			ID int64 `json:"id"`
		} `json:"app"`
	} `json:"check_suite"`
}

// echo reports whether the delivery is countersign's own write coming back.
func (in *Intake) echo(ctx context.Context, event string, p *envelope) bool {
	if in.self == nil || p.notEcho || p.Sender == nil || p.Sender.Type != "Bot" {
		return false
	}
	bot := in.self.KnownBotLogin()
	if bot == "" || p.Sender.Login != bot {
		return false
	}
	switch event + "." + p.Action {
	case "issues.labeled", "issues.unlabeled":
		return p.Label != nil && p.Issue != nil && in.labelRecorded(ctx, p.repo(), p.Issue.Number, p.Action == "labeled", p.Label.Name, p.Issue.Labels)
	case "issues.opened", "issues.edited":
		return p.Issue != nil && templates.IsGoal(p.Issue.Body)
	case "issue_comment.created", "issue_comment.edited":
		return p.Comment != nil && (templates.IsCard(p.Comment.Body) || templates.IsNotice(p.Comment.Body))
	}
	switch event {
	case "projects_v2_item":
		// The board's items change only by countersign's mutations when its
		// bot sends them: nothing of them is to be acted on.
		return true
	case "check_run":
		return p.CheckRun != nil && p.CheckRun.App != nil && p.CheckRun.App.ID == in.self.AppID()
	case "check_suite":
		return p.CheckSuite != nil && p.CheckSuite.App != nil && p.CheckSuite.App.ID == in.self.AppID()
	}
	return false
}

// labelRecorded reports whether adding (or removing) label on issue n is
// what countersign recorded doing (its label record, or the write it noted
// just before making it), and every owned label the issue now carries is one
// it recorded setting or was adding.
func (in *Intake) labelRecorded(ctx context.Context, repo string, n int, added bool, label string, now []struct {
	Name string `json:"name"`
}) bool {
	if repo == "" || n == 0 || !rules.Owned(label) {
		return false
	}
	var view records.LabelView
	if in.records != nil {
		if b, err := in.records.Get(ctx, records.LabelViewKey(repo, n)); err == nil && json.Unmarshal(b, &view) != nil {
			view = records.LabelView{Stale: true}
		}
	}
	set := func(name string) bool {
		return !view.Stale && slices.ContainsFunc(view.Labels, func(l string) bool { return strings.EqualFold(l, name) })
	}
	if set(label) != added && !in.self.LabelExpected(repo, n, label, added) {
		return false
	}
	for _, l := range now {
		if rules.Owned(l.Name) && !set(l.Name) && !in.self.LabelExpected(repo, n, l.Name, true) {
			return false
		}
	}
	return true
}
