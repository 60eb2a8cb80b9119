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
