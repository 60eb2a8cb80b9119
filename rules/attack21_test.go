package rules

import "testing"

// Attacks on the second round of integrity defences (issue 21), as table
// cases.

// An approval of a merged pull request's head kept from an earlier attempt
// (MergedApprovals) outlives its own withdrawal: bob's approval of merged #12
// counted in attempt 1; in attempt 2 his review is dismissed, or he requests
// changes on #12, yet #12 still counts as approved and the task stays
// completed on it.
func TestAttackMergedApprovalOutlivesItsWithdrawal(t *testing.T) {
	task := func() *Task {
		t := fxTask(Completed, true)
		t.Attempt = 2
		t.PRs[0].Open, t.PRs[0].Merged, t.PRs[0].Draft = false, true, false
		t.PRs = append(t.PRs, LinkedPR{Number: 13, Author: u("alice"), Head: "h2", Open: true})
		t.Approvals = []Approval{{By: u("carol"), Head: "h2", PR: 13, At: fxAt(50)}}
		t.Approvers = us("carol")
		t.MergedApprovals = []Approval{{By: u("bob"), Head: fxHead, PR: fxPR, At: fxAt(30)}}
		return t
	}
	on12 := func(state string) Event {
		e := fxReview("bob", state, fxHead, "the session is never invalidated")
		e.PR.Open, e.PR.Merged = false, true
		return e
	}
	if !task().approvedNow() {
		t.Fatalf("fixture: the task is not approved to begin with")
	}
	stillApproved := func(t *testing.T, d Decision) {
		t.Helper()
		if d.Task != nil && d.Task.headApproved(d.Task.PRs[0]) {
			t.Errorf("merged #12 still counts as approved by bob's withdrawn approval: merged approvals %+v", d.Task.MergedApprovals)
		}
	}
	runEventCases(t, []eventCase{
		{name: "completed/bob's review of merged #12 dismissed: #12 is no longer approved", task: task(),
			ev: on12("dismissed"), want: want{state: Review, steps: []step{{Review, "the approval by @bob on #12 was dismissed"}}, labels: lbl(Review), check: stillApproved}},
		{name: "completed/bob requests changes on merged #12: #12 is no longer approved", task: task(),
			ev: on12("changes_requested"), want: want{state: Review, steps: []step{{Review, "changes requested by @bob on #12"}}, labels: lbl(Review), check: stillApproved}},
	})
}
