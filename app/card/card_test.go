package card_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/app/card"
	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/seal"
	"github.com/countersign/countersign/rules"
	"github.com/countersign/countersign/templates"
)

// hugeTask is a verified task with everything a card shows grown as far as
// the rules let it, and further: thousands of history entries of the
// longest text, many rejections, pull requests and unlinked identities.
func hugeTask(entries int) *rules.Task {
	at := time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)
	long := strings.Repeat("é|<x>", 60) // 300 characters, some escaped twice
	t := &rules.Task{Repo: "acme/widgets", Number: 7, Title: strings.Repeat("t", 300), State: rules.Verified, Attempt: 40,
		Opener: rules.User{ID: 1, Login: "carol"}, Verifier: rules.User{ID: 2, Login: "bob"}, VerifiedAt: at}
	for i := range entries {
		t.History = append(t.History, rules.Transition{From: rules.Review, To: rules.Review, Actor: fmt.Sprintf("user%d", i),
			At: at.Add(time.Duration(i) * time.Minute), Why: long, Repeats: i % 3, Last: at})
	}
	for i := range 60 {
		t.Rejections = append(t.Rejections, rules.Rejection{By: rules.User{ID: 3, Login: "erin"}, At: at, Reason: strings.Repeat("r", 1000), Attempt: i + 1})
		t.Builders = append(t.Builders, rules.MemberOf(rules.User{ID: int64(100 + i), Login: fmt.Sprintf("builder%d", i)}, "pushed to #12"))
	}
	for i := range 80 {
		p := rules.LinkedPR{Number: 100 + i, Author: rules.User{ID: 4, Login: "dave"}, Head: strings.Repeat("a", 40), Open: i%2 == 0}
		for j := range 20 {
			p.Unresolved = append(p.Unresolved, fmt.Sprintf("%s <%d@x> (commit author on #%d)", strings.Repeat("n", 150), j, p.Number))
		}
		t.PRs = append(t.PRs, p)
	}
	return t
}

// However long a task's history and lists grow, its card fits in a comment,
// and carries a signed record that reads back with its state and verifier
// and the latest history.
func TestCardAlwaysFitsInAComment(t *testing.T) {
	keys, err := seal.New([]byte("a test key of enough length, 32+ bytes"))
	if err != nil {
		t.Fatal(err)
	}
	for _, entries := range []int{10, 60, 300, 5000} {
		task := hugeTask(entries)
		body, err := card.Render(task, keys)
		if err != nil {
			t.Fatalf("%d entries: %v", entries, err)
		}
		if len(body) > card.MaxText {
			t.Fatalf("%d entries: the card holds %d bytes, more than %d", entries, len(body), card.MaxText)
		}
		rec, ok := card.Record(body)
		sig, _ := templates.RecordSignature(body)
		var got rules.Task
		if !ok || json.Unmarshal(rec, &got) != nil || !keys.Verify(records.TaskScope("acme/widgets", 7), rec, sig) {
			t.Fatalf("%d entries: no signed record read back", entries)
		}
		if got.State != rules.Verified || got.Verifier.ID != 2 || len(got.History) == 0 || got.History[len(got.History)-1].Actor != task.History[entries-1].Actor {
			t.Errorf("%d entries: record %s, verifier %v, last entry %+v", entries, got.State, got.Verifier, got.History[len(got.History)-1])
		}
		if entries > 60 && !strings.Contains(body, "earlier entries not shown here") {
			t.Errorf("%d entries: the card does not say entries are left out", entries)
		}
		t.Logf("%d entries: %d bytes", entries, len(body))
	}
}
