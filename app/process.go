package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

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
}

// outboxEffect is an effect as kept in the store's outbox until applied.
type outboxEffect struct {
	Installation int64        `json:"installation"`
	Delivery     string       `json:"delivery"` // the delivery that caused it, for logs
	Effect       rules.Effect `json:"effect"`
}

// Handle processes claim c. Effects left over from an earlier attempt are applied
// first, so a task's effects always go out in order. Once the delivery is
// committed c.Delivery is set to nil: what may remain are its effects.
func (p *Processor) Handle(ctx context.Context, c *store.Claim, log *slog.Logger) error {
	if err := p.drain(ctx, c, log); err != nil {
		return outboxError{err} // not the queued delivery's fault
	}
	if c.Delivery == nil {
		return nil
	}
	w, err := p.decide(ctx, c.Delivery, log)
	if err != nil {
		return err
	}
	if err := p.store.Commit(ctx, c, w); err != nil {
		return fmt.Errorf("commit decision: %w", err)
	}
	c.Delivery = nil
	if err := p.drain(ctx, c, log); err != nil {
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
// applied. An effect GitHub refuses for good (the issue is gone, the App lacks a
// permission) is logged and dropped; any other failure stops the drain.
func (p *Processor) drain(ctx context.Context, c *store.Claim, log *slog.Logger) error {
	effects, err := p.store.Outbox(ctx, c)
	if err != nil {
		return fmt.Errorf("read outbox: %w", err)
	}
	for _, raw := range effects {
		var oe outboxEffect
		if err := json.Unmarshal(raw, &oe); err != nil {
			log.Error("dropping an unreadable outbox effect", "error", err)
		} else if err := p.exec.Apply(ctx, oe); err != nil {
			if !isPermanent(err) {
				return fmt.Errorf("apply %s on %s#%d: %w", oe.Effect.Kind, oe.Effect.Repo, oe.Effect.Number, err)
			}
			log.Error("effect refused by GitHub; dropped", "effect", oe.Effect.Kind, "error", err)
		}
		if err := p.store.PopEffect(ctx, c); err != nil {
			return fmt.Errorf("pop applied effect: %w", err)
		}
	}
	return nil
}

// decide asks rules what the delivery means. It writes nothing. Only the events
// and actions rules acts on are parsed; the rest are done with at once.
func (p *Processor) decide(ctx context.Context, d *store.Delivery, log *slog.Logger) (store.Commit, error) {
	var head struct {
		Action string `json:"action"`
	}
	if err := json.Unmarshal(d.Payload, &head); err != nil {
		return store.Commit{}, permanent(fmt.Errorf("parse %s payload: %w", d.Event, err))
	}
	if !handledActions[d.Event+"."+head.Action] {
		return store.Commit{}, nil
	}
	raw, err := github.ParseWebHook(d.Event, d.Payload)
	if err != nil {
		return store.Commit{}, permanent(fmt.Errorf("parse %s payload: %w", d.Event, err))
	}
	switch e := raw.(type) {
	case *github.IssuesEvent:
		return p.onIssue(ctx, d, e, log)
	}
	return store.Commit{}, nil
}

// handledActions are the event.action pairs rules decides on.
var handledActions = map[string]bool{
	"issues.opened": true,
}

func (p *Processor) onIssue(ctx context.Context, d *store.Delivery, e *github.IssuesEvent, log *slog.Logger) (store.Commit, error) {
	inst := e.GetInstallation().GetID()
	repo, issue := e.GetRepo().GetFullName(), e.GetIssue()
	if inst == 0 || repo == "" || issue.GetNumber() == 0 {
		log.Info("skipped: delivery names no installation, repository or issue")
		return store.Commit{}, nil
	}
	var kind rules.EventKind
	switch e.GetAction() {
	case "opened":
		kind = rules.IssueOpened
	default:
		return store.Commit{}, nil
	}
	if own, err := p.own(ctx, e.GetSender()); err != nil || own {
		return store.Commit{}, err
	}
	task, err := loadTask(ctx, p.store, repo, issue.GetNumber())
	if err != nil {
		return store.Commit{}, err
	}
	at := issue.GetUpdatedAt().Time
	if at.IsZero() {
		at = d.ReceivedAt
	}
	dec := rules.DecideTask(task, rules.Event{
		Kind: kind, Actor: e.GetSender().GetLogin(), At: at.UTC(),
		Issue: rules.IssueFacts{Repo: repo, Number: issue.GetNumber(), Title: issue.GetTitle(), Body: issue.GetBody(),
			Assignees: logins(issue.Assignees), Labels: labelNames(issue.Labels)},
	})
	return p.commitFor(inst, d, dec)
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

// commitFor is the store commit that records decision dec.
func (p *Processor) commitFor(inst int64, d *store.Delivery, dec rules.Decision) (store.Commit, error) {
	var w store.Commit
	if dec.Task != nil {
		b, err := json.Marshal(dec.Task)
		if err != nil {
			return w, fmt.Errorf("encode task: %w", err)
		}
		w.Records = map[string][]byte{taskRecordKey(dec.Task.Repo, dec.Task.Number): b}
	}
	for _, e := range dec.Effects {
		b, err := json.Marshal(outboxEffect{Installation: inst, Delivery: d.ID, Effect: e})
		if err != nil {
			return w, fmt.Errorf("encode effect: %w", err)
		}
		w.Effects = append(w.Effects, b)
	}
	return w, nil
}

func taskRecordKey(repo string, n int) string { return "task/" + rules.TaskKey(repo, n) }

// loadTask reads a task's record; nil when the issue is not tracked.
func loadTask(ctx context.Context, st store.Store, repo string, n int) (*rules.Task, error) {
	b, err := st.Get(ctx, taskRecordKey(repo, n))
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read task %s#%d: %w", repo, n, err)
	}
	var t rules.Task
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("decode task %s#%d: %w", repo, n, err)
	}
	return &t, nil
}

func logins(users []*github.User) []string {
	out := make([]string, 0, len(users))
	for _, u := range users {
		out = append(out, u.GetLogin())
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
