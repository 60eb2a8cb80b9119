package templates

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/rules"
)

// exampleTask is the login form as it stands once verified: built by
// alice (with bob as co-author), rejected once by dave, fixed, approved by
// carol, its contract passed by GitHub Actions, verified by dave.
func exampleTask() *rules.Task {
	at := func(min int) time.Time {
		return time.Date(2025, 5, 6, 9, 0, 0, 0, time.UTC).Add(time.Duration(min) * time.Minute)
	}
	alice, bob, carol, dave := rules.User{ID: 101, Login: "alice"}, rules.User{ID: 102, Login: "bob"},
		rules.User{ID: 103, Login: "carol"}, rules.User{ID: 104, Login: "dave"}
	head := "502e4017c1d3f4b5a6978877665544332211aabb"
	run := func(name string, id int) string {
		return fmt.Sprintf("https://github.com/acme/app/actions/runs/90000%d", id)
	}
	t := &rules.Task{Repo: "acme/app", Number: 11, Title: "Create login form component", State: rules.Verified, Opener: carol, Attempt: 2,
		Assignees: []rules.User{alice},
		Builders:  []rules.Member{rules.MemberOf(alice, "assignee"), rules.MemberOf(bob, "co-author on #12")},
		PRs:       []rules.LinkedPR{{Number: 12, Author: alice, Head: head, Open: true}},
		Approvals: []rules.Approval{{By: carol, Head: head, PR: 12, At: at(50)}},
		Approvers: []rules.User{carol},
		Verifier:  dave, VerifiedAt: at(58),
		Rejections: []rules.Rejection{{By: dave, At: at(30), Attempt: 1,
			Reason: "Form doesn't validate email format - accepts 'abc' as valid email"}},
		RejectedHeads: []string{"0ld0ld0ld0ld0ld0ld0ld0ld0ld0ld0ld0ld0ld0"},
		Contract: &rules.Contract{Type: rules.Verifiable, Why: "no advisory or skip words", From: "auto", At: at(0),
			Criteria: []rules.Criterion{
				{Activity: "typecheck", Description: "No type errors", Result: rules.ResultPass, Detail: "`typecheck` passed on #12 (502e401)", URL: run("typecheck", 1), Attempt: 2, At: at(45)},
				{Activity: "lint", Description: "No lint errors", Result: rules.ResultPass, Detail: "`lint` passed on #12 (502e401)", URL: run("lint", 2), Attempt: 2, At: at(45)},
				{Activity: "unit-test", Description: "Unit tests pass", Files: []string{"src/components/LoginForm.tsx"}, Result: rules.ResultPass, Detail: "`test` passed on #12 (502e401)", URL: run("test", 3), Attempt: 2, At: at(46)},
			}},
		History: []rules.Transition{
			{To: rules.Pending, Actor: "carol", At: at(0), Why: "issue opened"},
			{From: rules.Pending, To: rules.Assigned, Actor: "carol", At: at(1), Why: "assigned to @alice"},
			{From: rules.Assigned, To: rules.InProgress, Actor: "alice", At: at(5), Why: "#12 opened"},
			{From: rules.InProgress, To: rules.Review, Actor: "alice", At: at(20), Why: "#12 ready for review"},
			{From: rules.Review, To: rules.Completed, Actor: "carol", At: at(25), Why: "approved by @carol on #12"},
			{From: rules.Completed, To: rules.InProgress, Actor: "dave", At: at(30), Why: "/reject: Form doesn't validate email format - accepts 'abc' as valid email"},
			{From: rules.InProgress, To: rules.Review, Actor: "alice", At: at(40), Why: "new commits on #12"},
			{From: rules.Review, To: rules.Completed, Actor: "carol", At: at(50), Why: "approved by @carol on #12"},
			{From: rules.Completed, To: rules.Verified, Actor: "dave", At: at(58), Why: "/verify: Email validation now correct, tried abc and a@b.co"},
		}}
	return t
}

const exampleCard = "https://github.com/acme/app/issues/11#issuecomment-2090001"

// golden compares got with testdata/name (rewritten with -update) and checks
// that doc (a page of the documentation, from the repository's root) shows it,
// in a fenced block of the given language.
func golden(t *testing.T, name, doc, lang, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (regenerate with go test ./templates -update)", err)
	}
	if string(want) != got {
		t.Fatalf("%s differs (regenerate with go test ./templates -update):\n%s", path, got)
	}
	page, err := os.ReadFile(filepath.Join("..", filepath.FromSlash(doc)))
	if err != nil {
		t.Fatal(err)
	}
	if block := "```" + lang + "\n" + strings.TrimRight(got, "\n") + "\n```"; !strings.Contains(string(page), block) {
		t.Errorf("%s does not show %s as it is now: put this in it:\n%s", doc, path, block)
	}
}

// The verification check's text, as docs/design.md shows it: the evidence chain.
func TestCheckTextExample(t *testing.T) {
	task := exampleTask()
	pr := &rules.PullRequest{Repo: task.Repo, Links: []int{task.Number}, PRFacts: rules.PRFacts{Number: 12, Head: task.PRs[0].Head, Open: true}}
	check := rules.CheckFor(pr, []*rules.Task{task})
	if check.Conclusion != "success" {
		t.Fatalf("the example check is %s %s", check.Status, check.Conclusion)
	}
	check.Tasks[0].Evidence.Card = exampleCard
	text, err := CheckText(check)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| built | @alice (assignee)", "| built | @bob (co-author on #12)",
		"| approved | @carol on #12 at `502e401`", "| verified | @dave | 2025-05-06 09:58 UTC | Email validation now correct",
		"| unit-test | ✅ `pass` |", "attempt 1, @dave", "[The task card](" + exampleCard + ")"} {
		if !strings.Contains(text, want) {
			t.Errorf("check text lacks %q", want)
		}
	}
	golden(t, "check-example.md", "docs/design.md", "markdown", text)
}

// countersign proofpack's JSON, as docs/commands.md shows it.
func TestProofpackExample(t *testing.T) {
	ev := rules.EvidenceOf(exampleTask())
	ev.Card = exampleCard
	b, err := json.MarshalIndent(ev, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "proofpack-example.json", "docs/commands.md", "json", string(b)+"\n")
}

// The check text fits GitHub's limit whatever the tasks hold.
func TestCheckTextFits(t *testing.T) {
	task := exampleTask()
	long := strings.Repeat("x", 900)
	for i := range 200 {
		task.Rejections = append(task.Rejections, rules.Rejection{By: rules.User{Login: "dave"}, Reason: long, Attempt: i})
	}
	var check rules.Check
	for i := range 10 {
		ev := rules.EvidenceOf(task)
		check.Tasks = append(check.Tasks, rules.CheckTask{Number: i, Evidence: &ev})
	}
	text, err := CheckText(check)
	if err != nil {
		t.Fatal(err)
	}
	if len(text) > MaxCheckText || !strings.HasSuffix(text, "each task's card holds its whole evidence.\n") {
		t.Fatalf("check text of %d bytes, or no pointer to the cards at its end", len(text))
	}
}

// People's and CI's words in the evidence show as written: no HTML, no link,
// no image, no mention (found by review: a title "Fix <details>" collapsed
// the rest of the text).
func TestCheckTextShowsPeoplesWordsAsWritten(t *testing.T) {
	task := exampleTask()
	task.Title = "Fix <details> and [x](https://evil.example) @mallory"
	task.Rejections[0].Reason = "![img](https://evil.example/a.png) <!-- | x"
	task.Contract.Criteria[0].Detail = "`ci` <b>x</b> [y](https://evil.example)"
	ev := rules.EvidenceOf(task)
	text, err := CheckText(rules.Check{Tasks: []rules.CheckTask{{Number: task.Number, Evidence: &ev}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"<details>", "[x](https://evil", "[y](https://evil", "![img]", "<!--", "<b>", "@mallory"} {
		if strings.Contains(text, bad) {
			t.Errorf("the check text carries %q as markup:\n%s", bad, text)
		}
	}
	for _, want := range []string{`Fix \<details\> and \[x\](https://evil.example) @` + "\u200b" + "mallory", "`ci` \\<b\\>x\\</b\\>"} {
		if !strings.Contains(text, want) {
			t.Errorf("the check text lacks %q:\n%s", want, text)
		}
	}
}
