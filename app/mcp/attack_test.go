package mcp_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/countersign/countersign/app/mcp"
	"github.com/countersign/countersign/rules"
)

// A command on a task that already is in the state the command moves to is
// refused by countersign (only an assignee may start; only a completed task
// can be rejected), but the verdict reads the label first and calls it
// accepted.
func TestRefusedCommandOnATaskAlreadyInItsStateIsNotAccepted(t *testing.T) {
	w, ctx := world(t)
	carol, alice, bob, dave := agent(t, ctx, w, "carol"), agent(t, ctx, w, "alice"), agent(t, ctx, w, "bob"), agent(t, ctx, w, "dave")
	task := call(t, ctx, carol, "create_task", map[string]any{"repo": w.Repo(), "title": "Already moving", "assignees": []string{"alice"}}).Out["task"].(string)
	wantVerdict(t, "alice starts", call(t, ctx, alice, "start_task", map[string]any{"task": task}), true, "in-progress", "")

	// bob is no assignee: countersign refuses his /start.
	v := call(t, ctx, bob, "start_task", map[string]any{"task": task})
	if v.Error || v.Out["accepted"] != false {
		t.Errorf("bob's /start on alice's in-progress task: %s, want refused (countersign answers: only an assignee may start it)", v.Text)
	}
	// dave reads only, and the task is not completed: countersign refuses
	// his /reject, and the task is not sent back by him.
	v = call(t, ctx, dave, "reject_verification", map[string]any{"task": task, "reason": "I say it is wrong"})
	if v.Error || v.Out["accepted"] != false {
		t.Errorf("dave's /reject on an in-progress task: %s, want refused (only a completed task can be rejected)", v.Text)
	}
	if err := w.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	refused := 0
	for _, c := range w.GH().Comments(w.Repo(), 1) {
		if c.User == w.GH().BotLogin() && strings.Contains(c.Body, "**Refused:**") {
			refused++
		}
	}
	if refused < 2 {
		t.Fatalf("countersign posted %d refusals, want one to bob and one to dave", refused)
	}
}

// The state comes from the owned label only as long as countersign set it:
// a person's state label (here an admin's, while countersign has not yet
// had the webhook and reverted it) is read as the task's state, and a
// read-only user's /verify reads as accepted.
func TestAStateLabelCountersignDidNotSetIsNotItsState(t *testing.T) {
	w, ctx := world(t)
	carol, dave := agent(t, ctx, w, "carol"), agent(t, ctx, w, "dave")
	task := call(t, ctx, carol, "create_task", map[string]any{"repo": w.Repo(), "title": "Relabeled", "assignees": []string{"alice"}}).Out["task"].(string)
	if err := w.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	// GitHub's webhooks are late (countersign hears nothing meanwhile); carol
	// relabels the task by hand.
	w.GH().SetBotDown(true)
	w.GH().RemoveLabel(w.Repo(), 1, "carol", rules.Assigned.Label())
	w.GH().AddLabels(w.Repo(), 1, "carol", rules.Verified.Label())

	st := call(t, ctx, dave, "task_status", map[string]any{"task": task})
	if st.Error || st.Out["state"] == "verified" {
		t.Errorf("task_status: %s; the state label is carol's, not countersign's", st.Text)
	}
	v := call(t, ctx, dave, "verify_task", map[string]any{"task": task, "notes": "looks fine"})
	if v.Error || v.Out["accepted"] == true {
		t.Errorf("dave's verify_task (read only, task never completed): %s, want not accepted", v.Text)
	}
}

// A goal given as a JSON string is a title: a milestone titled "1" is the
// goal "1", not milestone number 1 (whose title is something else).
func TestANumericGoalTitleNamesThatGoal(t *testing.T) {
	w, ctx := world(t)
	carol := agent(t, ctx, w, "carol")
	first := call(t, ctx, carol, "create_goal", map[string]any{"repo": w.Repo(), "title": "2"})
	second := call(t, ctx, carol, "create_goal", map[string]any{"repo": w.Repo(), "title": "1"})
	if first.Error || second.Error {
		t.Fatalf("create_goal: %s / %s", first.Text, second.Text)
	}
	task := call(t, ctx, carol, "create_task", map[string]any{"repo": w.Repo(), "title": "For goal 1"}).Out["task"].(string)
	l := call(t, ctx, carol, "link_task_to_goal", map[string]any{"task": task, "goal": "1"})
	if l.Error || l.Out["goal"].(map[string]any)["title"] != "1" {
		t.Fatalf("link_task_to_goal to the goal titled \"1\": %s", l.Text)
	}
}

// Over HTTP a request whose bearer token GitHub does not accept is refused
// with 401 like one without a token, not served.
func TestHTTPInvalidBearerIs401(t *testing.T) {
	w, _ := world(t)
	srv := httptest.NewServer(mcp.HTTPHandler(mcp.NewServer(w.Options(mcp.BearerToken))))
	t.Cleanup(srv.Close)
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	req, err := http.NewRequest(http.MethodPost, srv.URL, bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer not-a-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("initialize with an invalid bearer token: %d, want 401", resp.StatusCode)
	}
}
