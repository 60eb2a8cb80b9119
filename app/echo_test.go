package app_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/githubtest"
)

// intakeOutcomes reads countersign_webhook_deliveries_total from /metrics:
// event -> outcome -> count.
func intakeOutcomes(t *testing.T, h *harness) map[string]map[string]int {
	t.Helper()
	_, body := h.get("/metrics")
	out := map[string]map[string]int{}
	re := regexp.MustCompile(`(?m)^countersign_webhook_deliveries_total\{event="([^"]+)",outcome="([^"]+)"\} (\d+)$`)
	for _, m := range re.FindAllStringSubmatch(body, -1) {
		n, _ := strconv.Atoi(m[3])
		if out[m[1]] == nil {
			out[m[1]] = map[string]int{}
		}
		out[m[1]][m[2]] = n
	}
	return out
}

// TestEchoesAreNotQueued opens a burst of issues through the fake GitHub,
// which sends countersign's own writes back as webhooks (each issue's
// state:pending label and its card): intake answers them 202 without
// queueing them, while a person's owned label added in the same moment is
// queued and undone, and a delivery from the bot's account that carries a
// label set countersign did not record is queued too.
func TestEchoesAreNotQueued(t *testing.T) {
	h := newHarness(t)
	h.gh.OpenIssue(testRepo, "alice", "Warm-up task", "Learn the App's own login.")
	h.settle()
	before := intakeOutcomes(t, h)

	const burst = 20
	var issues []int
	for i := range burst {
		issues = append(issues, h.gh.OpenIssue(testRepo, "alice", fmt.Sprintf("Imported task %d", i), "The form validates email."))
	}
	h.gh.AddLabels(testRepo, issues[3], "mallory", "state:verified") // a person's label, in the same second
	h.settleWithin(60 * time.Second)

	for _, n := range issues {
		if got := h.gh.Labels(testRepo, n); len(got) != 1 || got[0] != "state:pending" {
			t.Errorf("issue #%d labels %v, want [state:pending]", n, got)
		}
	}
	after := intakeOutcomes(t, h)
	queued := func(event string) int { return after[event]["accepted"] - before[event]["accepted"] }
	echoed := func(event string) int { return after[event]["echo"] - before[event]["echo"] }
	// Queued: the burst's issues.opened and the person's issues.labeled, and
	// the bot's unlabeled of the person's label (an owned label's removal
	// its record does not say it made: it undid someone else's).
	if got := queued("issues"); got < burst+1 || got > burst+2 {
		t.Errorf("issues deliveries queued: %d, want the %d opened, the person's label and at most the undoing", got, burst)
	}
	if got := queued("issue_comment"); got != 0 {
		t.Errorf("issue_comment deliveries queued: %d, want 0 (every one is a card)", got)
	}
	if got := echoed("issue_comment"); got < burst { // each card, and its edit after the person's label
		t.Errorf("card echoes: %d, want at least %d", got, burst)
	}
	if got := echoed("issues"); got < burst {
		t.Errorf("label echoes: %d, want at least %d", got, burst)
	}

	// The bot's label event whose issue carries an owned label countersign
	// did not record is queued; the same echo as recorded is not.
	var echo githubtest.SentWebhook
	for _, d := range h.gh.Deliveries() {
		if d.Event == "issues" && d.Action == "labeled" && d.Sender == h.gh.BotLogin() && d.Status == http.StatusAccepted {
			var p struct {
				Issue struct {
					Number int `json:"number"`
				} `json:"issue"`
			}
			if json.Unmarshal(d.Payload, &p) == nil && p.Issue.Number == issues[0] {
				echo = d
			}
		}
	}
	if echo.ID == "" {
		t.Fatalf("no echo of #%d's label recorded", issues[0])
	}
	var doc map[string]any
	if err := json.Unmarshal(echo.Payload, &doc); err != nil {
		t.Fatal(err)
	}
	issue := doc["issue"].(map[string]any)
	issue["labels"] = append(issue["labels"].([]any), map[string]any{"name": "state:verified"})
	forged, _ := json.Marshal(doc)
	before = intakeOutcomes(t, h)
	if resp := h.post("issues", "echo-replayed", echo.Payload, true); resp.StatusCode != http.StatusAccepted {
		t.Errorf("recorded echo answered %d", resp.StatusCode)
	}
	if resp := h.post("issues", "echo-unrecorded", forged, true); resp.StatusCode != http.StatusAccepted {
		t.Errorf("unrecorded label set answered %d", resp.StatusCode)
	}
	if resp := h.post("issues", "echo-unrecorded", forged, true); resp.StatusCode != http.StatusOK {
		t.Errorf("the same delivery again answered %d, want 200 (a duplicate)", resp.StatusCode)
	}
	h.settle()
	after = intakeOutcomes(t, h)
	if got := after["issues"]["echo"] - before["issues"]["echo"]; got != 1 {
		t.Errorf("echoes counted: %d, want 1", got)
	}
	if got := after["issues"]["accepted"] - before["issues"]["accepted"]; got != 1 {
		t.Errorf("queued: %d, want 1 (the label set countersign did not record)", got)
	}
	_, metrics := h.get("/metrics")
	if !regexp.MustCompile(`countersign_webhooks_echo_total\{event="issue_comment"\} \d+`).MatchString(metrics) {
		t.Errorf("/metrics lacks countersign_webhooks_echo_total")
	}
}
