package mcpdemo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Play runs seed 000's simple three-agent workflow through MCP only and prints
// each step to out (with verbose, each tool's whole answer): carol, the lead,
// creates a goal and a task for alice; alice builds and submits it; her own
// approval and verification are refused; carol approves; bob verifies; the
// goal is ready and carol confirms it. It fails when any answer is not the
// one the workflow expects.
func Play(ctx context.Context, out io.Writer, verbose bool) error {
	w, err := NewWorld(ctx, nil)
	if err != nil {
		return err
	}
	defer w.Close()
	agents := map[string]*sdk.ClientSession{}
	for _, login := range []string{"carol", "alice", "bob"} {
		cs, err := w.Agent(ctx, login)
		if err != nil {
			return err
		}
		defer cs.Close()
		agents[login] = cs
	}
	repo := w.Repo()
	fmt.Fprintf(out, "Three agents work through countersign's MCP tools on %s, each with its own GitHub token:\ncarol (lead), alice (builder), bob (verifier).\n\n", repo)

	step := func(who, tool string, args map[string]any, check func(Result) error) (Result, error) {
		r, err := Call(ctx, agents[who], tool, args)
		if err != nil {
			return r, err
		}
		fmt.Fprintf(out, "%-5s → %s %s\n", who, tool, brief(args))
		fmt.Fprintf(out, "        %s\n", summary(r))
		if verbose {
			b, _ := json.MarshalIndent(r.Out, "        ", "  ")
			fmt.Fprintf(out, "        %s\n", b)
		}
		if err := check(r); err != nil {
			return r, fmt.Errorf("%s's %s: %w", who, tool, err)
		}
		return r, nil
	}
	r, err := step("carol", "create_goal", map[string]any{"repo": repo, "title": "Build login page"}, field("goal.state", "open"))
	if err != nil {
		return err
	}
	goal := r.Out["goal"].(map[string]any)["number"]
	r, err = step("carol", "create_task", map[string]any{"repo": repo, "title": "Create login form component", "assignees": []string{"alice"}}, field("state", "assigned"))
	if err != nil {
		return err
	}
	task := r.Out["task"].(string)
	steps := []struct {
		who, tool string
		args      map[string]any
		check     func(Result) error
	}{
		{"carol", "link_task_to_goal", map[string]any{"task": task, "goal": goal}, field("goal.title", "Build login page")},
		{"alice", "start_task", map[string]any{"task": task}, verdict(true, "in-progress")},
		{"alice", "submit_for_review", map[string]any{"task": task, "summary": "Built the form with validation"}, verdict(true, "review")},
		{"alice", "approve_task", map[string]any{"task": task}, verdict(false, "review")},
		{"carol", "approve_task", map[string]any{"task": task}, verdict(true, "completed")},
		{"alice", "verify_task", map[string]any{"task": task, "notes": "works for me"}, verdict(false, "completed")},
		{"bob", "verify_task", map[string]any{"task": task, "notes": "Form renders correctly, validation works"}, verdict(true, "verified")},
		{"carol", "verify_goal", map[string]any{"repo": repo, "goal": goal, "notes": "Login flow works end to end"}, verdict(true, "verified")},
	}
	for _, s := range steps {
		if s.tool == "verify_goal" {
			// The goal follows its tasks a moment later (its own events):
			// the lead reads goal_status until every task is counted verified.
			if err := GoalReady(ctx, agents["carol"], repo, goal); err != nil {
				return err
			}
			if _, err := step("carol", "goal_status", map[string]any{"repo": repo, "goal": goal},
				all(field("state", "pending-verify"), field("counts.verified", float64(1)))); err != nil {
				return err
			}
		}
		if _, err := step(s.who, s.tool, s.args, s.check); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "\nThe goal is verified: every task was verified by someone who neither built nor approved it, and the lead confirmed the whole.\n")
	return nil
}

// GoalReady calls goal_status as cs until the goal is pending-verify (or the
// context ends).
func GoalReady(ctx context.Context, cs *sdk.ClientSession, repo string, goal any) error {
	for {
		r, err := Call(ctx, cs, "goal_status", map[string]any{"repo": repo, "goal": goal})
		if err != nil {
			return err
		}
		if r.Out["state"] == "pending-verify" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("goal %v is still %v: %w", goal, r.Out["state"], ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// brief is a call's arguments on one line.
func brief(args map[string]any) string {
	b, _ := json.Marshal(args)
	return string(b)
}

// summary is an answer on one line.
func summary(r Result) string {
	if r.Error {
		return "error: " + r.Text
	}
	if acc, ok := r.Out["accepted"].(bool); ok {
		if acc {
			return fmt.Sprintf("accepted: now %v", r.Out["state"])
		}
		return fmt.Sprintf("refused (still %v): %v", r.Out["state"], r.Out["reason"])
	}
	b, _ := json.Marshal(r.Out)
	return string(b)
}

// lookup follows a dotted path into a structured answer.
func lookup(m map[string]any, path string) any {
	var cur any = m
	start := 0
	for i := 0; i <= len(path); i++ {
		if i < len(path) && path[i] != '.' {
			continue
		}
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = obj[path[start:i]]
		start = i + 1
	}
	return cur
}

func field(path string, want any) func(Result) error {
	return func(r Result) error {
		if r.Error {
			return fmt.Errorf("tool error: %s", r.Text)
		}
		if got := lookup(r.Out, path); got != want {
			return fmt.Errorf("%s = %v, want %v (answer: %s)", path, got, want, r.Text)
		}
		return nil
	}
}

func verdict(accepted bool, state string) func(Result) error {
	return all(field("accepted", accepted), field("state", state), func(r Result) error {
		if reason, _ := r.Out["reason"].(string); !accepted && reason == "" {
			return fmt.Errorf("refused without a reason: %s", r.Text)
		}
		return nil
	})
}

func all(checks ...func(Result) error) func(Result) error {
	return func(r Result) error {
		for _, c := range checks {
			if err := c(r); err != nil {
				return err
			}
		}
		return nil
	}
}
