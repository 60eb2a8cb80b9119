// Package rules is countersign's domain, pure: task and goal state machines,
// separation of roles, command parsing, contracts. Facts and an event go in, a
// decision (the new record, the effects to apply to GitHub) comes out. Nothing
// here does I/O, reads the clock or knows about go-github.
package rules

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// State is a task's lifecycle state; each is carried on GitHub as one label.
type State string

// The task states, in lifecycle order (docs/design.md, The task lifecycle).
const (
	Pending    State = "pending"
	Assigned   State = "assigned"
	InProgress State = "in-progress"
	Review     State = "review"
	Completed  State = "completed"
	Verified   State = "verified"
)

// States lists every task state in lifecycle order.
var States = []State{Pending, Assigned, InProgress, Review, Completed, Verified}

// StateLabelPrefix starts every task state label.
const StateLabelPrefix = "state:"

// Label is the GitHub label that carries s.
func (s State) Label() string { return StateLabelPrefix + string(s) }

// Valid reports whether s is one of States.
func (s State) Valid() bool { return s.rank() >= 0 }

// rank is s's position in States (-1 if s is not a state).
func (s State) rank() int {
	for i, v := range States {
		if s == v {
			return i
		}
	}
	return -1
}

// Before reports whether s comes before o in the lifecycle.
func (s State) Before(o State) bool { return s.rank() < o.rank() }

// StateFromLabel returns the state a label names, if it is a state label.
func StateFromLabel(label string) (State, bool) {
	rest, ok := strings.CutPrefix(label, StateLabelPrefix)
	if !ok {
		return "", false
	}
	s := State(rest)
	return s, s.Valid()
}

// Task is the record countersign keeps for one tracked issue. It is stored in
// the store and, as a copy, in the task card's hidden marker on GitHub.
type Task struct {
	Repo   string `json:"repo"`   // "owner/name"
	Number int    `json:"number"` // issue number
	Title  string `json:"title"`
	State  State  `json:"state"`
	Opener User   `json:"opener"`
	// Milestone is the number of the milestone (goal) the issue is in, 0 for none.
	Milestone int `json:"milestone,omitempty"`
	Attempt   int `json:"attempt"` // 1 for the first attempt; a rejection or reopen starts the next

	Assignees []User `json:"assignees,omitempty"`
	// Builders is everyone who ever built the task, with why: they can never
	// verify it. Builders are never forgotten: an unassigned builder's work is
	// still in the pull request.
	Builders []Member `json:"builders,omitempty"`
	// PRs are the pull requests that close the task, over its whole life.
	PRs []LinkedPR `json:"prs,omitempty"`
	// Approvals are the approvals that count now (a review's approval lasts
	// until its reviewer reviews again or it is dismissed).
	Approvals []Approval `json:"approvals,omitempty"`
	// Approvers are everyone whose approval counted at any time in the
	// current attempt: a withdrawn approval does not make its author
	// independent of the work. An approval kept for a merged head from an
	// earlier attempt counts in the attempt it helps complete: its author is
	// an approver of that attempt too.
	Approvers []User `json:"approvers,omitempty"`
	// MergedApprovals are the approvals of merged pull requests' heads that
	// counted in earlier attempts: merged code never changes, so its approval
	// outlives the attempt (a new attempt still needs every merged pull
	// request's head approved, DESIGN §2).
	MergedApprovals []Approval `json:"merged_approvals,omitempty"`

	Verifier   User      `json:"verifier,omitzero"`
	VerifiedAt time.Time `json:"verified_at,omitzero"`

	Rejections []Rejection `json:"rejections,omitempty"`
	// RejectedHeads are the pull request heads a rejection found wanting: the
	// same commits never count as a new attempt.
	RejectedHeads  []string `json:"rejected_heads,omitempty"`
	FailedAttempts int      `json:"failed_attempts,omitempty"`
	// Failures are the attempts CI failed (a failed criterion in review or
	// completed), newest last, at most maxFailures.
	Failures []Failure `json:"failures,omitempty"`
	// Contract is how the task's completion is verified (nil for a record from
	// before contracts: it gets one at its next event).
	Contract *Contract `json:"contract,omitempty"`
	// Failing is set by a rejection (or a failed criterion) and cleared by the
	// next submission: until then the verification check fails.
	Failing    bool `json:"failing,omitempty"`
	Escalated  bool `json:"escalated,omitempty"`
	Unverified bool `json:"unverified,omitempty"` // verified by a lead's /skip-verify
	Forced     bool `json:"forced,omitempty"`     // a lead's /force-complete
	Closed     bool `json:"closed,omitempty"`

	// Blockers are the issues GitHub links as blocking the task ("blocked
	// by", and its sub-issues), with where each stood when last heard of
	// (blockers.go); Cycle is the dependency cycle it is in (task keys, its
	// own first); Waiting are who were refused a /verify while it was
	// blocked: they are told, once, when it is unblocked.
	Blockers []Blocker `json:"blockers,omitempty"`
	Cycle    []string  `json:"cycle,omitempty"`
	Waiting  []User    `json:"waiting,omitempty"`

	// Comments are the ids of the latest comments acted on: a comment is never
	// acted on twice, whatever the delivery id it comes back with.
	Comments []int64      `json:"comments,omitempty"`
	History  []Transition `json:"history"`
}

// Member is one person in a role, with why they hold it.
type Member struct {
	ID    int64  `json:"id,omitempty"`
	Login string `json:"login"`
	As    string `json:"as"` // e.g. "assignee", "author of #12", "co-author on #12"
}

// MemberOf is u in a role, as.
func MemberOf(u User, as string) Member { return Member{ID: u.ID, Login: u.Login, As: as} }

// User is the member's account.
func (m Member) User() User { return User{ID: m.ID, Login: m.Login} }

// Is reports whether the member is account u.
func (m Member) Is(u User) bool { return m.User().Is(u) }

// LinkedPR is a pull request that closes the task.
type LinkedPR struct {
	Number int    `json:"number"`
	Author User   `json:"author"`
	Head   string `json:"head"`
	Draft  bool   `json:"draft,omitempty"`
	Open   bool   `json:"open"`
	Merged bool   `json:"merged,omitempty"`
	// Criteria are the criteria its changed files call for (no results).
	Criteria []Criterion `json:"criteria,omitempty"`
	// Runs are the CI results on Head that count for some criterion.
	Runs []CIRun `json:"runs,omitempty"`
	// Merges fingerprints what it merges into its base (PRFacts.Merges).
	Merges string `json:"merges,omitempty"`
	// Suites are the check suites on Head, as last read: the whole CI
	// (WholeCI) has concluded only when each has.
	Suites []CISuite `json:"suites,omitempty"`
	// Contradiction: its description says the work is not done.
	Contradiction *Contradiction `json:"contradiction,omitempty"`
	// Outsider: its author may build here only as an assignee of the task
	// (PRFacts.Outsider); it stops counting when they are unassigned.
	Outsider bool `json:"outsider,omitempty"`
	// Unresolved are its commits' git identities that GitHub links to no
	// account (PRFacts.Unresolved).
	Unresolved []string `json:"unresolved,omitempty"`
	// BotPushers are the bot accounts among its pushers (PRFacts.Pushers),
	// at most maxBotPushers: with commit identities no one is linked to,
	// whoever set such a bot to push is unknown (see decider.laundered).
	BotPushers []User `json:"bot_pushers,omitempty"`
	// PushersUnread: not every push to its head branch was read
	// (PRFacts.PushersUnread).
	PushersUnread string `json:"pushers_unread,omitempty"`
}

// maxBotPushers bounds LinkedPR.BotPushers.
const maxBotPushers = 10

// botsOf are the bot accounts among pushers, at most maxBotPushers.
func botsOf(pushers []User) []User {
	var out []User
	for _, u := range pushers {
		if IsBot(u.Login) && len(out) < maxBotPushers {
			out = append(out, u)
		}
	}
	return out
}

// CarriesCode reports whether the pull request carries the task's code: it
// is open, or merged (merged code is in the work whatever happens next).
func (p LinkedPR) CarriesCode() bool { return p.Open || p.Merged }

// Approval is one counted approval: a GitHub review on Head, or /approve (Head "").
type Approval struct {
	By   User      `json:"by"`
	Head string    `json:"head,omitempty"`
	PR   int       `json:"pr,omitempty"`
	At   time.Time `json:"at"`
	// Merges is what the pull request merged into its base when it was
	// approved (LinkedPR.Merges): after a base change that brings other
	// changes, the approval no longer covers it.
	Merges string `json:"merges,omitempty"`
	// Critics are the critics (contracts.critics) the approver reviews for.
	Critics []string `json:"critics,omitempty"`
}

// Rejection is one /reject.
type Rejection struct {
	By      User      `json:"by"`
	At      time.Time `json:"at"`
	Reason  string    `json:"reason"`
	Attempt int       `json:"attempt"`
}

// Failure is one attempt that failed its contract's criteria.
type Failure struct {
	Attempt int       `json:"attempt"`
	At      time.Time `json:"at"`
	PR      int       `json:"pr,omitempty"`
	Head    string    `json:"head,omitempty"`
	Reason  string    `json:"reason"` // the failed criteria, e.g. "unit-test (test: failure)"
}

// Key is the ordering key of a task: one task's events are decided one at a time.
func (t *Task) Key() string { return TaskKey(t.Repo, t.Number) }

// TaskKey is the ordering key of the task that issue number n of repo would be.
func TaskKey(repo string, n int) string { return fmt.Sprintf("%s#%d", repo, n) }

// Transition is one line of a task's history. From == To records an event
// that changed no state (a reverted label, a refused close).
type Transition struct {
	From  State     `json:"from,omitempty"`
	To    State     `json:"to"`
	Actor string    `json:"actor"`
	At    time.Time `json:"at"`
	Why   string    `json:"why,omitempty"`
	// Repeats counts the times a note happened again after At (the last at
	// Last): a repeated note is counted, not added (see repeated).
	Repeats int       `json:"repeats,omitempty"`
	Last    time.Time `json:"last,omitzero"`
	// Omitted counts the entries left out here to keep the history bounded
	// (see boundHistory).
	Omitted int `json:"omitted,omitempty"`
}

// IsBuilder reports whether u ever built the task.
func (t *Task) IsBuilder(u User) bool { return t.builder(u) != nil }

func (t *Task) builder(u User) *Member {
	for i := range t.Builders {
		if t.Builders[i].Is(u) {
			return &t.Builders[i]
		}
	}
	return nil
}

// IsApprover reports whether u approved the current attempt.
func (t *Task) IsApprover(u User) bool {
	return containsUser(t.Approvers, u) ||
		slices.ContainsFunc(t.Approvals, func(a Approval) bool { return a.By.Is(u) })
}

// HasPR reports whether pull request n is linked to the task (open or not).
func (t *Task) HasPR(n int) bool { return t.pr(n) != nil }

// OpenPRs are the numbers of the task's open pull requests.
func (t *Task) OpenPRs() []int {
	var out []int
	for _, p := range t.PRs {
		if p.Open {
			out = append(out, p.Number)
		}
	}
	return out
}

// pr returns the linked pull request n, or nil.
func (t *Task) pr(n int) *LinkedPR {
	for i := range t.PRs {
		if t.PRs[i].Number == n {
			return &t.PRs[i]
		}
	}
	return nil
}

// approvedNow reports whether counted approvals cover the work as it is now:
// the head of every pull request that carries the task's code (open or
// merged) or, with none, an /approve; and the attempt has an approval of its
// own (the approvals of merged heads kept from earlier attempts complete no
// new attempt alone).
func (t *Task) approvedNow() bool {
	if !slices.ContainsFunc(t.PRs, LinkedPR.CarriesCode) {
		return slices.ContainsFunc(t.Approvals, func(a Approval) bool { return a.Head == "" && a.PR == 0 })
	}
	return len(t.Unapproved()) == 0 && slices.ContainsFunc(t.Approvals, func(a Approval) bool {
		p := t.pr(a.PR)
		return (a.Head == "" && a.PR == 0) || (p != nil && p.CarriesCode() && a.covers(*p))
	})
}

// Unapproved are the pull requests that carry the task's code (open or
// merged) whose head no counted approval covers.
func (t *Task) Unapproved() []LinkedPR {
	var out []LinkedPR
	for _, p := range t.PRs {
		if p.CarriesCode() && !t.headApproved(p) {
			out = append(out, p)
		}
	}
	return out
}

// headApproved reports whether a counted approval covers pull request p's
// head (for a merged one, an approval from an earlier attempt counts too).
func (t *Task) headApproved(p LinkedPR) bool {
	on := func(a Approval) bool { return a.PR == p.Number && a.covers(p) }
	return slices.ContainsFunc(t.Approvals, on) || (p.Merged && slices.ContainsFunc(t.MergedApprovals, on))
}

// covers reports whether approval a is of pull request p's head as it
// merges now: the same head, merging the same changes into its base.
func (a Approval) covers(p LinkedPR) bool {
	return a.Head != "" && a.Head == p.Head && a.Merges == p.Merges
}

// keptApprovals are the approvals kept from earlier attempts
// (MergedApprovals) that cover the head of a merged pull request linked now.
func (t *Task) keptApprovals() []Approval {
	var out []Approval
	for _, a := range t.MergedApprovals {
		if p := t.pr(a.PR); p != nil && p.Merged && a.covers(*p) {
			out = append(out, a)
		}
	}
	return out
}

// newAttempt forgets the approvals and approvers of the attempt that ends,
// keeping the approvals of merged pull requests' heads (MergedApprovals).
func (t *Task) newAttempt() {
	for _, a := range t.Approvals {
		kept := func(k Approval) bool { return k.PR == a.PR && k.Head == a.Head && k.By.Is(a.By) }
		if p := t.pr(a.PR); p != nil && p.Merged && a.covers(*p) && !slices.ContainsFunc(t.MergedApprovals, kept) {
			t.MergedApprovals = append(t.MergedApprovals, a)
		}
	}
	t.Attempt++
	t.Approvals, t.Approvers = nil, nil
}

// Labels are the labels countersign owns that the task must carry, sorted.
func (t *Task) Labels() []string {
	out := []string{t.State.Label()}
	for _, f := range []struct {
		on    bool
		label string
	}{{t.Escalated, LabelEscalated}, {t.Unverified, LabelUnverified}, {t.Forced, LabelForced}} {
		if f.on {
			out = append(out, f.label)
		}
	}
	sort.Strings(out)
	return out
}

// Clone is a deep copy of t.
func (t *Task) Clone() *Task {
	c := *t
	c.Assignees = append([]User(nil), t.Assignees...)
	c.Builders = append([]Member(nil), t.Builders...)
	c.PRs = append([]LinkedPR(nil), t.PRs...)
	c.Approvals = append([]Approval(nil), t.Approvals...)
	c.Approvers = append([]User(nil), t.Approvers...)
	c.MergedApprovals = append([]Approval(nil), t.MergedApprovals...)
	c.Rejections = append([]Rejection(nil), t.Rejections...)
	c.RejectedHeads = append([]string(nil), t.RejectedHeads...)
	c.Failures = append([]Failure(nil), t.Failures...)
	if t.Contract != nil {
		k := *t.Contract
		k.Criteria = append([]Criterion(nil), k.Criteria...)
		k.Expected = append([]string(nil), k.Expected...)
		c.Contract = &k
	}
	c.Blockers = append([]Blocker(nil), t.Blockers...)
	c.Cycle = append([]string(nil), t.Cycle...)
	c.Waiting = append([]User(nil), t.Waiting...)
	c.Comments = append([]int64(nil), t.Comments...)
	c.History = append([]Transition(nil), t.History...)
	return &c
}

func containsUser(list []User, u User) bool {
	return slices.ContainsFunc(list, func(l User) bool { return l.Is(u) })
}

// IsBot reports whether login is a GitHub App's bot account.
func IsBot(login string) bool { return strings.HasSuffix(strings.ToLower(login), "[bot]") }
