package rules

import (
	"strings"
	"testing"
)

// A comment full of commands gets one reply, and only the first MaxCommands
// commands are acted on: one comment cannot make countersign write without end.
func TestOneReplyPerCommentAndACap(t *testing.T) {
	body := strings.Repeat("/status\n/verify\n/start\n", 100)
	d := DecideTask(fxTask(Review, false), fxComment("mallory", body), fxFacts("mallory"))
	var notices []*Notice
	for _, e := range d.Effects {
		if e.Kind == EffectNotice {
			notices = append(notices, e.Notice)
		}
	}
	if len(notices) != 2 {
		t.Fatalf("%d notices, want one status and one refusal reply: %+v", len(notices), notices)
	}
	refused := noticeOf(d, NoticeRefused)
	// 10 commands: 4 /status (answered once), 3 /verify and 3 /start refused.
	if refused == nil || len(refused.Refusals) != 6 {
		t.Fatalf("refusal reply %+v, want 6 refusals", refused)
	}
}

// An agent's account acts for its pilot: the agent of a builder neither
// verifies nor approves.
func TestAgentOfABuilderIsNoVerifier(t *testing.T) {
	f := fxFacts("alice-agent")
	known(f).Person = Person{Eligible: true, Writer: true}
	f.Config.Agents = map[string]string{"alice-agent": "alice"}
	d := DecideTask(fxTask(Completed, true), fxComment("alice-agent", "/verify lgtm"), f)
	if d.Task.State != Completed || !strings.Contains(refusalReason(d), "@alice built this task") {
		t.Fatalf("state %s, refusal %q", d.Task.State, refusalReason(d))
	}
	d = DecideTask(fxTask(Review, false), fxComment("alice-agent", "/approve"), f)
	if d.Task.State != Review || !strings.Contains(refusalReason(d), "@alice built this task") {
		t.Fatalf("state %s, refusal %q", d.Task.State, refusalReason(d))
	}
}

// Someone who becomes a builder after approving (assigned, or a co-author of
// a later commit) loses the approval: a completed task goes back to review,
// and they still may not verify.
func TestApproverWhoBecomesABuilder(t *testing.T) {
	ev := fxEvent(IssueAssigned, "lead")
	ev.Issue.Assignees = us("alice", "carol")
	d := DecideTask(fxTask(Completed, true), ev, fxFacts("lead"))
	if d.Task.State != Review || len(d.Task.Approvals) != 0 || !d.Task.IsBuilder(u("carol")) {
		t.Fatalf("state %s, approvals %v, builders %v", d.Task.State, d.Task.Approvals, d.Task.Builders)
	}
}

// After a rejection, closing and reopening the pull request (or relinking it)
// on the rejected commits is no new attempt: only new commits are.
func TestRejectedCommitsAreNoNewAttempt(t *testing.T) {
	f := fxFacts("erin")
	d := DecideTask(fxTask(Completed, true), fxComment("erin", "/reject broken"), f)
	if d.Task.State != InProgress {
		t.Fatalf("state %s after /reject", d.Task.State)
	}
	rejected := d.Task
	unlink := fxPREvent(PRUnlinked, fxHead, false)
	unlink.PR.Open = false
	d = DecideTask(rejected, unlink, f)
	d = DecideTask(d.Task, fxPREvent(PRLinked, fxHead, false), f)
	if d.Task != nil && d.Task.State != InProgress {
		t.Fatalf("relinking the rejected head moved the task to %s", d.Task.State)
	}
	d = DecideTask(rejected, fxPREvent(PRPushed, "fixed", false), f)
	if d.Task.State != Review {
		t.Fatalf("new commits after the rejection: state %s, want review", d.Task.State)
	}
}
