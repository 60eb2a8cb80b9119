package templates

import (
	"fmt"
	"strings"
	"testing"

	"github.com/countersign/countersign/rules"
)

// The picture: each task a node coloured by its state, a solid arrow from
// each blocker that blocks now, a dotted one from one that no longer does,
// blockers outside the goal drawn apart; a progress bar of verified tasks.
func TestGoalPicture(t *testing.T) {
	g := &rules.Goal{Repo: "acme/app", Milestone: 1, Title: "Login", State: rules.GoalActive, Tasks: []rules.GoalTask{
		{Number: 1, Title: "Token endpoint", State: rules.Verified},
		{Number: 2, Title: `Login "form" ] end`, State: rules.InProgress, Blockers: []string{"#1", "acme/api#9"}, Waits: []string{"acme/api#9"}},
		{Number: 3, Title: "Schema", State: rules.Completed, Blockers: []string{"#4"}, Waits: []string{"#4"}, Cycle: true},
		{Number: 4, Title: "Migration", State: rules.Review, Blockers: []string{"#3"}, Waits: []string{"#3"}, Cycle: true},
	}}
	pic, note := Picture(g)
	if note != "" {
		t.Fatalf("left out: %s", note)
	}
	for _, want := range []string{"```mermaid\nflowchart LR", `t1["#1 Token endpoint"]:::verified`, `t2["#2 Login  form    end"]:::inprogress`,
		"t1 -.-> t2", `x0["acme/api#9"]:::outside`, "x0 --> t2", "t4 --> t3", "t3 --> t4", `t3["#3 Schema ⟳"]:::completed`, "classDef verified"} {
		if !strings.Contains(pic, want) {
			t.Errorf("the picture lacks %q:\n%s", want, pic)
		}
	}
	if got := Progress(1, 4); got != "`█████░░░░░░░░░░░░░░░` **1 of 4** tasks verified (25%)" {
		t.Errorf("progress: %s", got)
	}
	if got := Progress(0, 0); got != "no task yet" {
		t.Errorf("progress of nothing: %s", got)
	}
	body, err := RenderGoal(g, "", nil)
	if err != nil || !strings.Contains(body, pic) || !strings.Contains(body, "| #2 | Login \"form\" ] end | `in-progress` | 1 | acme/api#9 | — |") {
		t.Fatalf("the dashboard (%v):\n%s", err, body)
	}
}

// Past MaxPictureTasks tasks the dashboard shows the counts only and says so;
// at the bound, with long titles and every task linked, it stays within
// GitHub's limit on an issue body.
func TestGoalPictureBounds(t *testing.T) {
	big := func(n int) *rules.Goal {
		g := &rules.Goal{Repo: "acme/app", Milestone: 1, Title: "Big", State: rules.GoalActive}
		for i := 1; i <= n; i++ {
			gt := rules.GoalTask{Number: i, Title: strings.Repeat("long title ", 30), State: rules.States[i%len(rules.States)]}
			for j := 1; j < i && j <= 8; j++ {
				ref := fmt.Sprintf("#%d", i-j)
				gt.Blockers = append(gt.Blockers, ref)
				gt.Waits = append(gt.Waits, ref)
			}
			g.Tasks = append(g.Tasks, gt)
		}
		return g
	}
	pic, note := Picture(big(MaxPictureTasks + 1))
	if pic != "" || !strings.Contains(note, "51 tasks, more than the 50") {
		t.Fatalf("past the bound: %q %q", pic, note)
	}
	body, err := RenderGoal(big(MaxPictureTasks+1), "", nil)
	if err != nil || strings.Contains(body, "```mermaid") || !strings.Contains(body, "The picture is left out") {
		t.Fatalf("the dashboard past the bound (%v)", err)
	}
	body, err = RenderGoal(big(MaxPictureTasks), "", nil)
	if err != nil || !strings.Contains(body, "```mermaid") || len(body) > MaxGoalBody {
		t.Fatalf("at the bound: %v, %d characters, picture %v", err, len(body), strings.Contains(body, "```mermaid"))
	}
	t.Logf("a goal of %d tasks with %d links each: a dashboard of %d characters", MaxPictureTasks, 8, len(body))
}
