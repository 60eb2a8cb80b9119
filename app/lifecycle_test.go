package app_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/app/store/bolt"
	"github.com/countersign/countersign/internal/githubtest"
	"github.com/countersign/countersign/rules"
)

// stateOf is the one state label issue n carries ("" if none, "many" if several).
func stateOf(h *harness, n int) string {
	var states []string
	for _, l := range h.gh.Labels(testRepo, n) {
		if strings.HasPrefix(l, "state:") {
			states = append(states, strings.TrimPrefix(l, "state:"))
		}
	}
	switch len(states) {
	case 0:
		return ""
	case 1:
		return states[0]
	}
	return "many"
}

func wantState(t *testing.T, h *harness, n int, want string) {
	t.Helper()
	if got := stateOf(h, n); got != want {
		t.Fatalf("#%d state = %q, want %q; labels %v", n, got, want, h.gh.Labels(testRepo, n))
	}
}

// verification is the countersign/verification check run on sha: the
// newest, which is the one branch protection reads.
func verification(h *harness, sha string) (githubtest.CheckRunView, bool) {
	var out githubtest.CheckRunView
	found := false
	slug := strings.TrimSuffix(h.gh.BotLogin(), "[bot]") // countersign's own: another App may post one of that name
	for _, r := range h.gh.CheckRuns(testRepo, sha) {    // oldest first
		if r.Name == rules.CheckName && r.App == slug {
			out, found = r, true
		}
	}
	return out, found
}

func wantCheck(t *testing.T, h *harness, sha, want string) githubtest.CheckRunView {
	t.Helper()
	r, ok := verification(h, sha)
	got := "none"
	if ok {
		got = r.Status
		if r.Status == "completed" {
			got = r.Conclusion
		}
	}
	if got != want {
		t.Fatalf("check on %s = %s, want %s (%s)", sha, got, want, r.Title)
	}
	return r
}

// team gives the test repository a lead (carol, admin), a builder (alice)
// and a checker (bob), both with write permission.
func team(h *harness) {
	h.gh.SetPermission(testRepo, "carol", "admin")
	h.gh.SetPermission(testRepo, "alice", "write")
	h.gh.SetPermission(testRepo, "bob", "write")
}

// ciPasses reports the CI runs the default contract counts (typecheck,
// lint, test) as successful on sha, as GitHub Actions would.
func ciPasses(h *harness, sha string) {
	for _, name := range []string{"typecheck", "lint", "test"} {
		h.gh.CheckRun(testRepo, sha, name, "", "success", "")
	}
}

// A pull request that closes two tasks passes its check only once both are
// verified; each task's card and state follow on their own.

func TestPullRequestClosingTwoTasks(t *testing.T) {
	h := newHarness(t)
	team(h)
	one := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	two := h.gh.OpenIssue(testRepo, "carol", "Logout button", "")
	h.gh.Assign(testRepo, one, "carol", "alice")
	h.gh.Assign(testRepo, two, "carol", "alice")
	pr, sha := h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "Auth UI", Body: fmt.Sprintf("Fixes #%d\nCloses #%d", one, two)})
	h.settle()
	wantState(t, h, one, "review")
	wantState(t, h, two, "review")
	wantCheck(t, h, sha, "in_progress")

	ciPasses(h, sha)
	h.gh.Review(testRepo, pr, "carol", "APPROVED", "")
	h.settle()
	wantState(t, h, one, "completed")
	wantState(t, h, two, "completed")

	h.gh.Comment(testRepo, one, "bob", "/verify the form works")
	h.settle()
	wantState(t, h, one, "verified")
	wantState(t, h, two, "completed")
	r := wantCheck(t, h, sha, "in_progress")
	if !strings.Contains(r.Summary, fmt.Sprintf("#%d", two)) {
		t.Errorf("the check's summary does not name the task still missing:\n%s", r.Summary)
	}

	// A /verify on the pull request applies to every task it closes.
	h.gh.Comment(testRepo, pr, "bob", "/verify both checked")
	h.settle()
	wantState(t, h, two, "verified")
	wantState(t, h, one, "verified") // already verified: refused for it, nothing changes
	wantCheck(t, h, sha, "success")
}

// Editing a pull request's description relinks it: a task it no longer
// closes stops following it, a task it newly closes starts.
func TestEditingThePullRequestRelinks(t *testing.T) {
	h := newHarness(t)
	team(h)
	one := h.gh.OpenIssue(testRepo, "carol", "First", "")
	two := h.gh.OpenIssue(testRepo, "carol", "Second", "")
	pr, sha := h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "Work", Body: fmt.Sprintf("Fixes #%d", one), Draft: true})
	h.settle()
	wantState(t, h, one, "in-progress")
	wantState(t, h, two, "pending")
	if got := h.gh.Issue; true {
		is, _ := got(testRepo, one)
		if !slices.Contains(is.Assignees, "alice") {
			t.Fatalf("the PR's author was not assigned to #%d: %v", one, is.Assignees)
		}
	}
	h.gh.EditPR(testRepo, pr, "alice", "", fmt.Sprintf("Resolves https://github.com/%s/issues/%d", testRepo, two))
	h.settle()
	wantState(t, h, two, "in-progress")
	h.gh.ReadyForReview(testRepo, pr, "alice")
	h.settle()
	wantState(t, h, two, "review")
	wantState(t, h, one, "in-progress") // no longer linked: the PR's readiness is not its
	r := wantCheck(t, h, sha, "in_progress")
	if strings.Contains(r.Summary, fmt.Sprintf("#%d ", one)) {
		t.Errorf("the check still lists unlinked #%d:\n%s", one, r.Summary)
	}
}

// An invalid configuration pushed to the default branch is reported on the
// commit (check run countersign/config, with the line) and the last good one
// stays in force.
func TestInvalidConfigurationIsReportedAndTheLastGoodKept(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetPermission(testRepo, "dave", "write")
	good := h.gh.PushDefault(testRepo, "carol", map[string]string{rules.ConfigPath: "leads: [dave]\n"})
	h.settle()
	if r := configCheck(h, good); r.Conclusion != "success" {
		t.Fatalf("valid configuration reported %+v", r)
	}
	bad := h.gh.PushDefault(testRepo, "carol", map[string]string{rules.ConfigPath: "leads: [dave]\nseparation: sometimes\n"})
	h.settle()
	r := configCheck(h, bad)
	if r.Conclusion != "failure" || !strings.Contains(r.Summary, ":2") || !strings.Contains(r.Summary, "separation") {
		t.Fatalf("invalid configuration reported %+v", r)
	}
	// dave is still the lead (carol, an admin, is not: leads: is configured).
	n := h.gh.OpenIssue(testRepo, "alice", "Task", "")
	h.gh.Assign(testRepo, n, "alice", "alice")
	h.gh.Comment(testRepo, n, "alice", "/start")
	h.gh.Comment(testRepo, n, "alice", "/submit done")
	h.gh.Comment(testRepo, n, "carol", "/approve")
	h.settle()
	wantState(t, h, n, "completed")
	h.gh.Comment(testRepo, n, "carol", "/skip-verify trivial")
	h.settle()
	wantState(t, h, n, "completed")
	h.gh.Comment(testRepo, n, "dave", "/skip-verify trivial")
	h.settle()
	wantState(t, h, n, "verified")
}

func configCheck(h *harness, sha string) githubtest.CheckRunView {
	for _, r := range h.gh.CheckRuns(testRepo, sha) {
		if r.Name == "countersign/config" {
			return r
		}
	}
	return githubtest.CheckRunView{}
}

// A lost store is not lost state: a bot on an empty store rebuilds a task's
// record from its card and goes on from there.
func TestTaskRecordIsRebuiltFromItsCard(t *testing.T) {
	h := newHarness(t)
	team(h)
	n, pr, sha := taskWithPR(h, "Task", githubtest.PROptions{Title: "Work"})
	ciPasses(h, sha)
	h.settle()
	h.gh.Review(testRepo, pr, "carol", "APPROVED", "")
	h.settle()
	wantState(t, h, n, "completed")
	h.shutdown()

	fresh, err := bolt.Open(filepath.Join(t.TempDir(), "fresh.db"))
	if err != nil {
		t.Fatal(err)
	}
	h2 := startHarness(t, h.gh, fresh)
	// alice built it: the rebuilt record still knows, so her /verify is refused.
	h2.gh.Comment(testRepo, n, "alice", "/verify mine")
	h2.settle()
	wantState(t, h2, n, "completed")
	h2.gh.Comment(testRepo, n, "bob", "/verify checked")
	h2.settle()
	wantState(t, h2, n, "verified")
	if cards := cardsOn(t, h2, n); len(cards) != 1 || !strings.Contains(cards[0], "@bob") {
		t.Fatalf("cards after the rebuild: %q", cards)
	}
}

// The API calls that seed 000's simple workflow costs, per transition. Writes
// are asserted exactly (they are the contract: one label swap and one card
// edit per transition, a check run update per linked head); reads are logged.
func TestAPICallsPerTransition(t *testing.T) {
	h := newHarness(t)
	team(h)
	warm := h.gh.OpenIssue(testRepo, "carol", "warm-up: labels and configuration", "")
	h.gh.Assign(testRepo, warm, "carol", "alice")
	h.gh.Comment(testRepo, warm, "alice", "/start")
	h.gh.Comment(testRepo, warm, "alice", "/submit")
	h.gh.Comment(testRepo, warm, "carol", "/approve")
	h.gh.Comment(testRepo, warm, "bob", "/verify")
	h.settle()

	var n, pr int
	var sha string
	steps := []struct {
		name   string
		act    func()
		writes int
	}{
		{"opened → pending", func() { n = h.gh.OpenIssue(testRepo, "carol", "Create login form component", "") }, 2},
		{"pending → assigned", func() { h.gh.Assign(testRepo, n, "carol", "alice") }, 3},
		{"assigned → in-progress (/start)", func() { h.gh.Comment(testRepo, n, "alice", "/start") }, 3},
		{"draft PR linked", func() {
			pr, sha = h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "Login form", Body: fmt.Sprintf("Fixes #%d", n), Draft: true})
		}, 2},
		{"in-progress → review (PR ready)", func() { h.gh.ReadyForReview(testRepo, pr, "alice") }, 4},
		{"review → completed (approval)", func() { h.gh.Review(testRepo, pr, "carol", "APPROVED", "") }, 4},
		// Each result ticks the card's checklist and the check's summary. One
		// at a time: two results delivered together may be answered by one
		// check write (the check on a head is decided under the head's own
		// key, from the records as they are then).
		{"CI passes (typecheck)", func() { h.gh.CheckRun(testRepo, sha, "typecheck", "", "success", "") }, 2},
		{"CI passes (lint)", func() { h.gh.CheckRun(testRepo, sha, "lint", "", "success", "") }, 2},
		{"completed → verified (/verify)", func() { h.gh.Comment(testRepo, n, "bob", "/verify works") }, 4},
	}
	for _, s := range steps {
		h.gh.ResetRequests()
		s.act()
		h.settle()
		var reads, writes []string
		for _, r := range h.gh.Requests() {
			if !isWrite(r) {
				reads = append(reads, r.Method+" "+r.Path)
			} else {
				writes = append(writes, r.Method+" "+r.Path)
			}
		}
		t.Logf("%-34s reads %d, writes %d\n    reads:  %s\n    writes: %s", s.name, len(reads), len(writes),
			strings.Join(reads, ", "), strings.Join(writes, ", "))
		if len(writes) != s.writes {
			t.Errorf("%s: %d writes, want %d", s.name, len(writes), s.writes)
		}
	}
	wantState(t, h, n, "verified")
	wantCheck(t, h, sha, "success")
	if dead, _ := h.store.DeadLetters(context.Background()); len(dead) != 0 {
		t.Fatalf("dead letters: %+v", dead)
	}
}

// A command on a pull request that closes no task is answered, not ignored.
func TestCommandOnAPullRequestThatClosesNoTask(t *testing.T) {
	h := newHarness(t)
	team(h)
	pr, _ := h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "Chore", Body: "no task"})
	h.gh.Comment(testRepo, pr, "bob", "/verify looks fine")
	h.settle()
	var replies []string
	for _, c := range h.gh.Comments(testRepo, pr) {
		if c.User == h.gh.BotLogin() {
			replies = append(replies, c.Body)
		}
	}
	if len(replies) != 1 || !strings.Contains(replies[0], "> /verify looks fine") || !strings.Contains(replies[0], "closes no open task") {
		t.Fatalf("replies = %q", replies)
	}
}

// With verifiers: configured (a team here), only they (and leads) may verify;
// write permission alone is not enough, and the team's size is what
// separation: auto counts.
func TestConfiguredVerifiers(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetPermission(testRepo, "erin", "write")
	h.gh.AddTeam("acme", "qa", "bob", "frank")
	h.gh.SetFile(testRepo, rules.ConfigPath, "leads: [carol]\nverifiers: [\"@acme/qa\"]\n")
	n := h.gh.OpenIssue(testRepo, "carol", "Task", "")
	h.gh.Assign(testRepo, n, "carol", "alice")
	h.gh.Comment(testRepo, n, "alice", "/start")
	h.gh.Comment(testRepo, n, "alice", "/submit")
	h.gh.Comment(testRepo, n, "bob", "/approve")
	h.gh.Comment(testRepo, n, "erin", "/verify")
	h.settle()
	wantState(t, h, n, "completed")
	last := h.gh.Comments(testRepo, n)
	if body := last[len(last)-1].Body; !strings.Contains(body, "> /verify") || !strings.Contains(body, "verifiers:") {
		t.Fatalf("erin's /verify was not refused for not being a verifier:\n%s", body)
	}
	// bob approved; bob, frank and carol can verify: a team of three, so the
	// approver may not verify.
	h.gh.Comment(testRepo, n, "bob", "/verify")
	h.settle()
	wantState(t, h, n, "completed")
	h.gh.Comment(testRepo, n, "frank", "/verify checked")
	h.settle()
	wantState(t, h, n, "verified")
}

// A pull request that changes the configuration gets the countersign/config
// check on its head, for the file as it would merge it: failing with the line
// for a typo, passing once fixed. Pull requests that do not touch the file
// get none, and the default branch's configuration does not change.
func TestConfigurationCheckedOnThePullRequestThatChangesIt(t *testing.T) {
	h := newHarness(t)
	team(h)
	other, otherSHA := h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "Docs", Files: []string{"README.md"}})
	pr, bad := h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "Stricter CI", Commits: []githubtest.Commit{{
		Contents: map[string]string{rules.ConfigPath: "leads: [dave]\ncontracts:\n  checks: {unit-tests: [test]}\n"}}}})
	h.settle()
	if r := configCheck(h, otherSHA); r.Name != "" {
		t.Errorf("#%d does not change the configuration, yet has %+v", other, r)
	}
	r := configCheck(h, bad)
	if r.Conclusion != "failure" || !strings.Contains(r.Summary, ":3:12") || !strings.Contains(r.Summary, `did you mean "unit-test"?`) ||
		!strings.Contains(r.Summary, "countersign config check") {
		t.Fatalf("invalid configuration on #%d reported %+v", pr, r)
	}
	fixed := h.gh.Push(testRepo, pr, githubtest.Commit{Contents: map[string]string{rules.ConfigPath: "leads: [dave]\ncontracts:\n  checks: {unit-test: [test]}\n"}})
	h.settle()
	if r := configCheck(h, fixed); r.Conclusion != "success" || !strings.Contains(r.Summary, fmt.Sprintf("once pull request #%d is merged", pr)) {
		t.Fatalf("fixed configuration on #%d reported %+v", pr, r)
	}
	// Not merged: the default branch's configuration (none: carol, an admin, is a lead) stands.
	n := h.gh.OpenIssue(testRepo, "alice", "Task", "")
	h.gh.Assign(testRepo, n, "alice", "alice")
	h.gh.Comment(testRepo, n, "alice", "/start")
	h.gh.Comment(testRepo, n, "alice", "/submit done")
	h.gh.Comment(testRepo, n, "bob", "/approve")
	h.gh.Comment(testRepo, n, "carol", "/skip-verify trivial")
	h.settle()
	wantState(t, h, n, "verified")
}

// /help and near misses are replies like refusals: bounded per person, so
// that no one can make countersign spam with them.
func TestHelpAndNearMissesAreBounded(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetPermission(testRepo, "mallory", "read")
	n := h.gh.OpenIssue(testRepo, "carol", "Login form", "")
	h.settle()
	for i := range 20 {
		body := "/help"
		if i%2 == 1 {
			body = "thanks\n/verfy"
		}
		h.gh.Comment(testRepo, n, "mallory", body)
	}
	h.settle()
	comments := botComments(h, n)
	if len(comments) != 1+3 { // the card and 3 replies
		t.Fatalf("#%d has %d comments by countersign, want the card and 3 replies", n, len(comments))
	}
	var help, nearMiss bool
	for _, c := range comments {
		help = help || strings.Contains(c.Body, "the commands you can use here now")
		nearMiss = nearMiss || strings.Contains(c.Body, "did you mean `/verify`?")
	}
	if !help || !nearMiss {
		t.Errorf("want a /help answer and a near-miss reply among %+v", comments)
	}
}
