package templates

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/rules"
)

// The card shows the commit identities GitHub could not link to an account
// as written (escaped: no markup, no mentions), and, for a task in review,
// which pull request's head still waits for an approval.
func TestCardShowsUnresolvedIdentitiesAndMissingApprovals(t *testing.T) {
	task := &rules.Task{Repo: "acme/app", Number: 4, Title: "Login", State: rules.Review, Attempt: 1,
		Builders: []rules.Member{{ID: 2, Login: "bob", As: "pushed to #7"}},
		PRs: []rules.LinkedPR{
			{Number: 7, Head: "0123456789abcdef", Open: true, Unresolved: []string{"Bob <bob@laptop.local> (commit author on #7)", "**x** @team <y@z> (committer on #7)"}},
			{Number: 8, Head: "fedcba9876543210", Merged: true},
			{Number: 9, Head: "aaaaaaaaaaaaaaaa", Unresolved: []string{"Closed <c@d>"}},
		},
		Approvals: []rules.Approval{{By: rules.User{ID: 3, Login: "dave"}, PR: 7, Head: "0123456789abcdef", At: at(1)}},
		History:   []rules.Transition{{To: rules.Pending, Actor: "carol", At: at(0)}},
	}
	body, err := Render("card", struct {
		Marker string
		Task   *rules.Task
	}{"", task})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"@bob (pushed to #7)",
		"| commit identities on #7 that GitHub could not link to an account | Bob \\<bob@\u200blaptop.local\\> (commit author on #7); \\*\\*x\\*\\* @\u200bteam \\<y@\u200bz\\> (committer on #7) |",
		"**Waiting for an approval:** #8 (merged) has no approval of its head `fedcba9` by someone who did not build it.",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the card does not contain %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "c@d") {
		t.Errorf("the card shows the identities of a closed pull request:\n%s", body)
	}
	task.State = rules.Completed
	if body, _ = Render("card", struct {
		Marker string
		Task   *rules.Task
	}{"", task}); strings.Contains(body, "Waiting for an approval") {
		t.Errorf("a completed task's card waits for an approval:\n%s", body)
	}
}

// The card says when not everyone who pushed to an open pull request is
// known (a fork of an organization's that cannot be read, a branch with more
// activity than read), and that only a lead may verify then: the reason as
// written, with no markup or mention (a branch name is anyone's text).
func TestCardShowsPushersUnread(t *testing.T) {
	task := &rules.Task{Repo: "acme/app", Number: 4, Title: "Login", State: rules.Completed, Attempt: 1,
		PRs: []rules.LinkedPR{
			{Number: 7, Head: "0123456789abcdef", Open: true, PushersUnread: "its branch **x**@team is in forks-inc/app, a fork that belongs to an organization"},
			{Number: 9, Head: "aaaaaaaaaaaaaaaa", PushersUnread: "closed one"},
		},
		History: []rules.Transition{{To: rules.Pending, Actor: "carol", At: at(0)}},
	}
	body, err := Render("card", struct {
		Marker string
		Task   *rules.Task
	}{"", task})
	if err != nil {
		t.Fatal(err)
	}
	want := "| who pushed to #7 | not all known: its branch \\*\\*x\\*\\*@\u200bteam is in forks-inc/app, a fork that belongs to an organization. Only a lead may `/verify` this attempt. |"
	if !strings.Contains(body, want) {
		t.Errorf("the card does not contain %q:\n%s", want, body)
	}
	if strings.Contains(body, "closed one") {
		t.Errorf("the card shows a closed pull request's unread pushers:\n%s", body)
	}
}
