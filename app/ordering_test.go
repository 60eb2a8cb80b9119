package app_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/githubtest"
)

// GitHub promises no order of webhook deliveries, and people (and agents
// over MCP) act milliseconds apart. Each burst below is two actions taken at
// once; its webhooks are held, then let go with no wait between them, in
// every order: the task must end where the in-order run ends, every time.

// permutations are every order of 0..n-1.
func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := append(append(append([]int{}, p[:i]...), n-1), p[i:]...)
			out = append(out, q)
		}
	}
	return out
}

// burst takes the actions of act with the fake's webhooks held, checks they
// queued want webhooks (events, in action order), and lets them go in order
// (indexes into the held webhooks), one right after the other.
func burst(t *testing.T, h *harness, order []int, want []string, act func()) {
	t.Helper()
	h.settle()
	h.gh.SetWebhookPaused(true)
	act()
	held := h.gh.HeldWebhooks()
	var got []string
	for _, w := range held {
		got = append(got, w.Event+"."+w.Action)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		h.gh.SetWebhookPaused(false)
		t.Fatalf("the burst queued %v, want %v", got, want)
	}
	if err := h.gh.ReorderHeldWebhooks(order); err != nil {
		t.Fatal(err)
	}
	h.gh.SetWebhookPaused(false)
	h.settle()
}

// eachOrder runs f once per order of n webhooks, each on a bot and fake
// GitHub of its own, the orders side by side (the test does nothing else).
func eachOrder(t *testing.T, n int, f func(t *testing.T, h *harness, order []int)) {
	t.Parallel()
	for _, order := range permutations(n) {
		t.Run(fmt.Sprint(order), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			team(h)
			h.gh.SetPermission(testRepo, "dave", "write")
			f(t, h, order)
		})
	}
}

// Dave approves; bob comments /verify 2 ms later. The approval is the
// pull request's, the command the task's: whichever countersign takes in
// first, the /verify is judged with the approval.
func TestBurstApproveThenVerify(t *testing.T) {
	eachOrder(t, 2, func(t *testing.T, h *harness, order []int) {
		n, pr, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login"})
		ciPasses(h, sha)
		h.settle()
		wantState(t, h, n, "review")
		burst(t, h, order, []string{"pull_request_review.submitted", "issue_comment.created"}, func() {
			h.gh.Review(testRepo, pr, "dave", "APPROVED", "")
			h.gh.Comment(testRepo, n, "bob", "/verify")
		})
		wantState(t, h, n, "verified")
		wantCheck(t, h, sha, "success")
		if r := replies(h, n); len(r) != 0 {
			t.Fatalf("the /verify was answered, want it accepted silently: %q", r)
		}
	})
}

// The last CI run completes; bob comments /verify 2 ms later. All the runs
// exist on GitHub when the /verify is judged.
func TestBurstLastCIRunThenVerify(t *testing.T) {
	eachOrder(t, 2, func(t *testing.T, h *harness, order []int) {
		n, pr, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login"})
		h.gh.CheckRun(testRepo, sha, "typecheck", "", "success", "")
		h.gh.CheckRun(testRepo, sha, "test", "", "success", "")
		h.gh.CheckRun(testRepo, sha, "lint", "in_progress", "", "")
		h.gh.Review(testRepo, pr, "dave", "APPROVED", "")
		h.settle()
		wantState(t, h, n, "completed")
		burst(t, h, order, []string{"check_run.completed", "issue_comment.created"}, func() {
			h.gh.CheckRun(testRepo, sha, "lint", "", "success", "")
			h.gh.Comment(testRepo, n, "bob", "/verify")
		})
		wantState(t, h, n, "verified")
		wantCheck(t, h, sha, "success")
		if r := replies(h, n); len(r) != 0 {
			t.Fatalf("the /verify was answered, want it accepted silently: %q", r)
		}
	})
}

// Alice marks her draft ready; dave approves at once. The task is completed.
func TestBurstReadyThenApprove(t *testing.T) {
	eachOrder(t, 2, func(t *testing.T, h *harness, order []int) {
		n, pr, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login", Draft: true})
		ciPasses(h, sha)
		h.settle()
		wantState(t, h, n, "in-progress")
		burst(t, h, order, []string{"pull_request.ready_for_review", "pull_request_review.submitted"}, func() {
			h.gh.ReadyForReview(testRepo, pr, "alice")
			h.gh.Review(testRepo, pr, "dave", "APPROVED", "")
		})
		wantState(t, h, n, "completed")
		h.gh.Comment(testRepo, n, "bob", "/verify")
		h.settle()
		wantState(t, h, n, "verified")
		wantCheck(t, h, sha, "success")
	})
}

// Alice pushes; dave approves the new head at once. The review of the new
// head may come before its synchronize: it is not dropped.
func TestBurstPushThenApproveNewHead(t *testing.T) {
	eachOrder(t, 2, func(t *testing.T, h *harness, order []int) {
		n, pr, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login"})
		ciPasses(h, sha)
		h.settle()
		wantState(t, h, n, "review")
		var head string
		burst(t, h, order, []string{"pull_request.synchronize", "pull_request_review.submitted"}, func() {
			head = h.gh.Push(testRepo, pr)
			h.gh.Review(testRepo, pr, "dave", "APPROVED", "")
		})
		wantState(t, h, n, "completed")
		ciPasses(h, head)
		h.settle()
		h.gh.Comment(testRepo, n, "bob", "/verify")
		h.settle()
		wantState(t, h, n, "verified")
		wantCheck(t, h, head, "success")
	})
}

// Dave approves; alice pushes at once. The approval was of the old head: in
// any order, the task is back in review for the new one.
func TestBurstApproveThenPush(t *testing.T) {
	eachOrder(t, 2, func(t *testing.T, h *harness, order []int) {
		n, pr, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login"})
		ciPasses(h, sha)
		h.settle()
		wantState(t, h, n, "review")
		var head string
		burst(t, h, order, []string{"pull_request_review.submitted", "pull_request.synchronize"}, func() {
			h.gh.Review(testRepo, pr, "dave", "APPROVED", "")
			head = h.gh.Push(testRepo, pr)
		})
		wantState(t, h, n, "review")
		h.gh.Review(testRepo, pr, "dave", "APPROVED", "")
		ciPasses(h, head)
		h.settle()
		wantState(t, h, n, "completed")
		h.gh.Comment(testRepo, n, "bob", "/verify")
		h.settle()
		wantState(t, h, n, "verified")
		wantCheck(t, h, head, "success")
	})
}

// The defence's cost: a /verify refused for a missing approval or pending
// CI first reads GitHub once per open linked pull request (the pull request,
// its reviews, the CI on its head); a refusal nothing on GitHub would lift
// costs those reads and nothing more, and a command that is accepted
// outright reads nothing of them.
func TestCostOfReadingGitHubBeforeARefusal(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.SetPermission(testRepo, "dave", "write")
	n, pr, sha := taskWithPR(h, "Login form", githubtest.PROptions{Title: "Login"})
	ciPasses(h, sha)
	h.settle()
	wantState(t, h, n, "review")

	reads := func() (pull, reviews, checks int) {
		for _, r := range h.gh.Requests() {
			switch {
			case r.Method == "GET" && r.Path == fmt.Sprintf("/repos/%s/pulls/%d", testRepo, pr):
				pull++
			case r.Method == "GET" && r.Path == fmt.Sprintf("/repos/%s/pulls/%d/reviews", testRepo, pr):
				reviews++
			case r.Method == "GET" && strings.Contains(r.Path, "/commits/"+sha+"/"):
				checks++
			}
		}
		return
	}

	h.gh.ResetRequests()
	h.gh.Comment(testRepo, n, "bob", "/verify") // no approval anywhere: refused
	h.settle()
	wantState(t, h, n, "review")
	pull, reviews, checks := reads()
	t.Logf("refused /verify, nothing to take in: GET pull %d, GET reviews %d, CI reads %d, %d requests in all", pull, reviews, checks, len(h.gh.Requests()))
	if pull != 1 || reviews != 1 || checks == 0 || checks > 3 {
		t.Fatalf("the refusal read the pull request %d times, its reviews %d times, its CI %d times: want once each (CI: at most 3 pages/kinds)\n%s",
			pull, reviews, checks, describe(h.gh.Requests()))
	}

	h.gh.Review(testRepo, pr, "dave", "APPROVED", "")
	h.settle()
	wantState(t, h, n, "completed")
	h.gh.ResetRequests()
	h.gh.Comment(testRepo, n, "bob", "/verify")
	h.settle()
	wantState(t, h, n, "verified")
	pull, reviews, checks = reads()
	t.Logf("accepted /verify: GET pull %d, GET reviews %d, CI reads %d, %d requests in all", pull, reviews, checks, len(h.gh.Requests()))
	if pull != 0 || reviews != 0 || checks != 0 {
		t.Fatalf("an accepted /verify read the pull request %d, its reviews %d, its CI %d times: want none\n%s", pull, reviews, checks, describe(h.gh.Requests()))
	}
}
