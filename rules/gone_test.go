package rules

import (
	"slices"
	"testing"
)

// A task whose issue was deleted or transferred away leaves its milestone's
// goal (which must not wait for it), and nothing is written to the issue,
// which is gone. An issue that was no task is nothing.
func TestDecideTaskIssueGone(t *testing.T) {
	for _, s := range States {
		t.Run(string(s), func(t *testing.T) {
			task := fxTask(s, s != Pending && s != Assigned)
			task.Milestone = 3
			ev := fxIssueEvent(IssueGone, "lead", func(e *Event) { e.Issue.Milestone = 3 }) // the payload: the issue as it was
			d := DecideTask(task, ev, fxFacts("lead"))
			if d.Task == nil {
				t.Fatal("no record kept")
			}
			if d.Task.Milestone != 0 || d.Task.State != s {
				t.Errorf("record: milestone %d state %s, want 0 and %s", d.Task.Milestone, d.Task.State, s)
			}
			if len(d.Effects) != 0 || len(d.Refresh) != 0 {
				t.Errorf("effects %+v, refresh %v on a gone issue, want none", d.Effects, d.Refresh)
			}
			if !slices.Equal(d.Goals, []GoalNote{{Milestone: 3}}) {
				t.Errorf("goal notes %+v, want milestone 3 left", d.Goals)
			}
			if task.Milestone != 3 {
				t.Error("the task was modified")
			}
		})
	}
	if d := DecideTask(nil, fxIssueEvent(IssueGone, "lead", nil), fxFacts("lead")); d.Task != nil || len(d.Effects) > 0 {
		t.Errorf("an untracked issue gone: %+v", d)
	}
}
