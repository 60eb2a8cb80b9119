package card

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/seal"
	"github.com/countersign/countersign/rules"
	"github.com/countersign/countersign/templates"
	"github.com/google/go-github/v60/github"
)

// This file rebuilds what a lost store held from GitHub (DESIGN §8, invariant
// 5) without trusting anything countersign did not sign. A task card's hidden
// record is anyone-with-write-access's to edit: it is believed only when its
// signature (app/seal) verifies and GitHub's own history agrees with it (the
// state labels countersign itself applied, in the issue's events). Otherwise
// the task is rebuilt conservatively from what GitHub proves.

// Recover rebuilds the record of the task issue is (in repository
// owner/name), lost with the store, from what bot wrote on it and keys
// signed. The card is the one on GitHub, else gone (the card just deleted, whose
// text its deletion's webhook carries; nil for none): its record is judged
// alike. rebuilt says the record was not trusted and was rebuilt
// conservatively: the caller must then write it, and its labels and card,
// whatever the event.
func Recover(ctx context.Context, c Client, owner, name, bot string, keys *seal.Keys, issue rules.IssueFacts, gone *github.IssueComment, log *slog.Logger) (*rules.Task, bool, error) {
	repo, n := issue.Repo, issue.Number
	found, err := Find(ctx, c, owner, name, n, bot)
	if err != nil {
		return nil, false, err
	}
	if found == nil {
		found = gone
	}
	labels, err := BotStateLabels(ctx, c, owner, name, n, bot)
	if err != nil {
		return nil, false, err
	}
	var proven rules.State // the state countersign itself labeled the task last
	if len(labels) > 0 {
		proven = labels[len(labels)-1].Value
	}

	var signed *rules.Task // a record countersign signed (maybe not its last)
	why := "it has no task card"
	if found != nil {
		rec, ok := Record(found.GetBody())
		sig, _ := templates.RecordSignature(found.GetBody())
		var t rules.Task
		switch {
		case !ok:
			why = "its card carries no record"
		case !keys.Verify(records.TaskScope(repo, n), rec, sig):
			why = "its card's record is not signed by this server"
		case json.Unmarshal(rec, &t) != nil || t.Repo != repo || t.Number != n || !t.State.Valid():
			why = "its card's record is unusable"
		case t.State != proven:
			signed = &t
			why = fmt.Sprintf("its card's record says %s but countersign last labeled it %s", t.State, orNone(proven))
		case !followsHistory(labels, &t):
			signed = &t
			why = "its card's record is older than the labels countersign applied since"
		default:
			log.Info("task record rebuilt from its card", "task", t.Key(), "state", t.State)
			return &t, false, nil
		}
	}
	if proven == "" {
		// countersign never labeled it: whatever state label it has is
		// someone else's; the task is tracked afresh.
		log.Warn("task card's record not trusted; the task is tracked afresh", "task", rules.TaskKey(repo, n), "why", why)
		return nil, false, nil
	}
	t := conservativeTask(issue, proven, signed, why, time.Now().UTC())
	log.Warn("task card's record not trusted; the task is rebuilt from what GitHub proves", "task", t.Key(),
		"why", why, "labeled", proven, "state", t.State)
	return t, true, nil
}

func orNone(s rules.State) string {
	if s == "" {
		return "nothing"
	}
	return string(s)
}

// conservativeTask is the task rebuilt from what GitHub proves when its card's
// record cannot be trusted: never past in-progress (whoever approved or
// verified it is not proven, so approval and verification start over), its
// builders the assignees. A record countersign did sign, though stale, still
// proves who built the task and its past rejections and failures: those only
// ever grow, so they are kept.
func conservativeTask(issue rules.IssueFacts, proven rules.State, signed *rules.Task, why string, now time.Time) *rules.Task {
	state := proven
	if rules.InProgress.Before(state) {
		state = rules.InProgress
	}
	t := &rules.Task{Repo: issue.Repo, Number: issue.Number, Title: issue.Title, State: state, Opener: issue.Author,
		Milestone: issue.Milestone, Attempt: 1}
	if signed != nil {
		t.Attempt = max(signed.Attempt, 1)
		t.Builders = append(t.Builders, signed.Builders...)
		t.Rejections, t.RejectedHeads = signed.Rejections, signed.RejectedHeads
		t.FailedAttempts, t.Failures, t.Escalated = signed.FailedAttempts, signed.Failures, signed.Escalated
		t.Contract, t.Comments = signed.Contract, signed.Comments
		for _, pr := range signed.PRs {
			pr.Runs, pr.Suites = nil, nil // results are read again
			t.PRs = append(t.PRs, pr)
		}
	}
	for _, a := range issue.Assignees {
		t.Assignees = append(t.Assignees, a)
		if !t.IsBuilder(a) {
			t.Builders = append(t.Builders, rules.MemberOf(a, "assignee"))
		}
	}
	t.History = append(t.History, rules.Transition{To: state, Actor: "", At: now, // no one: countersign itself
		Why: "rebuilt after the store was lost: " + why + "; approval and verification start over"})
	return t
}

// followsHistory reports whether the state labels countersign applied to the
// issue (oldest first, consecutive repeats removed) are, from the end, a
// subsequence of the states t's history entered: a record replayed from
// before later changes misses the states entered since. A bounded history
// (entries left out, Omitted) is held to the labels applied since the last
// entry it left out, which must follow the entries it kept after it.
func followsHistory(labels []Labeled[rules.State], t *rules.Task) bool {
	h := t.History
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Omitted == 0 {
			continue
		}
		var since []Labeled[rules.State]
		for _, l := range labels {
			if !l.At.Before(h[i].At) {
				since = append(since, l)
			}
		}
		return isSubsequence(since, h[i:])
	}
	// History exhausted before the labels are: fine only when the record
	// itself starts with a rebuild, before which its labels are not its
	// history.
	return isSubsequence(labels, h) || len(h) > 0 && strings.HasPrefix(h[0].Why, "rebuilt after the store was lost")
}

// enteredIn are the states history h entered, consecutive repeats removed.
func enteredIn(h []rules.Transition) []rules.State {
	var out []rules.State
	for _, e := range h {
		if len(out) == 0 || out[len(out)-1] != e.To {
			out = append(out, e.To)
		}
	}
	return out
}

// isSubsequence reports whether labels (all of them) are a subsequence of
// the states history h entered.
func isSubsequence(labels []Labeled[rules.State], h []rules.Transition) bool {
	entered := enteredIn(h)
	i := len(entered) - 1
	for j := len(labels) - 1; j >= 0; j-- {
		for i >= 0 && entered[i] != labels[j].Value {
			i--
		}
		if i < 0 {
			return false
		}
		i--
	}
	return true
}

// KeepInStep makes a decision on a conservatively rebuilt task write the task,
// its labels and its card, and recompute its pull requests' checks, whatever
// the event ev changed: GitHub still shows what the untrusted record said. A
// closed issue whose task is not verified is reopened (the close of an
// issue is the rules' own to judge).
func KeepInStep(dec *rules.Decision, rebuilt *rules.Task, ev rules.Event) {
	if dec.Task == nil {
		dec.Task = rebuilt
	}
	t := dec.Task
	if ev.Issue.Closed && ev.Kind != rules.IssueClosed && ev.Reason != "not_planned" && !t.Closed && t.State != rules.Verified {
		t.History = append(t.History, rules.Transition{From: t.State, To: t.State, Actor: "", At: time.Now().UTC(),
			Why: "closed while " + string(t.State) + " and not verified: reopened"})
		dec.Effects = append(dec.Effects, rules.Effect{Kind: rules.EffectReopen, Repo: t.Repo, Number: t.Number})
	}
	has := func(k rules.EffectKind) bool {
		return slices.ContainsFunc(dec.Effects, func(e rules.Effect) bool { return e.Kind == k })
	}
	var first []rules.Effect
	if !has(rules.EffectSyncLabels) {
		first = append(first, rules.Effect{Kind: rules.EffectSyncLabels, Repo: t.Repo, Number: t.Number, Labels: t.Labels()})
	}
	if !has(rules.EffectSyncCard) {
		first = append(first, rules.Effect{Kind: rules.EffectSyncCard, Repo: t.Repo, Number: t.Number})
	}
	dec.Effects = append(first, dec.Effects...)
	for _, pr := range t.PRs {
		if (pr.Open || pr.Merged) && !slices.Contains(dec.Refresh, pr.Number) {
			dec.Refresh = append(dec.Refresh, pr.Number)
		}
	}
}
