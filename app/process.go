package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/countersign/countersign/app/reconcile"
	"github.com/countersign/countersign/app/seal"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
	"github.com/google/go-github/v60/github"
)

// Processor turns one claimed delivery into a decision (rules), records it with
// its effects in one atomic commit, then applies the effects to GitHub.
type Processor struct {
	store store.Store
	gh    *GitHub
	exec  *Executor
	keys  *seal.Keys // checks the records read back from GitHub
	log   *slog.Logger
	recon *reconcile.Metrics
	// tickets: the write turns reserved for keys waiting for them (priority.go)
	tickets tickets
}

// outboxEffect is an effect as kept in the store's outbox until applied.
type outboxEffect struct {
	Installation int64        `json:"installation"`
	Delivery     string       `json:"delivery"` // the delivery that caused it, for logs
	Key          string       `json:"key"`      // unique: marks a notice so a retry finds it
	At           time.Time    `json:"at"`       // when it was decided
	Effect       rules.Effect `json:"effect"`
	// Background: no person waits for it (see deliveryClass); its writes go
	// after interactive ones.
	Background bool `json:"background,omitempty"`
}

// Handle processes claim c. Effects left over from an earlier attempt are applied
// first, so a task's effects always go out in order. Once the delivery is
// committed c.Delivery is set to nil: what may remain are its effects.
func (p *Processor) Handle(ctx context.Context, c *store.Claim, log *slog.Logger) error {
	if err := p.drain(ctx, c, log, true); err != nil {
		return outboxError{err} // not the queued delivery's fault
	}
	if c.Delivery == nil {
		return nil
	}
	w, err := p.decide(ctx, c.Delivery, log)
	if installationGone(err) {
		log.Warn("delivery skipped: the App is no longer installed there", "error", err)
		w, err = store.Commit{}, nil
	}
	if err != nil {
		return err
	}
	if err := p.store.Commit(ctx, c, w); err != nil {
		return fmt.Errorf("commit decision: %w", err)
	}
	c.Delivery = nil
	if err := p.drain(ctx, c, log, false); err != nil {
		return outboxError{err}
	}
	return nil
}

// outboxError is a failure to apply effects already committed: it is retried
// with backoff and never counted against (or dead-letters) a queued delivery.
type outboxError struct{ err error }

func (e outboxError) Error() string { return e.err.Error() }
func (e outboxError) Unwrap() error { return e.err }

// drain applies the claimed key's outbox, oldest first, popping each effect once
// applied. leftover says the effects may have been tried before (a crash or a
// failure): effects that cannot be made idempotent by looking (a new comment)
// then look for their earlier application first. An effect GitHub refuses for
// good (the issue is gone, the App lacks a permission) is logged and dropped;
// any other failure stops the drain.
func (p *Processor) drain(ctx context.Context, c *store.Claim, log *slog.Logger, leftover bool) error {
	raws, err := p.store.Outbox(ctx, c)
	if err != nil {
		return fmt.Errorf("read outbox: %w", err)
	}
	effects := make([]outboxEffect, len(raws))
	for i, raw := range raws {
		if err := json.Unmarshal(raw, &effects[i]); err != nil {
			log.Error("dropping an unreadable outbox effect", "error", err)
			effects[i] = outboxEffect{}
		}
	}
	for start := 0; start < len(effects); {
		end := start + 1 // one decision's effects go together
		for end < len(effects) && effects[end].Delivery == effects[start].Delivery {
			end++
		}
		group := effects[start:end]
		gctx, done := ctx, func() {}
		if group[0].Installation != 0 {
			if gctx, done, err = p.groupTurns(ctx, c.Key, group); err != nil {
				return err
			}
		}
		for _, oe := range group {
			if oe.Installation != 0 { // else unreadable: dropped
				if err := p.exec.Apply(gctx, oe, leftover); err != nil {
					if !isPermanent(err) {
						done()
						return fmt.Errorf("apply %s on %s#%d: %w", oe.Effect.Kind, oe.Effect.Repo, oe.Effect.Number, err)
					}
					log.Error("effect refused by GitHub; dropped", "effect", oe.Effect.Kind, "error", err)
				}
			}
			if err := p.store.PopEffect(ctx, c); err != nil {
				done()
				return fmt.Errorf("pop applied effect: %w", err)
			}
		}
		done()
		start = end
	}
	return nil
}

// Internal events: a pull request's event fanned out to a task it closes, and
// a task's change fanned back to the pull requests whose check depends on it.
const (
	taskEvent  = "countersign.task"
	checkEvent = "countersign.check"
)

// taskDelivery is the payload of a taskEvent delivery.
type taskDelivery struct {
	Installation int64       `json:"installation"`
	Event        rules.Event `json:"event"`
}

// checkDelivery is the payload of a checkEvent delivery.
type checkDelivery struct {
	Installation int64  `json:"installation"`
	Repo         string `json:"repo"`
	Number       int    `json:"number"`
	// Interactive: the refresh follows a person's action (priority.go).
	Interactive bool `json:"interactive,omitempty"`
}

// handledActions are the event.action pairs countersign decides on.
var handledActions = map[string]bool{
	"issues.opened": true, "issues.edited": true, "issues.assigned": true, "issues.unassigned": true,
	"issues.closed": true, "issues.reopened": true, "issues.labeled": true, "issues.unlabeled": true,
	"issues.milestoned":     true,
	"issue_comment.created": true,
	"pull_request.opened":   true, "pull_request.reopened": true, "pull_request.edited": true,
	"pull_request.ready_for_review": true, "pull_request.converted_to_draft": true,
	"pull_request.synchronize": true, "pull_request.closed": true,
	"pull_request_review.submitted": true, "pull_request_review.dismissed": true,
	"push.":                 true,
	"issues.demilestoned":   true,
	"milestone.created":     true,
	"milestone.edited":      true,
	"milestone.closed":      true,
	"milestone.opened":      true,
	goalEvent + ".":         true,
	"check_run.created":     true,
	"check_run.completed":   true,
	"check_suite.completed": true,
	"status.":               true,
	taskEvent + ".":         true,
	checkEvent + ".":        true,
	regateEvent + ".":       true,
	dashboardEvent + ".":    true,
	"label.edited":          true,
	"label.deleted":         true,
	ciEvent + ".":           true,
	// reconciliation (resync.go)
	"installation.created": true, "installation.new_permissions_accepted": true, "installation.unsuspend": true,
	"installation_repositories.added": true,
	reconcile.ResyncEvent + ".":       true, reconcile.RepairEvent + ".": true,
}

// decide asks rules what the delivery means. It reads GitHub and the store but
// writes nothing. Only the events and actions rules acts on are parsed; the rest
// are done with at once.
func (p *Processor) decide(ctx context.Context, d *store.Delivery, log *slog.Logger) (store.Commit, error) {
	action := d.Action // read at intake; unknown for derived and older deliveries
	if action == "" {
		var head struct {
			Action string `json:"action"`
		}
		if err := json.Unmarshal(d.Payload, &head); err != nil {
			return store.Commit{}, permanent(fmt.Errorf("parse %s payload: %w", d.Event, err))
		}
		action = head.Action
	}
	if !handledActions[d.Event+"."+action] {
		return store.Commit{}, nil
	}
	switch d.Event {
	case taskEvent:
		var td taskDelivery
		if err := json.Unmarshal(d.Payload, &td); err != nil {
			return store.Commit{}, permanent(fmt.Errorf("parse %s: %w", d.Event, err))
		}
		return p.decideTask(ctx, td.Installation, d, td.Event, log)
	case checkEvent:
		var cd checkDelivery
		if err := json.Unmarshal(d.Payload, &cd); err != nil {
			return store.Commit{}, permanent(fmt.Errorf("parse %s: %w", d.Event, err))
		}
		return p.decideCheck(ctx, cd, d)
	case goalEvent:
		var gd goalDelivery
		if err := json.Unmarshal(d.Payload, &gd); err != nil {
			return store.Commit{}, permanent(fmt.Errorf("parse %s: %w", d.Event, err))
		}
		return p.decideGoal(ctx, gd, d, log)
	case ciEvent:
		var cd ciDelivery
		if err := json.Unmarshal(d.Payload, &cd); err != nil {
			return store.Commit{}, permanent(fmt.Errorf("parse %s: %w", d.Event, err))
		}
		return p.decideCI(ctx, cd, d, log)
	case reconcile.ResyncEvent, reconcile.RepairEvent:
		return p.decideReconcile(ctx, d, log)
	case regateEvent:
		var rd regateDelivery
		if err := json.Unmarshal(d.Payload, &rd); err != nil {
			return store.Commit{}, permanent(fmt.Errorf("parse %s: %w", d.Event, err))
		}
		return p.decideRegate(ctx, rd, d, log)
	case dashboardEvent:
		return p.decideDashboard(ctx, d, log)
	case "label":
		return p.onLabel(ctx, d, log)
	}
	raw, err := github.ParseWebHook(d.Event, d.Payload)
	if err != nil {
		return store.Commit{}, permanent(fmt.Errorf("parse %s payload: %w", d.Event, err))
	}
	switch e := raw.(type) {
	case *github.IssuesEvent:
		return p.onIssue(ctx, d, e, log)
	case *github.IssueCommentEvent:
		return p.onComment(ctx, d, e, log)
	case *github.PullRequestEvent:
		return p.onPull(ctx, d, e, log)
	case *github.PullRequestReviewEvent:
		return p.onReview(ctx, d, e, log)
	case *github.PushEvent:
		return p.onPush(ctx, d, e, log)
	case *github.MilestoneEvent:
		return p.onMilestone(ctx, d, e)
	case *github.CheckRunEvent:
		return p.onCheckRun(ctx, d, e)
	case *github.CheckSuiteEvent:
		return p.onCheckSuite(ctx, d, e)
	case *github.StatusEvent:
		return p.onStatus(ctx, d, e)
	case *github.InstallationEvent, *github.InstallationRepositoriesEvent:
		return p.onInstallation(ctx, d, e, log)
	}
	return store.Commit{}, nil
}

// installationGone reports whether err is GitHub refusing an installation
// token: the App was uninstalled (404) or suspended (403). Nothing can be done
// for such an installation's deliveries.
func installationGone(err error) bool {
	var he *ghinstallation.HTTPError
	return errors.As(err, &he) && he.Response != nil &&
		(he.Response.StatusCode == http.StatusNotFound || he.Response.StatusCode == http.StatusForbidden) &&
		!rateLimited(he.Response)
}

// own reports whether sender is this App: its writes come back as webhooks and
// must not be acted on again.
func (p *Processor) own(ctx context.Context, sender *github.User) (bool, error) {
	if sender.GetType() != "Bot" {
		return false, nil
	}
	bot, err := p.gh.BotLogin(ctx)
	if err != nil {
		return false, err
	}
	return sender.GetLogin() == bot, nil
}

// decideTask decides ev for its task, looking up the facts the event needs.
func (p *Processor) decideTask(ctx context.Context, inst int64, d *store.Delivery, ev rules.Event, log *slog.Logger) (store.Commit, error) {
	repo, n := ev.Issue.Repo, ev.Issue.Number
	c, err := p.gh.Installation(inst)
	if err != nil {
		return store.Commit{}, permanent(err)
	}
	task, err := loadTask(ctx, p.store, repo, n)
	if err != nil {
		return store.Commit{}, err
	}
	cfg, err := p.config(ctx, c, repo, log)
	if err != nil {
		return store.Commit{}, err
	}
	rebuilt := false
	if task == nil {
		// A goal issue (any issue this App opened) is never a task, whatever
		// event names it: a pull request's "Fixes #N" included.
		var m int
		if goal, err := loadRecord(ctx, p.store, goalIssueKey(repo, n), &m); err != nil || goal {
			return store.Commit{}, err
		}
		if task, rebuilt, err = p.untracked(ctx, c, &ev, log); err != nil || (task == nil && ev.Issue.Title == "" && ev.Issue.Author.IsZero()) {
			return store.Commit{}, err // gone, or a pull request: nothing to track
		}
		if task == nil {
			if bot, err := p.gh.BotLogin(ctx); err != nil || ev.Issue.Author.Login == bot {
				return store.Commit{}, err
			}
		}
	}
	facts, err := p.facts(ctx, newDirectory(c, repo, cfg), task, ev)
	if err != nil {
		return store.Commit{}, err
	}
	facts.Config = cfg
	dec := rules.DecideTask(task, ev, facts)
	if rebuilt {
		keepInStep(&dec, task, ev)
	}
	if dec.Task != nil {
		log.Debug("task decided", "task", dec.Task.Key(), "state", dec.Task.State, "effects", len(dec.Effects))
	}
	w, err := p.commitFor(inst, d, dec.Task, dec.Effects)
	if err != nil {
		return w, err
	}
	if dec.Task != nil {
		w.Enqueue = append(w.Enqueue, goalNotes(inst, d, dec.Task, dec.Goals, ev)...)
		if ev.Kind == rules.IssueAssigned && len(dec.Task.Assignees) > 0 {
			regates, err := p.regates(ctx, inst, d, repo, n)
			if err != nil {
				return store.Commit{}, err
			}
			w.Enqueue = append(w.Enqueue, regates...)
		}
	}
	for _, pr := range dec.Refresh {
		w.Enqueue = append(w.Enqueue, derived(fmt.Sprintf("%s/check/%d", d.ID, pr), checkEvent, rules.TaskKey(repo, pr),
			checkDelivery{Installation: inst, Repo: repo, Number: pr, Interactive: !background(d)}))
	}
	return w, nil
}

// facts looks up what the event's decision depends on, and no more: the
// actor's standing for commands, reviews and closes; the team size for
// /verify; the leads for /reject and for a pull request's event that may fail
// an attempt (either may escalate); the pilots of agents involved.
func (p *Processor) facts(ctx context.Context, dir *directory, task *rules.Task, ev rules.Event) (rules.Facts, error) {
	var f rules.Facts
	var err error
	if f.Pilots, err = p.pilots(ctx, dir, task, ev); err != nil {
		return f, err
	}
	if f.Leads == nil && mayEscalateByFailure(dir.cfg, task, ev) {
		if f.Leads, err = dir.leads(ctx); err != nil {
			return f, err
		}
		if f.Leads == nil {
			f.Leads = []string{}
		}
	}
	var who rules.User
	switch ev.Kind {
	case rules.Commented:
		who = ev.Actor
	case rules.PRReviewed:
		if ev.Review != nil && (ev.Review.State == "approved" || ev.Review.State == "changes_requested") {
			who = ev.Review.Reviewer
		}
	case rules.IssueClosed:
		if ev.Reason == "not_planned" && (task == nil || task.State != rules.Verified) {
			who = ev.Actor
		}
	}
	if who.Login == "" {
		return f, nil
	}
	if f.Actor, err = dir.person(ctx, who); err != nil {
		return f, err
	}
	if ev.Kind == rules.PRReviewed || slices.ContainsFunc(ev.Commands, func(c rules.Command) bool { return c.Name == rules.CmdApprove }) {
		if f.Actor.Critics, err = dir.critics(ctx, who); err != nil {
			return f, err
		}
	}
	for _, cmd := range ev.Commands {
		switch {
		case (cmd.Name == rules.CmdVerify || cmd.Name == rules.CmdReject) && f.TeamSize == 0 && task != nil && task.State == rules.Completed:
			if f.TeamSize, err = dir.teamSize(ctx); err != nil {
				return f, err
			}
		}
		switch {
		case cmd.Name == rules.CmdReject && f.Leads == nil && task != nil && task.State == rules.Completed:
			if f.Leads, err = dir.leads(ctx); err != nil {
				return f, err
			}
			if f.Leads == nil {
				f.Leads = []string{}
			}
		}
	}
	return f, nil
}

// pilots resolves the pilots (agents: of the configuration) that the event
// may call on to accounts with ids, so that a pilot who renames stays the
// pilot. Only an event that involves a configured agent's account asks; the
// answers are cached for the process (GET /users/{login}).
func (p *Processor) pilots(ctx context.Context, dir *directory, task *rules.Task, ev rules.Event) (map[string]rules.User, error) {
	if len(dir.cfg.Agents) == 0 {
		return nil, nil
	}
	var involved []rules.User
	involved = append(involved, ev.Actor)
	involved = append(involved, ev.Issue.Assignees...)
	if ev.PR != nil {
		involved = append(involved, ev.PR.Author)
		for _, m := range ev.PR.Committers {
			involved = append(involved, m.User())
		}
	}
	if ev.Review != nil {
		involved = append(involved, ev.Review.Reviewer)
	}
	out := map[string]rules.User{}
	for _, u := range involved {
		pilot, ok := dir.cfg.Pilot(u.Login)
		if !ok {
			continue
		}
		key := strings.ToLower(pilot)
		if _, done := out[key]; done {
			continue
		}
		if pin := dir.cfg.Pins[key]; pin != 0 {
			out[key] = rules.User{ID: pin, Login: pilot} // the account agents: named, whatever holds the login now
			continue
		}
		acc, err := p.gh.Account(ctx, dir.c, pilot)
		if err != nil {
			return nil, err
		}
		out[key] = acc
	}
	return out, nil
}

// mayEscalateByFailure reports whether ev may fail task's attempt once more
// and so escalate it for failed attempts: the leads are then looked up, to be
// @-mentioned.
func mayEscalateByFailure(cfg rules.Config, task *rules.Task, ev rules.Event) bool {
	return task != nil && !task.Escalated && ev.PR != nil &&
		(task.State == rules.Review || task.State == rules.Completed) &&
		task.FailedAttempts+1 >= cfg.Escalation.FailedAttempts
}

// untracked prepares an event on an issue countersign has no record of. A
// record lost with the store is rebuilt from the task card (its marker carries
// the record, signed) and GitHub's history (see recoverTask). An event fanned
// out from a pull request knows only the issue's number: the issue is read,
// and a pull request or a missing issue is skipped.
func (p *Processor) untracked(ctx context.Context, c *github.Client, ev *rules.Event, log *slog.Logger) (*rules.Task, bool, error) {
	owner, name, n := splitRepo(ev.Issue.Repo), repoName(ev.Issue.Repo), ev.Issue.Number
	if ev.Issue.Title == "" && ev.Issue.Author.IsZero() {
		is, _, err := c.Issues.Get(ctx, owner, name, n)
		if isStatus(err, 404) || isStatus(err, 410) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("read issue #%d: %w", n, err)
		}
		if is.IsPullRequest() {
			return nil, false, nil
		}
		ev.Issue = issueFacts(ev.Issue.Repo, is)
	}
	for _, l := range ev.Issue.Labels {
		if _, ok := rules.StateFromLabel(l); ok {
			return p.recoverTask(ctx, c, ev.Issue, log)
		}
	}
	return nil, false, nil
}

// commitFor is the store commit that records task (nil: unchanged) and effects.
func (p *Processor) commitFor(inst int64, d *store.Delivery, task *rules.Task, effects []rules.Effect) (store.Commit, error) {
	var w store.Commit
	if task != nil {
		b, err := json.Marshal(task)
		if err != nil {
			return w, fmt.Errorf("encode task: %w", err)
		}
		w.Records = map[string][]byte{taskRecordKey(task.Repo, task.Number): b}
	}
	now := time.Now().UTC()
	bg := background(d)
	for i, e := range effects {
		b, err := json.Marshal(outboxEffect{Installation: inst, Delivery: d.ID, Key: fmt.Sprintf("%s/%d", d.ID, i), At: now, Effect: e,
			Background: bg})
		if err != nil {
			return w, fmt.Errorf("encode effect: %w", err)
		}
		w.Effects = append(w.Effects, b)
	}
	return w, nil
}

// derived is an internal delivery.
func derived(id, event, key string, payload any) store.Delivery {
	b, _ := json.Marshal(payload) // plain structs of strings and numbers: cannot fail
	return store.Delivery{ID: id, Event: event, Key: key, Payload: b, ReceivedAt: time.Now().UTC()}
}

func taskRecordKey(repo string, n int) string { return "task/" + rules.TaskKey(repo, n) }
func prRecordKey(repo string, n int) string   { return "pr/" + rules.TaskKey(repo, n) }

// loadTask reads a task's record; nil when the issue is not tracked.
func loadTask(ctx context.Context, st store.Store, repo string, n int) (*rules.Task, error) {
	var t rules.Task
	ok, err := loadRecord(ctx, st, taskRecordKey(repo, n), &t)
	if !ok {
		return nil, err
	}
	return &t, nil
}

// loadPR reads a pull request's record; nil when there is none.
func loadPR(ctx context.Context, st store.Store, repo string, n int) (*rules.PullRequest, error) {
	var pr rules.PullRequest
	ok, err := loadRecord(ctx, st, prRecordKey(repo, n), &pr)
	if !ok {
		return nil, err
	}
	return &pr, nil
}

func loadRecord(ctx context.Context, st store.Store, key string, v any) (bool, error) {
	b, err := st.Get(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", key, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("decode %s: %w", key, err)
	}
	return true, nil
}

// user is the account u as rules knows people: its id, and its login for display.
func user(u *github.User) rules.User { return rules.User{ID: u.GetID(), Login: u.GetLogin()} }

func users(list []*github.User) []rules.User {
	out := make([]rules.User, 0, len(list))
	for _, u := range list {
		out = append(out, user(u))
	}
	return out
}

func labelNames(labels []*github.Label) []string {
	out := make([]string, 0, len(labels))
	for _, l := range labels {
		out = append(out, l.GetName())
	}
	return out
}
