package rules

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The cast of the goal tests: "lead" is a lead; alice is a builder with write
// permission; mallory a stranger. The goal is milestone 3 of acme/app; its
// goal issue is #100.
const (
	gxRepo      = "acme/app"
	gxMilestone = 3
	gxIssue     = 100
)

var gxLeads = []string{"lead", "@acme/leads"}

func gxAt(min int) time.Time {
	return time.Date(2025, 4, 1, 9, 0, 0, 0, time.UTC).Add(time.Duration(min) * time.Minute)
}

// gxFacts are the facts for an event by actor, with no integration check.
func gxFacts(actor string) GoalFacts {
	return GoalFacts{Ask: Known(Answers{Person: Person{Lead: actor == "lead", Eligible: actor != "mallory", Writer: actor != "mallory"}, Leads: gxLeads})}
}

// gknown are the answers f's lookup gives, to change them.
func gknown(f GoalFacts) *Answers { return f.Ask.(StaticLookup).Answers }

// gxIntegration are the facts for actor with integration check "e2e" in state s.
func gxIntegration(actor, s string) GoalFacts {
	f := gxFacts(actor)
	f.IntegrationCheck, gknown(f).Integration = "e2e", s
	return f
}

func gxTask(n int, s State) GoalTask {
	return GoalTask{Number: n, Title: fmt.Sprintf("Task %d", n), State: s, Attempt: 1}
}

// gxGoal is a goal in state s with tasks, its history getting it there; a
// verified goal was confirmed by the lead closing the milestone.
func gxGoal(s GoalState, tasks ...GoalTask) *Goal {
	g := &Goal{Repo: gxRepo, Milestone: gxMilestone, Title: "Login page", Issue: gxIssue, State: GoalOpen, Tasks: tasks}
	g.History = []GoalTransition{{To: GoalOpen, Actor: "lead", At: gxAt(0), Why: "goal opened for the milestone"}}
	for i, st := range GoalStates[1:] {
		if GoalStates[i] == s {
			break
		}
		g.History = append(g.History, GoalTransition{From: g.State, To: st, Actor: "lead", At: gxAt(i + 1)})
		g.State = st
	}
	if s == GoalVerified {
		g.MilestoneClosed, g.Verifier, g.VerifiedAt = true, "lead", gxAt(10)
	}
	return g
}

func gxEvent(kind GoalEventKind, actor string) GoalEvent {
	return GoalEvent{Kind: kind, Repo: gxRepo, Milestone: gxMilestone, Actor: actor, At: gxAt(100), Title: "Login page"}
}

func gxTaskEvent(t GoalTask, in bool) GoalEvent {
	ev := gxEvent(GoalTaskChanged, "alice")
	ev.Task, ev.In = &t, in
	return ev
}

var gxCommentID int64 = 5000

func gxComment(actor string, lines ...string) GoalEvent {
	ev := gxEvent(GoalCommented, actor)
	gxCommentID++
	ev.CommentID, ev.Issue = gxCommentID, gxIssue
	ev.Commands = ParseCommands(strings.Join(lines, "\n"))
	return ev
}

func gxLabel(kind GoalEventKind, actor, label string) GoalEvent {
	ev := gxEvent(kind, actor)
	ev.Label, ev.Issue = label, gxIssue
	return ev
}

func gxKinds(effects []Effect) []EffectKind {
	var out []EffectKind
	for _, e := range effects {
		out = append(out, e.Kind)
	}
	return out
}

// noticeText is everything a decision's goal notices say.
func gxNoticeText(effects []Effect) string {
	var b strings.Builder
	for _, e := range effects {
		if n := e.Notice; n != nil {
			fmt.Fprintf(&b, "[%s] %s", n.Kind, n.Reason)
			for _, r := range n.Refusals {
				fmt.Fprintf(&b, " {%s: %s}", r.Quote, r.Reason)
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

func gxNoticeKinds(effects []Effect) []NoticeKind {
	var out []NoticeKind
	for _, e := range effects {
		if e.Notice != nil {
			out = append(out, e.Notice.Kind)
		}
	}
	return out
}

const (
	eIssue   = EffectGoalIssue
	eNotice  = EffectGoalNotice
	eClose   = EffectCloseMilestone
	eReopenM = EffectReopenMilestone
)

func TestDecideGoal(t *testing.T) {
	v, r, ip, pe, as := Verified, Review, InProgress, Pending, Assigned
	rejected := gxGoal(GoalActive, gxTask(1, v), gxTask(2, v)) // after /reject-goal: every task still verified
	rejected.Rejections = []Rejection{{By: User{Login: "lead"}, At: gxAt(20), Reason: "CSS conflicts", Attempt: 1}}
	dropped := gxTask(2, ip)
	dropped.Closed = true
	unchangedTask := gxTask(1, ip)
	tests := []struct {
		name    string
		goal    *Goal
		ev      GoalEvent
		f       GoalFacts
		want    GoalState // "": no new record
		effects []EffectKind
		notices []NoticeKind
		says    []string // in the notices
		check   func(t *testing.T, g *Goal)
	}{
		// Creation.
		{name: "milestone seen: goal opened", ev: gxEvent(GoalMilestoneSeen, "lead"), want: GoalOpen,
			effects: []EffectKind{eIssue},
			check: func(t *testing.T, g *Goal) {
				if g.Title != "Login page" || g.Issue != 0 || len(g.History) != 1 || g.History[0].Actor != "lead" {
					t.Errorf("goal = %+v", g)
				}
			}},
		{name: "pending task added: goal opened", ev: gxTaskEvent(gxTask(1, pe), true), want: GoalOpen,
			effects: []EffectKind{eIssue},
			check: func(t *testing.T, g *Goal) {
				if len(g.Tasks) != 1 || !strings.Contains(g.History[0].Why, "#1") {
					t.Errorf("goal = %+v", g)
				}
			}},
		{name: "started task added: goal opened, then active", ev: gxTaskEvent(gxTask(1, ip), true), want: GoalActive,
			effects: []EffectKind{eIssue},
			check: func(t *testing.T, g *Goal) {
				if len(g.History) != 2 || g.History[1].From != GoalOpen || g.History[1].To != GoalActive {
					t.Errorf("history = %+v", g.History)
				}
			}},
		{name: "task left a milestone with no goal: nothing", ev: gxTaskEvent(gxTask(1, ip), false)},
		{name: "milestone closed with no goal: nothing", ev: gxEvent(GoalMilestoneClosed, "lead")},
		{name: "comment with no goal: nothing", ev: gxComment("lead", "/verify-goal")},
		{name: "event without milestone: nothing", ev: GoalEvent{Kind: GoalMilestoneSeen, Repo: gxRepo}},
		{name: "milestone renamed", goal: gxGoal(GoalOpen), ev: func() GoalEvent {
			ev := gxEvent(GoalMilestoneEdited, "lead")
			ev.Title = "Login page v2"
			return ev
		}(), want: GoalOpen, effects: []EffectKind{eIssue},
			check: func(t *testing.T, g *Goal) {
				if g.Title != "Login page v2" || g.IssueTitle() != "Goal: Login page v2" {
					t.Errorf("title = %q", g.Title)
				}
			}},
		{name: "milestone edited, same title: nothing", goal: gxGoal(GoalOpen), ev: gxEvent(GoalMilestoneEdited, "lead")},
		{name: "goal issue created", goal: func() *Goal { g := gxGoal(GoalOpen); g.Issue = 0; return g }(),
			ev:   func() GoalEvent { ev := gxEvent(GoalIssueCreated, "countersign[bot]"); ev.Issue = 101; return ev }(),
			want: GoalOpen, effects: []EffectKind{eIssue},
			check: func(t *testing.T, g *Goal) {
				if g.Issue != 101 || len(g.History) != 1 {
					t.Errorf("goal = %+v", g)
				}
			}},

		// open → active.
		{name: "open: task assigned, still open", goal: gxGoal(GoalOpen, gxTask(1, pe)), ev: gxTaskEvent(gxTask(1, as), true),
			want: GoalOpen, effects: []EffectKind{eIssue}},
		{name: "open: first task in progress, active", goal: gxGoal(GoalOpen, gxTask(1, as), gxTask(2, pe)), ev: gxTaskEvent(gxTask(1, ip), true),
			want: GoalActive, effects: []EffectKind{eIssue},
			check: func(t *testing.T, g *Goal) {
				if h := g.History[len(g.History)-1]; h.Why != "#1 started (`in-progress`)" || h.Actor != "alice" || !h.At.Equal(gxAt(100)) {
					t.Errorf("last history = %+v", h)
				}
			}},
		{name: "open: only task verified at once, active then pending-verify", goal: gxGoal(GoalOpen, gxTask(1, as)), ev: gxTaskEvent(gxTask(1, v), true),
			want: GoalPendingVerify, effects: []EffectKind{eIssue, eNotice}, notices: []NoticeKind{NoticeGoalReady},
			says: []string{"only task is verified"},
			check: func(t *testing.T, g *Goal) {
				if n := len(g.History); g.History[n-2].To != GoalActive || g.History[n-1].To != GoalPendingVerify {
					t.Errorf("history = %+v", g.History)
				}
			}},
		{name: "open: a task removed, still open", goal: gxGoal(GoalOpen, gxTask(1, pe), gxTask(2, pe)), ev: gxTaskEvent(gxTask(2, pe), false),
			want: GoalOpen, effects: []EffectKind{eIssue}},

		// active → pending-verify.
		{name: "active: one of two verified, still active", goal: gxGoal(GoalActive, gxTask(1, r), gxTask(2, ip)), ev: gxTaskEvent(gxTask(1, v), true),
			want: GoalActive, effects: []EffectKind{eIssue}},
		{name: "active: last task verified, pending-verify and the leads are told", goal: gxGoal(GoalActive, gxTask(1, v), gxTask(2, Completed)),
			ev: gxTaskEvent(gxTask(2, v), true), f: gxIntegration("carol", ""),
			want: GoalPendingVerify, effects: []EffectKind{eIssue, eNotice}, notices: []NoticeKind{NoticeGoalReady},
			says: []string{"all 2 tasks", "integration check `e2e`"},
			check: func(t *testing.T, g *Goal) {
				if h := g.History[len(g.History)-1]; h.Why != "#2 verified: every task is verified" {
					t.Errorf("last history = %+v", h)
				}
			}},
		{name: "active: last unverified task removed, pending-verify", goal: gxGoal(GoalActive, gxTask(1, v), gxTask(2, ip)), ev: gxTaskEvent(gxTask(2, ip), false),
			want: GoalPendingVerify, effects: []EffectKind{eIssue, eNotice}, notices: []NoticeKind{NoticeGoalReady}},
		{name: "active: last unverified task closed as not planned, pending-verify", goal: gxGoal(GoalActive, gxTask(1, v), gxTask(2, ip)), ev: gxTaskEvent(dropped, true),
			want: GoalPendingVerify, effects: []EffectKind{eIssue, eNotice}, notices: []NoticeKind{NoticeGoalReady},
			says: []string{"only task is verified"}},
		{name: "active: last task removed, stays active", goal: gxGoal(GoalActive, gxTask(1, ip)), ev: gxTaskEvent(gxTask(1, ip), false),
			want: GoalActive, effects: []EffectKind{eIssue},
			check: func(t *testing.T, g *Goal) {
				if len(g.Tasks) != 0 {
					t.Errorf("tasks = %+v", g.Tasks)
				}
			}},
		{name: "active after rejection: a verified task's title changes, still active", goal: rejected,
			ev:   func() GoalEvent { k := gxTask(2, v); k.Title = "renamed"; return gxTaskEvent(k, true) }(),
			want: GoalActive, effects: []EffectKind{eIssue}},
		{name: "active after rejection: verified fix task added, pending-verify", goal: rejected, ev: gxTaskEvent(gxTask(3, v), true),
			want: GoalPendingVerify, effects: []EffectKind{eIssue, eNotice}, notices: []NoticeKind{NoticeGoalReady}},
		{name: "task moved away: unknown task, nothing", goal: gxGoal(GoalActive, gxTask(1, ip)), ev: gxTaskEvent(gxTask(9, ip), false)},
		{name: "task change redelivered: nothing", goal: gxGoal(GoalActive, unchangedTask), ev: gxTaskEvent(unchangedTask, true)},
		{name: "task event with no task: nothing", goal: gxGoal(GoalActive, gxTask(1, ip)), ev: gxEvent(GoalTaskChanged, "alice")},

		// pending-verify → active.
		{name: "pending-verify: task added, active", goal: gxGoal(GoalPendingVerify, gxTask(1, v)), ev: gxTaskEvent(gxTask(2, pe), true),
			want: GoalActive, effects: []EffectKind{eIssue},
			check: func(t *testing.T, g *Goal) {
				if h := g.History[len(g.History)-1]; h.Why != "#2 added to the milestone (`pending`)" {
					t.Errorf("last history = %+v", h)
				}
				if !slices.EqualFunc(g.Tasks, []GoalTask{gxTask(1, v), gxTask(2, pe)}, goalTaskEqual) {
					t.Errorf("tasks = %+v", g.Tasks)
				}
			}},
		{name: "pending-verify: task added before the others, sorted", goal: gxGoal(GoalPendingVerify, gxTask(5, v)), ev: gxTaskEvent(gxTask(2, pe), true),
			want: GoalActive, effects: []EffectKind{eIssue},
			check: func(t *testing.T, g *Goal) {
				if g.Tasks[0].Number != 2 || g.Tasks[1].Number != 5 {
					t.Errorf("tasks = %+v", g.Tasks)
				}
			}},
		{name: "pending-verify: verified task added, still pending-verify", goal: gxGoal(GoalPendingVerify, gxTask(1, v)), ev: gxTaskEvent(gxTask(2, v), true),
			want: GoalPendingVerify, effects: []EffectKind{eIssue}},
		{name: "pending-verify: task reopened (regression), active", goal: gxGoal(GoalPendingVerify, gxTask(1, v), gxTask(2, v)), ev: gxTaskEvent(gxTask(2, ip), true),
			want: GoalActive, effects: []EffectKind{eIssue},
			check: func(t *testing.T, g *Goal) {
				if h := g.History[len(g.History)-1]; h.Why != "#2 left `verified` (now `in-progress`)" {
					t.Errorf("last history = %+v", h)
				}
			}},
		{name: "pending-verify: one task removed, still pending-verify", goal: gxGoal(GoalPendingVerify, gxTask(1, v), gxTask(2, v)), ev: gxTaskEvent(gxTask(2, v), false),
			want: GoalPendingVerify, effects: []EffectKind{eIssue}},
		{name: "pending-verify: last task removed, active", goal: gxGoal(GoalPendingVerify, gxTask(1, v)), ev: gxTaskEvent(gxTask(1, v), false),
			want: GoalActive, effects: []EffectKind{eIssue}},

		// verified → active / pending-verify.
		{name: "verified: task added, active, milestone reopened, leads told", goal: gxGoal(GoalVerified, gxTask(1, v)), ev: gxTaskEvent(gxTask(2, pe), true),
			want: GoalActive, effects: []EffectKind{eIssue, eReopenM, eNotice}, notices: []NoticeKind{NoticeGoalReopened},
			says: []string{"#2 added to the milestone", "`active` again"},
			check: func(t *testing.T, g *Goal) {
				if g.MilestoneClosed || g.Verifier != "" || !g.VerifiedAt.IsZero() {
					t.Errorf("goal = %+v", g)
				}
			}},
		{name: "verified: verified task added, pending-verify (confirm again)", goal: gxGoal(GoalVerified, gxTask(1, v)), ev: gxTaskEvent(gxTask(2, v), true),
			want: GoalPendingVerify, effects: []EffectKind{eIssue, eReopenM, eNotice}, notices: []NoticeKind{NoticeGoalReopened}},
		{name: "verified: task leaves verified, active", goal: gxGoal(GoalVerified, gxTask(1, v), gxTask(2, v)), ev: gxTaskEvent(gxTask(1, r), true),
			want: GoalActive, effects: []EffectKind{eIssue, eReopenM, eNotice}, notices: []NoticeKind{NoticeGoalReopened},
			says: []string{"#1 left `verified`"}},
		{name: "verified: a task's title changes, still verified", goal: gxGoal(GoalVerified, gxTask(1, v)),
			ev:   func() GoalEvent { k := gxTask(1, v); k.Title = "renamed"; return gxTaskEvent(k, true) }(),
			want: GoalVerified, effects: []EffectKind{eIssue}},
		{name: "verified: a task removed, still verified, noted", goal: gxGoal(GoalVerified, gxTask(1, v), gxTask(2, v)), ev: gxTaskEvent(gxTask(2, v), false),
			want: GoalVerified, effects: []EffectKind{eIssue},
			check: func(t *testing.T, g *Goal) {
				if h := g.History[len(g.History)-1]; h.Why != "#2 left the milestone" || h.From != GoalVerified || !g.MilestoneClosed {
					t.Errorf("last history = %+v", h)
				}
			}},
		{name: "verified: last task removed, active", goal: gxGoal(GoalVerified, gxTask(1, v)), ev: gxTaskEvent(gxTask(1, v), false),
			want: GoalActive, effects: []EffectKind{eIssue, eReopenM, eNotice}, notices: []NoticeKind{NoticeGoalReopened}},

		// Milestone closed.
		{name: "lead closes the milestone of a pending-verify goal: verified", goal: gxGoal(GoalPendingVerify, gxTask(1, v), gxTask(2, v)),
			ev: gxEvent(GoalMilestoneClosed, "lead"), f: gxFacts("lead"),
			want: GoalVerified, effects: []EffectKind{eIssue, eNotice}, notices: []NoticeKind{NoticeGoalVerified},
			check: func(t *testing.T, g *Goal) {
				if !g.MilestoneClosed || g.Verifier != "lead" || !g.VerifiedAt.Equal(gxAt(100)) {
					t.Errorf("goal = %+v", g)
				}
				if h := g.History[len(g.History)-1]; h.Why != "milestone closed by lead @lead" {
					t.Errorf("last history = %+v", h)
				}
			}},
		{name: "lead closes the milestone, integration green: verified", goal: gxGoal(GoalPendingVerify, gxTask(1, v)),
			ev: gxEvent(GoalMilestoneClosed, "lead"), f: gxIntegration("lead", IntegrationSuccess),
			want: GoalVerified, effects: []EffectKind{eIssue, eNotice}, notices: []NoticeKind{NoticeGoalVerified}},
		{name: "non-lead closes the milestone: reopened", goal: gxGoal(GoalPendingVerify, gxTask(1, v)),
			ev: gxEvent(GoalMilestoneClosed, "alice"), f: gxFacts("alice"),
			want: GoalPendingVerify, effects: []EffectKind{eIssue, eReopenM, eNotice}, notices: []NoticeKind{NoticeGoalRefused},
			says: []string{"only a lead may confirm a goal", "It was reopened"},
			check: func(t *testing.T, g *Goal) {
				if g.MilestoneClosed || g.Verifier != "" {
					t.Errorf("goal = %+v", g)
				}
				if h := g.History[len(g.History)-1]; h.From != h.To || !strings.Contains(h.Why, "milestone closed by @alice") {
					t.Errorf("last history = %+v", h)
				}
			}},
		{name: "lead closes the milestone while tasks are not verified: reopened, tasks named", goal: gxGoal(GoalActive, gxTask(1, v), gxTask(2, r), gxTask(4, ip)),
			ev: gxEvent(GoalMilestoneClosed, "lead"), f: gxFacts("lead"),
			want: GoalActive, effects: []EffectKind{eIssue, eReopenM, eNotice}, notices: []NoticeKind{NoticeGoalRefused},
			says: []string{"#2 (`review`), #4 (`in-progress`) are not verified"}},
		{name: "non-lead closes the milestone of an active goal: both reasons", goal: gxGoal(GoalActive, gxTask(2, r)),
			ev: gxEvent(GoalMilestoneClosed, "mallory"), f: gxFacts("mallory"),
			want: GoalActive, effects: []EffectKind{eIssue, eReopenM, eNotice}, notices: []NoticeKind{NoticeGoalRefused},
			says: []string{"only a lead", "#2 (`review`) is not verified"}},
		{name: "lead closes the milestone of an empty goal: reopened", goal: gxGoal(GoalOpen),
			ev: gxEvent(GoalMilestoneClosed, "lead"), f: gxFacts("lead"),
			want: GoalOpen, effects: []EffectKind{eIssue, eReopenM, eNotice}, notices: []NoticeKind{NoticeGoalRefused},
			says: []string{"has no task"}},
		{name: "lead closes the milestone, integration failing: reopened", goal: gxGoal(GoalPendingVerify, gxTask(1, v)),
			ev: gxEvent(GoalMilestoneClosed, "lead"), f: gxIntegration("lead", IntegrationFailure),
			want: GoalPendingVerify, effects: []EffectKind{eIssue, eReopenM, eNotice}, notices: []NoticeKind{NoticeGoalRefused},
			says: []string{"`e2e` is failing"}},
		{name: "lead closes the milestone, integration pending: reopened", goal: gxGoal(GoalPendingVerify, gxTask(1, v)),
			ev: gxEvent(GoalMilestoneClosed, "lead"), f: gxIntegration("lead", IntegrationPending),
			want: GoalPendingVerify, effects: []EffectKind{eIssue, eReopenM, eNotice}, notices: []NoticeKind{NoticeGoalRefused},
			says: []string{"`e2e` has not finished"}},
		{name: "lead closes the milestone, integration not reported: reopened", goal: gxGoal(GoalPendingVerify, gxTask(1, v)),
			ev: gxEvent(GoalMilestoneClosed, "lead"), f: gxIntegration("lead", IntegrationNone),
			want: GoalPendingVerify, effects: []EffectKind{eIssue, eReopenM, eNotice}, notices: []NoticeKind{NoticeGoalRefused},
			says: []string{"`e2e` has not reported"}},
		{name: "lead closes the milestone after a rejection: reopened", goal: rejected,
			ev: gxEvent(GoalMilestoneClosed, "lead"), f: gxFacts("lead"),
			want: GoalActive, effects: []EffectKind{eIssue, eReopenM, eNotice}, notices: []NoticeKind{NoticeGoalRefused},
			says: []string{"sent back with /reject-goal"}},
		{name: "milestone of a verified goal closed again: nothing", goal: gxGoal(GoalVerified, gxTask(1, v)),
			ev: gxEvent(GoalMilestoneClosed, "alice"), f: gxFacts("alice")},

		// Milestone reopened.
		{name: "milestone of a verified goal reopened: pending-verify, leads told", goal: gxGoal(GoalVerified, gxTask(1, v)),
			ev: gxEvent(GoalMilestoneReopened, "alice"), f: gxFacts("alice"),
			want: GoalPendingVerify, effects: []EffectKind{eIssue, eNotice}, notices: []NoticeKind{NoticeGoalReopened},
			says: []string{"the milestone was reopened", "`pending-verify` again"},
			check: func(t *testing.T, g *Goal) {
				if g.MilestoneClosed || g.Verifier != "" {
					t.Errorf("goal = %+v", g)
				}
				if h := g.History[len(g.History)-1]; !strings.Contains(h.Why, "milestone reopened by @alice") {
					t.Errorf("last history = %+v", h)
				}
			}},
		{name: "milestone of an active goal reopened: nothing", goal: gxGoal(GoalActive, gxTask(1, ip)), ev: gxEvent(GoalMilestoneReopened, "lead")},

		// /verify-goal.
		{name: "/verify-goal by a lead: verified, milestone closed", goal: gxGoal(GoalPendingVerify, gxTask(1, v), gxTask(2, v)),
			ev: gxComment("lead", "/verify-goal login flow works end-to-end"), f: gxFacts("lead"),
			want: GoalVerified, effects: []EffectKind{eIssue, eClose, eNotice}, notices: []NoticeKind{NoticeGoalVerified},
			says: []string{"login flow works end-to-end"},
			check: func(t *testing.T, g *Goal) {
				if !g.MilestoneClosed || g.Verifier != "lead" || g.Notes != "login flow works end-to-end" {
					t.Errorf("goal = %+v", g)
				}
				if h := g.History[len(g.History)-1]; h.Why != "/verify-goal: login flow works end-to-end" || h.From != GoalPendingVerify {
					t.Errorf("last history = %+v", h)
				}
			}},
		{name: "/verify-goal with the integration check green: verified", goal: gxGoal(GoalPendingVerify, gxTask(1, v)),
			ev: gxComment("lead", "/verify-goal"), f: gxIntegration("lead", IntegrationSuccess),
			want: GoalVerified, effects: []EffectKind{eIssue, eClose, eNotice}, notices: []NoticeKind{NoticeGoalVerified}},
		{name: "/verify-goal by a non-lead: refused", goal: gxGoal(GoalPendingVerify, gxTask(1, v)),
			ev: gxComment("alice", "/verify-goal"), f: gxFacts("alice"),
			want: GoalPendingVerify, effects: []EffectKind{eIssue, eNotice}, notices: []NoticeKind{NoticeRefused},
			says: []string{"only a lead", "cannot be delegated"}},
		{name: "/verify-goal on an active goal: refused, tasks named", goal: gxGoal(GoalActive, gxTask(1, v), gxTask(2, Completed)),
			ev: gxComment("lead", "/verify-goal"), f: gxFacts("lead"),
			want: GoalActive, effects: []EffectKind{eIssue, eNotice}, notices: []NoticeKind{NoticeRefused},
			says: []string{"the goal is `active`: #2 (`completed`) is not verified"}},
		{name: "/verify-goal with the integration check failing: refused", goal: gxGoal(GoalPendingVerify, gxTask(1, v)),
			ev: gxComment("lead", "/verify-goal"), f: gxIntegration("lead", IntegrationFailure),
			want: GoalPendingVerify, effects: []EffectKind{eIssue, eNotice}, notices: []NoticeKind{NoticeRefused},
			says: []string{"`e2e` is failing"}},
		{name: "/verify-goal on a verified goal: refused", goal: gxGoal(GoalVerified, gxTask(1, v)),
			ev: gxComment("lead", "/verify-goal"), f: gxFacts("lead"),
			want: GoalVerified, effects: []EffectKind{eIssue, eNotice}, notices: []NoticeKind{NoticeRefused},
			says: []string{"already verified"}},
		{name: "/verify-goal after a rejection: refused until a fix task", goal: rejected,
			ev: gxComment("lead", "/verify-goal"), f: gxFacts("lead"),
			want: GoalActive, effects: []EffectKind{eIssue, eNotice}, notices: []NoticeKind{NoticeRefused},
			says: []string{"sent back with /reject-goal"}},

		// /reject-goal.
		{name: "/reject-goal on a pending-verify goal: active", goal: gxGoal(GoalPendingVerify, gxTask(1, v)),
			ev: gxComment("lead", "/reject-goal CSS conflicts between login and dashboard"), f: gxFacts("lead"),
			want: GoalActive, effects: []EffectKind{eIssue, eNotice}, notices: []NoticeKind{NoticeGoalRejected},
			says: []string{"CSS conflicts between login and dashboard"},
			check: func(t *testing.T, g *Goal) {
				want := []Rejection{{By: User{Login: "lead"}, At: gxAt(100), Reason: "CSS conflicts between login and dashboard", Attempt: 1}}
				if !reflect.DeepEqual(g.Rejections, want) {
					t.Errorf("rejections = %+v", g.Rejections)
				}
				if g.Tasks[0].State != Verified {
					t.Errorf("a verified task must stay verified: %+v", g.Tasks)
				}
			}},
		{name: "/reject-goal on a verified goal: active, milestone reopened", goal: gxGoal(GoalVerified, gxTask(1, v)),
			ev: gxComment("lead", "/reject-goal the dashboard crashes on login"), f: gxFacts("lead"),
			want: GoalActive, effects: []EffectKind{eIssue, eReopenM, eNotice}, notices: []NoticeKind{NoticeGoalRejected},
			check: func(t *testing.T, g *Goal) {
				if g.MilestoneClosed || g.Verifier != "" || !g.VerifiedAt.IsZero() {
					t.Errorf("goal = %+v", g)
				}
			}},
		{name: "/reject-goal without a reason: refused", goal: gxGoal(GoalPendingVerify, gxTask(1, v)),
			ev: gxComment("lead", "/reject-goal"), f: gxFacts("lead"),
			want: GoalPendingVerify, effects: []EffectKind{eIssue, eNotice}, notices: []NoticeKind{NoticeRefused},
			says: []string{"a reason is required"}},
		{name: "/reject-goal by a non-lead: refused", goal: gxGoal(GoalPendingVerify, gxTask(1, v)),
			ev: gxComment("alice", "/reject-goal it is broken"), f: gxFacts("alice"),
			want: GoalPendingVerify, effects: []EffectKind{eIssue, eNotice}, notices: []NoticeKind{NoticeRefused},
			says: []string{"only a lead"}},
		{name: "/reject-goal on an active goal: refused", goal: gxGoal(GoalActive, gxTask(1, ip)),
			ev: gxComment("lead", "/reject-goal not yet"), f: gxFacts("lead"),
			want: GoalActive, effects: []EffectKind{eIssue, eNotice}, notices: []NoticeKind{NoticeRefused},
			says: []string{"the goal is `active`; /reject-goal sends back"}},

		// Other commands.
		{name: "/status: summary", goal: gxGoal(GoalActive, gxTask(1, v), gxTask(2, r)),
			ev: gxComment("mallory", "/status", "/status"), f: gxFacts("mallory"),
			want: GoalActive, effects: []EffectKind{eIssue, eNotice}, notices: []NoticeKind{NoticeGoalStatus},
			says: []string{"The goal is `active`: 1 of 2 tasks verified; not verified: #2 (`review`)"}},
		{name: "task commands on the goal issue: refused together", goal: gxGoal(GoalActive, gxTask(1, ip)),
			ev: gxComment("alice", "/start", "/verify looks good"), f: gxFacts("alice"),
			want: GoalActive, effects: []EffectKind{eIssue, eNotice}, notices: []NoticeKind{NoticeRefused},
			says: []string{"{/start: /start works on a task", "{/verify looks good: /verify works on a task"}},
		{name: "comment redelivered: nothing", goal: func() *Goal {
			g := gxGoal(GoalPendingVerify, gxTask(1, v))
			g.Comments = []int64{gxCommentID + 1}
			return g
		}(), ev: gxComment("lead", "/verify-goal"), f: gxFacts("lead")},
		{name: "comment without commands: remembered", goal: gxGoal(GoalActive, gxTask(1, ip)), ev: gxComment("alice", "thanks!"),
			want: GoalActive,
			check: func(t *testing.T, g *Goal) {
				if len(g.Comments) != 1 {
					t.Errorf("comments = %v", g.Comments)
				}
			}},
		{name: "goal issue number learnt from a comment", goal: func() *Goal { g := gxGoal(GoalActive, gxTask(1, ip)); g.Issue = 0; return g }(),
			ev: gxComment("alice", "thanks!"), want: GoalActive, effects: []EffectKind{eIssue},
			check: func(t *testing.T, g *Goal) {
				if g.Issue != gxIssue {
					t.Errorf("issue = %d", g.Issue)
				}
			}},

		// Labels.
		{name: "goal:verified added by hand: reverted", goal: gxGoal(GoalActive, gxTask(1, ip)),
			ev: gxLabel(GoalIssueLabeled, "alice", "goal:verified"), want: GoalActive, effects: []EffectKind{eIssue},
			check: func(t *testing.T, g *Goal) {
				if h := g.History[len(g.History)-1]; h.Why != "label goal:verified added by @alice: reverted (only countersign sets it)" {
					t.Errorf("last history = %+v", h)
				}
			}},
		{name: "goal:active removed by hand: reverted", goal: gxGoal(GoalActive, gxTask(1, ip)),
			ev: gxLabel(GoalIssueUnlabeled, "alice", "goal:active"), want: GoalActive, effects: []EffectKind{eIssue}},
		{name: "goal label removed by hand: reverted", goal: gxGoal(GoalActive, gxTask(1, ip)),
			ev: gxLabel(GoalIssueUnlabeled, "lead", "goal"), want: GoalActive, effects: []EffectKind{eIssue}},
		{name: "own label coming back: nothing", goal: gxGoal(GoalActive, gxTask(1, ip)), ev: gxLabel(GoalIssueLabeled, "alice", "goal:active")},
		{name: "other label: nothing", goal: gxGoal(GoalActive, gxTask(1, ip)), ev: gxLabel(GoalIssueLabeled, "alice", "priority")},

		// The goal issue closed or reopened by hand.
		{name: "goal issue closed by hand: reopened", goal: gxGoal(GoalActive, gxTask(1, ip)), ev: gxLabel(GoalIssueClosed, "alice", ""),
			want: GoalActive, effects: []EffectKind{eIssue, eNotice}, notices: []NoticeKind{NoticeGoalRefused},
			says: []string{"the goal is `active`", "It was reopened"}},
		{name: "goal issue of a verified goal closed: nothing", goal: gxGoal(GoalVerified, gxTask(1, v)), ev: gxLabel(GoalIssueClosed, "lead", "")},
		{name: "goal issue of a verified goal reopened by hand: closed again", goal: gxGoal(GoalVerified, gxTask(1, v)), ev: gxLabel(GoalIssueReopened, "alice", ""),
			want: GoalVerified, effects: []EffectKind{eIssue, eNotice}, notices: []NoticeKind{NoticeGoalRefused},
			says: []string{"/reject-goal <reason>", "closed again"}},
		{name: "goal issue of an active goal reopened: nothing", goal: gxGoal(GoalActive, gxTask(1, ip)), ev: gxLabel(GoalIssueReopened, "alice", "")},

		// The milestone deleted: the goal is no more; nothing changes it again.
		{name: "milestone deleted: the goal issue is closed", goal: gxGoal(GoalActive, gxTask(1, ip)), ev: gxEvent(GoalMilestoneDeleted, "lead"),
			want: GoalActive, effects: []EffectKind{eIssue},
			check: func(t *testing.T, g *Goal) {
				if !g.MilestoneDeleted || !strings.Contains(g.History[len(g.History)-1].Why, "deleted") {
					t.Errorf("goal %+v", g)
				}
			}},
		{name: "a task of a deleted milestone changes: nothing", goal: func() *Goal { g := gxGoal(GoalActive, gxTask(1, ip)); g.MilestoneDeleted = true; return g }(),
			ev: gxTaskEvent(gxTask(1, r), true)},
		{name: "the goal issue of a deleted milestone reopened: nothing", goal: func() *Goal { g := gxGoal(GoalActive, gxTask(1, ip)); g.MilestoneDeleted = true; return g }(),
			ev: gxLabel(GoalIssueReopened, "alice", "")},

		// The goal issue deleted (or transferred away): another is opened.
		{name: "goal issue deleted: opened again", goal: gxGoal(GoalActive, gxTask(1, ip)), ev: gxLabel(GoalIssueGone, "lead", ""),
			want: GoalActive, effects: []EffectKind{eIssue},
			check: func(t *testing.T, g *Goal) {
				if g.Issue != 0 || !strings.Contains(g.History[len(g.History)-1].Why, "deleted") {
					t.Errorf("goal issue %d, history %+v", g.Issue, g.History)
				}
			}},
		{name: "an old goal issue deleted: nothing", goal: gxGoal(GoalActive, gxTask(1, ip)),
			ev: func() GoalEvent { ev := gxLabel(GoalIssueGone, "lead", ""); ev.Issue = gxIssue + 1; return ev }()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var before *Goal
			if tc.goal != nil {
				before = tc.goal.Clone()
			}
			f := tc.f
			if f.Ask == nil {
				f = gxFacts(tc.ev.Actor)
			}
			d := DecideGoal(tc.goal, tc.ev, f)
			if tc.goal != nil && !reflect.DeepEqual(before, tc.goal) {
				t.Fatalf("the goal given was modified")
			}
			if tc.want == "" {
				if d.Goal != nil || len(d.Effects) != 0 {
					t.Fatalf("decision = %+v, %v; want nothing", d.Goal, gxKinds(d.Effects))
				}
				return
			}
			if d.Goal == nil {
				t.Fatalf("no new record; effects %v", gxKinds(d.Effects))
			}
			if d.Goal.State != tc.want {
				t.Errorf("state = %s, want %s (history %+v)", d.Goal.State, tc.want, d.Goal.History)
			}
			if !slices.Equal(gxKinds(d.Effects), tc.effects) {
				t.Errorf("effects = %v, want %v", gxKinds(d.Effects), tc.effects)
			}
			if !slices.Equal(gxNoticeKinds(d.Effects), tc.notices) {
				t.Errorf("notices = %v, want %v", gxNoticeKinds(d.Effects), tc.notices)
			}
			text := gxNoticeText(d.Effects)
			for _, s := range tc.says {
				if !strings.Contains(text, s) {
					t.Errorf("notices say %q; want %q in them", text, s)
				}
			}
			for _, e := range d.Effects {
				if e.Repo != gxRepo || e.Number != gxMilestone {
					t.Errorf("effect %s names %s#%d, want the milestone %s#%d", e.Kind, e.Repo, e.Number, gxRepo, gxMilestone)
				}
				if e.Kind == EffectGoalIssue && !slices.Equal(e.Labels, []string{"goal", d.Goal.State.Label()}) {
					t.Errorf("goal issue labels = %v", e.Labels)
				}
				if n := e.Notice; n != nil && (n.Task != d.Goal.Issue || n.Actor != tc.ev.Actor) {
					t.Errorf("notice %s: task %d actor %q", n.Kind, n.Task, n.Actor)
				}
			}
			if d.Goal.MilestoneClosed != (d.Goal.State == GoalVerified) {
				t.Errorf("milestone closed = %v with the goal %s", d.Goal.MilestoneClosed, d.Goal.State)
			}
			if tc.check != nil {
				tc.check(t, d.Goal)
			}
		})
	}
}

// TestGoalConfirmationFlow follows the goal confirmation flow and its
// integration failure at goal level.
func TestGoalConfirmationFlow(t *testing.T) {
	var g *Goal
	min := 0
	step := func(ev GoalEvent, f GoalFacts, want GoalState, wantNotices ...NoticeKind) GoalDecision {
		t.Helper()
		min++
		ev.At = gxAt(min)
		d := DecideGoal(g, ev, f)
		if d.Goal == nil {
			t.Fatalf("step %d (%s): no change", min, ev.Kind)
		}
		g = d.Goal
		if g.State != want {
			t.Fatalf("step %d (%s): state %s, want %s", min, ev.Kind, g.State, want)
		}
		if got := gxNoticeKinds(d.Effects); !slices.Equal(got, wantNotices) {
			t.Fatalf("step %d (%s): notices %v, want %v", min, ev.Kind, got, wantNotices)
		}
		return d
	}
	task := func(n int, s State) GoalEvent { return gxTaskEvent(gxTask(n, s), true) }
	anyone := gxFacts("alice")

	step(gxEvent(GoalMilestoneSeen, "lead"), gxFacts("lead"), GoalOpen)
	created := gxEvent(GoalIssueCreated, "countersign[bot]")
	created.Issue = gxIssue
	step(created, anyone, GoalOpen)
	for n := 1; n <= 3; n++ {
		step(task(n, Assigned), anyone, GoalOpen)
	}
	step(task(1, InProgress), anyone, GoalActive)
	for _, s := range []State{Review, Completed, Verified} {
		for n := 1; n <= 3; n++ {
			if n == 1 && s == InProgress {
				continue
			}
			if n == 3 && s == Verified {
				// 1. TASK-1..3 verified: the goal moves to pending_verify.
				step(task(n, s), anyone, GoalPendingVerify, NoticeGoalReady)
				continue
			}
			step(task(n, s), anyone, GoalActive)
		}
	}
	// 2-3. The lead finds an integration bug and rejects the goal.
	step(gxComment("lead", "/reject-goal Tasks work individually but CSS conflicts between components"), gxFacts("lead"), GoalActive, NoticeGoalRejected)
	for n := 1; n <= 3; n++ {
		if g.Tasks[n-1].State != Verified {
			t.Fatalf("existing verified tasks stay verified: %+v", g.Tasks)
		}
	}
	// The lead adds TASK-4; a milestone close is refused meanwhile.
	step(task(4, Pending), anyone, GoalActive)
	step(gxEvent(GoalMilestoneClosed, "lead"), gxFacts("lead"), GoalActive, NoticeGoalRefused)
	// 4. TASK-4 goes through the full cycle.
	for _, s := range []State{Assigned, InProgress, Review, Completed} {
		step(task(4, s), anyone, GoalActive)
	}
	// 5. All tasks verified again: pending_verify; the lead confirms.
	step(task(4, Verified), anyone, GoalPendingVerify, NoticeGoalReady)
	d := step(gxEvent(GoalMilestoneClosed, "lead"), gxFacts("lead"), GoalVerified, NoticeGoalVerified)
	if slices.Contains(gxKinds(d.Effects), EffectReopenMilestone) || slices.Contains(gxKinds(d.Effects), EffectCloseMilestone) {
		t.Fatalf("effects = %v: the milestone stays closed", gxKinds(d.Effects))
	}
	if !g.MilestoneClosed || g.Verifier != "lead" || len(g.Rejections) != 1 || len(g.Tasks) != 4 {
		t.Fatalf("goal = %+v", g)
	}
	var path []string
	for _, h := range g.History {
		if h.From != h.To {
			path = append(path, string(h.To))
		}
	}
	want := []string{"open", "active", "pending-verify", "active", "pending-verify", "verified"}
	if !slices.Equal(path, want) {
		t.Fatalf("path = %v, want %v", path, want)
	}
}

func TestGoalStateLabels(t *testing.T) {
	for _, s := range GoalStates {
		if got, ok := GoalStateFromLabel(s.Label()); !ok || got != s {
			t.Errorf("GoalStateFromLabel(%q) = %q, %v", s.Label(), got, ok)
		}
		if !GoalOwned(s.Label()) {
			t.Errorf("GoalOwned(%q) = false", s.Label())
		}
		if _, ok := Spec(s.Label()); !ok {
			t.Errorf("no label spec for %q", s.Label())
		}
	}
	for _, l := range []string{"goal", "goal:done", "state:verified", "goals", "verified"} {
		if _, ok := GoalStateFromLabel(l); ok {
			t.Errorf("GoalStateFromLabel(%q) ok", l)
		}
	}
	if !GoalOwned("goal") || GoalOwned("goals") || GoalOwned("state:verified") {
		t.Error("GoalOwned is wrong")
	}
	if got := gxGoal(GoalActive).Labels(); !slices.Equal(got, []string{"goal", "goal:active"}) {
		t.Errorf("Labels() = %v", got)
	}
	if GoalKey(gxRepo, 3) != "acme/app/milestones/3" {
		t.Errorf("GoalKey = %q", GoalKey(gxRepo, 3))
	}
}

func TestGoalTaskOf(t *testing.T) {
	task := &Task{Repo: gxRepo, Number: 7, Title: "Research caching", State: Completed, Attempt: 4, FailedAttempts: 3,
		Escalated: true, Contract: &Contract{Type: Advisory},
		Rejections: []Rejection{
			{By: u("bob"), At: gxAt(10), Reason: "no numbers", Attempt: 1},
			{By: u("erin"), At: gxAt(30), Reason: "still no numbers", Attempt: 3},
		},
		Failures: []Failure{
			{Attempt: 2, At: gxAt(20), Reason: "lint (lint: failure)"},
			{Attempt: 4, At: gxAt(5), Reason: "old"},
		}}
	got := GoalTaskOf(task)
	want := GoalTask{Number: 7, Title: "Research caching", State: Completed, Attempt: 4, FailedAttempts: 3, Rejections: 2,
		Advisory: true, Escalated: true,
		Failures: []GoalFailure{
			{Attempt: 1, At: gxAt(10), By: "bob", Reason: "no numbers"},
			{Attempt: 2, At: gxAt(20), Reason: "lint (lint: failure)"},
			{Attempt: 3, At: gxAt(30), By: "erin", Reason: "still no numbers"},
		}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("GoalTaskOf =\n%+v\nwant\n%+v", got, want)
	}
	if k := GoalTaskOf(&Task{Number: 1, State: Verified, Contract: &Contract{Type: Verifiable}, Unverified: true, Closed: true}); k.Advisory || !k.Unverified || !k.Closed || k.Dropped() {
		t.Fatalf("GoalTaskOf = %+v", k)
	}
}

func TestGoalStats(t *testing.T) {
	first := gxTask(1, Verified)
	retried := gxTask(2, Verified)
	retried.Attempt, retried.FailedAttempts, retried.Rejections = 3, 2, 1
	retried.Failures = []GoalFailure{
		{Attempt: 1, At: gxAt(10), By: "bob", Reason: "wrong"},
		{Attempt: 2, At: gxAt(20), Reason: "unit-test (test: failure)"},
	}
	skipped := gxTask(3, Verified)
	skipped.Unverified = true
	forced := gxTask(4, Verified)
	forced.Forced = true
	advisory := gxTask(5, Completed)
	advisory.Advisory = true
	advisory.Failures = []GoalFailure{{Attempt: 1, At: gxAt(30), By: "lead", Reason: "no sources"}}
	advisoryBuilding := gxTask(6, InProgress)
	advisoryBuilding.Advisory = true
	escalated := gxTask(7, InProgress)
	escalated.Escalated = true
	escalated.Failures = []GoalFailure{
		{Attempt: 1, At: gxAt(1), By: "bob", Reason: "a"},
		{Attempt: 2, At: gxAt(2), By: "bob", Reason: "b"},
		{Attempt: 3, At: gxAt(40), By: "erin", Reason: "c"},
	}
	dropped := gxTask(8, Review)
	dropped.Closed = true

	tests := []struct {
		name  string
		tasks []GoalTask
		check func(t *testing.T, s Stats)
	}{
		{name: "no tasks", tasks: nil, check: func(t *testing.T, s Stats) {
			if s.Total != 0 || s.Verified != 0 || s.PassRate != 0 || s.AverageAttempts != 0 || len(s.ByState) != len(States) || s.RecentFailures != nil {
				t.Errorf("stats = %+v", s)
			}
		}},
		{name: "one first-time pass", tasks: []GoalTask{first}, check: func(t *testing.T, s Stats) {
			if s.Total != 1 || s.Verified != 1 || s.FirstTimePass != 1 || s.PassRate != 100 || s.AverageAttempts != 1 {
				t.Errorf("stats = %+v", s)
			}
		}},
		{name: "first-time pass and a retry", tasks: []GoalTask{first, retried}, check: func(t *testing.T, s Stats) {
			if s.Verified != 2 || s.FirstTimePass != 1 || s.PassRate != 50 || s.AverageAttempts != 2 {
				t.Errorf("stats = %+v", s)
			}
		}},
		{name: "overrides are verified, not passes", tasks: []GoalTask{first, retried, skipped, forced}, check: func(t *testing.T, s Stats) {
			if s.Verified != 4 || s.FirstTimePass != 1 || s.PassRate != 25 || s.AverageAttempts != 1.5 {
				t.Errorf("stats = %+v", s)
			}
			if len(s.Overrides) != 2 || s.Overrides[0].Number != 3 || s.Overrides[1].Number != 4 {
				t.Errorf("overrides = %+v", s.Overrides)
			}
		}},
		{name: "everything", tasks: []GoalTask{first, retried, skipped, advisory, advisoryBuilding, escalated, dropped}, check: func(t *testing.T, s Stats) {
			want := []StateCount{{Pending, 0}, {Assigned, 0}, {InProgress, 2}, {Review, 1}, {Completed, 1}, {Verified, 3}}
			if !reflect.DeepEqual(s.ByState, want) {
				t.Errorf("by state = %+v", s.ByState)
			}
			if s.Total != 7 || s.Dropped != 1 || s.Verified != 3 || s.FirstTimePass != 1 || s.PassRate != 33 || s.AverageAttempts != 1.7 {
				t.Errorf("stats = %+v", s)
			}
			if len(s.Advisory) != 1 || s.Advisory[0].Number != 5 {
				t.Errorf("advisory = %+v", s.Advisory)
			}
			if len(s.Escalated) != 1 || s.Escalated[0].Number != 7 {
				t.Errorf("escalated = %+v", s.Escalated)
			}
			var got []string
			for _, f := range s.RecentFailures {
				got = append(got, fmt.Sprintf("#%d/%d %s", f.Task, f.Attempt, f.Reason))
			}
			wantF := []string{"#7/3 c", "#5/1 no sources", "#2/2 unit-test (test: failure)", "#2/1 wrong", "#7/2 b"}
			if !slices.Equal(got, wantF) {
				t.Errorf("recent failures = %v, want %v", got, wantF)
			}
			if s.RecentFailures[0].Title != "Task 7" || s.RecentFailures[0].By != "erin" {
				t.Errorf("recent failure = %+v", s.RecentFailures[0])
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.check(t, GoalStats(tc.tasks)) })
	}
}

func TestGoalCompact(t *testing.T) {
	g := gxGoal(GoalActive)
	long := strings.Repeat("<x>", 400)
	for n := 1; n <= 200; n++ {
		k := gxTask(n, Verified)
		k.Title = long
		k.Failures = []GoalFailure{{Attempt: 1, At: gxAt(n), By: "bob", Reason: long}}
		g.Tasks = append(g.Tasks, k)
	}
	for i := range 40 {
		g.History = append(g.History, GoalTransition{From: GoalActive, To: GoalActive, Actor: "alice", At: gxAt(i), Why: long})
		g.Rejections = append(g.Rejections, Rejection{By: u("lead"), At: gxAt(i), Reason: long, Attempt: i + 1})
	}
	g.Notes, g.Title = long, long
	before := g.Clone()
	c := g.Compact()
	if !reflect.DeepEqual(before, g) {
		t.Fatal("Compact modified the goal")
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 30000 {
		t.Fatalf("compact record is %d bytes", len(b))
	}
	if len(c.Tasks) != 200 || c.Tasks[0].Title != "" || c.Tasks[0].State != Verified || len(c.History) != compactHistory || len(c.Rejections) != compactRejections {
		t.Fatalf("compact = %d tasks, %d history, %d rejections", len(c.Tasks), len(c.History), len(c.Rejections))
	}
	if c.Rejections[compactRejections-1].Attempt != 40 {
		t.Fatalf("compact keeps the latest rejections: %+v", c.Rejections)
	}
}

// TestGoalHistoryBounded: a long life keeps the latest history lines.
func TestGoalHistoryBounded(t *testing.T) {
	g := gxGoal(GoalActive, gxTask(1, InProgress))
	for i := range 2 * maxGoalHistory {
		d := DecideGoal(g, gxLabel(GoalIssueLabeled, "alice", "goal:verified"), gxFacts("alice"))
		if d.Goal == nil {
			t.Fatalf("event %d: no change", i)
		}
		g = d.Goal
	}
	if len(g.History) != maxGoalHistory {
		t.Fatalf("history has %d lines", len(g.History))
	}
}

// gxSim is a random sequence of goal events on one milestone, with GitHub's
// side of it (the milestone's state) kept as the effects leave it.
type gxSim struct {
	r         *rand.Rand
	g         *Goal
	closed    bool // the milestone on GitHub
	tasks     map[int]GoalTask
	comment   int64
	min       int
	log       []string
	leadMoves int
}

var gxActors = []string{"lead", "alice", "mallory"}

var gxCommands = []string{"/verify-goal", "/verify-goal works", "/reject-goal", "/reject-goal broken", "/status", "/start", "/reopen x", "hello"}

// event makes a random event that could happen now.
func (s *gxSim) event() (GoalEvent, GoalFacts) {
	r := s.r
	actor := gxActors[r.IntN(len(gxActors))]
	s.min++
	ev := GoalEvent{Repo: gxRepo, Milestone: gxMilestone, Actor: actor, At: gxAt(s.min), Title: "Goal", Issue: gxIssue}
	f := gxFacts(actor)
	if r.IntN(2) == 0 {
		f.IntegrationCheck = "e2e"
		gknown(f).Integration = []string{"", IntegrationSuccess, IntegrationFailure, IntegrationPending}[r.IntN(4)]
	}
	switch k := r.IntN(20); {
	case k < 10:
		n := 1 + r.IntN(5)
		t, ok := s.tasks[n]
		if !ok {
			t = gxTask(n, Pending)
		}
		switch r.IntN(4) {
		case 0, 1: // forwards
			if i := t.State.rank(); i+1 < len(States) {
				t.State = States[i+1]
			}
		case 2: // a regression or a rejection
			if t.State == Verified || t.State == Completed {
				t.State = InProgress
				t.Attempt++
			}
		case 3:
			t.Closed = !t.Closed && r.IntN(3) == 0
		}
		ev.Kind, ev.Task, ev.In = GoalTaskChanged, &t, r.IntN(6) != 0
		if ev.In {
			s.tasks[n] = t
		} else {
			delete(s.tasks, n)
		}
	case k < 12:
		if s.closed {
			ev.Kind = GoalMilestoneReopened
		} else {
			ev.Kind = GoalMilestoneClosed
		}
		s.closed = !s.closed
	case k < 16:
		ev.Kind = GoalCommented
		if r.IntN(5) == 0 && s.comment > 0 {
			ev.CommentID = s.comment // redelivered
		} else {
			s.comment++
			ev.CommentID = s.comment
		}
		var lines []string
		for range 1 + r.IntN(2) {
			lines = append(lines, gxCommands[r.IntN(len(gxCommands))])
		}
		ev.Commands = ParseCommands(strings.Join(lines, "\n"))
	case k < 18:
		ev.Kind = []GoalEventKind{GoalIssueLabeled, GoalIssueUnlabeled}[r.IntN(2)]
		ev.Label = []string{"goal", "goal:open", "goal:active", "goal:pending-verify", "goal:verified", "bug"}[r.IntN(6)]
	case k < 19:
		ev.Kind = []GoalEventKind{GoalIssueClosed, GoalIssueReopened}[r.IntN(2)]
	default:
		ev.Kind = []GoalEventKind{GoalMilestoneSeen, GoalMilestoneEdited, GoalIssueCreated}[r.IntN(3)]
	}
	return ev, f
}

// gxAllowedMoves are the transitions of docs/design.md, Goals (and this package's
// decisions on reopened milestones and removed tasks).
var gxAllowedMoves = map[[2]GoalState]bool{
	{"", GoalOpen}:                         true,
	{GoalOpen, GoalActive}:                 true,
	{GoalActive, GoalPendingVerify}:        true,
	{GoalPendingVerify, GoalActive}:        true,
	{GoalPendingVerify, GoalVerified}:      true,
	{GoalVerified, GoalActive}:             true,
	{GoalVerified, GoalPendingVerify}:      true,
	{GoalOpen, GoalOpen}:                   true,
	{GoalActive, GoalActive}:               true,
	{GoalPendingVerify, GoalPendingVerify}: true,
	{GoalVerified, GoalVerified}:           true,
}

func (s *gxSim) fail(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Fatalf("%s\nevents:\n%s", fmt.Sprintf(format, args...), strings.Join(s.log, "\n"))
}

func (s *gxSim) run(t *testing.T, n int) {
	t.Helper()
	for range n {
		ev, f := s.event()
		s.log = append(s.log, fmt.Sprintf("%s by %s (lead %v, %s=%q) task %+v in %v %v %q", ev.Kind, ev.Actor, gknown(f).Person.Lead,
			f.IntegrationCheck, gknown(f).Integration, ev.Task, ev.In, ev.Commands, ev.Label))
		var before *Goal
		if s.g != nil {
			before = s.g.Clone()
		}
		d := DecideGoal(s.g, ev, f)
		if s.g != nil && !reflect.DeepEqual(before, s.g) {
			s.fail(t, "DecideGoal modified its goal")
		}
		for _, e := range d.Effects {
			switch e.Kind {
			case EffectCloseMilestone:
				s.closed = true
			case EffectReopenMilestone:
				s.closed = false
			}
		}
		if d.Goal == nil {
			if s.g == nil && (ev.Kind == GoalMilestoneClosed || ev.Kind == GoalMilestoneReopened) {
				s.closed = false // not a goal: the sequence starts over
			}
			continue
		}
		old := s.g
		s.g = d.Goal
		g := s.g
		if !g.State.Valid() {
			s.fail(t, "state %q", g.State)
		}
		n := 0
		for _, l := range g.Labels() {
			if _, ok := GoalStateFromLabel(l); ok {
				n++
			}
		}
		if n != 1 {
			s.fail(t, "labels %v", g.Labels())
		}
		start := 0
		if old != nil {
			start = len(old.History)
			if start > len(g.History) || len(g.History) == maxGoalHistory {
				start = len(g.History) // trimmed: checked as it went
			}
		}
		for _, h := range g.History[start:] {
			if !gxAllowedMoves[[2]GoalState{h.From, h.To}] {
				s.fail(t, "move %s → %s (%s)", h.From, h.To, h.Why)
			}
			if h.To == GoalVerified && h.From != GoalVerified {
				if !gknown(f).Person.Lead || h.Actor != "lead" {
					s.fail(t, "verified by %q, not a lead", h.Actor)
				}
				s.leadMoves++
			}
		}
		if g.MilestoneClosed != (g.State == GoalVerified) || g.MilestoneClosed != s.closed {
			s.fail(t, "milestone closed: record %v, GitHub %v, goal %s", g.MilestoneClosed, s.closed, g.State)
		}
		if (g.State == GoalPendingVerify || g.State == GoalVerified) && !g.Ready() {
			s.fail(t, "goal %s with tasks %+v", g.State, g.Tasks)
		}
		if g.State == GoalOpen && slices.ContainsFunc(g.Counted(), GoalTask.Started) {
			s.fail(t, "goal open with a started task: %+v", g.Tasks)
		}
		if g.State == GoalVerified && g.Verifier != "lead" {
			s.fail(t, "verified goal's verifier %q", g.Verifier)
		}
		if !slices.IsSortedFunc(g.Tasks, func(a, b GoalTask) int { return a.Number - b.Number }) || len(g.Comments) > maxRemembered {
			s.fail(t, "tasks %v, %d comments", g.Tasks, len(g.Comments))
		}
		// The same event again changes nothing more (comments and tasks:
		// what a redelivery can bring).
		if ev.Kind == GoalTaskChanged || ev.Kind == GoalCommented && ev.CommentID != 0 {
			if again := DecideGoal(g, ev, f); again.Goal != nil || len(again.Effects) != 0 {
				s.fail(t, "redelivered %s changed %+v / %v", ev.Kind, again.Goal, gxKinds(again.Effects))
			}
		}
	}
}

func TestGoalProperties(t *testing.T) {
	// Seeds 0 to 2999, in chunks side by side (each sequence is its own).
	const seeds, chunk = 3000, 375
	var verified atomic.Int64
	t.Run("seeds", func(t *testing.T) {
		for from := uint64(0); from < seeds; from += chunk {
			t.Run(fmt.Sprintf("%d-%d", from, from+chunk-1), func(t *testing.T) {
				t.Parallel()
				for seed := from; seed < from+chunk; seed++ {
					s := &gxSim{r: rand.New(rand.NewPCG(seed, 7)), tasks: map[int]GoalTask{}}
					s.run(t, 60)
					verified.Add(int64(s.leadMoves))
				}
			})
		}
	})
	if !t.Failed() && verified.Load() == 0 {
		t.Fatal("no sequence verified a goal: the generator is too weak")
	}
}

// FuzzDecideGoal: any sequence of events keeps the invariants.
func FuzzDecideGoal(f *testing.F) {
	f.Add(uint64(1), uint64(2), uint8(40))
	f.Add(uint64(99), uint64(0), uint8(200))
	f.Fuzz(func(t *testing.T, a, b uint64, n uint8) {
		s := &gxSim{r: rand.New(rand.NewPCG(a, b)), tasks: map[int]GoalTask{}}
		s.run(t, int(n))
	})
}
