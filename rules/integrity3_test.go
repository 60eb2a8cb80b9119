package rules

import (
	"fmt"
	"testing"
)

// Table tests for the third round of integrity defences (the attacks on the
// second round): a head moved back to rejected commits goes stale; a merged
// pull request linked again with a new head goes stale; a withdrawn approval
// of a merged head stops counting, and an approval kept from an earlier
// attempt makes its author an approver of the attempt it completes.

// secondAttempt is fixture task s in its second attempt: h1 was rejected,
// #12's head is now h2, approved by carol (and, verified, verified by bob).
func secondAttempt(s State) *Task {
	t := fxTask(s, true)
	t.Attempt = 2
	t.RejectedHeads = []string{fxHead}
	t.Rejections = []Rejection{{By: u("erin"), At: fxAt(2), Reason: "the password is logged", Attempt: 1}}
	t.PRs[0].Head = "h2"
	for i := range t.Approvals {
		t.Approvals[i].Head = "h2"
	}
	return t
}

func verifierCleared(t *testing.T, d Decision) {
	t.Helper()
	if !d.Task.Verifier.IsZero() || !d.Task.VerifiedAt.IsZero() {
		t.Errorf("the verification stands: verifier %v at %v", d.Task.Verifier, d.Task.VerifiedAt)
	}
}

func TestDecideTaskHeadBackToRejectedCommits(t *testing.T) {
	stale := step{Review, "new commits on #12, back to h1, commits a verifier rejected: approvals and verification are stale"}
	runEventCases(t, []eventCase{
		{name: "verified/force-pushed back to the rejected head: stale, the verification void", task: secondAttempt(Verified),
			ev:   fxPREvent(PRPushed, fxHead, false),
			want: want{state: Review, steps: []step{stale}, labels: lbl(Review), check: verifierCleared}},
		{name: "completed/force-pushed back to the rejected head: stale", task: secondAttempt(Completed),
			ev:   fxPREvent(PRPushed, fxHead, false),
			want: want{state: Review, steps: []step{stale}, labels: lbl(Review)}},
		{name: "review/force-pushed back to the rejected head: stays in review, unapproved", task: secondAttempt(Review),
			ev:   fxPREvent(PRPushed, fxHead, false),
			want: want{state: Review}},
		{name: "in-progress/the rejected head pushed again submits nothing", task: func() *Task {
			t := secondAttempt(InProgress)
			t.PRs[0].Head, t.Failing = "h0", true
			return t
		}(), ev: fxPREvent(PRPushed, fxHead, false),
			want: want{state: InProgress}},
		{name: "verified/closed and reopened on the verified head h2: stands", task: closed(secondAttempt(Verified)),
			ev:   fxPREvent(PRLinked, "h2", false),
			want: want{state: Verified, steps: []step{{Verified, "its head h2 is unchanged, so what was approved and verified for it stands"}}}},
		{name: "verified/closed, and reopened on the rejected head h1: stale", task: closed(secondAttempt(Verified)),
			ev: fxPREvent(PRLinked, fxHead, false),
			want: want{state: Review, steps: []step{{Review, "#12 closes this task again, back to h1, commits a verifier rejected: approvals and verification are stale"}},
				labels: lbl(Review), check: verifierCleared}},
	})
}

// mergedPR is pull request n (alice's unless it is #12, dave's) as a
// merged event shows it, at head.
func mergedPR(kind EventKind, n int, head string) Event {
	e := fxPREvent(kind, head, false)
	e.PR.Number, e.PR.Open, e.PR.Merged = n, false, true
	if n != fxPR {
		e.PR.Author = u("alice")
	}
	return e
}

func TestDecideTaskMergedNewHeadLinked(t *testing.T) {
	runEventCases(t, []eventCase{
		{name: "verified/#12 unlinked, merged at a new head, linked again: stale", task: closed(fxTask(Verified, true)),
			ev: mergedPR(PRLinked, fxPR, "h2"),
			want: want{state: Review, steps: []step{{Review, "#12 closes this task, merged at h2: approvals and verification are stale"}},
				labels: lbl(Review), check: func(t *testing.T, d Decision) {
					verifierCleared(t, d)
					if u := d.Task.Unapproved(); len(u) != 1 || u[0].Number != fxPR || u[0].Head != "h2" {
						t.Errorf("unapproved %+v, want #12 at h2", u)
					}
				}}},
		{name: "completed/#12 linked again, merged at a new head: stale", task: closed(fxTask(Completed, true)),
			ev:   mergedPR(PRLinked, fxPR, "h2"),
			want: want{state: Review, steps: []step{{Review, "#12 closes this task, merged at h2"}}, labels: lbl(Review)}},
		{name: "verified/a merged #13 no one approved linked for the first time: stale", task: fxTask(Verified, true),
			ev:   mergedPR(PRLinked, 13, "h9"),
			want: want{state: Review, steps: []step{{Review, "#13 closes this task, merged at h9"}}, labels: lbl(Review), check: verifierCleared}},
		{name: "verified/#12 linked again, merged at the verified head: stands", task: closed(fxTask(Verified, true)),
			ev: mergedPR(PRLinked, fxPR, fxHead),
			want: want{state: Verified, check: func(t *testing.T, d Decision) {
				if d.Task.Verifier.IsZero() || !d.Task.PRs[0].Merged {
					t.Errorf("verifier %v, #12 %+v", d.Task.Verifier, d.Task.PRs[0])
				}
			}}},
		{name: "verified/#12 merged as it was verified: stands", task: fxTask(Verified, true),
			ev: mergedPR(PRMerged, fxPR, fxHead), want: want{state: Verified}},
	})
}

// keptForMerged12 is a task in review in its second attempt: #12 (head h1)
// merged, approved by bob in the first attempt (kept), and #13 (alice's, head
// h2) open, approved by carol in this one when approved13 is set.
func keptForMerged12(s State, approved13 bool) *Task {
	t := fxTask(s, true)
	t.Attempt = 2
	t.PRs[0].Open, t.PRs[0].Merged = false, true
	t.PRs = append(t.PRs, LinkedPR{Number: 13, Author: u("alice"), Head: "h2", Open: true})
	t.Approvals, t.Approvers = nil, nil
	if approved13 {
		t.Approvals = []Approval{{By: u("carol"), Head: "h2", PR: 13, At: fxAt(50)}}
		t.Approvers = us("carol")
	}
	t.MergedApprovals = []Approval{{By: u("bob"), Head: fxHead, PR: fxPR, At: fxAt(30)}}
	return t
}

// on12 is a review of the merged #12's head h1 by reviewer.
func on12(reviewer, state string) Event {
	e := fxReview(reviewer, state, fxHead, "")
	e.PR.Open, e.PR.Merged = false, true
	return e
}

func TestDecideTaskKeptApprovalOfAMergedHead(t *testing.T) {
	noKept := func(t *testing.T, d Decision) {
		t.Helper()
		if len(d.Task.MergedApprovals) != 0 || d.Task.headApproved(d.Task.PRs[0]) {
			t.Errorf("bob's withdrawn approval of merged #12 still counts: %+v", d.Task.MergedApprovals)
		}
	}
	approver := func(login string) func(*testing.T, Decision) {
		return func(t *testing.T, d Decision) {
			t.Helper()
			if !d.Task.IsApprover(u(login)) {
				t.Errorf("%s is not an approver of the attempt: approvers %v", login, d.Task.Approvers)
			}
		}
	}
	runEventCases(t, []eventCase{
		{name: "completed/bob's kept approval of merged #12 dismissed: back to review", task: keptForMerged12(Completed, true),
			ev:   on12("bob", "dismissed"),
			want: want{state: Review, steps: []step{{Review, "the approval by @bob on #12 was dismissed"}}, labels: lbl(Review), check: noKept}},
		{name: "completed/bob requests changes on merged #12: back to review", task: keptForMerged12(Completed, true),
			ev:   on12("bob", "changes_requested"),
			want: want{state: Review, steps: []step{{Review, "changes requested by @bob on #12"}}, labels: lbl(Review), check: noKept}},
		{name: "review/bob's kept approval of merged #12 dismissed: #12 needs a new approval", task: keptForMerged12(Review, false),
			ev: on12("bob", "dismissed"), want: want{state: Review, check: noKept}},
		{name: "review/carol approves #13; bob's kept approval of #12 completes it with hers: both approve this attempt",
			task: keptForMerged12(Review, false),
			ev: func() Event {
				e := fxReview("carol", "approved", "h2", "")
				e.PR.Number, e.PR.Author, e.PR.Head = 13, u("alice"), "h2"
				return e
			}(),
			want: want{state: Completed, steps: []step{{Completed, "approved by @carol on #13"}}, labels: lbl(Completed),
				check: func(t *testing.T, d Decision) {
					approver("carol")(t, d)
					approver("bob")(t, d)
				}}},
		{name: "completed/bob, whose kept approval of #12 completed this attempt, may not verify it", task: func() *Task {
			t := keptForMerged12(Completed, true)
			t.Approvers = append(t.Approvers, u("bob"))
			return t
		}(), ev: fxComment("bob", "/verify"),
			want: want{state: Completed, notices: []NoticeKind{NoticeRefused}, check: refusedFor("@bob approved this attempt")}},
	})
}

func TestDecideTaskReopenedWithAHeadPushedWhileClosed(t *testing.T) {
	reopened := func(head string, pushers ...string) Event {
		e := pushed(PRLinked, head, pushers...)
		e.Actor = u("bob")
		return e
	}
	runEventCases(t, []eventCase{
		{name: "verified/reopened by bob with the head he pushed while it was closed: he builds, stale", task: closed(fxTask(Verified, true)),
			ev: reopened("h2", "bob"),
			want: want{state: Review, steps: []step{{Review, "#12 closes this task again: approvals and verification are stale"}}, labels: lbl(Review),
				check: func(t *testing.T, d Decision) {
					builderAs("bob", "pushed to #12")(t, d)
					verifierCleared(t, d)
				}}},
		{name: "review/reopened by bob with his head; erin approves; bob's /verify is refused", task: func() *Task {
			t := closed(fxTask(Review, true))
			d := DecideTask(t, reopened("h2", "bob"), fxFacts("bob"))
			d = DecideTask(d.Task, func() Event { e := fxReview("erin", "approved", "h2", ""); e.PR.Head = "h2"; return e }(), fxFacts("erin"))
			return d.Task
		}(), ev: fxComment("bob", "/verify"),
			want: want{state: Completed, notices: []NoticeKind{NoticeRefused}, check: refusedFor("@bob built this task (pushed to #12)")}},
	})
}

// botPushed is a completed task whose #12 carries a commit of bob's git
// identity, linked to no account, pushed by github-actions[bot] (so the
// task's opener, lead, flies it by default).
func botPushed() *Task {
	t := fxTask(Completed, true)
	t.PRs[0].Unresolved = []string{"Bob <bob@laptop.local> (commit author on #12)"}
	t.PRs[0].BotPushers = us("github-actions[bot]")
	t.Builders = append(t.Builders, MemberOf(u("github-actions[bot]"), "pushed to #12"), MemberOf(u("lead"), "pilot of github-actions[bot]"))
	return t
}

func TestDecideTaskUnlinkedCommitsPushedByABot(t *testing.T) {
	pilot := func(login string) func(*Facts) {
		return func(f *Facts) { f.Config.Agents = map[string]string{"github-actions[bot]": login} }
	}
	verified := step{Verified, "/verify"}
	runEventCases(t, []eventCase{
		{name: "completed/bob's /verify refused: only a lead may verify, and the reply says how to lift it", task: botPushed(),
			ev: fxComment("bob", "/verify"),
			want: want{state: Completed, notices: []NoticeKind{NoticeRefused},
				check: refusedFor("Bob <bob@laptop.local>", "@github-actions[bot]", "only a lead may /verify", "link that email", "`agents:`")}},
		{name: "completed/a lead's /verify is accepted", task: func() *Task {
			t := botPushed()
			t.Builders = t.Builders[:len(t.Builders)-1] // the bot's default pilot was someone else
			t.Builders = append(t.Builders, MemberOf(u("carol"), "pilot of github-actions[bot]"))
			return t
		}(), ev: fxComment("lead", "/verify"),
			want: want{state: Verified, steps: []step{verified}, labels: lbl(Verified)}},
		{name: "completed/agents: names erin as the bot's pilot after it pushed: still only a lead", task: botPushed(), facts: pilot("erin"),
			ev:   fxComment("bob", "/verify"),
			want: want{state: Completed, notices: []NoticeKind{NoticeRefused}, check: refusedFor("only a lead may /verify", "push again")}},
		{name: "review/agents: names bob as the bot's pilot, and the bot pushes again: bob builds", task: func() *Task {
			t := botPushed()
			t.State = Review
			return t
		}(), facts: pilot("bob"), ev: pushed(PRPushed, "h2", "github-actions[bot]"),
			want: want{state: Review, check: builderAs("bob", "pilot of github-actions[bot]")}},
		{name: "completed/agents: named erin as the bot's pilot when it pushed: bob may verify", task: func() *Task {
			t := botPushed()
			t.Builders = append(t.Builders, MemberOf(u("erin"), "pilot of github-actions[bot]"))
			return t
		}(), facts: pilot("erin"), ev: fxComment("bob", "/verify"),
			want: want{state: Verified, steps: []step{verified}, labels: lbl(Verified)}},
		{name: "completed/unlinked commits pushed by a person: the pusher builds, bob may verify", task: func() *Task {
			t := botPushed()
			t.PRs[0].BotPushers = nil
			return t
		}(), ev: fxComment("bob", "/verify"),
			want: want{state: Verified, steps: []step{verified}, labels: lbl(Verified)}},
		{name: "completed/a bot pushed commits all linked to accounts: bob may verify", task: func() *Task {
			t := botPushed()
			t.PRs[0].Unresolved = nil
			return t
		}(), ev: fxComment("bob", "/verify"),
			want: want{state: Verified, steps: []step{verified}, labels: lbl(Verified)}},
		{name: "completed/bob may still /reject", task: botPushed(),
			ev:   fxComment("bob", "/reject the session never expires"),
			want: want{state: InProgress, steps: []step{{InProgress, "/reject"}}, labels: lbl(InProgress), notices: []NoticeKind{NoticeRejected}}},
		{name: "review/a bot's push is recorded on the pull request", task: fxTask(Review, true),
			ev: pushed(PRPushed, "h2", "github-actions[bot]", "dave"),
			want: want{state: Review, check: func(t *testing.T, d Decision) {
				if b := d.Task.PRs[0].BotPushers; len(b) != 1 || b[0].Login != "github-actions[bot]" {
					t.Errorf("bot pushers %v", b)
				}
				builderAs("lead", "pilot of github-actions[bot]")(t, d)
			}}},
	})
}

// A bystander closes and reopens the verified task's pull request, again and
// again: each close and reopen is counted on the first, not added.
func TestDecideTaskRepeatedNotesAreCounted(t *testing.T) {
	task := fxTask(Verified, true)
	start := len(task.History)
	unlink := fxPREvent(PRUnlinked, fxHead, false)
	unlink.PR.Open, unlink.Actor = false, u("erin")
	relink := fxPREvent(PRLinked, fxHead, false)
	relink.Actor = u("erin")
	for i := range 50 {
		for _, ev := range []Event{unlink, relink} {
			ev.At = fxAt(200 + i)
			d := decide(t, task, ev, fxFacts("erin"))
			if d.Task == nil {
				t.Fatalf("round %d: no record", i)
			}
			task = d.Task
		}
	}
	if task.State != Verified || task.Verifier.IsZero() {
		t.Fatalf("the loop changed the task: %s, verifier %v", task.State, task.Verifier)
	}
	added := task.History[start:]
	if len(added) != 2 || added[0].Repeats != 49 || added[1].Repeats != 49 || !added[1].Last.Equal(fxAt(249)) {
		t.Fatalf("history added:\n%s(repeats %d, %d)", fmtHistory(added), added[0].Repeats, added[len(added)-1].Repeats)
	}
	// A change of state ends the run: the same note after it is new.
	d := decide(t, task, fxPREvent(PRPushed, "h2", false), fxFacts("dave"))
	d = decide(t, d.Task, unlink, fxFacts("erin"))
	if n := d.Task.History[len(d.Task.History)-1]; n.Repeats != 0 || n.From != Review {
		t.Errorf("a note after a change of state counted on an older one: %+v", n)
	}
}

// The record keeps at most maxHistory entries: the first historyHead, one
// counting those left out, and the latest; a rebuild's card view keeps fewer.
func TestHistoryIsBounded(t *testing.T) {
	task := fxTask(Review, true)
	for i := range 2 * maxHistory {
		who := fmt.Sprintf("user%d", i) // each label change by someone else: nothing to count
		ev := fxIssueEvent(IssueLabeled, who, nil)
		ev.Label, ev.At = Verified.Label(), fxAt(300+i)
		d := decide(t, task, ev, fxFacts(who))
		task = d.Task
	}
	h := task.History
	if len(h) != maxHistory {
		t.Fatalf("%d history entries, want %d", len(h), maxHistory)
	}
	o := h[historyHead]
	first := len(fxTask(Review, true).History)
	if o.Omitted != 2*maxHistory+first-maxHistory+1 || o.From != Review || o.To != Review {
		t.Errorf("the entry counting those left out: %+v", o)
	}
	if last := h[len(h)-1]; last.Actor != fmt.Sprintf("user%d", 2*maxHistory-1) {
		t.Errorf("the latest entry is not kept: %+v", last)
	}
	if h[0].Why != "issue opened" {
		t.Errorf("the first entry is not kept: %+v", h[0])
	}
	for level := range CardViewLevels {
		v := task.CardView(level)
		if len(v.History) > 51 || v.History[len(v.History)-1] != h[len(h)-1] && level == 0 || v.State != task.State {
			t.Errorf("level %d: %d entries, last %+v", level, len(v.History), v.History[len(v.History)-1])
		}
		n := 0
		for _, e := range v.History {
			n += max(e.Omitted, 1)
		}
		if n != o.Omitted+maxHistory-1 {
			t.Errorf("level %d: the view accounts for %d entries, want %d", level, n, o.Omitted+maxHistory-1)
		}
	}
	if len(task.History) != maxHistory || task.History[historyHead] != o {
		t.Error("CardView changed the task")
	}
}
