package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/countersign/countersign/app/seal"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
	"github.com/countersign/countersign/templates"
	"github.com/google/go-github/v60/github"
)

// Executor applies effects to GitHub. Each application looks before it writes,
// so applying an effect again (after a crash or a retry) changes nothing more:
// labels are set to what they must be, never toggled; the card is found by its
// marker and edited, never posted twice.
type Executor struct {
	store   store.Store
	gh      *GitHub
	log     *slog.Logger
	metrics *Metrics
	keys    *seal.Keys // signs the records kept on GitHub

	labels sync.Map // "owner/repo\x00label" -> struct{}: labels known to exist
}

// Apply applies one outbox effect. leftover says it may have been applied
// before (see Processor.drain).
func (x *Executor) Apply(ctx context.Context, oe outboxEffect, leftover bool) error {
	c, err := x.gh.Installation(oe.Installation)
	if err != nil {
		return permanent(err)
	}
	e := oe.Effect
	owner, name, ok := strings.Cut(e.Repo, "/")
	if !ok || (e.Number <= 0 && e.Kind != rules.EffectConfigCheck && e.Kind != rules.EffectRenameLabel && e.Kind != rules.EffectCreateLabel) {
		return permanent(fmt.Errorf("effect names no issue: %q#%d", e.Repo, e.Number))
	}
	var applyErr error
	switch e.Kind {
	case rules.EffectSyncLabels:
		applyErr = x.syncLabels(ctx, c, owner, name, e)
	case rules.EffectSyncCard:
		applyErr = x.syncCard(ctx, c, owner, name, e)
	case rules.EffectNotice:
		applyErr = x.notice(ctx, c, owner, name, oe, leftover)
	case rules.EffectReopen:
		_, _, applyErr = c.Issues.Edit(ctx, owner, name, e.Number, &github.IssueRequest{State: github.String("open")})
	case rules.EffectAssign:
		_, _, applyErr = c.Issues.AddAssignees(ctx, owner, name, e.Number, e.Users)
	case rules.EffectCheck:
		applyErr = x.verificationCheck(ctx, c, owner, name, e)
	case rules.EffectConfigCheck:
		applyErr = x.configCheck(ctx, c, owner, name, e)
	case rules.EffectRenameLabel:
		applyErr = x.renameLabel(ctx, c, owner, name, e)
	case rules.EffectCreateLabel:
		applyErr = x.createLabel(ctx, c, owner, name, e)
	case rules.EffectGoalIssue:
		applyErr = x.goalIssueEffect(ctx, c, owner, name, e)
	case rules.EffectGoalNotice:
		applyErr = x.goalNotice(ctx, c, owner, name, oe, leftover)
	case rules.EffectCloseMilestone, rules.EffectReopenMilestone:
		applyErr = x.milestoneState(ctx, c, owner, name, e)
	default:
		return permanent(fmt.Errorf("unknown effect %q", e.Kind))
	}
	if applyErr == nil {
		x.log.Debug("effect applied", "effect", e.Kind, "repo", e.Repo, "number", e.Number, "delivery", oe.Delivery)
	}
	return classify(applyErr)
}

// syncLabels makes the issue carry exactly e.Labels among the labels
// countersign owns; other labels are left alone.
func (x *Executor) syncLabels(ctx context.Context, c *github.Client, owner, name string, e rules.Effect) error {
	return x.syncOwnedLabels(ctx, c, owner, name, e.Number, e.Labels, rules.TaskOwned, e.Remove...)
}

// syncOwnedLabels makes issue n carry exactly labels among those owned says
// countersign owns.
func (x *Executor) syncOwnedLabels(ctx context.Context, c *github.Client, owner, name string, n int, labels []string, owned func(string) bool, also ...string) error {
	current, err := x.issueLabels(ctx, c, owner, name, n)
	if err != nil {
		return err
	}
	var add, remove []string
	for _, l := range labels {
		if !containsFold(current, l) {
			add = append(add, l)
		}
	}
	for _, l := range current {
		if (owned(l) || containsFold(also, l)) && !containsFold(labels, l) {
			remove = append(remove, l)
		}
	}
	for _, l := range add {
		if err := x.ensureLabel(ctx, c, owner, name, l); err != nil {
			return err
		}
	}
	if len(add) > 0 {
		if _, _, err := c.Issues.AddLabelsToIssue(ctx, owner, name, n, add); err != nil {
			return fmt.Errorf("add labels %v: %w", add, err)
		}
	}
	for _, l := range remove {
		if _, err := c.Issues.RemoveLabelForIssue(ctx, owner, name, n, url.PathEscape(l)); err != nil && !isStatus(err, http.StatusNotFound) {
			return fmt.Errorf("remove label %s: %w", l, err)
		}
	}
	return nil
}

// containsFold reports whether list holds s, case-insensitively (as GitHub
// compares label names).
func containsFold(list []string, s string) bool {
	return slices.ContainsFunc(list, func(l string) bool { return strings.EqualFold(l, s) })
}

func (x *Executor) issueLabels(ctx context.Context, c *github.Client, owner, name string, n int) ([]string, error) {
	var out []string
	opt := &github.ListOptions{PerPage: 100}
	for {
		ls, resp, err := c.Issues.ListLabelsByIssue(ctx, owner, name, n, opt)
		if err != nil {
			return nil, fmt.Errorf("list labels: %w", err)
		}
		out = append(out, labelNames(ls)...)
		if resp.NextPage == 0 {
			return out, nil
		}
		opt.Page = resp.NextPage
	}
}

// ensureLabel creates one of countersign's labels in the repository, with its
// colour and description, unless it exists.
func (x *Executor) ensureLabel(ctx context.Context, c *github.Client, owner, name, label string) error {
	key := owner + "/" + name + "\x00" + label
	if _, ok := x.labels.Load(key); ok {
		return nil
	}
	_, _, err := c.Issues.GetLabel(ctx, owner, name, url.PathEscape(label))
	if isStatus(err, http.StatusNotFound) {
		spec, _ := rules.Spec(label)
		_, _, err = c.Issues.CreateLabel(ctx, owner, name, &github.Label{
			Name: github.String(label), Color: github.String(spec.Color), Description: github.String(spec.Description)})
		if isStatus(err, http.StatusUnprocessableEntity) { // created meanwhile
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("ensure label %s: %w", label, err)
	}
	x.labels.Store(key, struct{}{})
	return nil
}

// syncCard makes the task card show the task's current record.
func (x *Executor) syncCard(ctx context.Context, c *github.Client, owner, name string, e rules.Effect) error {
	task, err := loadTask(ctx, x.store, e.Repo, e.Number)
	if err != nil || task == nil {
		return err // no record: nothing to show
	}
	body, err := renderCard(task, x.keys)
	if err != nil {
		return permanent(err)
	}
	bot, err := x.gh.BotLogin(ctx)
	if err != nil {
		return err
	}
	idKey := "card/" + rules.TaskKey(e.Repo, e.Number)
	var id int64
	if b, err := x.store.Get(ctx, idKey); err == nil {
		id, _ = strconv.ParseInt(string(b), 10, 64)
	} else if !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("read card id: %w", err)
	}

	var current *github.IssueComment
	if id != 0 {
		current, _, err = c.Issues.GetComment(ctx, owner, name, id)
		if isStatus(err, http.StatusNotFound) {
			current, err = nil, nil // deleted: find or post another
		} else if err != nil {
			return fmt.Errorf("get card: %w", err)
		}
	}
	if current == nil {
		if current, err = findCard(ctx, c, owner, name, e.Number, bot); err != nil {
			return err
		}
	}
	switch {
	case current == nil:
		current, _, err = c.Issues.CreateComment(ctx, owner, name, e.Number, &github.IssueComment{Body: github.String(body)})
		if err != nil {
			return fmt.Errorf("post card: %w", err)
		}
	case current.GetBody() != body:
		if _, _, err = c.Issues.EditComment(ctx, owner, name, current.GetID(), &github.IssueComment{Body: github.String(body)}); err != nil {
			return fmt.Errorf("edit card: %w", err)
		}
	}
	if current.GetID() != id {
		if err := x.store.Put(ctx, idKey, []byte(strconv.FormatInt(current.GetID(), 10))); err != nil {
			return fmt.Errorf("remember card id: %w", err)
		}
	}
	if u := current.GetHTMLURL(); u != "" {
		if known, _ := x.cardURL(ctx, e.Repo, e.Number); known != u {
			if err := x.store.Put(ctx, cardURLKey(e.Repo, e.Number), []byte(u)); err != nil {
				return fmt.Errorf("remember card url: %w", err)
			}
		}
	}
	return nil
}

func cardURLKey(repo string, n int) string { return "card-url/" + rules.TaskKey(repo, n) }

// cardURL is the web address of task n's card, as GitHub gave it ("" if the
// card was not written yet).
func (x *Executor) cardURL(ctx context.Context, repo string, n int) (string, error) {
	b, err := x.store.Get(ctx, cardURLKey(repo, n))
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	return string(b), err
}

// findCard looks through the issue's comments for the bot's task card.
func findCard(ctx context.Context, c *github.Client, owner, name string, n int, bot string) (*github.IssueComment, error) {
	return findComment(ctx, c, owner, name, n, nil, func(cm *github.IssueComment) bool {
		return cm.GetUser().GetLogin() == bot && templates.IsCard(cm.GetBody())
	})
}

// findComment returns the first comment on issue n (since a time, if given)
// that match accepts.
func findComment(ctx context.Context, c *github.Client, owner, name string, n int, since *time.Time, match func(*github.IssueComment) bool) (*github.IssueComment, error) {
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

// cardRecord is the task record a card's marker carries.
func cardRecord(body string) ([]byte, bool) { return templates.CardRecord(body) }

// renderCard is the task card's text for t, its record signed with keys.
func renderCard(t *rules.Task, keys *seal.Keys) (string, error) {
	marker, err := templates.CardMarker(t, func(rec []byte) string { return keys.Sign(taskScope(t.Repo, t.Number), rec) })
	if err != nil {
		return "", err
	}
	return templates.Render("card", struct {
		Marker string
		Task   *rules.Task
	}{marker, t})
}

func isStatus(err error, code int) bool {
	var er *github.ErrorResponse
	return errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == code
}

// classify marks the GitHub answers that retrying cannot change as permanent:
// the thing is gone (404, 410) or the request is invalid (422), or the App lacks
// a permission (403 that is not rate limiting).
func classify(err error) error {
	if err == nil || isPermanent(err) {
		return err
	}
	var rl *github.RateLimitError
	var abuse *github.AbuseRateLimitError
	if errors.As(err, &rl) || errors.As(err, &abuse) {
		return err
	}
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil && !rateLimited(er.Response) {
		switch er.Response.StatusCode {
		case http.StatusNotFound, http.StatusGone, http.StatusUnprocessableEntity, http.StatusForbidden:
			return permanent(err)
		}
	}
	// No installation token: the App was uninstalled (404) or suspended (403).
	// A 401 (wrong key or app id) is the operator's to fix, so it is retried.
	var he *ghinstallation.HTTPError
	if errors.As(err, &he) && he.Response != nil && !rateLimited(he.Response) {
		switch he.Response.StatusCode {
		case http.StatusNotFound, http.StatusForbidden:
			return permanent(err)
		}
	}
	return err
}
