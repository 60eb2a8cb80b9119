package mcp

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/app/mcp/ghread"
)

func testServer() *server { return &server{opts: Options{Bot: DefaultBot}} }

// A refusal counts only when countersign's bot (an account of type Bot)
// answered after the command, quoting exactly that command.
func TestReplyQuotesThisCommand(t *testing.T) {
	s := testServer()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cmd := &ghread.Comment{ID: 10, Author: "alice", Body: "/verify looks good", CreatedAt: at}
	refusal := func(id int64, author string, bot bool, quote string) *ghread.Comment {
		return &ghread.Comment{ID: id, Author: author, Bot: bot, CreatedAt: at.Add(time.Second),
			Body: "<!-- countersign:notice -->\n> " + noMention(quote) + "\n\n@alice **Refused:** @alice built this task."}
	}
	for _, tc := range []struct {
		name string
		c    *ghread.Comment
		want bool
	}{
		{"the bot quoting this command", refusal(11, "countersign[bot]", true, "/verify looks good"), true},
		{"another command of the same person", refusal(11, "countersign[bot]", true, "/verify"), false},
		{"a reply older than the command", refusal(9, "countersign[bot]", true, "/verify looks good"), false},
		{"a person's account named like the bot", refusal(11, "countersign[bot]", false, "/verify looks good"), false},
		{"another bot", refusal(11, "other[bot]", true, "/verify looks good"), false},
	} {
		_, ok := s.reply([]*ghread.Comment{tc.c}, cmd, "alice", cmd.Body)
		if ok != tc.want {
			t.Errorf("%s: counted %v, want %v", tc.name, ok, tc.want)
		}
	}
	// Two refusals to alice, the first of another command: the reason is
	// the one for this command.
	other := refusal(11, "countersign[bot]", true, "/start")
	other.Body = strings.Replace(other.Body, "@alice built this task.", "only an assignee may start it.", 1)
	mine := refusal(12, "countersign[bot]", true, "/verify looks good")
	if r, ok := s.reply([]*ghread.Comment{other, mine}, cmd, "alice", cmd.Body); !ok || r != "@alice built this task." {
		t.Errorf("reply among two refusals: %q %v", r, ok)
	}
	// A refused claim of completion counts when it quotes this /submit.
	sub := &ghread.Comment{ID: 20, Author: "alice", Body: "/submit not done yet, needs human", CreatedAt: at}
	claim := func(quote string) *ghread.Comment {
		return &ghread.Comment{ID: 21, Author: "countersign[bot]", Bot: true, CreatedAt: at,
			Body: "**Not submitted:** this claim that #1 is done also says “needs human”:\n\n> " + quote + "\n\nWork that still needs..."}
	}
	if _, ok := s.reply([]*ghread.Comment{claim("/submit not done yet, needs human")}, sub, "alice", sub.Body); !ok {
		t.Error("a refused claim quoting this /submit did not count")
	}
	if _, ok := s.reply([]*ghread.Comment{claim("/submit other work, needs human")}, sub, "alice", sub.Body); ok {
		t.Error("a refused claim quoting another /submit counted")
	}
	long := "/submit " + strings.Repeat("word ", 60) + "needs human"
	clipped := "…" + long[len(long)-150:]
	if _, ok := s.reply([]*ghread.Comment{claim(clipped)}, &ghread.Comment{ID: 20, CreatedAt: at}, "alice", long); !ok {
		t.Error("a refused claim quoting this long /submit, clipped, did not count")
	}
}

// A JSON number is a milestone number; a string a title, which falls back to
// a number only when no milestone has it as its title.
func TestFindMilestone(t *testing.T) {
	ms := []ghread.Milestone{{Number: 1, Title: "2"}, {Number: 2, Title: "1"}, {Number: 3, Title: "Login page"}}
	for _, tc := range []struct {
		ref  GoalRef
		want int
	}{
		{GoalRef{Number: 1}, 1},
		{GoalRef{Title: "1"}, 2},
		{GoalRef{Title: "2"}, 1},
		{GoalRef{Title: "3"}, 3},
		{GoalRef{Title: " login PAGE "}, 3},
		{GoalRef{Title: "4"}, 0},
		{GoalRef{Title: "Nope"}, 0},
	} {
		m, ok := findMilestone(ms, tc.ref)
		if ok != (tc.want > 0) || m.Number != tc.want {
			t.Errorf("%s: milestone %d (%v), want %d", tc.ref, m.Number, ok, tc.want)
		}
	}
	var g GoalRef
	if err := g.UnmarshalJSON([]byte(`"12"`)); err != nil || g != (GoalRef{Title: "12"}) {
		t.Errorf(`"12" reads as %+v %v, want the title "12"`, g, err)
	}
	if err := g.UnmarshalJSON([]byte(`12`)); err != nil || g != (GoalRef{Number: 12}) {
		t.Errorf(`12 reads as %+v %v, want milestone 12`, g, err)
	}
}

// Only an App's bot account can be countersign's bot.
func TestCheckBot(t *testing.T) {
	for login, ok := range map[string]bool{"countersign[bot]": true, "my-app[bot]": true, "countersign": false, "[bot]": false, "alice": false, "a b[bot]": false} {
		if err := CheckBot(login); (err == nil) != ok || (err != nil && !errors.Is(err, ErrBotLogin)) {
			t.Errorf("CheckBot(%q) = %v, want ok=%v", login, err, ok)
		}
	}
}
