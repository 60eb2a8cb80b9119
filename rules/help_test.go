package rules

import (
	"reflect"
	"strings"
	"testing"
)

// helpOf returns the /help reply's entries of decision dec, by usage.
func helpOf(t *testing.T, effects []Effect) map[string]HelpEntry {
	t.Helper()
	var out map[string]HelpEntry
	for _, e := range effects {
		if e.Notice == nil || e.Notice.Kind != NoticeHelp {
			continue
		}
		if out != nil {
			t.Fatalf("two help replies: %+v", effects)
		}
		out = map[string]HelpEntry{}
		for _, h := range e.Notice.Help {
			out[strings.Fields(h.Usage)[0]] = h
		}
	}
	if out == nil {
		t.Fatalf("no help reply in %+v", effects)
	}
	return out
}

func TestHelp(t *testing.T) {
	tests := []struct {
		name   string
		state  State
		withPR bool
		actor  string
		may    []string          // exactly the commands the actor may use
		why    map[string]string // words the refusal of a command says
	}{
		{"assignee of an assigned task", Assigned, false, "alice",
			[]string{"/start", "/status", "/help"},
			map[string]string{"/verify": "only a `completed`", "/reopen": "only a lead", "/submit": "works on a `in-progress` task"}},
		{"outsider on an assigned task", Assigned, false, "bob",
			[]string{"/status", "/help"},
			map[string]string{"/start": "only an assignee (@alice)"}},
		{"builder on a task in review", Review, false, "alice",
			[]string{"/status", "/help"},
			map[string]string{"/approve": "built this task", "/start": "works on a `assigned` task"}},
		{"outsider on a task in review", Review, false, "bob",
			[]string{"/approve", "/status", "/help"},
			map[string]string{"/verify": "only a `completed`"}},
		{"verifier on a completed task", Completed, true, "bob",
			[]string{"/verify", "/reject", "/status", "/help"},
			map[string]string{"/approve": "approve it with a GitHub review", "/skip-verify": "only a lead"}},
		{"approver on a completed task", Completed, true, "carol",
			[]string{"/status", "/help"},
			map[string]string{"/verify": "approved this attempt", "/reject": "approved this attempt"}},
		{"stranger on a completed task", Completed, true, "mallory",
			[]string{"/status", "/help"},
			map[string]string{"/verify": "no write permission"}},
		{"lead on a completed task", Completed, true, "lead",
			[]string{"/verify", "/reject", "/status", "/help", "/contract", "/skip-verify", "/force-complete"},
			map[string]string{"/reopen": "sends a `verified` task back", "/verify-goal": "works on a goal issue"}},
		{"lead on a verified task", Verified, true, "lead",
			[]string{"/status", "/help", "/reopen", "/contract"},
			map[string]string{"/force-complete": "already `verified`"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			task := fxTask(tt.state, tt.withPR)
			before := snapshot(task)
			dec := DecideTask(task, fxComment(tt.actor, "/help"), fxFacts(tt.actor))
			if !reflect.DeepEqual(snapshot(task), before) {
				t.Errorf("/help modified the task")
			}
			if dec.Task != nil && dec.Task.State != tt.state {
				t.Errorf("/help moved the task to %s", dec.Task.State)
			}
			for _, e := range dec.Effects {
				if e.Kind != EffectNotice && e.Kind != EffectSyncCard && e.Kind != EffectSyncLabels {
					t.Errorf("/help has effect %s", e.Kind)
				}
				if e.Notice != nil && e.Notice.Kind != NoticeHelp {
					t.Errorf("/help posts a %s notice", e.Notice.Kind)
				}
			}
			help := helpOf(t, dec.Effects)
			if len(help) != len(commandOrder) {
				t.Errorf("help lists %d commands, want %d", len(help), len(commandOrder))
			}
			var may []string
			for _, name := range commandOrder {
				h := help["/"+string(name)]
				if h.May {
					may = append(may, "/"+string(name))
				} else if h.Why == "" {
					t.Errorf("%s: refused without a reason", name)
				}
			}
			want := append([]string(nil), tt.may...)
			if !sameSet(may, want) {
				t.Errorf("may use %v, want %v", may, want)
			}
			for cmd, words := range tt.why {
				if h := help[cmd]; h.May || !strings.Contains(h.Why, words) {
					t.Errorf("%s: %+v, want a refusal saying %q", cmd, h, words)
				}
			}
		})
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		found := false
		for _, y := range b {
			found = found || x == y
		}
		if !found {
			return false
		}
	}
	return true
}

// TestHelpAgreesWithTheCommands: whatever /help says a person may use, the
// command itself, run next, is not refused; whatever it says they may not,
// is refused with the same reason.
func TestHelpAgreesWithTheCommands(t *testing.T) {
	for _, s := range States {
		for _, withPR := range []bool{false, true} {
			for _, actor := range []string{"alice", "dave", "carol", "bob", "mallory", "lead"} {
				task := fxTask(s, withPR)
				help := helpOf(t, DecideTask(task, fxComment(actor, "/help"), fxFacts(actor)).Effects)
				for _, name := range commandOrder {
					if name == CmdHelp || name == CmdStatus {
						continue
					}
					line := "/" + string(name)
					if a := sampleArgs(name, task); a != "" {
						line += " " + a
					}
					dec := DecideTask(task, fxComment(actor, line), fxFacts(actor))
					var why string
					for _, e := range dec.Effects {
						if e.Notice != nil && e.Notice.Kind == NoticeRefused {
							why = e.Notice.Refusals[0].Reason
						}
					}
					if h := help[line[:len("/"+string(name))]]; h.May != (why == "") || h.Why != why {
						t.Errorf("%s %v %s: help says %+v, the command says %q", s, withPR, line, h, why)
					}
				}
			}
		}
	}
}

func TestNearMiss(t *testing.T) {
	task := fxTask(Completed, true)
	dec := DecideTask(task, fxComment("bob", "LGTM\n/verfy\n/stauts"), fxFacts("bob"))
	if dec.Task != nil && dec.Task.State != Completed {
		t.Fatalf("a near miss moved the task to %s", dec.Task.State)
	}
	var notices []*Notice
	for _, e := range dec.Effects {
		if e.Notice != nil {
			notices = append(notices, e.Notice)
		}
	}
	if len(notices) != 1 || notices[0].Kind != NoticeRefused || len(notices[0].Refusals) != 2 {
		t.Fatalf("want one reply with two refusals, got %+v", notices)
	}
	for i, want := range []string{"did you mean `/verify`?", "did you mean `/status`?"} {
		if r := notices[0].Refusals[i]; !strings.Contains(r.Reason, want) || !strings.HasPrefix(r.Quote, "/") {
			t.Errorf("refusal %d: %+v, want %q", i, r, want)
		}
	}
	// Nothing near a command: no reply at all.
	if dec := DecideTask(task, fxComment("bob", "/deploy now"), fxFacts("bob")); len(dec.Effects) != 0 {
		t.Errorf("/deploy: %+v", dec.Effects)
	}
}

func TestGoalHelp(t *testing.T) {
	tests := []struct {
		name  string
		goal  *Goal
		actor string
		may   []string
	}{
		{"lead on a pending-verify goal", gxGoal(GoalPendingVerify, gxTask(1, Verified)), "lead",
			[]string{"/verify-goal", "/reject-goal", "/status", "/help"}},
		{"lead on an active goal", gxGoal(GoalActive, gxTask(1, Review)), "lead",
			[]string{"/status", "/help"}},
		{"writer on a pending-verify goal", gxGoal(GoalPendingVerify, gxTask(1, Verified)), "bob",
			[]string{"/status", "/help"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.goal.Clone()
			dec := DecideGoal(tt.goal, gxComment(tt.actor, "/help", "/verfy-goal"), gxFacts(tt.actor))
			if !reflect.DeepEqual(tt.goal, before) {
				t.Errorf("/help modified the goal")
			}
			if dec.Goal != nil && dec.Goal.State != tt.goal.State {
				t.Errorf("/help moved the goal to %s", dec.Goal.State)
			}
			help := helpOf(t, dec.Effects)
			var may []string
			for _, name := range commandOrder {
				if h := help["/"+string(name)]; h.May {
					may = append(may, "/"+string(name))
				} else if h.Why == "" {
					t.Errorf("%s: refused without a reason", name)
				}
			}
			if !sameSet(may, tt.may) {
				t.Errorf("may use %v, want %v", may, tt.may)
			}
			if h := help["/verify"]; h.May || !strings.Contains(h.Why, "works on a task") {
				t.Errorf("/verify on a goal issue: %+v", h)
			}
			var nearMiss bool
			for _, e := range dec.Effects {
				if n := e.Notice; n != nil && n.Kind == NoticeRefused && len(n.Refusals) == 1 && strings.Contains(n.Refusals[0].Reason, "did you mean `/verify-goal`?") {
					nearMiss = true
				}
			}
			if !nearMiss {
				t.Errorf("no reply to the near miss /verfy-goal: %+v", dec.Effects)
			}
		})
	}
}
