package rules

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"
)

// GoalState is a goal's lifecycle state (docs/design.md, Goals); each is carried
// on the goal issue as one label.
type GoalState string

// The goal states, in lifecycle order.
const (
	GoalOpen          GoalState = "open"           // created, no task started yet
	GoalActive        GoalState = "active"         // a task has started; not every task is verified
	GoalPendingVerify GoalState = "pending-verify" // every task verified: awaiting a lead's confirmation
	GoalVerified      GoalState = "verified"       // a lead confirmed the integrated result
)

// GoalStates lists every goal state in lifecycle order.
var GoalStates = []GoalState{GoalOpen, GoalActive, GoalPendingVerify, GoalVerified}

// GoalLabelPrefix starts every goal state label.
const GoalLabelPrefix = LabelGoal + ":"

// Label is the GitHub label that carries s.
func (s GoalState) Label() string { return GoalLabelPrefix + string(s) }

// Valid reports whether s is one of GoalStates.
func (s GoalState) Valid() bool { return slices.Contains(GoalStates, s) }

// GoalStateFromLabel returns the goal state a label names, if it is a goal
// state label.
func GoalStateFromLabel(label string) (GoalState, bool) {
	rest, ok := strings.CutPrefix(label, GoalLabelPrefix)
	if !ok {
		return "", false
	}
	s := GoalState(rest)
	return s, s.Valid()
}

// GoalOwned reports whether only countersign may put label on, or take it
// off, a goal issue: `goal` and the `goal:*` labels.
func GoalOwned(label string) bool {
	l := strings.ToLower(label)
	return l == LabelGoal || strings.HasPrefix(l, GoalLabelPrefix)
}

// Goal is the record countersign keeps for one milestone. It is stored in the
// store and, compacted (Compact), in the goal issue's hidden marker.
type Goal struct {
	Repo      string `json:"repo"`
	Milestone int    `json:"milestone"` // the milestone's number
	Title     string `json:"title"`     // the milestone's title
	// Issue is the goal issue's number, 0 until it is created.
	Issue           int       `json:"issue,omitempty"`
	State           GoalState `json:"state"`
	MilestoneClosed bool      `json:"milestone_closed,omitempty"`
	// MilestoneDeleted: the milestone was deleted; the goal is no more, its
	// goal issue closed, and nothing changes it again.
	MilestoneDeleted bool `json:"milestone_deleted,omitempty"`
	// Tasks are every task of the milestone, sorted by number. Overrides
	// (/skip-verify, /force-complete) are their Unverified and Forced flags.
	Tasks []GoalTask `json:"tasks,omitempty"`

	// Verifier is the lead who confirmed the goal, Notes what they said.
	Verifier   string    `json:"verifier,omitempty"`
	VerifiedAt time.Time `json:"verified_at,omitzero"`
	Notes      string    `json:"notes,omitempty"`
	// Rejections are the /reject-goal's; Attempt numbers them (1 for the first).
	Rejections []Rejection `json:"rejections,omitempty"`

	// Comments are the ids of the latest comments acted on (at most 50).
	Comments []int64          `json:"comments,omitempty"`
	History  []GoalTransition `json:"history"`
}

// GoalTask is what a goal needs to know of one of its tasks.
type GoalTask struct {
	Number         int    `json:"number"`
	Title          string `json:"title,omitempty"`
	State          State  `json:"state"`
	Attempt        int    `json:"attempt,omitempty"`
	FailedAttempts int    `json:"failed_attempts,omitempty"`
	Rejections     int    `json:"rejections,omitempty"`
	// Failures are its latest failed attempts (rejections and failed
	// criteria), oldest first, at most maxGoalTaskFailures.
	Failures   []GoalFailure `json:"failures,omitempty"`
	Advisory   bool          `json:"advisory,omitempty"` // its contract is advisory: a lead reviews its output
	Unverified bool          `json:"unverified,omitempty"`
	Forced     bool          `json:"forced,omitempty"`
	Escalated  bool          `json:"escalated,omitempty"`
	Closed     bool          `json:"closed,omitempty"`
	// Blockers name every issue linked as blocking it ("#3", or
	// "owner/name#3" in another repository); Waits those that block it now.
	Blockers []string `json:"blockers,omitempty"`
	Waits    []string `json:"waits,omitempty"`
	// Cycle: it is in a dependency cycle.
	Cycle bool `json:"cycle,omitempty"`
}

// GoalFailure is one failed attempt of a task: a /reject (By the verifier) or
// failed criteria (By "": CI).
type GoalFailure struct {
	Attempt int       `json:"attempt"`
	At      time.Time `json:"at"`
	By      string    `json:"by,omitempty"`
	Reason  string    `json:"reason"`
}

// GoalTransition is one line of a goal's history. From == To records an event
// that changed no state (a reverted label, a refused close).
type GoalTransition struct {
	From  GoalState `json:"from,omitempty"`
	To    GoalState `json:"to"`
	Actor string    `json:"actor"`
	At    time.Time `json:"at"`
	Why   string    `json:"why,omitempty"`
}

// Bounds on a goal record.
const (
	maxGoalTaskFailures = 3   // GoalTask.Failures
	maxGoalHistory      = 200 // Goal.History (the oldest lines are dropped)
	maxListed           = 10  // tasks named in one sentence
)

// GoalTaskOf is what goal needs of task t.
func GoalTaskOf(t *Task) GoalTask {
	gt := GoalTask{Number: t.Number, Title: t.Title, State: t.State, Attempt: t.Attempt,
		FailedAttempts: t.FailedAttempts, Rejections: len(t.Rejections),
		Advisory:   t.Contract != nil && t.Contract.Type == Advisory,
		Unverified: t.Unverified, Forced: t.Forced, Escalated: t.Escalated, Closed: t.Closed}
	var fs []GoalFailure
	for _, r := range t.Rejections {
		fs = append(fs, GoalFailure{Attempt: r.Attempt, At: r.At, By: r.By.Login, Reason: r.Reason})
	}
	for _, f := range t.Failures {
		fs = append(fs, GoalFailure{Attempt: f.Attempt, At: f.At, Reason: f.Reason})
	}
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].At.Before(fs[j].At) })
	if len(fs) > maxGoalTaskFailures {
		fs = fs[len(fs)-maxGoalTaskFailures:]
	}
	gt.Failures = fs
	for _, b := range t.Blockers {
		ref := b.Ref(t.Repo)
		if !slices.Contains(gt.Blockers, ref) {
			gt.Blockers = append(gt.Blockers, ref)
		}
		if b.Blocks() && !slices.Contains(gt.Waits, ref) {
			gt.Waits = append(gt.Waits, ref)
		}
	}
	gt.Cycle = len(t.Cycle) > 0
	return gt
}

// goalTaskEqual reports whether a and b say the same (times compared as instants).
func goalTaskEqual(a, b GoalTask) bool {
	fa, fb := a.Failures, b.Failures
	a.Failures, b.Failures = nil, nil
	return reflect.DeepEqual(a, b) && slices.EqualFunc(fa, fb, func(x, y GoalFailure) bool {
		return x.Attempt == y.Attempt && x.At.Equal(y.At) && x.By == y.By && x.Reason == y.Reason
	})
}

// Started reports whether the task has reached in-progress (or beyond).
func (t GoalTask) Started() bool { return t.State.Valid() && !t.State.Before(InProgress) }

// Dropped reports whether a lead closed the task as not planned: it is listed
// but does not count towards the goal.
func (t GoalTask) Dropped() bool { return t.Closed && t.State != Verified }

// Key is the ordering key of a goal: one goal's events are decided one at a time.
func (g *Goal) Key() string { return GoalKey(g.Repo, g.Milestone) }

// GoalKey is the ordering key of the goal of milestone m of repo.
func GoalKey(repo string, m int) string { return fmt.Sprintf("%s/milestones/%d", repo, m) }

// Labels are the labels countersign owns that the goal issue must carry, sorted.
func (g *Goal) Labels() []string { return []string{LabelGoal, g.State.Label()} }

// IssueTitle is the goal issue's title.
func (g *Goal) IssueTitle() string { return "Goal: " + g.Title }

// Counted are the tasks that count towards the goal: all but the dropped ones.
func (g *Goal) Counted() []GoalTask {
	var out []GoalTask
	for _, t := range g.Tasks {
		if !t.Dropped() {
			out = append(out, t)
		}
	}
	return out
}

// Unverified are the counted tasks that are not verified.
func (g *Goal) Unverified() []GoalTask {
	var out []GoalTask
	for _, t := range g.Counted() {
		if t.State != Verified {
			out = append(out, t)
		}
	}
	return out
}

// Ready reports whether every task of the goal (at least one) is verified.
func (g *Goal) Ready() bool { return len(g.Counted()) > 0 && len(g.Unverified()) == 0 }

func (g *Goal) taskIndex(n int) int {
	return slices.IndexFunc(g.Tasks, func(t GoalTask) bool { return t.Number == n })
}

// Clone is a deep copy of g.
func (g *Goal) Clone() *Goal {
	c := *g
	c.Tasks = make([]GoalTask, len(g.Tasks))
	for i, t := range g.Tasks {
		t.Failures = append([]GoalFailure(nil), t.Failures...)
		c.Tasks[i] = t
	}
	if g.Tasks == nil {
		c.Tasks = nil
	}
	c.Rejections = append([]Rejection(nil), g.Rejections...)
	c.Comments = append([]int64(nil), g.Comments...)
	c.History = append([]GoalTransition(nil), g.History...)
	return &c
}

// Bounds on the compact record a goal issue's marker carries, so that the
// goal issue's body stays far below GitHub's 65,536 characters.
const (
	compactHistory    = 10
	compactRejections = 3
	compactText       = 300
)

// Compact is the copy of g the goal issue's marker carries: enough to rebuild
// the goal's own state (its state, confirmation, rejections, the latest
// history, the comments acted on). Its tasks keep only number, state and
// whether they are closed: a rebuild reads the rest from the tasks' own
// records (GoalTaskOf).
func (g *Goal) Compact() *Goal {
	c := g.Clone()
	c.Title = clip(c.Title, compactText)
	c.Notes = clip(c.Notes, compactText)
	for i := range c.Tasks {
		t := c.Tasks[i]
		c.Tasks[i] = GoalTask{Number: t.Number, State: t.State, Closed: t.Closed}
	}
	if n := len(c.Rejections); n > compactRejections {
		c.Rejections = c.Rejections[n-compactRejections:]
	}
	for i := range c.Rejections {
		c.Rejections[i].Reason = clip(c.Rejections[i].Reason, compactText)
	}
	if n := len(c.History); n > compactHistory {
		c.History = c.History[n-compactHistory:]
	}
	for i := range c.History {
		c.History[i].Why = clip(c.History[i].Why, compactText)
	}
	return c
}

// GoalEventKind names what happened to a milestone or its goal issue.
type GoalEventKind string

// The goal events. Milestone events come from the milestone; Issue events from
// the goal issue (by hand: countersign's own writes are not sent back).
const (
	// GoalMilestoneSeen: the milestone was created, or is seen for the first
	// time (Title). The adapter sends it for open milestones only: a milestone
	// closed before countersign saw it is not a goal.
	GoalMilestoneSeen     GoalEventKind = "milestone.seen"
	GoalMilestoneEdited   GoalEventKind = "milestone.edited" // Title
	GoalMilestoneClosed   GoalEventKind = "milestone.closed"
	GoalMilestoneReopened GoalEventKind = "milestone.reopened"
	GoalMilestoneDeleted  GoalEventKind = "milestone.deleted"
	// GoalTaskChanged: a task of the milestone changed, was added to it (In),
	// or left it (moved to another milestone, milestone removed, no longer
	// tracked: !In). Task is the task as it is now; Title the milestone's.
	GoalTaskChanged    GoalEventKind = "goal.task"
	GoalCommented      GoalEventKind = "goal.commented" // a new comment on the goal issue: CommentID, Commands
	GoalIssueLabeled   GoalEventKind = "goal.labeled"   // Label
	GoalIssueUnlabeled GoalEventKind = "goal.unlabeled" // Label
	GoalIssueClosed    GoalEventKind = "goal.closed"    // by hand
	GoalIssueReopened  GoalEventKind = "goal.reopened"  // by hand
	GoalIssueCreated   GoalEventKind = "goal.created"   // the adapter created (or found) the goal issue: Issue
	// GoalIssueGone: someone deleted the goal issue Issue (or transferred it
	// to another repository): another is opened, as the task card is posted
	// again (DESIGN §5).
	GoalIssueGone GoalEventKind = "goal.gone"
)

// GoalEvent is one thing that happened to a milestone's goal.
type GoalEvent struct {
	Kind      GoalEventKind `json:"kind"`
	Repo      string        `json:"repo"`
	Milestone int           `json:"milestone"`
	Actor     string        `json:"actor"`
	ActorID   int64         `json:"actor_id,omitempty"` // the account Actor is the login of (0: unknown)
	At        time.Time     `json:"at"`                 // when it happened (from the delivery, never the clock)
	Title     string        `json:"title,omitempty"`
	Task      *GoalTask     `json:"task,omitempty"`
	In        bool          `json:"in,omitempty"`
	Commands  []Command     `json:"commands,omitempty"`
	CommentID int64         `json:"comment_id,omitempty"`
	Label     string        `json:"label,omitempty"`
	// Issue is the goal issue's number (GoalIssueCreated; any goal issue event).
	Issue int `json:"issue,omitempty"`
}

// The states of the integration check, as the adapter found it on the
// default branch's head.
const (
	IntegrationSuccess = "success"
	IntegrationFailure = "failure" // also timed out, cancelled, action required
	IntegrationPending = "pending" // queued or running
	IntegrationNone    = ""        // not reported
)

// GoalFacts are what a goal's decision knows beyond its event:
// goals.integration_check ("" for none), and Ask, which the decision asks for
// the rest (whether the actor leads, the leads, the integration check's state)
// where it needs the answer.
type GoalFacts struct {
	IntegrationCheck string
	// Board is the board the goal issue is kept on (board:), when one is.
	Board BoardConfig
	Ask   GoalLookup
}

// The goal effects. Number is the milestone's number: the goal issue may not
// exist yet when they are decided.
const (
	// EffectGoalIssue makes the goal issue of milestone Number exist and look
	// as it must: titled IssueTitle(), in the milestone, its body the dashboard
	// of the goal record as it is when the effect is applied, carrying exactly
	// Labels among the goal-owned labels (GoalOwned), closed exactly when
	// Labels holds goal:verified or the milestone was deleted. It is created when the record has no Issue
	// (or it is gone) and no issue of the bot carries the milestone's goal
	// marker; the adapter then sends GoalIssueCreated.
	EffectGoalIssue EffectKind = "goal-issue"
	// EffectGoalNotice posts Notice on the goal issue of milestone Number,
	// once, as EffectNotice does.
	EffectGoalNotice EffectKind = "goal-notice"
	// EffectCloseMilestone closes milestone Number (if open).
	EffectCloseMilestone EffectKind = "close-milestone"
	// EffectReopenMilestone reopens milestone Number (if closed).
	EffectReopenMilestone EffectKind = "reopen-milestone"
)

// The goal notices, posted on the goal issue (templates/notice-<kind>.md.tmpl).
const (
	// NoticeGoalRefused: someone closed the milestone, or closed or reopened
	// the goal issue, and countersign undid it; Actor did it, Reason says why.
	NoticeGoalRefused NoticeKind = "goal-refused"
	// NoticeGoalReady: every task is verified; Mentions (the leads) must
	// confirm the goal. Reason says what is verified.
	NoticeGoalReady NoticeKind = "goal-ready"
	// NoticeGoalVerified: lead Actor confirmed the goal; Reason is their notes.
	NoticeGoalVerified NoticeKind = "goal-verified"
	// NoticeGoalRejected: lead Actor sent the goal back; Reason is theirs.
	NoticeGoalRejected NoticeKind = "goal-rejected"
	// NoticeGoalReopened: a verified goal is no longer confirmed; Reason says
	// why; Mentions are the leads.
	NoticeGoalReopened NoticeKind = "goal-reopened"
	// NoticeGoalStatus answers /status on the goal issue; Reason is the summary.
	NoticeGoalStatus NoticeKind = "goal-status"
)

// GoalDecision is what rules decided for one goal event: the goal record to
// keep (nil when nothing changed) and the effects to apply, in order.
type GoalDecision struct {
	Goal    *Goal
	Effects []Effect
}

// DecideGoal decides what event ev means for goal g (nil when the milestone
// has no goal yet: GoalMilestoneSeen, or a task added to it, creates one in
// GoalOpen). g is not modified; the decision carries the new record.
//
// Transitions (docs/design.md, Goals): open → active when a task first reaches
// in-progress; active → pending-verify when every task (at least one) becomes
// verified; pending-verify → active when a task is added or leaves verified,
// or on a lead's /reject-goal; pending-verify → verified when a lead closes the
// milestone or comments /verify-goal while every task is verified and the
// integration check (if configured) succeeds; verified → active (or
// pending-verify, when every task is still verified) when a task is added or
// leaves verified, the milestone is reopened, or on /reject-goal. Tasks a lead
// closed as not planned do not count. Nothing else closes a milestone: a close
// that does not confirm the goal is undone and the goal issue says why.
func DecideGoal(g *Goal, ev GoalEvent, f GoalFacts) GoalDecision {
	d := &goalDecider{ev: ev, f: f, old: g}
	if g == nil {
		if ev.Repo == "" || ev.Milestone <= 0 {
			return GoalDecision{}
		}
		switch {
		case ev.Kind == GoalMilestoneSeen:
		case ev.Kind == GoalTaskChanged && ev.In && ev.Task != nil && ev.Task.Number > 0:
		default:
			return GoalDecision{}
		}
		d.create()
		if ev.Kind == GoalMilestoneSeen {
			return d.finish()
		}
	} else {
		if g.MilestoneDeleted {
			return GoalDecision{} // the milestone is gone: no goal any more
		}
		d.g = g.Clone()
	}
	switch ev.Kind {
	case GoalCommented, GoalIssueLabeled, GoalIssueUnlabeled, GoalIssueClosed, GoalIssueReopened:
		if d.g.Issue == 0 && ev.Issue > 0 {
			d.g.Issue = ev.Issue
			d.dirty()
		}
	}
	switch ev.Kind {
	case GoalMilestoneSeen, GoalMilestoneEdited:
		if ev.Title != "" && ev.Title != d.g.Title {
			d.g.Title = ev.Title
			d.dirty()
		}
	case GoalMilestoneClosed:
		d.milestoneClosed()
	case GoalMilestoneReopened:
		d.milestoneReopened()
	case GoalMilestoneDeleted:
		d.g.MilestoneDeleted, d.g.MilestoneClosed = true, false
		d.note(fmt.Sprintf("milestone deleted by @%s: the goal is no more, and its goal issue is closed", ev.Actor))
	case GoalTaskChanged:
		d.taskChanged()
	case GoalCommented:
		d.commented()
	case GoalIssueLabeled, GoalIssueUnlabeled:
		d.labelChanged()
	case GoalIssueClosed:
		d.issueClosed()
	case GoalIssueReopened:
		d.issueReopened()
	case GoalIssueGone:
		if ev.Issue > 0 && ev.Issue == d.g.Issue {
			d.g.Issue = 0
			d.note(fmt.Sprintf("goal issue #%d deleted by @%s: opened again", ev.Issue, ev.Actor))
		}
	case GoalIssueCreated:
		if ev.Issue > 0 && ev.Issue != d.g.Issue {
			d.g.Issue = ev.Issue
			d.dirty()
		}
	}
	return d.finish()
}

// goalDecider holds one goal decision being made.
type goalDecider struct {
	ev      GoalEvent
	f       GoalFacts
	old     *Goal // nil when the milestone had no goal
	g       *Goal // the new record
	changed bool  // g differs from old
	sync    bool  // the goal issue must be brought up to date
	ms      []Effect
	notices []Effect
}

func (d *goalDecider) dirty() { d.changed, d.sync = true, true }

// actor is who acted, as a user.
func (d *goalDecider) actor() User { return User{ID: d.ev.ActorID, Login: d.ev.Actor} }

func (d *goalDecider) create() {
	why := "goal opened for the milestone"
	if d.ev.Kind == GoalTaskChanged {
		why = fmt.Sprintf("goal opened: #%d is in the milestone", d.ev.Task.Number)
	}
	d.g = &Goal{Repo: d.ev.Repo, Milestone: d.ev.Milestone, Title: d.ev.Title, State: GoalOpen,
		History: []GoalTransition{{To: GoalOpen, Actor: d.ev.Actor, At: d.ev.At, Why: why}}}
	d.dirty()
}

// finish turns the new record into the decision: the goal issue first (so the
// notices have an issue to go on), then the milestone, then the notices.
func (d *goalDecider) finish() GoalDecision {
	if !d.changed {
		return GoalDecision{Effects: append(d.ms, d.notices...)}
	}
	if n := len(d.g.History); n > maxGoalHistory {
		d.g.History = d.g.History[n-maxGoalHistory:]
	}
	var effects []Effect
	if d.sync || len(d.notices) > 0 {
		effects = append(effects, Effect{Kind: EffectGoalIssue, Repo: d.g.Repo, Number: d.g.Milestone, Labels: d.g.Labels()})
	}
	if d.f.Board.On() && !d.g.MilestoneDeleted && (d.old == nil || d.old.State != d.g.State) {
		effects = append(effects, GoalBoardEffect(d.f.Board, d.g))
	}
	effects = append(effects, d.ms...)
	effects = append(effects, d.notices...)
	return GoalDecision{Goal: d.g, Effects: effects}
}

func (d *goalDecider) move(to GoalState, why string) {
	d.g.History = append(d.g.History, GoalTransition{From: d.g.State, To: to, Actor: d.ev.Actor, At: d.ev.At, Why: clip(why, maxWhy)})
	d.g.State = to
	d.dirty()
}

func (d *goalDecider) note(why string) {
	d.g.History = append(d.g.History, GoalTransition{From: d.g.State, To: d.g.State, Actor: d.ev.Actor, At: d.ev.At, Why: clip(why, maxWhy)})
	d.dirty()
}

func (d *goalDecider) notice(n Notice) {
	n.Task = d.g.Issue
	if n.Actor == "" {
		n.Actor, n.ActorID = d.ev.Actor, d.ev.ActorID
	}
	d.notices = append(d.notices, Effect{Kind: EffectGoalNotice, Repo: d.g.Repo, Number: d.g.Milestone, Notice: &n})
}

func (d *goalDecider) milestone(kind EffectKind) {
	d.ms = append(d.ms, Effect{Kind: kind, Repo: d.g.Repo, Number: d.g.Milestone})
}

// reopenMilestone reopens the milestone if it is closed.
func (d *goalDecider) reopenMilestone() {
	if d.g.MilestoneClosed {
		d.g.MilestoneClosed = false
		d.changed = true
		d.milestone(EffectReopenMilestone)
	}
}

// taskChanged applies a task's change, arrival or departure.
func (d *goalDecider) taskChanged() {
	g, nt := d.g, d.ev.Task
	if nt == nil || nt.Number <= 0 {
		return
	}
	wasReady := g.Ready()
	i := g.taskIndex(nt.Number)
	if !d.ev.In {
		if i < 0 {
			return
		}
		g.Tasks = slices.Delete(g.Tasks, i, i+1)
		d.dirty()
		d.taskRemoved(nt.Number, wasReady)
		return
	}
	t := *nt
	t.Failures = append([]GoalFailure(nil), nt.Failures...)
	if len(t.Failures) > maxGoalTaskFailures {
		t.Failures = t.Failures[len(t.Failures)-maxGoalTaskFailures:]
	}
	var prev *GoalTask
	if i >= 0 {
		p := g.Tasks[i]
		if goalTaskEqual(p, t) {
			return
		}
		prev = &p
		g.Tasks[i] = t
	} else {
		j := sort.Search(len(g.Tasks), func(k int) bool { return g.Tasks[k].Number > t.Number })
		g.Tasks = slices.Insert(g.Tasks, j, t)
	}
	d.dirty()
	d.taskUpdated(prev, t, wasReady)
}

// taskUpdated moves the goal for task t, which was prev (nil: just added).
func (d *goalDecider) taskUpdated(prev *GoalTask, t GoalTask, wasReady bool) {
	g := d.g
	ready := g.Ready()
	what := fmt.Sprintf("#%d is `%s`", t.Number, t.State)
	switch {
	case prev == nil:
		what = fmt.Sprintf("#%d added to the milestone (`%s`)", t.Number, t.State)
	case t.Dropped() && !prev.Dropped():
		what = fmt.Sprintf("#%d closed as not planned", t.Number)
	case prev.State == Verified && t.State != Verified:
		what = fmt.Sprintf("#%d left `verified` (now `%s`)", t.Number, t.State)
	case t.State == Verified && prev.State != Verified:
		what = fmt.Sprintf("#%d verified", t.Number)
	}
	switch g.State {
	case GoalOpen:
		if slices.ContainsFunc(g.Counted(), GoalTask.Started) {
			if t.Started() {
				d.move(GoalActive, fmt.Sprintf("#%d started (`%s`)", t.Number, t.State))
			} else {
				d.move(GoalActive, "a task has started")
			}
			if ready {
				d.ready(what)
			}
		}
	case GoalActive:
		// Becoming ready by this event: after /reject-goal every task may
		// still be verified; the goal waits for a fix task (or a task's new
		// verification) before asking the leads again.
		if ready && (!wasReady || prev == nil) {
			d.ready(what)
		}
	case GoalPendingVerify:
		if !ready {
			d.move(GoalActive, what)
		}
	case GoalVerified:
		if prev == nil || !ready {
			d.unconfirm(what, what)
		}
	}
}

// taskRemoved moves the goal for task n that left the milestone.
func (d *goalDecider) taskRemoved(n int, wasReady bool) {
	g := d.g
	ready := g.Ready()
	what := fmt.Sprintf("#%d left the milestone", n)
	switch g.State {
	case GoalActive:
		if ready && !wasReady {
			d.ready(what)
		}
	case GoalPendingVerify:
		if !ready {
			d.move(GoalActive, what+": the goal has no task left")
		}
	case GoalVerified:
		if !ready {
			d.unconfirm(what+": the goal has no task left", what+": the goal has no task left")
		} else {
			d.note(what)
		}
	}
}

// ready moves an active goal to pending-verify and asks the leads to confirm it.
func (d *goalDecider) ready(what string) {
	n := len(d.g.Counted())
	d.move(GoalPendingVerify, fmt.Sprintf("%s: every task is verified", what))
	reason := fmt.Sprintf("all %d tasks of the milestone are verified", n)
	if n == 1 {
		reason = "the milestone's only task is verified"
	}
	if d.f.IntegrationCheck != "" {
		reason += fmt.Sprintf("; the integration check `%s` must also be green on the default branch", d.f.IntegrationCheck)
	}
	d.notice(Notice{Kind: NoticeGoalReady, Reason: reason, Mentions: append([]string(nil), d.f.Ask.Leads()...)})
}

// unconfirm takes a verified goal back: to pending-verify when every task is
// still verified (a lead must confirm it again), else to active. The
// milestone is reopened. why goes in the history, reason (no @-mentions) in
// the notice to the leads.
func (d *goalDecider) unconfirm(why, reason string) {
	g := d.g
	g.Verifier, g.VerifiedAt, g.Notes = "", time.Time{}, ""
	d.reopenMilestone()
	to := GoalActive
	if g.Ready() {
		to = GoalPendingVerify
	}
	d.move(to, why+": the goal's confirmation is withdrawn")
	d.notice(Notice{Kind: NoticeGoalReopened, Reason: fmt.Sprintf("%s; the goal is `%s` again", reason, to),
		Mentions: append([]string(nil), d.f.Ask.Leads()...)})
}

// gate says what keeps the goal from being confirmed now (nothing: it can be).
func (d *goalDecider) gate() []string {
	g := d.g
	var out []string
	switch {
	case len(g.Counted()) == 0:
		out = append(out, "the goal has no task")
	case len(g.Unverified()) > 0:
		un := g.Unverified()
		verb := "are"
		if len(un) == 1 {
			verb = "is"
		}
		out = append(out, fmt.Sprintf("%s %s not verified", listTasks(un), verb))
	case g.State == GoalActive:
		out = append(out, "the goal was sent back with /reject-goal: it is ready again once a fix task added to the milestone is verified")
	}
	if c := d.f.IntegrationCheck; c != "" {
		switch d.f.Ask.Integration() {
		case IntegrationSuccess: // green: nothing to say
		case IntegrationFailure:
			out = append(out, fmt.Sprintf("the integration check `%s` is failing on the default branch", c))
		case IntegrationPending:
			out = append(out, fmt.Sprintf("the integration check `%s` has not finished on the default branch", c))
		default:
			out = append(out, fmt.Sprintf("the integration check `%s` has not reported on the default branch's head", c))
		}
	}
	return out
}

// confirm verifies the goal: the lead's confirmation of the integrated result.
func (d *goalDecider) confirm(notes, why string) {
	g := d.g
	g.Verifier, g.VerifiedAt, g.Notes = d.ev.Actor, d.ev.At, clip(strings.TrimSpace(notes), maxReason)
	if d.ev.Kind == GoalMilestoneClosed {
		g.MilestoneClosed = true
	} else if !g.MilestoneClosed {
		g.MilestoneClosed = true
		d.milestone(EffectCloseMilestone)
	}
	d.move(GoalVerified, why)
	d.notice(Notice{Kind: NoticeGoalVerified, Reason: g.Notes})
}

func (d *goalDecider) milestoneClosed() {
	g := d.g
	if g.State == GoalVerified {
		if !g.MilestoneClosed {
			g.MilestoneClosed = true
			d.changed = true
		}
		return
	}
	var why []string
	if !d.f.Ask.Person(d.actor()).Lead {
		why = append(why, "only a lead may confirm a goal")
	}
	why = append(why, d.gate()...)
	if len(why) == 0 {
		d.confirm("", "milestone closed by lead @"+d.ev.Actor)
		return
	}
	g.MilestoneClosed = false
	d.milestone(EffectReopenMilestone)
	d.note(fmt.Sprintf("milestone closed by @%s while `%s`: reopened (%s)", d.ev.Actor, g.State, strings.Join(why, "; ")))
	d.notice(Notice{Kind: NoticeGoalRefused, Reason: "the milestone was closed, but " + strings.Join(why, "; ") + ". It was reopened."})
}

// milestoneReopened: reopening the milestone of a verified goal (by hand)
// withdraws the confirmation.
func (d *goalDecider) milestoneReopened() {
	g := d.g
	if g.MilestoneClosed {
		g.MilestoneClosed = false
		d.changed = true
	}
	if g.State == GoalVerified {
		d.unconfirm("milestone reopened by @"+d.ev.Actor, "the milestone was reopened")
	}
}

func (d *goalDecider) labelChanged() {
	l := d.ev.Label
	if !GoalOwned(l) {
		return
	}
	want := slices.Contains(d.g.Labels(), l)
	added := d.ev.Kind == GoalIssueLabeled
	if added == want {
		return
	}
	verb := "removed"
	if added {
		verb = "added"
	}
	d.note(fmt.Sprintf("label %s %s by @%s: reverted (only countersign sets it)", l, verb, d.ev.Actor))
}

func (d *goalDecider) issueClosed() {
	if d.g.State == GoalVerified {
		return
	}
	d.note(fmt.Sprintf("goal issue closed by @%s while `%s`: reopened", d.ev.Actor, d.g.State))
	d.notice(Notice{Kind: NoticeGoalRefused, Reason: fmt.Sprintf("the goal issue was closed, but the goal is `%s`: it closes itself when a lead confirms the goal. It was reopened.", d.g.State)})
}

func (d *goalDecider) issueReopened() {
	if d.g.State != GoalVerified {
		return
	}
	d.note(fmt.Sprintf("goal issue reopened by @%s: closed again (the goal is verified)", d.ev.Actor))
	d.notice(Notice{Kind: NoticeGoalRefused, Reason: "the goal issue was reopened, but the goal is verified: a lead sends it back with `/reject-goal <reason>` (or by reopening the milestone). It was closed again."})
}

// commented acts on the commands of a new comment on the goal issue, once.
func (d *goalDecider) commented() {
	g := d.g
	if id := d.ev.CommentID; id != 0 {
		if slices.Contains(g.Comments, id) {
			return
		}
		g.Comments = append(g.Comments, id)
		if len(g.Comments) > maxRemembered {
			g.Comments = g.Comments[len(g.Comments)-maxRemembered:]
		}
		d.changed = true
	}
	cmds := d.ev.Commands
	if len(cmds) > MaxCommands {
		cmds = cmds[:MaxCommands]
	}
	for _, c := range cmds {
		d.command(c)
	}
}

// command acts on one command on the goal issue.
func (d *goalDecider) command(c Command) {
	switch c.Name {
	case CmdVerifyGoal:
		d.verifyGoal(c)
	case CmdRejectGoal:
		d.rejectGoal(c)
	case CmdStatus:
		if !slices.ContainsFunc(d.notices, func(e Effect) bool { return e.Notice.Kind == NoticeGoalStatus }) {
			d.notice(Notice{Kind: NoticeGoalStatus, Reason: GoalSummary(d.g)})
		}
	case CmdHelp:
		d.help()
	case "":
		if c.DidYouMean != "" {
			d.refuse(c, nearMissWhy(c))
		}
	default:
		d.refuse(c, fmt.Sprintf("/%s works on a task; this is the goal issue of a milestone, where only `/verify-goal`, `/reject-goal` (leads), `/status` and `/help` work.", c.Name))
	}
}

// refuse replies to command c with why it changed nothing; the refusals of
// one comment share one reply.
func (d *goalDecider) refuse(c Command, why string) {
	for _, e := range d.notices {
		if e.Notice.Kind == NoticeRefused {
			e.Notice.Refusals = append(e.Notice.Refusals, Refusal{Quote: c.Line, Reason: why})
			return
		}
	}
	d.notice(Notice{Kind: NoticeRefused, Refusals: []Refusal{{Quote: c.Line, Reason: why}}})
}

func (d *goalDecider) leadOnly(c Command) bool {
	if d.f.Ask.Person(d.actor()).Lead {
		return true
	}
	d.refuse(c, fmt.Sprintf("only a lead (the `leads:` of .github/countersign.yml, else users with admin or maintain permission) may use /%s: a goal is confirmed by a lead, and that cannot be delegated.", c.Name))
	return false
}

func (d *goalDecider) verifyGoal(c Command) {
	g := d.g
	if !d.leadOnly(c) {
		return
	}
	if g.State == GoalVerified {
		d.refuse(c, "the goal is already verified.")
		return
	}
	if why := d.gate(); len(why) > 0 {
		d.refuse(c, fmt.Sprintf("the goal is `%s`: %s.", g.State, strings.Join(why, "; ")))
		return
	}
	why := "/verify-goal"
	if c.Args != "" {
		why += ": " + c.Args
	}
	d.confirm(c.Args, why)
}

func (d *goalDecider) rejectGoal(c Command) {
	g := d.g
	if !d.leadOnly(c) {
		return
	}
	if strings.TrimSpace(c.Args) == "" {
		d.refuse(c, "a reason is required: `/reject-goal <what is wrong with the integrated result>`; it is kept in the goal's history.")
		return
	}
	if g.State != GoalPendingVerify && g.State != GoalVerified {
		d.refuse(c, fmt.Sprintf("the goal is `%s`; /reject-goal sends back a `pending-verify` or `verified` goal.", g.State))
		return
	}
	g.Rejections = append(g.Rejections, Rejection{By: loginOnly(d.ev.Actor), At: d.ev.At, Reason: clip(c.Args, maxReason), Attempt: len(g.Rejections) + 1})
	g.Verifier, g.VerifiedAt, g.Notes = "", time.Time{}, ""
	d.reopenMilestone()
	d.move(GoalActive, "/reject-goal: "+c.Args)
	d.notice(Notice{Kind: NoticeGoalRejected, Reason: c.Args})
}

// GoalSummary is a one-paragraph account of the goal, for /status.
func GoalSummary(g *Goal) string {
	counted := g.Counted()
	verified := len(counted) - len(g.Unverified())
	s := fmt.Sprintf("The goal is `%s`: %d of %d tasks verified", g.State, verified, len(counted))
	if un := g.Unverified(); len(un) > 0 {
		s += "; not verified: " + listTasks(un)
	}
	if dropped := len(g.Tasks) - len(counted); dropped > 0 {
		s += fmt.Sprintf("; %d closed as not planned", dropped)
	}
	if g.MilestoneClosed {
		s += "; the milestone is closed"
	}
	return s
}

// listTasks names tasks with their states, at most maxListed of them.
func listTasks(ts []GoalTask) string {
	var parts []string
	for i, t := range ts {
		if i == maxListed {
			break
		}
		parts = append(parts, fmt.Sprintf("#%d (`%s`)", t.Number, t.State))
	}
	s := strings.Join(parts, ", ")
	if n := len(ts) - maxListed; n > 0 {
		s += fmt.Sprintf(" and %d more", n)
	}
	return s
}

// Stats are a goal's gate statistics.
type Stats struct {
	Total   int          // every task, dropped ones included
	ByState []StateCount // every task state, in lifecycle order
	// Verified tasks count overrides; FirstTimePass those verified at the
	// first attempt with no failure, rejection or override.
	Verified      int
	Dropped       int // closed as not planned by a lead
	FirstTimePass int
	// PassRate is FirstTimePass / Verified, in percent, rounded (0 with none verified).
	PassRate int
	// AverageAttempts is the mean attempt of verified tasks, to one decimal.
	AverageAttempts float64
	// RecentFailures are the latest failures of all tasks, newest first, at most 5.
	RecentFailures []TaskFailure
	Advisory       []GoalTask // advisory tasks in review or completed: a lead reviews their output
	Overrides      []GoalTask // verified by /skip-verify or /force-complete
	Escalated      []GoalTask
}

// StateCount is how many tasks are in State.
type StateCount struct {
	State State
	Count int
}

// TaskFailure is one failure of task Task.
type TaskFailure struct {
	Task  int
	Title string
	GoalFailure
}

const maxRecentFailures = 5

// GoalStats works out the gate statistics of tasks.
func GoalStats(tasks []GoalTask) Stats {
	s := Stats{Total: len(tasks)}
	counts := map[State]int{}
	attempts := 0
	for _, t := range tasks {
		counts[t.State]++
		if t.Dropped() {
			s.Dropped++
		}
		if t.State == Verified {
			s.Verified++
			attempts += max(t.Attempt, 1)
			if t.FailedAttempts == 0 && t.Rejections == 0 && max(t.Attempt, 1) == 1 && !t.Unverified && !t.Forced {
				s.FirstTimePass++
			}
			if t.Unverified || t.Forced {
				s.Overrides = append(s.Overrides, t)
			}
		}
		if t.Advisory && !t.Dropped() && (t.State == Review || t.State == Completed) {
			s.Advisory = append(s.Advisory, t)
		}
		if t.Escalated && !t.Dropped() && t.State != Verified {
			s.Escalated = append(s.Escalated, t)
		}
		for _, f := range t.Failures {
			s.RecentFailures = append(s.RecentFailures, TaskFailure{Task: t.Number, Title: t.Title, GoalFailure: f})
		}
	}
	for _, st := range States {
		s.ByState = append(s.ByState, StateCount{State: st, Count: counts[st]})
	}
	if s.Verified > 0 {
		s.PassRate = int(math.Round(100 * float64(s.FirstTimePass) / float64(s.Verified)))
		s.AverageAttempts = math.Round(10*float64(attempts)/float64(s.Verified)) / 10
	}
	sort.SliceStable(s.RecentFailures, func(i, j int) bool {
		a, b := s.RecentFailures[i], s.RecentFailures[j]
		if !a.At.Equal(b.At) {
			return a.At.After(b.At)
		}
		if a.Task != b.Task {
			return a.Task < b.Task
		}
		return a.Attempt > b.Attempt
	})
	if len(s.RecentFailures) > maxRecentFailures {
		s.RecentFailures = s.RecentFailures[:maxRecentFailures]
	}
	return s
}
