package rules

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// Table tests for the second round of defences of DESIGN §1, §2 and §5: the
// pusher is a builder; every pull request that carries the code, merged ones
// included, needs its own head approved; only a new head voids approvals and
// verification; the card's deletion or edit is recorded and the card written
// back.

// pushed is an event of #12 (head h1 unless head says otherwise) naming
// pushers among the people who pushed to it.
func pushed(kind EventKind, head string, pushers ...string) Event {
	ev := fxPREvent(kind, head, false)
	ev.PR.Pushers = us(pushers...)
	return ev
}

// withPR13 is fixture task s with #13 (alice's, head h2) linked too, as
// open and ready or merged, approved on h2 by approver ("" for no one).
func withPR13(s State, merged bool, approver string) *Task {
	t := fxTask(s, true)
	if len(t.Approvals) == 0 { // #12's head approved by carol
		t.Approvals = []Approval{{By: u("carol"), Head: fxHead, PR: fxPR, At: fxAt(40)}}
		t.Approvers = us("carol")
	}
	t.PRs = append(t.PRs, LinkedPR{Number: 13, Author: u("alice"), Head: "h2", Open: !merged, Merged: merged})
	if approver != "" {
		t.Approvals = append(t.Approvals, Approval{By: u(approver), Head: "h2", PR: 13, At: fxAt(50)})
		t.Approvers = append(t.Approvers, u(approver))
	}
	return t
}

// closed is fixture task s with #12 closed unmerged (its head h1 as it was).
func closed(t *Task) *Task {
	t.PRs[0].Open = false
	return t
}

func builderAs(login, as string) func(*testing.T, Decision) {
	return func(t *testing.T, d Decision) {
		t.Helper()
		b := d.Task.builder(u(login))
		if b == nil || b.As != as {
			t.Errorf("%s is not a builder as %q: builders %+v", login, as, d.Task.Builders)
		}
	}
}

func syncsCard(t *testing.T, d Decision) {
	t.Helper()
	if len(effectsOf(d, EffectSyncCard)) != 1 {
		t.Errorf("want one sync-card effect, got %+v", d.Effects)
	}
}

func TestDecideTaskPushers(t *testing.T) {
	agents := func(f *Facts) { f.Config.Agents = map[string]string{"copilot[bot]": "erin"} }
	runEventCases(t, []eventCase{
		{name: "review/a push by bob, whose commits name no account: bob builds", task: fxTask(Review, true),
			ev:   pushed(PRPushed, "h2", "bob"),
			want: want{state: Review, check: builderAs("bob", "pushed to #12")}},
		{name: "pending/opened by bob for dave: both build", task: fxTask(Assigned, false),
			ev: pushed(PRLinked, "h1", "bob"),
			want: want{state: Review, steps: []step{{InProgress, "#12 opened"}, {Review, "#12 opened"}}, labels: lbl(Review),
				check: builderAs("bob", "pushed to #12")}},
		{name: "completed/the approver turns out to have pushed: her approval stops counting", task: fxTask(Completed, true),
			ev: pushed(PRPushed, fxHead, "carol"),
			want: want{state: Review, steps: []step{{Review, "@carol became a builder"}}, labels: lbl(Review),
				check: builderAs("carol", "pushed to #12")}},
		{name: "review/an agent pushes: its configured pilot builds", task: fxTask(Review, true), facts: agents,
			ev: pushed(PRPushed, "h2", "copilot[bot]"),
			want: want{state: Review, check: func(t *testing.T, d Decision) {
				builderAs("copilot[bot]", "pushed to #12")(t, d)
				builderAs("erin", "pilot of copilot[bot]")(t, d)
			}}},
		{name: "completed/a pusher's /verify is refused", task: func() *Task {
			t := fxTask(Completed, true)
			t.Builders = append(t.Builders, MemberOf(u("bob"), "pushed to #12"))
			return t
		}(), ev: fxComment("bob", "/verify"),
			want: want{state: Completed, notices: []NoticeKind{NoticeRefused}}},
		{name: "unlinked/a pull request that no longer closes the task: its pushers build nothing", task: fxTask(Review, true),
			ev: func() Event { e := pushed(PRUnlinked, fxHead, "bob"); e.PR.Open = false; return e }(),
			want: want{state: Review, steps: []step{{Review, "#12 closed without merging"}}, check: func(t *testing.T, d Decision) {
				if d.Task.IsBuilder(u("bob")) {
					t.Errorf("bob became a builder through an unlinked pull request")
				}
			}}},
	})
}

func TestDecideTaskMergedPullRequestsNeedTheirOwnApproval(t *testing.T) {
	merged13 := func(kind EventKind) Event {
		e := fxPREvent(kind, "h2", false)
		e.PR.Number, e.PR.Author, e.PR.Open, e.PR.Merged = 13, u("alice"), false, true
		return e
	}
	review13 := func(reviewer string) Event {
		e := fxReview(reviewer, "approved", "h2", "")
		e.PR.Number, e.PR.Author, e.PR.Head, e.PR.Open, e.PR.Merged = 13, u("alice"), "h2", false, true
		return e
	}
	runEventCases(t, []eventCase{
		{name: "review/#13 merged with no approval while #12's stands: stays in review", task: withPR13(Review, false, ""),
			ev: merged13(PRMerged),
			want: want{state: Review, steps: []step{{Review, "#13 merged with no approval of its head h2"}}, check: func(t *testing.T, d Decision) {
				if u := d.Task.Unapproved(); len(u) != 1 || u[0].Number != 13 {
					t.Errorf("unapproved %+v, want #13", u)
				}
				if !strings.Contains(Missing(d.Task), "#13") {
					t.Errorf("Missing says %q, want #13 named", Missing(d.Task))
				}
			}}},
		{name: "review/#13 merged approved: completed", task: func() *Task {
			t := withPR13(Review, false, "erin")
			t.PRs[0].Open = false // #12 closed: the approval of #13 is all there is
			return t
		}(), ev: merged13(PRMerged),
			want: want{state: Completed, steps: []step{{Completed, "approved by @erin on #13"}}, labels: lbl(Completed)}},
		{name: "review/the merged #13 approved after the merge: completed", task: withPR13(Review, true, ""),
			ev:   review13("erin"),
			want: want{state: Completed, steps: []step{{Completed, "approved by @erin on #13"}}, labels: lbl(Completed)}},
		{name: "review/a builder's approval of the merged #13 does not count", task: withPR13(Review, true, ""),
			ev:   review13("alice"),
			want: want{state: Review, steps: []step{{Review, "not counted: a builder"}}, notices: []NoticeKind{NoticeIgnored}}},
		{name: "review/a stale approval of the merged #13 does not count", task: withPR13(Review, true, ""),
			ev:   func() Event { e := review13("erin"); e.Review.Head = "h0"; return e }(),
			want: want{state: Review}},
		{name: "review/with a merged pull request, /approve is refused", task: func() *Task {
			t := withPR13(Review, true, "")
			t.PRs[0].Open = false
			return t
		}(), ev: fxComment("erin", "/approve"),
			want: want{state: Review, notices: []NoticeKind{NoticeRefused}}},
	})
}

// A rejection starts a new attempt: the approvals of merged pull requests'
// heads outlive it (merged code never changes), the others do not; the next
// attempt's pull request alone needs a new approval.
func TestMergedApprovalsOutliveTheAttempt(t *testing.T) {
	task := withPR13(Completed, true, "erin") // #12 open approved by carol, #13 merged approved by erin
	d := decide(t, task, fxComment("bob", "/reject the error message is wrong"), fxFacts("bob"))
	if d.Task.State != InProgress || len(d.Task.Approvals) != 0 {
		t.Fatalf("after /reject: state %s, approvals %+v", d.Task.State, d.Task.Approvals)
	}
	if len(d.Task.MergedApprovals) != 1 || !d.Task.MergedApprovals[0].By.Is(u("erin")) {
		t.Fatalf("merged approvals %+v, want erin's of #13", d.Task.MergedApprovals)
	}
	d = decide(t, d.Task, pushed(PRPushed, "h3", "dave"), fxFacts("dave"))
	if d.Task.State != Review {
		t.Fatalf("after new commits: %s", d.Task.State)
	}
	if u := d.Task.Unapproved(); len(u) != 1 || u[0].Number != fxPR {
		t.Fatalf("unapproved %+v, want only #12", u)
	}
	d = decide(t, d.Task, fxReview("carol", "approved", "h3", ""), fxFacts("carol"))
	if d.Task.State != Completed {
		t.Fatalf("after #12's new head is approved: %s\n%s", d.Task.State, fmtHistory(d.Task.History))
	}
	// erin becomes a builder: her approval of the merged head no longer counts.
	ev := fxIssueEvent(IssueAssigned, "lead", func(e *Event) { e.Issue.Assignees = us("alice", "erin") })
	d = decide(t, d.Task, ev, fxFacts("lead"))
	if d.Task.State != Review || len(d.Task.MergedApprovals) != 0 {
		t.Fatalf("erin assigned: state %s, merged approvals %+v", d.Task.State, d.Task.MergedApprovals)
	}
}

func TestDecideTaskSameHeadComesBack(t *testing.T) {
	relink := func(head string) Event { return fxPREvent(PRLinked, head, false) }
	closedPR := func() Event { e := fxPREvent(PRUnlinked, fxHead, false); e.PR.Open = false; return e }
	unlinked := func() Event { return fxPREvent(PRUnlinked, fxHead, false) } // description edited: still open
	stays := func(s State) func(*testing.T, Decision) {
		return func(t *testing.T, d Decision) {
			if s == Verified && !d.Task.Verifier.Is(u("bob")) {
				t.Errorf("verifier %v, want bob's verification to stand", d.Task.Verifier)
			}
			if !slices.ContainsFunc(d.Task.Approvals, func(a Approval) bool { return a.By.Is(u("carol")) && a.Head == fxHead }) {
				t.Errorf("carol's approval of h1 is gone: %+v", d.Task.Approvals)
			}
		}
	}
	runEventCases(t, []eventCase{
		{name: "verified/closed unmerged by a bystander: recorded, nothing voided", task: fxTask(Verified, true),
			ev:   func() Event { e := closedPR(); e.Actor = u("erin"); return e }(),
			want: want{state: Verified, steps: []step{{Verified, "#12 closed without merging"}}, check: stays(Verified)}},
		{name: "verified/description no longer closes it: recorded, nothing voided", task: fxTask(Verified, true),
			ev:   unlinked(),
			want: want{state: Verified, steps: []step{{Verified, "#12 no longer closes this task"}}, check: stays(Verified)}},
		{name: "verified/reopened with the same head: stands", task: closed(fxTask(Verified, true)),
			ev:   relink(fxHead),
			want: want{state: Verified, steps: []step{{Verified, "#12 closes this task again; its head h1 is unchanged"}}, check: stays(Verified)}},
		{name: "completed/relinked with the same head: stands", task: closed(fxTask(Completed, true)),
			ev:   relink(fxHead),
			want: want{state: Completed, steps: []step{{Completed, "#12 closes this task again; its head h1 is unchanged"}}, check: stays(Completed)}},
		{name: "verified/reopened with a new head: stale", task: closed(fxTask(Verified, true)),
			ev:   relink("h2"),
			want: want{state: Review, steps: []step{{Review, "#12 closes this task again: approvals and verification are stale"}}, labels: lbl(Review)}},
		{name: "completed/a head no one approved comes back: review", task: func() *Task {
			t := closed(withPR13(Completed, false, "erin"))
			t.Approvals = slices.DeleteFunc(t.Approvals, func(a Approval) bool { return a.PR == fxPR })
			return t
		}(), ev: relink(fxHead),
			want: want{state: Review, steps: []step{{Completed, "#12 closes this task again; its head h1 is unchanged"},
				{Review, "with a head no approval covers: approvals and verification are stale"}}, labels: lbl(Review)}},
		{name: "in-progress/changes requested, the same head reopened: still in progress", task: func() *Task {
			t := closed(fxTask(InProgress, true))
			t.PRs[0].Draft = false
			return t
		}(), ev: relink(fxHead),
			want: want{state: InProgress, steps: []step{{InProgress, "#12 closes this task again; its head h1 is unchanged"}}}},
	})
}

func TestDecideTaskCardDeletedOrEdited(t *testing.T) {
	for _, kind := range []EventKind{CardDeleted, CardEdited} {
		verb := map[EventKind]string{CardDeleted: "deleted by @erin: posted again", CardEdited: "edited by @erin: written back"}[kind]
		runEventCases(t, []eventCase{
			{name: string(kind) + "/verified", task: fxTask(Verified, true), ev: fxEvent(kind, "erin"),
				want: want{state: Verified, steps: []step{{Verified, "task card " + verb}}, check: func(t *testing.T, d Decision) {
					syncsCard(t, d)
					stays := d.Task.Verifier.Is(u("bob")) && len(d.Task.Approvals) == 1
					if !stays {
						t.Errorf("the card's %s changed the record: %+v", kind, d.Task)
					}
				}}},
			{name: string(kind) + "/review", task: fxTask(Review, false), ev: fxEvent(kind, "mallory"),
				want: want{state: Review, steps: []step{{Review, "task card"}}, check: syncsCard}},
		})
	}
}

// A card deleted or edited over and over is written back each time; the
// history records the first repairs and then stops growing, so no one can
// push the card past GitHub's size limit by scribbling on it.
func TestCardRepairsAreRecordedBoundedly(t *testing.T) {
	task := fxTask(Verified, true)
	for i := range maxCardRepairs + 5 {
		ev := fxEvent(CardEdited, fmt.Sprintf("user%d", i)) // each by someone else: no repeat to count
		d := decide(t, task, ev, fxFacts(ev.Actor.Login))
		syncsCard(t, d)
		want := len(task.History) + 1
		if i >= maxCardRepairs {
			want--
		}
		if len(d.Task.History) != want {
			t.Fatalf("repair %d: %d history entries, want %d", i, len(d.Task.History), want)
		}
		task = d.Task
	}
}

// A new attempt needs an approval of its own: after a regression is
// reopened, work submitted with no pull request is not completed by the
// approval that the merged pull request of the first attempt kept; an
// /approve completes it.
func TestNewAttemptNeedsItsOwnApproval(t *testing.T) {
	task := fxTask(Verified, true)
	task.PRs[0].Open, task.PRs[0].Merged = false, true
	d := decide(t, task, fxComment("lead", "/reopen the form breaks on Safari"), fxFacts("lead"))
	if d.Task.State != InProgress || len(d.Task.MergedApprovals) != 1 {
		t.Fatalf("after /reopen: %s, merged approvals %+v", d.Task.State, d.Task.MergedApprovals)
	}
	ev := fxComment("alice", "/submit fixed")
	ev.CommentID = 901
	d = decide(t, d.Task, ev, fxFacts("alice"))
	if d.Task.State != Review || d.Task.approvedNow() {
		t.Fatalf("after /submit: %s, approved now %v", d.Task.State, d.Task.approvedNow())
	}
	ev = fxComment("erin", "/approve")
	ev.CommentID = 902
	d = decide(t, d.Task, ev, fxFacts("erin"))
	if d.Task.State != Completed {
		t.Fatalf("after /approve: %s\n%s", d.Task.State, fmtHistory(d.Task.History))
	}
}
