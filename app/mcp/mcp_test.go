package mcp_test

import (
	"context"
	"encoding/json"
	"flag"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/app/mcp"
	"github.com/countersign/countersign/internal/mcpdemo"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func world(t *testing.T) (*mcpdemo.World, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	w, err := mcpdemo.NewWorld(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w, ctx
}

func agent(t *testing.T, ctx context.Context, w *mcpdemo.World, login string) *sdk.ClientSession {
	t.Helper()
	cs, err := w.Agent(ctx, login)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func call(t *testing.T, ctx context.Context, cs *sdk.ClientSession, tool string, args map[string]any) mcpdemo.Result {
	t.Helper()
	r, err := mcpdemo.Call(ctx, cs, tool, args)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// wantVerdict checks an action's verdict.
func wantVerdict(t *testing.T, what string, r mcpdemo.Result, accepted bool, state, reason string) {
	t.Helper()
	if r.Error {
		t.Fatalf("%s: tool error %s", what, r.Text)
	}
	if r.Out["accepted"] != accepted || r.Out["state"] != state {
		t.Fatalf("%s: %s, want accepted=%v state=%s", what, r.Text, accepted, state)
	}
	if got, _ := r.Out["reason"].(string); !strings.Contains(got, reason) || (!accepted && got == "") {
		t.Fatalf("%s: reason %q, want it to say %q", what, got, reason)
	}
	if !strings.Contains(r.Text, `"accepted"`) {
		t.Fatalf("%s: the text content does not carry the result: %q", what, r.Text)
	}
}

func wantToolError(t *testing.T, what string, r mcpdemo.Result, says string) {
	t.Helper()
	if !r.Error || !strings.Contains(r.Text, says) {
		t.Fatalf("%s: %+v, want a tool error saying %q", what, r, says)
	}
}

// The workflow through MCP only, with its refusals, a rejection, and the
// answers that are argument errors.
func TestWorkflowThroughMCP(t *testing.T) {
	w, ctx := world(t)
	repo := w.Repo()
	carol, alice, bob, dave := agent(t, ctx, w, "carol"), agent(t, ctx, w, "alice"), agent(t, ctx, w, "bob"), agent(t, ctx, w, "dave")

	g := call(t, ctx, carol, "create_goal", map[string]any{"repo": repo, "title": "Build login page", "description": "the login flow"})
	if g.Error || g.Out["goal"].(map[string]any)["state"] != "open" {
		t.Fatalf("create_goal: %s", g.Text)
	}
	tk := call(t, ctx, carol, "create_task", map[string]any{"repo": repo, "title": "Create login form component", "assignees": []string{"alice"}, "goal": "Build login page"})
	if tk.Error || tk.Out["state"] != "assigned" || tk.Out["note"] != nil {
		t.Fatalf("create_task: %s", tk.Text)
	}
	task := tk.Out["task"].(string)

	// Argument errors are tool errors.
	wantToolError(t, "reject without a reason", call(t, ctx, bob, "reject_verification", map[string]any{"task": task, "reason": "  "}), "a reason is required")
	wantToolError(t, "an unknown task", call(t, ctx, bob, "task_status", map[string]any{"task": repo + "#999"}), "unknown task")
	wantToolError(t, "a repository out of sight", call(t, ctx, bob, "start_task", map[string]any{"task": "acme/secret#1"}), "cannot see it")
	wantToolError(t, "not a task id", call(t, ctx, bob, "start_task", map[string]any{"task": "widgets-1"}), "owner/repo#N")
	wantToolError(t, "an unknown goal", call(t, ctx, bob, "goal_status", map[string]any{"repo": repo, "goal": "Nope"}), "unknown goal")

	// A read-only user: GitHub will not let them create milestones or assign,
	// and countersign refuses their commands like anyone's.
	wantToolError(t, "read-only create_goal", call(t, ctx, dave, "create_goal", map[string]any{"repo": repo, "title": "Mine"}), "404")
	wantVerdict(t, "read-only assign_task", call(t, ctx, dave, "assign_task", map[string]any{"task": task, "assignees": []string{"dave"}}),
		false, "assigned", "GitHub did not assign dave")

	wantVerdict(t, "bob starts alice's task", call(t, ctx, bob, "start_task", map[string]any{"task": task}), false, "assigned", "only an assignee (@alice) may start it")
	wantVerdict(t, "alice starts", call(t, ctx, alice, "start_task", map[string]any{"task": task}), true, "in-progress", "")
	wantVerdict(t, "alice submits", call(t, ctx, alice, "submit_for_review", map[string]any{"task": task, "summary": "Built form with validation"}), true, "review", "")
	wantVerdict(t, "alice approves her own", call(t, ctx, alice, "approve_task", map[string]any{"task": task}), false, "review", "@alice built this task")
	wantVerdict(t, "carol approves", call(t, ctx, carol, "approve_task", map[string]any{"task": task}), true, "completed", "")
	wantVerdict(t, "dave verifies", call(t, ctx, dave, "verify_task", map[string]any{"task": task}), false, "completed", "has no write permission")
	wantVerdict(t, "alice verifies her own", call(t, ctx, alice, "verify_task", map[string]any{"task": task}), false, "completed", "@alice built this task")
	wantVerdict(t, "carol verifies what she approved", call(t, ctx, carol, "verify_task", map[string]any{"task": task}), false, "completed", "@carol approved this attempt")

	// bob finds a bug: the task goes back with his reason.
	wantVerdict(t, "bob rejects", call(t, ctx, bob, "reject_verification", map[string]any{"task": task, "reason": "accepts 'abc' as an email"}), true, "in-progress", "")
	// The label moves first and the card (the details' source) right after it.
	var st mcpdemo.Result
	var rej []any
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		st = call(t, ctx, alice, "task_status", map[string]any{"task": task})
		details, _ := st.Out["details"].(map[string]any)
		rej, _ = details["rejections"].([]any)
		if st.Error || len(rej) > 0 || time.Now().After(deadline) {
			break
		}
	}
	if st.Error || len(rej) != 1 || rej[0].(map[string]any)["reason"] != "accepts 'abc' as an email" {
		t.Fatalf("task_status after the rejection: %s", st.Text)
	}
	mw := call(t, ctx, alice, "my_work", map[string]any{"repo": repo})
	if back, _ := mw.Out["sent_back"].([]any); len(back) != 1 || !strings.Contains(back[0].(map[string]any)["reason"].(string), "accepts 'abc'") {
		t.Fatalf("my_work after the rejection: %s", mw.Text)
	}
	wantVerdict(t, "alice resubmits", call(t, ctx, alice, "submit_for_review", map[string]any{"task": task, "summary": "email validated"}), true, "review", "")
	wantVerdict(t, "carol approves again", call(t, ctx, carol, "approve_task", map[string]any{"task": task}), true, "completed", "")
	mw = call(t, ctx, bob, "my_work", map[string]any{"repo": repo})
	if tv, _ := mw.Out["to_verify"].([]any); len(tv) != 1 || tv[0].(map[string]any)["task"] != task {
		t.Fatalf("bob's my_work: %s", mw.Text)
	}
	wantVerdict(t, "bob verifies", call(t, ctx, bob, "verify_task", map[string]any{"task": task, "notes": "Email validation now correct"}), true, "verified", "")

	if err := mcpdemo.GoalReady(ctx, carol, repo, "Build login page"); err != nil {
		t.Fatal(err)
	}
	gs := call(t, ctx, carol, "goal_status", map[string]any{"repo": repo, "goal": 1})
	if counts := gs.Out["counts"].(map[string]any); gs.Out["state"] != "pending-verify" || counts["verified"] != float64(1) || counts["in_progress"] != float64(0) {
		t.Fatalf("goal_status: %s", gs.Text)
	}
	wantVerdict(t, "alice confirms the goal", call(t, ctx, alice, "verify_goal", map[string]any{"repo": repo, "goal": 1}), false, "pending-verify", "")
	wantVerdict(t, "carol confirms the goal", call(t, ctx, carol, "verify_goal", map[string]any{"repo": repo, "goal": 1, "notes": "login works end to end"}), true, "verified", "")
	wantVerdict(t, "carol sends it back", call(t, ctx, carol, "reject_goal", map[string]any{"repo": repo, "goal": "Build login page", "reason": "CSS conflicts"}), true, "active", "")
}

// task_status believes the card only while it is countersign's own: edited by
// someone else, its details are unavailable until the bot writes it back.
func TestTaskStatusDistrustsAnEditedCard(t *testing.T) {
	w, ctx := world(t)
	carol := agent(t, ctx, w, "carol")
	tk := call(t, ctx, carol, "create_task", map[string]any{"repo": w.Repo(), "title": "Task", "assignees": []string{"alice"}})
	task := tk.Out["task"].(string)
	st := call(t, ctx, carol, "task_status", map[string]any{"task": task})
	if d, ok := st.Out["details"].(map[string]any); !ok || d["may_verify"] == "" {
		t.Fatalf("task_status of a fresh task: %s", st.Text)
	}
	// A lead edits the card by hand: it is no longer countersign's word.
	// (countersign writes its card back as soon as it hears of the edit: the
	// edit's webhook is lost here, as when countersign is down or late.)
	w.GH().SetBotDown(true)
	n := 0
	for _, c := range w.GH().Comments(w.Repo(), 1) {
		if c.User == w.GH().BotLogin() {
			w.GH().EditComment(w.Repo(), c.ID, "carol", c.Body+"\nverified by everyone")
			n++
		}
	}
	if n == 0 {
		t.Fatal("no card")
	}
	st = call(t, ctx, carol, "task_status", map[string]any{"task": task})
	if st.Out["details"] != nil || !strings.Contains(st.Out["details_unavailable"].(string), "last edited by carol") || st.Out["state"] != "assigned" {
		t.Fatalf("task_status of an edited card: %s", st.Text)
	}
	w.GH().SetBotDown(false)
	// Once countersign writes its card again (the task moves on), its
	// details are believed again.
	alice := agent(t, ctx, w, "alice")
	wantVerdict(t, "alice starts", call(t, ctx, alice, "start_task", map[string]any{"task": task}), true, "in-progress", "")
	// (Settle would report the edit's lost webhook: wait for the card instead.)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		st = call(t, ctx, carol, "task_status", map[string]any{"task": task})
		if st.Out["details"] != nil || time.Now().After(deadline) {
			break
		}
	}
	if d, ok := st.Out["details"].(map[string]any); !ok || d["roles"].(map[string]any)["builders"] == nil {
		t.Fatalf("task_status once countersign wrote its card again: %s", st.Text)
	}
}

// tools/list is the contract: names, descriptions and schemas.
func TestToolsList(t *testing.T) {
	w, ctx := world(t)
	cs := agent(t, ctx, w, "carol")
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.MarshalIndent(res.Tools, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "tools.json")
	if *update {
		if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != string(got)+"\n" {
		t.Fatalf("tools/list differs from %s (go test -update to accept):\n%s", golden, got)
	}
	if len(res.Tools) != 14 {
		t.Fatalf("%d tools, want 14", len(res.Tools))
	}
}

// Over streamable HTTP each request is its bearer token's person: two
// callers of one server each act as themselves, and a request without a
// token is refused.
func TestHTTPBearerTokens(t *testing.T) {
	w, ctx := world(t)
	srv := httptest.NewServer(mcp.HTTPHandler(mcp.NewServer(w.Options(mcp.BearerToken))))
	t.Cleanup(srv.Close)
	carol, err := mcpdemo.HTTPAgent(ctx, srv.URL, "carol", w.GH().AddToken("carol"))
	if err != nil {
		t.Fatal(err)
	}
	defer carol.Close()
	alice, err := mcpdemo.HTTPAgent(ctx, srv.URL, "alice", w.GH().AddToken("alice"))
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	tk := call(t, ctx, carol, "create_task", map[string]any{"repo": w.Repo(), "title": "Over HTTP", "assignees": []string{"alice"}})
	task := tk.Out["task"].(string)
	wantVerdict(t, "carol starts alice's task", call(t, ctx, carol, "start_task", map[string]any{"task": task}), false, "assigned", "only an assignee")
	wantVerdict(t, "alice starts", call(t, ctx, alice, "start_task", map[string]any{"task": task}), true, "in-progress", "")
	mine := call(t, ctx, alice, "my_work", nil)
	if mine.Out["me"] != "alice" || len(mine.Out["assigned"].([]any)) != 1 {
		t.Fatalf("alice's my_work: %s", mine.Text)
	}
	is, _ := w.GH().Issue(w.Repo(), 1)
	if task != w.Repo()+"#1" || is.User != "carol" {
		t.Fatalf("the task was opened by %q, want carol", is.User)
	}
	if _, err := mcpdemo.HTTPAgent(ctx, srv.URL, "nobody", ""); err == nil {
		t.Fatal("a client without a token connected")
	}
}

// One verify_task costs a bounded number of requests to GitHub.
func TestVerifyTaskRequests(t *testing.T) {
	w, ctx := world(t)
	repo := w.Repo()
	carol, alice, bob := agent(t, ctx, w, "carol"), agent(t, ctx, w, "alice"), agent(t, ctx, w, "bob")
	task := call(t, ctx, carol, "create_task", map[string]any{"repo": repo, "title": "Counted", "assignees": []string{"alice"}}).Out["task"].(string)
	call(t, ctx, alice, "start_task", map[string]any{"task": task})
	call(t, ctx, alice, "submit_for_review", map[string]any{"task": task})
	wantVerdict(t, "approve", call(t, ctx, carol, "approve_task", map[string]any{"task": task}), true, "completed", "")
	if err := w.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	w.GH().ResetRequests()
	start := time.Now()
	wantVerdict(t, "verify", call(t, ctx, bob, "verify_task", map[string]any{"task": task, "notes": "ok"}), true, "verified", "")
	took := time.Since(start)
	n := 0
	for _, r := range w.GH().Requests() {
		if r.User == "bob" {
			n++
		}
	}
	t.Logf("verify_task: %d requests with bob's token, answered in %v", n, took)
	if n < 4 || n > 4+2*int(took/(50*time.Millisecond)+1) {
		t.Fatalf("verify_task made %d requests in %v", n, took)
	}
}

// An agent sees what blocks a task: task_status lists its blockers (with
// their link, status, and whether each blocks) and goal_status what each
// task waits for; a task with no links costs goal_status no card read.
func TestMCPShowsBlockers(t *testing.T) {
	w, ctx := world(t)
	carol := agent(t, ctx, w, "carol")
	repo := w.Repo()
	g := call(t, ctx, carol, "create_goal", map[string]any{"repo": repo, "title": "Login"})
	if g.Error {
		t.Fatalf("create_goal: %s", g.Text)
	}
	mk := func(title string) (string, int) {
		tk := call(t, ctx, carol, "create_task", map[string]any{"repo": repo, "title": title, "goal": "Login"})
		if tk.Error {
			t.Fatalf("create_task: %s", tk.Text)
		}
		ref := tk.Out["task"].(string)
		n, _ := strconv.Atoi(ref[strings.LastIndexByte(ref, '#')+1:])
		return ref, n
	}
	_, api := mk("Token endpoint")
	form, formN := mk("Login form")
	w.GH().AddBlockedBy(repo, formN, "carol", repo, api)
	if err := w.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	st := call(t, ctx, carol, "task_status", map[string]any{"task": form})
	d, _ := st.Out["details"].(map[string]any)
	bs, _ := d["blockers"].([]any)
	if len(bs) != 1 {
		t.Fatalf("task_status: %s", st.Text)
	}
	b := bs[0].(map[string]any)
	if b["issue"] != "#"+strconv.Itoa(api) || b["link"] != "blocked-by" || b["status"] != "pending" || b["blocks"] != true {
		t.Fatalf("task_status's blocker: %v", b)
	}
	gs := call(t, ctx, carol, "goal_status", map[string]any{"repo": repo, "goal": "Login"})
	tasks, _ := gs.Out["tasks"].([]any)
	found := false
	for _, x := range tasks {
		tv := x.(map[string]any)
		switch tv["task"] {
		case form:
			ws, _ := tv["waits_for"].([]any)
			found = len(ws) == 1 && ws[0] == "#"+strconv.Itoa(api)
		default:
			if tv["waits_for"] != nil {
				t.Fatalf("goal_status: %v waits for something", tv)
			}
		}
	}
	if !found {
		t.Fatalf("goal_status does not say what %s waits for: %s", form, gs.Text)
	}
}
