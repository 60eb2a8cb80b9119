package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/countersign/countersign/templates"
)

// An opened issue gets state:pending and exactly one task card, however often
// the bot's own writes come back and however often the delivery is redelivered.
func TestOpenedIssueBecomesPendingTaskWithOneCard(t *testing.T) {
	h := newHarness(t)
	n := h.gh.OpenIssue(testRepo, "alice", "Add login form", "The form validates email.")
	h.settle()

	if got := h.gh.Labels(testRepo, n); !reflect.DeepEqual(got, []string{"state:pending"}) {
		t.Fatalf("labels = %v, want [state:pending]", got)
	}
	cards := cardsOn(t, h, n)
	if len(cards) != 1 {
		t.Fatalf("want one card, got %d", len(cards))
	}
	rec, ok := templates.CardRecord(cards[0])
	if !ok || !strings.Contains(string(rec), `"state":"pending"`) || !strings.Contains(cards[0], "@alice") {
		t.Fatalf("card does not carry the record:\n%s", cards[0])
	}
	var found bool
	for _, l := range h.gh.RepoLabels(testRepo) {
		if l.Name == "state:pending" {
			found = true
			if l.Color == "" || !strings.HasPrefix(l.Description, "countersign:") {
				t.Errorf("state:pending created without colour or description: %+v", l)
			}
		}
	}
	if !found {
		t.Fatal("repository label state:pending not created")
	}

	// Every webhook sent so far (the opened issue and the bot's own label and
	// comment), redelivered twice: nothing more happens.
	h.gh.ResetRequests()
	for i := 0; i < 2; i++ {
		for _, d := range h.gh.Deliveries() {
			if err := h.gh.Redeliver(d.ID); err != nil {
				t.Fatal(err)
			}
		}
		h.settle()
	}
	if w := writes(h.gh.Requests()); len(w) != 0 {
		t.Fatalf("redeliveries caused writes: %v", w)
	}
	if len(cardsOn(t, h, n)) != 1 {
		t.Fatal("redeliveries posted another card")
	}
}

// The bot's own events coming back under fresh delivery ids (as GitHub sends
// them) are recognised and change nothing.
func TestOwnEventsAreNotActedOn(t *testing.T) {
	h := newHarness(t)
	n := h.gh.OpenIssue(testRepo, "alice", "Task one", "")
	h.settle()
	var own []string
	for _, d := range h.gh.Deliveries() {
		if d.SenderType == "Bot" {
			own = append(own, d.Event+"."+d.Action)
		}
	}
	sort.Strings(own)
	if want := []string{"issue_comment.created", "issues.labeled", "label.created"}; !reflect.DeepEqual(own, want) {
		t.Fatalf("own webhooks = %v, want %v", own, want)
	}
	h.gh.ResetRequests()
	for _, d := range h.gh.Deliveries() {
		if d.SenderType == "Bot" {
			if resp := h.post(d.Event, d.ID+"-again", d.Payload, true); resp.StatusCode >= 300 {
				t.Fatalf("own %s answered %d", d.Event, resp.StatusCode)
			}
		}
	}
	h.settle()
	if w := writes(h.gh.Requests()); len(w) != 0 {
		t.Fatalf("own events caused writes: %v", w)
	}
	if len(cardsOn(t, h, n)) != 1 {
		t.Fatal("own events posted another card")
	}
}

// The API calls one opened issue costs once the repository's label exists, and
// that a second issue does not re-create the label.
func TestAPICallsPerOpenedIssue(t *testing.T) {
	h := newHarness(t)
	h.gh.OpenIssue(testRepo, "alice", "first", "")
	h.settle()
	h.gh.ResetRequests()
	n := h.gh.OpenIssue(testRepo, "alice", "second", "")
	h.settle()
	reqs := h.gh.Requests()
	var got []string
	for _, r := range reqs {
		got = append(got, r.Method+" "+r.Path)
	}
	p := fmt.Sprintf("/repos/%s/issues/%d", testRepo, n)
	want := []string{
		"POST " + p + "/labels", // GitHub answers with every label the issue carries: nothing to read first
		"GET " + p + "/comments",
		"POST " + p + "/comments",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("API calls for an opened issue:\n%s\nwant %v", describe(reqs), want)
	}
}

// Unsigned and wrongly signed deliveries are refused with 401 before any API call.
func TestBadSignaturesAreRefused(t *testing.T) {
	h := newHarness(t)
	payload := fixture(t, "issues/assigned.with-installation.payload.json")
	if _, err := os.Stat(filepath.Join("..", "testdata")); err != nil {
		t.Fatal(err)
	}
	h.gh.ResetRequests()
	if resp := h.post("issues", "d-unsigned", payload, false); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("unsigned: %d, want 401", resp.StatusCode)
	}
	req, _ := http.NewRequest(http.MethodPost, h.url+"/webhook", bytes.NewReader(payload))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "issues")
	req.Header.Set("X-GitHub-Delivery", "d-wrong")
	req.Header.Set("X-Hub-Signature-256", signature(payload, "another-secret"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong signature: %d, want 401", resp.StatusCode)
	}
	h.settle()
	if reqs := h.gh.Requests(); len(reqs) != 0 {
		t.Fatalf("refused deliveries made API calls:\n%s", describe(reqs))
	}
	st, _ := h.store.Stats(t.Context())
	if st.Queued != 0 {
		t.Fatalf("refused deliveries were queued: %+v", st)
	}
}

func TestWebhookIntake(t *testing.T) {
	h := newHarness(t)
	valid := fixture(t, "issue_comment/created.payload.json")
	huge := make([]byte, 25<<20+10)
	copy(huge, `{"action":"created","pad":"`)

	tests := []struct {
		name, event, id, contentType string
		body                         []byte
		sign                         bool
		want                         int
	}{
		{"handled event accepted", "issue_comment", "i-1", "application/json", valid, true, http.StatusAccepted},
		{"same delivery again is a duplicate", "issue_comment", "i-1", "application/json", valid, true, http.StatusOK},
		{"ping answered", "ping", "i-2", "application/json", fixture(t, "ping/payload.json"), true, http.StatusOK},
		{"unhandled event ignored", "star", "i-3", "application/json", fixture(t, "star/created.payload.json"), true, http.StatusAccepted},
		{"malformed JSON", "issues", "i-4", "application/json", []byte(`{"action": "opened",`), true, http.StatusBadRequest},
		{"JSON of the wrong shape", "issues", "i-5", "application/json", []byte(`{"issue": "seven"}`), true, http.StatusBadRequest},
		{"oversize", "issues", "i-6", "application/json", huge, true, http.StatusRequestEntityTooLarge},
		{"no delivery id", "issues", "", "application/json", valid, true, http.StatusBadRequest},
		{"no event header", "", "i-7", "application/json", valid, true, http.StatusBadRequest},
		{"unsupported content type", "issues", "i-8", "text/plain", valid, true, http.StatusUnsupportedMediaType},
		{"form-encoded payload", "issue_comment", "i-9", "application/x-www-form-urlencoded",
			[]byte("payload=" + urlQueryEscape(string(valid))), true, http.StatusAccepted},
		{"unsigned", "issues", "i-10", "application/json", valid, false, http.StatusUnauthorized},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, h.url+"/webhook", bytes.NewReader(tc.body))
			req.Header.Set("Content-Type", tc.contentType)
			if tc.event != "" {
				req.Header.Set("X-GitHub-Event", tc.event)
			}
			if tc.id != "" {
				req.Header.Set("X-GitHub-Delivery", tc.id)
			}
			if tc.sign {
				req.Header.Set("X-Hub-Signature-256", signature(tc.body, testSecret))
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, _ := h.get(path); code != http.StatusOK {
			t.Errorf("%s = %d after bad input", path, code)
		}
	}
	_, metrics := h.get("/metrics")
	for _, want := range []string{
		`countersign_webhook_deliveries_total{event="issue_comment",outcome="accepted"} 2`,
		`countersign_webhook_deliveries_total{event="issue_comment",outcome="duplicate"} 1`,
		`countersign_webhook_deliveries_total{event="issues",outcome="malformed"}`,
		`countersign_webhook_deliveries_total{event="issues",outcome="too_large"} 1`,
		`countersign_webhook_deliveries_total{event="other",outcome="ignored"} 1`,
		`countersign_webhook_response_seconds_bucket`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// Every payload GitHub documents, correctly signed and posted with its folder
// name as the event, gets an answer below 500, and the bot stays healthy and
// keeps working.
func TestEveryDocumentedPayload(t *testing.T) {
	h := newHarness(t)
	root := filepath.Join("..", "testdata", "github-webhooks")
	var count int
	err := filepath.Walk(root, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || !strings.HasSuffix(path, ".json") {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		event := strings.Split(rel, string(filepath.Separator))[0]
		payload, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		count++
		resp := h.post(event, fmt.Sprintf("fixture-%d", count), payload, true)
		if resp.StatusCode >= 300 {
			t.Errorf("%s: status %d", rel, resp.StatusCode)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if count < 200 {
		t.Fatalf("only %d payloads found under %s", count, root)
	}
	h.settle()
	if code, _ := h.get("/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz = %d after the fixtures", code)
	}
	if dead, _ := h.store.DeadLetters(t.Context()); len(dead) != 0 {
		t.Fatalf("%d documented payloads were dead-lettered, first: %+v", len(dead), dead[0])
	}
	n := h.gh.OpenIssue(testRepo, "alice", "still working?", "")
	h.settle()
	if got := h.gh.Labels(testRepo, n); !reflect.DeepEqual(got, []string{"state:pending"}) {
		t.Fatalf("bot stopped working after the fixtures: labels %v", got)
	}
	t.Logf("%d payloads posted", count)
}

// Secrets never reach the logs.
func TestLogsCarryNoSecrets(t *testing.T) {
	h := newHarness(t)
	h.gh.OpenIssue(testRepo, "alice", "x", "")
	h.post("issues", "bad", []byte(`{}`), false)
	h.settle()
	logs := h.logs.String()
	if strings.Contains(logs, testSecret) || strings.Contains(logs, "PRIVATE KEY") || strings.Contains(logs, "ghs_") {
		t.Fatal("a secret or token reached the logs")
	}
	// Delivery log lines carry the delivery's identity.
	var sawAttrs bool
	for _, line := range strings.Split(logs, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil || m["msg"] != "delivery refused: bad signature" {
			continue
		}
		if _, ok := m["delivery"]; ok {
			sawAttrs = true
		}
	}
	if !sawAttrs {
		t.Fatalf("refusal not logged with its delivery id:\n%s", logs)
	}
}

// cardsOn returns the bodies of the bot's task cards on issue n.
func cardsOn(t *testing.T, h *harness, n int) []string {
	t.Helper()
	var out []string
	for _, c := range h.gh.Comments(testRepo, n) {
		if templates.IsCard(c.Body) {
			if c.User != h.gh.BotLogin() {
				t.Fatalf("card posted by %q", c.User)
			}
			out = append(out, c.Body)
		}
	}
	return out
}

// A comment that imitates the card's hidden marker, written by a user, is not
// taken for the card: the bot posts its own.
func TestForgedCardIsIgnored(t *testing.T) {
	h := newHarness(t)
	h.gh.SetWebhookPaused(true)
	n := h.gh.OpenIssue(testRepo, "mallory", "forge", "")
	forged, err := templates.CardMarker(map[string]any{"state": "verified"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.gh.Comment(testRepo, n, "mallory", forged+"\n### countersign · task card")
	h.gh.SetWebhookPaused(false)
	h.settle()
	cards := cardsOnBy(h, n, h.gh.BotLogin())
	if len(cards) != 1 || !strings.Contains(cards[0], `"state":"pending"`) {
		t.Fatalf("bot cards = %q", cards)
	}
	if c := cardsOnBy(h, n, "mallory"); len(c) != 1 || strings.Contains(c[0], "pending") {
		t.Fatalf("the forged comment was touched: %q", c)
	}
}

func cardsOnBy(h *harness, n int, user string) []string {
	var out []string
	for _, c := range h.gh.Comments(testRepo, n) {
		if c.User == user && templates.IsCard(c.Body) {
			out = append(out, c.Body)
		}
	}
	return out
}
