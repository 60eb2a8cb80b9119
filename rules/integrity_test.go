package rules

import (
	"slices"
	"testing"
)

// Table tests for the defences of docs/design.md (Roles, The task lifecycle) that rules decides:
// default pilots of agents, outsiders' pull requests, closed issues, and who
// the failed-attempt escalation tells.

func TestDefaultPilotsOfAgents(t *testing.T) {
	withBot := func(mod func(*Event)) Event {
		ev := fxPREvent(PRLinked, fxHead, true)
		ev.Actor = u("copilot[bot]")
		ev.PR.Author = u("copilot[bot]")
		if mod != nil {
			mod(&ev)
		}
		return ev
	}
	tests := []struct {
		name   string
		task   *Task
		ev     Event
		facts  func(*Facts)
		pilots []string // who must be builders as "pilot of copilot[bot]"
		not    []string // who must not be builders
	}{
		{name: "assigned by erin: erin flies it", task: fxTask(Pending, false),
			ev:     fxIssueEvent(IssueAssigned, "erin", func(e *Event) { e.Issue.Assignees = us("copilot[bot]") }),
			pilots: []string{"erin"}, not: []string{"lead"}},
		{name: "its pull request assigned to bob: bob and the opener fly it", task: fxTask(Pending, false),
			ev:     withBot(func(e *Event) { e.PR.Assignees = us("bob") }),
			pilots: []string{"bob", "lead"}},
		{name: "bots among the pull request's assignees are nobody's pilots", task: fxTask(Pending, false),
			ev:     withBot(func(e *Event) { e.PR.Assignees = us("other[bot]", "bob") }),
			pilots: []string{"bob"}, not: []string{"other[bot]"}},
		{name: "another author's pull request: its assignees are not the bot's pilots", task: fxTask(Pending, false),
			ev: func() Event {
				e := fxPREvent(PRLinked, fxHead, true)
				e.Issue.Assignees = us("copilot[bot]")
				e.PR.Committers = []Member{MemberOf(u("copilot[bot]"), "commit author on #12")}
				e.PR.Assignees = us("bob")
				return e
			}(),
			pilots: []string{"lead"}, not: []string{"bob"}},
		{name: "agents: names the pilot: only the configured pilot", task: fxTask(Pending, false),
			ev:     withBot(func(e *Event) { e.PR.Assignees = us("bob") }),
			facts:  func(f *Facts) { f.Config.Agents = map[string]string{"copilot[bot]": "erin"} },
			pilots: []string{"erin"}, not: []string{"bob"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := fxFacts(tc.ev.Actor.Login)
			if tc.facts != nil {
				tc.facts(&f)
			}
			d := DecideTask(tc.task, tc.ev, f)
			if d.Task == nil {
				t.Fatal("no decision")
			}
			for _, p := range tc.pilots {
				b := d.Task.builder(u(p))
				if b == nil || b.As != "pilot of copilot[bot]" {
					t.Errorf("%s is not a pilot of copilot[bot]: builders %+v", p, d.Task.Builders)
				}
			}
			for _, p := range tc.not {
				if d.Task.IsBuilder(u(p)) {
					t.Errorf("%s became a builder: %+v", p, d.Task.Builders)
				}
			}
		})
	}
}

func TestOutsidersPullRequestsLinkNothing(t *testing.T) {
	outsider := func(kind EventKind, mod func(*Event)) Event {
		ev := fxPREvent(kind, "h2", false)
		ev.Actor, ev.PR.Author, ev.PR.Outsider = u("mallory"), u("mallory"), true
		ev.PR.Number = 13
		if mod != nil {
			mod(&ev)
		}
		return ev
	}
	tests := []struct {
		name    string
		task    *Task
		ev      Event
		nothing bool
		state   State
	}{
		{"verified task: not sent back to review", fxTask(Verified, true), outsider(PRLinked, nil), true, Verified},
		{"verified task: a push changes nothing", fxTask(Verified, true), outsider(PRPushed, nil), true, Verified},
		{"pending task: no jump to review", fxTask(Pending, false), outsider(PRLinked, nil), true, Pending},
		{"untracked issue: not tracked", nil, outsider(PRLinked, nil), true, ""},
		{"review task: an outsider's open PR does not block", fxTask(Review, true), outsider(PRLinked, nil), true, Review},
		{"assigned to the outsider: links", fxTask(Pending, false), outsider(PRLinked, func(e *Event) {}), false, Review},
		{"linked while assigned, unassigned since: its events count for nothing", func() *Task {
			t := fxTask(InProgress, false)
			t.PRs = append(t.PRs, LinkedPR{Number: 13, Author: u("mallory"), Head: "h1", Draft: true, Open: false, Outsider: true})
			return t
		}(), outsider(PRPushed, nil), true, InProgress},
		{"linked and still assigned: its events count", func() *Task {
			t := fxTask(InProgress, false)
			t.Assignees = append(t.Assignees, u("mallory"))
			t.PRs = append(t.PRs, LinkedPR{Number: 13, Author: u("mallory"), Head: "h1", Draft: true, Open: true, Outsider: true})
			return t
		}(), outsider(PRReady, nil), false, Review},
		{"a writer's pull request links", fxTask(Pending, false), func() Event {
			e := outsider(PRLinked, nil)
			e.PR.Outsider = false
			return e
		}(), false, Review},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "assigned to the outsider: links" {
				tc.task.Assignees = us("mallory")
				tc.task.State = Assigned
			}
			d := DecideTask(tc.task, tc.ev, fxFacts("mallory"))
			if tc.nothing {
				if d.Task != nil || len(d.Effects) > 0 || len(d.Refresh) > 0 {
					t.Fatalf("want nothing, got task %+v effects %+v refresh %v", d.Task, d.Effects, d.Refresh)
				}
				return
			}
			if d.Task == nil || d.Task.State != tc.state {
				t.Fatalf("want state %s, got %+v", tc.state, d.Task)
			}
		})
	}
}

// Unassigning an outsider takes their pull request out of the task: it no
// longer blocks completion, and its later pushes void nothing.
func TestUnassignedOutsidersPullRequestStopsCounting(t *testing.T) {
	task := fxTask(Review, true)
	task.Assignees = us("alice", "mallory")
	task.PRs = append(task.PRs, LinkedPR{Number: 13, Author: u("mallory"), Head: "m1", Open: true, Outsider: true})
	ev := fxIssueEvent(IssueAssigned, "lead", func(e *Event) { e.Issue.Assignees = us("alice") })
	d := DecideTask(task, ev, fxFacts("lead"))
	if d.Task == nil || d.Task.pr(13).Open {
		t.Fatalf("the unassigned outsider's #13 still counts: %+v", d.Task)
	}
	// carol's approval of #12 now covers all the work.
	approved := fxReview("carol", "approved", fxHead, "")
	d2 := DecideTask(d.Task, approved, fxFacts("carol"))
	if d2.Task == nil || d2.Task.State != Completed {
		t.Fatalf("want completed once the only counted pull request is approved, got %+v", d2.Task)
	}
	push := fxPREvent(PRPushed, "m2", false)
	push.Actor, push.PR.Author, push.PR.Outsider, push.PR.Number = u("mallory"), u("mallory"), true, 13
	if d3 := DecideTask(d2.Task, push, fxFacts("mallory")); d3.Task != nil || len(d3.Effects) > 0 {
		t.Fatalf("the unassigned outsider's push changed the task: %+v", d3)
	}
}

func TestFailedAttemptEscalationNamesLeadsAndFailures(t *testing.T) {
	task := fxTask(Review, true)
	task.FailedAttempts = 2
	task.Failures = []Failure{{Attempt: 1, At: fxAt(1), PR: fxPR, Head: "h0", Reason: "unit-test (test: failure)"},
		{Attempt: 2, At: fxAt(2), PR: fxPR, Head: "h0b", Reason: "lint (lint: failure)"}}
	task.Contract.Criteria = append(task.Contract.Criteria, Criterion{Activity: "unit-test", Description: "Unit tests pass"})
	ev := fxPREvent(PRChecked, fxHead, false)
	ev.PR.Runs = append(fxRuns(), CIRun{Name: "test", ID: 3, State: "completed", Conclusion: "failure", At: fxAt(99), App: "github-actions", Made: MadeByJob})
	d := DecideTask(task, ev, fxFacts(""))
	if d.Task == nil || !d.Task.Escalated {
		t.Fatalf("not escalated: %+v", d.Task)
	}
	var esc *Notice
	for _, e := range d.Effects {
		if e.Notice != nil && e.Notice.Kind == NoticeEscalated {
			esc = e.Notice
		}
	}
	if esc == nil {
		t.Fatal("no escalation notice")
	}
	if !esc.ByFailures || esc.FailedAttempts != 3 || len(esc.Failures) != 3 || !slices.Equal(esc.Mentions, fxLeads) {
		t.Fatalf("escalation notice %+v: want by failures, 3 failed attempts listed, the leads mentioned", esc)
	}
}
