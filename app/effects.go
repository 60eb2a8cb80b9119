package app

import (
	"context"
	"crypto/sha256"
	"encoding/json"
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

	labels sync.Map // madeLabelKey -> struct{}: labels known to exist

	// coalesce is the window within which a goal's dashboard edits are
	// coalesced into one (0: each is written at once).
	coalesce time.Duration
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
		applyErr = x.verificationCheck(ctx, c, owner, name, e, leftover)
	case rules.EffectConfigCheck:
		applyErr = x.configCheck(ctx, c, owner, name, e, leftover)
	case rules.EffectRenameLabel:
		applyErr = x.renameLabel(ctx, c, owner, name, e)
	case rules.EffectCreateLabel:
		applyErr = x.createLabel(ctx, c, owner, name, e)
	case rules.EffectGoalIssue:
		applyErr = x.goalIssueEffect(ctx, c, owner, name, oe.Installation, e)
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
//
// It does not read the issue's labels first: what to take off is decided from
// GitHub's answer to the addition (every label the issue carries), or, with
// nothing to add, from the labels countersign recorded setting (labelViewKey).
// People's changes to owned labels come as labeled/unlabeled webhooks, which
// make that record stale (onIssue), as do repairs and a resync's drift; then
// the issue's labels are read. Applied twice (a crash before the record was
// updated), it adds what is there already and removes what is gone (a 404):
// nothing changes twice.
func (x *Executor) syncLabels(ctx context.Context, c *github.Client, owner, name string, e rules.Effect) error {
	return x.syncRecordedLabels(ctx, c, owner, name, e.Repo, e.Number, e.Labels, rules.TaskOwned, e.Remove...)
}

// syncRecordedLabels makes issue n carry exactly labels among those owned
// says countersign owns (and none of also), starting from the labels it
// recorded setting there, and records what it set.
func (x *Executor) syncRecordedLabels(ctx context.Context, c *github.Client, owner, name, repo string, n int, labels []string, owned func(string) bool, also ...string) error {
	key := labelViewKey(repo, n)
	var view labelView
	known := false
	if len(also) == 0 { // stripping a label countersign does not own: look
		var err error
		if known, err = loadRecord(ctx, x.store, key, &view); err != nil {
			return err
		}
	}
	from := labelsUnknown
	switch {
	case known && !view.Stale:
		from = labelsRecorded
	case !known && len(also) == 0:
		from = labelsNew // never synced here: most likely carries none of them
	}
	if err := x.syncOwnedLabelsFrom(ctx, c, owner, name, n, view.Labels, from, labels, owned, also...); err != nil {
		return err
	}
	if from == labelsRecorded && sameFold(view.Labels, labels) {
		return nil
	}
	b, err := json.Marshal(labelView{Labels: labels})
	if err != nil {
		return fmt.Errorf("encode label record: %w", err)
	}
	if err := x.store.Put(ctx, key, b); err != nil {
		return fmt.Errorf("remember labels: %w", err)
	}
	return nil
}

// labelView is the record of the owned labels countersign last set on an
// issue. Stale: someone changed them since (or they drifted); the next sync
// reads the issue's labels.
type labelView struct {
	Labels []string `json:"labels,omitempty"`
	Stale  bool     `json:"stale,omitempty"`
}

// staleLabelView is the labelView record that says the record is not to be
// trusted.
var staleLabelView = []byte(`{"stale":true}`)

// labelViewKey records the owned labels countersign last set on issue n.
func labelViewKey(repo string, n int) string { return "labels/" + rules.TaskKey(repo, n) }

// sameFold reports whether a and b hold the same labels, case-insensitively.
func sameFold(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, l := range a {
		if !containsFold(b, l) {
			return false
		}
	}
	return true
}

// What a label sync starts from.
type labelsFrom int

const (
	labelsUnknown  labelsFrom = iota // read the issue's labels first
	labelsRecorded                   // the labels countersign recorded setting
	labelsNew                        // probably none of the owned ones: add first
)

// syncOwnedLabelsFrom makes issue n carry exactly labels among those owned
// says countersign owns (and none of also), from what from says. What is removed
// is decided from the issue's labels as GitHub answers the addition (it
// returns every label the issue carries), or, with nothing to add, as read
// (labelsUnknown, labelsNew) or recorded.
func (x *Executor) syncOwnedLabelsFrom(ctx context.Context, c *github.Client, owner, name string, n int, recorded []string, from labelsFrom, labels []string, owned func(string) bool, also ...string) error {
	var current []string
	switch from {
	case labelsUnknown:
		var err error
		if current, err = x.issueLabels(ctx, c, owner, name, n); err != nil {
			return err
		}
	case labelsRecorded:
		current = recorded
	}
	var add []string
	for _, l := range labels {
		if !containsFold(current, l) {
			add = append(add, l)
		}
	}
	if len(add) == 0 && from == labelsNew {
		var err error
		if current, err = x.issueLabels(ctx, c, owner, name, n); err != nil {
			return err
		}
	}
	for _, l := range add {
		if err := x.ensureLabel(ctx, c, owner, name, l); err != nil {
			return err
		}
	}
	if len(add) > 0 {
		got, _, err := c.Issues.AddLabelsToIssue(ctx, owner, name, n, add)
		if err != nil {
			return fmt.Errorf("add labels %v: %w", add, err)
		}
		current = labelNames(got)
		// GitHub's answer is every label the issue carries: a wanted label
		// the record said was there but is not (taken off unheard) is added.
		var missing []string
		for _, l := range labels {
			if !containsFold(current, l) {
				missing = append(missing, l)
			}
		}
		if len(missing) > 0 {
			for _, l := range missing {
				if err := x.ensureLabel(ctx, c, owner, name, l); err != nil {
					return err
				}
			}
			got, _, err := c.Issues.AddLabelsToIssue(ctx, owner, name, n, missing)
			if err != nil {
				return fmt.Errorf("add labels %v: %w", missing, err)
			}
			current = labelNames(got)
		}
	}
	var remove []string
	for _, l := range current {
		if (owned(l) || containsFold(also, l)) && !containsFold(labels, l) {
			remove = append(remove, l)
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
// colour and description, unless it was made (or found) before: that is
// remembered in the store, so a label is created once per repository and
// never looked up again. Creating is tried at once (422: it exists).
func (x *Executor) ensureLabel(ctx context.Context, c *github.Client, owner, name, label string) error {
	key := madeLabelKey(owner+"/"+name, label)
	if _, ok := x.labels.Load(key); ok {
		return nil
	}
	if b, err := x.store.Get(ctx, key); err == nil && string(b) == labelMade {
		x.labels.Store(key, struct{}{})
		return nil
	} else if err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("read %s: %w", key, err)
	}
	spec, _ := rules.Spec(label)
	_, _, err := c.Issues.CreateLabel(ctx, owner, name, &github.Label{
		Name: github.String(label), Color: github.String(spec.Color), Description: github.String(spec.Description)})
	if isStatus(err, http.StatusUnprocessableEntity) { // it exists
		err = nil
	}
	if err != nil {
		return fmt.Errorf("ensure label %s: %w", label, err)
	}
	if err := x.store.Put(ctx, key, []byte(labelMade)); err != nil {
		return fmt.Errorf("remember label %s: %w", label, err)
	}
	x.labels.Store(key, struct{}{})
	return nil
}

// The values of a madeLabelKey record (the store has no deletion outside a
// claim's commit).
const (
	labelMade = "made"
	labelGone = "gone"
)

// madeLabelKey records that repo has label (case-insensitive, as GitHub
// compares label names).
func madeLabelKey(repo, label string) string {
	return "label-made/" + repo + "\x00" + strings.ToLower(label)
}

// forgetLabel drops what countersign knows of repo's label: it was renamed
// or deleted, so it must be created again when next needed.
func (x *Executor) forgetLabel(ctx context.Context, repo, label string) error {
	key := madeLabelKey(repo, label)
	x.labels.Delete(key)
	if err := x.store.Put(ctx, key, []byte(labelGone)); err != nil {
		return fmt.Errorf("forget label %s: %w", label, err)
	}
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
	idKey := cardIDKey(e.Repo, e.Number)
	var id int64
	if b, err := x.store.Get(ctx, idKey); err == nil {
		id, _ = strconv.ParseInt(string(b), 10, 64)
	} else if !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("read card id: %w", err)
	}

	// The card's text as countersign last wrote it (a digest): the card is
	// not read back. Saying the same again writes nothing; a new text is
	// written over the card at once (a 404: it was deleted, find or post
	// another). Applied twice after a crash, the same text is written twice.
	digestKey := cardDigestKey(e.Repo, e.Number)
	digest := fmt.Sprintf("%x", sha256.Sum256([]byte(body)))
	if id != 0 {
		last, err := x.store.Get(ctx, digestKey)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("read card digest: %w", err)
		}
		if err == nil && string(last) == digest+"@"+strconv.FormatInt(id, 10) {
			return nil
		}
		if err == nil { // known, and its text changes: edit it without reading it
			edited, _, err := c.Issues.EditComment(ctx, owner, name, id, &github.IssueComment{Body: github.String(body)})
			switch {
			case err == nil:
				return x.cardWritten(ctx, e, edited, id, digestKey, digest)
			case !isStatus(err, http.StatusNotFound):
				return fmt.Errorf("edit card: %w", err)
			}
			id = 0 // deleted: find or post another
		}
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
	return x.cardWritten(ctx, e, current, id, digestKey, digest)
}

// cardWritten remembers the card countersign wrote for e's task: its id (if
// it is not id), its address, and the digest of its text.
func (x *Executor) cardWritten(ctx context.Context, e rules.Effect, current *github.IssueComment, id int64, digestKey, digest string) error {
	idKey := cardIDKey(e.Repo, e.Number)
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
	if err := x.store.Put(ctx, digestKey, []byte(digest+"@"+strconv.FormatInt(current.GetID(), 10))); err != nil {
		return fmt.Errorf("remember card text: %w", err)
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
