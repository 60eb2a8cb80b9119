package rules

import (
	"strings"
	"testing"
	"time"
)

func TestCheckFor(t *testing.T) {
	task := func(n int, s State, mod ...func(*Task)) *Task {
		t := &Task{Repo: fxRepo, Number: n, Title: "task " + string(s), State: s, Attempt: 1}
		if s == Verified {
			t.Verifier = u("bob")
		}
		for _, m := range mod {
			m(t)
		}
		return t
	}
	rejected := func(reasons ...string) func(*Task) {
		return func(t *Task) {
			t.Failing = true
			for _, r := range reasons {
				t.Rejections = append(t.Rejections, Rejection{By: u("erin"), Reason: r})
			}
		}
	}
	unverified := func(t *Task) { t.Verifier, t.Unverified = User{}, true }
	forced := func(t *Task) { t.Verifier, t.Forced = User{}, true }
	tests := []struct {
		name       string
		tasks      []*Task
		status     string
		conclusion string
	}{
		{"no tasks: in progress", nil, "in_progress", ""},
		{"no tasks (empty): in progress", []*Task{}, "in_progress", ""},
		{"one verified: success", []*Task{task(3, Verified)}, "completed", "success"},
		{"all verified: success", []*Task{task(3, Verified), task(4, Verified)}, "completed", "success"},
		{"all verified, one by skip-verify, one forced: success", []*Task{task(3, Verified, unverified), task(4, Verified, forced)}, "completed", "success"},
		{"one failing: failure", []*Task{task(3, InProgress, rejected("broken"))}, "completed", "failure"},
		{"one failing among verified: failure", []*Task{task(3, Verified), task(4, InProgress, rejected("broken")), task(5, Verified)}, "completed", "failure"},
		{"one failing among others in progress: failure", []*Task{task(3, Review), task(4, InProgress, rejected("broken"))}, "completed", "failure"},
		{"mixed verified and completed: in progress", []*Task{task(3, Verified), task(4, Completed)}, "in_progress", ""},
		{"mixed verified and review: in progress", []*Task{task(3, Review), task(4, Verified)}, "in_progress", ""},
		{"pending: in progress", []*Task{task(3, Pending)}, "in_progress", ""},
		{"assigned: in progress", []*Task{task(3, Assigned)}, "in_progress", ""},
		{"in progress: in progress", []*Task{task(3, InProgress)}, "in_progress", ""},
		{"review: in progress", []*Task{task(3, Review)}, "in_progress", ""},
		{"completed: in progress", []*Task{task(3, Completed)}, "in_progress", ""},
		{"rejected before, resubmitted: in progress", []*Task{task(3, Review, func(t *Task) {
			t.Rejections = []Rejection{{By: u("erin"), Reason: "old"}}
		})}, "in_progress", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := checkFor(tc.tasks)
			if c.Status != tc.status || c.Conclusion != tc.conclusion {
				t.Errorf("CheckFor = %s/%s, want %s/%s", c.Status, c.Conclusion, tc.status, tc.conclusion)
			}
			if c.Tasks == nil || len(c.Tasks) != len(tc.tasks) {
				t.Fatalf("check tasks %v, want one per task (%d), never nil", c.Tasks, len(tc.tasks))
			}
			for i, ct := range c.Tasks {
				tk := tc.tasks[i]
				if ct.Number != tk.Number || ct.Title != tk.Title || ct.State != tk.State || ct.Verifier != tk.Verifier.Login ||
					ct.Failing != tk.Failing || ct.Unverified != tk.Unverified || ct.Forced != tk.Forced {
					t.Errorf("check task %+v does not report task %+v", ct, *tk)
				}
				if (tk.State == Verified) != (ct.Missing == "") {
					t.Errorf("task #%d in %s: missing %q", tk.Number, tk.State, ct.Missing)
				}
				wantReason := ""
				if tk.Failing && len(tk.Rejections) > 0 {
					wantReason = "rejected by @erin: " + tk.Rejections[len(tk.Rejections)-1].Reason
				}
				if ct.Reason != wantReason {
					t.Errorf("task #%d: reason %q, want %q", tk.Number, ct.Reason, wantReason)
				}
			}
		})
	}
}

func TestCheckForLatestFailure(t *testing.T) {
	at := func(m int) time.Time { return time.Date(2025, 3, 1, 9, m, 0, 0, time.UTC) }
	tk := &Task{Number: 3, State: InProgress, Failing: true,
		Rejections: []Rejection{{By: u("erin"), Reason: "first", At: at(1)}, {By: u("bob"), Reason: "second", At: at(2)}}}
	if c := checkFor([]*Task{tk}); c.Tasks[0].Reason != "rejected by @bob: second" {
		t.Errorf("reason %q, want the latest rejection's", c.Tasks[0].Reason)
	}
	tk.Failures = []Failure{{Attempt: 3, At: at(3), Reason: "unit-test (`test`: failure)"}}
	if c := checkFor([]*Task{tk}); c.Conclusion != "failure" || c.Tasks[0].Reason != "failed its contract: unit-test (`test`: failure)" {
		t.Errorf("check %+v, want the failed criterion, newer than the rejection", c)
	}
	tk.Rejections, tk.Failures = nil, nil
	if c := checkFor([]*Task{tk}); c.Conclusion != "failure" || c.Tasks[0].Reason != "the last attempt failed" {
		t.Errorf("check %+v, want a failure with a generic reason", c)
	}
}

func TestMissing(t *testing.T) {
	tests := []struct {
		state    State
		verifier string
		phrases  []string
	}{
		{Pending, "", []string{"built", "submitted", "approved"}},
		{Assigned, "", []string{"built", "submitted", "approved"}},
		{InProgress, "", []string{"submitted for review", "approved"}},
		{Review, "", []string{"approval", "did not build"}},
		{Completed, "", []string{"/verify", "neither built nor approved"}},
		{Verified, "bob", []string{"verified by @bob"}},
		{Verified, "", []string{"already verified"}},
	}
	for _, tc := range tests {
		t.Run(string(tc.state)+"/"+tc.verifier, func(t *testing.T) {
			got := Missing(&Task{State: tc.state, Verifier: u(tc.verifier)})
			for _, p := range tc.phrases {
				if !strings.Contains(got, p) {
					t.Errorf("Missing = %q, want it to contain %q", got, p)
				}
			}
		})
	}
	if got := Missing(&Task{State: "bogus"}); got != "" {
		t.Errorf("Missing of an unknown state = %q", got)
	}
}

func TestCheckName(t *testing.T) {
	if CheckName != "countersign/verification" {
		t.Errorf("CheckName = %q: the name never changes (branch protection requires it)", CheckName)
	}
}

// checkFor is CheckFor for a pull request #99 at head h99 that closes tasks,
// each of which has seen it.
func checkFor(tasks []*Task) Check {
	pr := &PullRequest{Repo: fxRepo, PRFacts: PRFacts{Number: 99, Head: "h99", Open: true}}
	for _, t := range tasks {
		pr.Links = append(pr.Links, t.Number)
		if t.pr(99) == nil {
			t.PRs = append(t.PRs, LinkedPR{Number: 99, Head: "h99", Open: true})
		}
	}
	return CheckFor(pr, tasks)
}

// A verified task that has not yet seen the pull request's head (a push
// still on its way to it), or a linked issue with no task record, keeps the
// gate closed.
func TestCheckForUnseenHeadsAndUntrackedIssues(t *testing.T) {
	verified := &Task{Repo: fxRepo, Number: 3, State: Verified, Verifier: u("bob"),
		PRs: []LinkedPR{{Number: 99, Head: "old", Open: true}}}
	pr := &PullRequest{Repo: fxRepo, Links: []int{3}, PRFacts: PRFacts{Number: 99, Head: "new", Open: true}}
	if c := CheckFor(pr, []*Task{verified}); c.Status != "in_progress" || !strings.Contains(c.Tasks[0].Missing, "latest commits") {
		t.Errorf("unseen head: %+v", c)
	}
	verified.PRs[0].Head = "new"
	if c := CheckFor(pr, []*Task{verified}); c.Conclusion != "success" {
		t.Errorf("seen head: %+v", c)
	}
	pr.Links = []int{3, 4}
	if c := CheckFor(pr, []*Task{verified, nil}); c.Status != "in_progress" || c.Tasks[1].Number != 4 || c.Tasks[1].Missing == "" {
		t.Errorf("an issue with no task record: %+v", c)
	}
}
