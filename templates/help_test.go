package templates

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/rules"
)

func TestHelpNotice(t *testing.T) {
	n := rules.Notice{Kind: rules.NoticeHelp, Actor: "bob", State: rules.Completed, Help: []rules.HelpEntry{
		{Usage: "/verify [notes]", May: true},
		{Usage: "/status", May: true},
		{Usage: "/start", Why: "only an assignee (@alice) may start it."},
	}}
	type noticeData struct { // as app.noticeData
		*rules.Notice
		Repo  string
		Where int
	}
	body, err := Render("notice-help", noticeData{Notice: &n, Repo: "acme/app", Where: 7})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"@bob, the commands you can use here now (the task is `completed`):\n\n- `/verify [notes]`\n- `/status`\n",
		"Not now, and why:\n\n- `/start`: only an assignee (@\u200balice) may start it.\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("help notice lacks %q:\n%s", want, body)
		}
	}
}
