package rules

import (
	"strings"
	"testing"
)

// A reason is required for /reject, /reopen, /skip-verify, /force-complete
// and /reject-goal (DESIGN §6): one that shows nothing (spaces, zero-width
// or other invisible characters) is no reason, and the command is refused as
// if it had none.
func TestInvisibleReasonIsNoReason(t *testing.T) {
	for _, blank := range []string{"\u200b", "\u200b\u200c\u200d", "\u00a0\u3000", "\ufeff", "\u2060", "\u00ad", "\u3164", "\u2800", " \u200b \t"} {
		for _, tc := range []struct {
			state State
			actor string
			cmd   string
		}{
			{Completed, "bob", "/reject " + blank},
			{Verified, "lead", "/reopen " + blank},
			{Completed, "lead", "/skip-verify " + blank},
			{Review, "lead", "/force-complete OVERRIDE " + blank},
		} {
			d := DecideTask(fxTask(tc.state, true), fxComment(tc.actor, tc.cmd), fxFacts(tc.actor))
			if d.Task != nil && d.Task.State != tc.state {
				t.Errorf("%q by %s moved a %s task to %s", tc.cmd, tc.actor, tc.state, d.Task.State)
			}
			r := noticeOf(d, NoticeRefused)
			if r == nil || len(r.Refusals) != 1 || !strings.Contains(r.Refusals[0].Reason, "reason is required") {
				t.Errorf("%q by %s: want a refusal saying a reason is required, got %+v", tc.cmd, tc.actor, r)
			}
		}
	}
	// A reason with something to show is one.
	d := DecideTask(fxTask(Completed, true), fxComment("bob", "/reject \u200bfails on Safari"), fxFacts("bob"))
	if d.Task == nil || d.Task.State != InProgress {
		t.Fatalf("a visible reason after a zero-width space: not rejected")
	}
}

// The parser gives a command's arguments without what shows nothing around
// them, and keeps what does (a zero-width space inside a reason stays).
func TestArgsTrimmedOfInvisibleCharacters(t *testing.T) {
	for body, want := range map[string]string{
		"/reject \u200b":                  "",
		"/reject-goal \ufeff\u2060":       "",
		"/reject \u200bfails\u200b":       "fails",
		"/reject fa\u200bils on Safari  ": "fa\u200bils on Safari",
		"/force-complete OVERRIDE \u3164": "OVERRIDE",
		"/verify\tran it\u00ad":           "ran it",
	} {
		cmds := ParseCommands(body)
		if len(cmds) != 1 || cmds[0].Args != want {
			t.Errorf("%q: %+v, want Args %q", body, cmds, want)
		}
	}
}

// /verify-goal on a task is refused with where it works: the goal issue
// countersign opened for a milestone. A `goal` label makes no issue a goal
// (DESIGN §2), so the reply must not send people to "the one labeled goal".
func TestGoalCommandOnATaskSaysWhereItWorks(t *testing.T) {
	for _, cmd := range []string{"/verify-goal", "/reject-goal broken"} {
		d := DecideTask(fxTask(Completed, true), fxComment("lead", cmd), fxFacts("lead"))
		r := noticeOf(d, NoticeRefused)
		if r == nil || len(r.Refusals) != 1 {
			t.Fatalf("%s on a task: want one refusal, got %+v", cmd, r)
		}
		why := r.Refusals[0].Reason
		if !strings.Contains(why, "countersign opened for a milestone") || strings.Contains(why, "labeled `goal`") || !strings.HasSuffix(why, ".") {
			t.Errorf("%s on a task: %q", cmd, why)
		}
	}
}
