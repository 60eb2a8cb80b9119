package app_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/githubtest"
	"github.com/countersign/countersign/rules"
	"github.com/countersign/countersign/templates"
)

// The board (docs/board.md): an organization's GitHub Projects board on
// which countersign keeps every task and goal issue, with its field at the
// task's or goal's state.

const (
	boardOrg    = "acme" // testRepo's owner
	boardNumber = 1
	boardURL    = "https://github.com/orgs/acme/projects/1"
	boardConfig = "board:\n  project: " + boardURL + "\n"
)

// boardHarness is a harness whose organization has a board that the
// configuration file (on the default branch before anything happens) names.
func boardHarness(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t)
	team(h)
	h.gh.AddProject(boardOrg, boardNumber, "Roadmap")
	h.gh.SetFile(testRepo, rules.ConfigPath, boardConfig)
	return h
}

func wantBoard(t *testing.T, h *harness, n int, want string) {
	t.Helper()
	got, on := h.gh.BoardValue(boardOrg, boardNumber, testRepo, n, rules.DefaultBoardField)
	if !on || got != want {
		t.Fatalf("#%d on the board: %q (on the board: %v), want %q", n, got, on, want)
	}
}

// graphqlMutations counts the GraphQL mutations countersign made since the
// requests were reset, by name.
func graphqlMutations(h *harness) map[string]int {
	out := map[string]int{}
	for _, r := range h.gh.Requests() {
		if r.Method == http.MethodPost && strings.HasSuffix(r.Path, "/graphql") && r.Installation != 0 && strings.HasPrefix(strings.TrimSpace(r.GraphQL), "mutation") {
			for _, m := range []string{"addProjectV2ItemById", "updateProjectV2ItemFieldValue", "createProjectV2Field", "deleteProjectV2Item"} {
				if strings.Contains(r.GraphQL, m) {
					out[m]++
				}
			}
		}
	}
	return out
}

func cardOf(t *testing.T, h *harness, n int) string {
	t.Helper()
	for _, c := range h.gh.Comments(testRepo, n) {
		if c.User == h.gh.BotLogin() && templates.IsCard(c.Body) {
			return c.Body
		}
	}
	t.Fatalf("#%d has no task card", n)
	return ""
}

// A board that has nothing of countersign's: its field is created with every
// option, each task and goal issue is added, and the field follows the
// state, one mutation per change.
func TestBoardCreatedFromNothing(t *testing.T) {
	h := boardHarness(t)
	n := h.gh.OpenIssue(testRepo, "alice", "Add the export", "")
	h.settle()
	opts, ok := h.gh.BoardField(boardOrg, boardNumber, rules.DefaultBoardField)
	if !ok || !slices.Equal(opts, rules.BoardOptions()) {
		t.Fatalf("board field options %v (exists %v), want %v", opts, ok, rules.BoardOptions())
	}
	wantBoard(t, h, n, "pending")

	h.gh.ResetRequests()
	h.gh.Assign(testRepo, n, "carol", "alice")
	h.settle()
	wantState(t, h, n, "assigned")
	wantBoard(t, h, n, "assigned")
	if m := graphqlMutations(h); m["updateProjectV2ItemFieldValue"] != 1 || len(m) != 1 {
		t.Errorf("mutations for one state change: %v, want one updateProjectV2ItemFieldValue", m)
	}

	// A goal: its goal issue joins the board at the goal's state.
	ms := h.gh.CreateMilestone(testRepo, "carol", "v1")
	h.gh.SetMilestone(testRepo, n, "carol", ms)
	h.settle()
	g, _ := goalIssueOf(t, h, ms)
	wantBoard(t, h, g, "open")
	if c := h.gh.BoardFieldCount(boardOrg, boardNumber, rules.DefaultBoardField); c != 1 {
		t.Errorf("%d fields named %s, want 1", c, rules.DefaultBoardField)
	}
	if err := h.gh.Err(); err != nil {
		t.Fatal(err)
	}
}

// A board named by a push of the configuration, after tasks exist: the push
// puts every one of them on it.
func TestBoardConfiguredLaterTakesExistingTasks(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.AddProject(boardOrg, boardNumber, "Roadmap")
	a := h.gh.OpenIssue(testRepo, "alice", "First", "")
	b := h.gh.OpenIssue(testRepo, "alice", "Second", "")
	h.gh.Assign(testRepo, b, "carol", "alice")
	h.settle()
	if got := h.gh.BoardItems(boardOrg, boardNumber); got != 0 {
		t.Fatalf("%d items before the board is configured", got)
	}
	sha := h.gh.PushDefault(testRepo, "carol", map[string]string{rules.ConfigPath: boardConfig})
	h.settle()
	if r := configCheck(h, sha); r.Conclusion != "success" {
		t.Fatalf("config check %+v, want success", r)
	}
	wantBoard(t, h, a, "pending")
	wantBoard(t, h, b, "assigned")
}

// A person who moves a card on the board (sets countersign's field) sees it
// put back at once, and the task card records who did it.
func TestBoardPersonMovingACardIsPutBack(t *testing.T) {
	h := boardHarness(t)
	n := h.gh.OpenIssue(testRepo, "alice", "Add the export", "")
	h.settle()
	wantBoard(t, h, n, "pending")

	h.gh.ResetRequests()
	if err := h.gh.SetBoardValue("mallory", boardOrg, boardNumber, testRepo, n, rules.DefaultBoardField, "verified"); err != nil {
		t.Fatal(err)
	}
	h.settle()
	wantBoard(t, h, n, "pending")
	wantState(t, h, n, "pending")
	wantContains(t, "the task card", cardOf(t, h, n), "board field countersign set to verified by @mallory: put back")
	if m := graphqlMutations(h); m["updateProjectV2ItemFieldValue"] != 1 || m["addProjectV2ItemById"] != 0 {
		t.Errorf("mutations to put the card back: %v, want one updateProjectV2ItemFieldValue", m)
	}
	// countersign's own change came back as a webhook and changed nothing more.
	h.gh.ResetRequests()
	h.settle()
	if m := graphqlMutations(h); len(m) != 0 {
		t.Errorf("mutations after the repair settled: %v", m)
	}

	// Another field of the board is people's own.
	if err := h.gh.SetBoardValue("mallory", boardOrg, boardNumber, testRepo, n, "Status", "Done"); err != nil {
		t.Fatal(err)
	}
	h.settle()
	if m := graphqlMutations(h); len(m) != 0 {
		t.Errorf("mutations after a change of another field: %v", m)
	}
}

// An item removed from the board is added again, at its value, and the card
// says who removed it.
func TestBoardRemovedItemIsAddedAgain(t *testing.T) {
	h := boardHarness(t)
	n := h.gh.OpenIssue(testRepo, "alice", "Add the export", "")
	h.settle()
	if err := h.gh.RemoveBoardItem("mallory", boardOrg, boardNumber, testRepo, n); err != nil {
		t.Fatal(err)
	}
	h.settle()
	wantBoard(t, h, n, "pending")
	wantContains(t, "the task card", cardOf(t, h, n), "board item removed by @mallory: added again")
}

// A person's change whose webhook never arrived is healed by reconciliation
// (here the resync an installation's acceptance of new permissions starts).
func TestBoardMissedDeliveryHealed(t *testing.T) {
	h := boardHarness(t)
	a := h.gh.OpenIssue(testRepo, "alice", "Moved", "")
	b := h.gh.OpenIssue(testRepo, "alice", "Removed", "")
	h.settle()
	h.gh.DropWebhooks(true)
	if err := h.gh.SetBoardValue("mallory", boardOrg, boardNumber, testRepo, a, rules.DefaultBoardField, "verified"); err != nil {
		t.Fatal(err)
	}
	if err := h.gh.RemoveBoardItem("mallory", boardOrg, boardNumber, testRepo, b); err != nil {
		t.Fatal(err)
	}
	h.gh.DropWebhooks(false)
	h.settle()
	if v, _ := h.gh.BoardValue(boardOrg, boardNumber, testRepo, a, rules.DefaultBoardField); v != "verified" {
		t.Fatalf("the person's change did not happen: %q", v)
	}
	payload := fmt.Sprintf(`{"action":"new_permissions_accepted","installation":{"id":%d},"sender":{"login":"carol","id":3,"type":"User"}}`, testInstallation)
	if resp := h.post("installation", "accepted-1", []byte(payload), true); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("installation delivery: status %d", resp.StatusCode)
	}
	h.settle()
	wantBoard(t, h, a, "pending")
	wantBoard(t, h, b, "pending")
}

// A project countersign cannot reach (the installation lacks the
// organization projects permission) is a configuration error on the
// countersign/config check; the rest of the configuration applies, and
// tasks go on as before.
func TestBoardUnreachableIsAConfigurationError(t *testing.T) {
	h := newHarness(t)
	team(h)
	h.gh.AddProject(boardOrg, boardNumber, "Roadmap")
	h.gh.SetProjectAccess(boardOrg, boardNumber, false)
	sha := h.gh.PushDefault(testRepo, "carol", map[string]string{rules.ConfigPath: boardConfig + "escalation: {rejections: 3}\n"})
	h.settle()
	r := configCheck(h, sha)
	if r.Conclusion != "failure" {
		t.Fatalf("config check %+v, want failure", r)
	}
	wantContains(t, "the config check", r.Title+"\n"+r.Summary, "board.project", "organization projects")
	n := h.gh.OpenIssue(testRepo, "alice", "Still a task", "")
	h.gh.Assign(testRepo, n, "carol", "alice")
	h.settle()
	wantState(t, h, n, "assigned")
	if got := h.gh.BoardItems(boardOrg, boardNumber); got != 0 {
		t.Errorf("%d items on a board countersign may not reach", got)
	}
	// Once the permission is accepted, reconciliation puts the board right.
	h.gh.SetProjectAccess(boardOrg, boardNumber, true)
	payload := fmt.Sprintf(`{"action":"new_permissions_accepted","installation":{"id":%d},"sender":{"login":"carol","id":3,"type":"User"}}`, testInstallation)
	if resp := h.post("installation", "accepted-1", []byte(payload), true); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("installation delivery: status %d", resp.StatusCode)
	}
	h.settle()
	wantBoard(t, h, n, "assigned")
}

// A user's project is refused by the configuration itself.
func TestBoardUserProjectIsRefused(t *testing.T) {
	h := newHarness(t)
	team(h)
	sha := h.gh.PushDefault(testRepo, "carol", map[string]string{rules.ConfigPath: "board:\n  project: https://github.com/users/carol/projects/2\n"})
	h.settle()
	r := configCheck(h, sha)
	if r.Conclusion != "failure" {
		t.Fatalf("config check %+v, want failure", r)
	}
	wantContains(t, "the config check", r.Summary, ".github/countersign.yml:2:", "not a user's")
}

var _ = githubtest.Options{}

// What the board costs a task, on a board countersign already knows: on the
// happy path, one read of the issue's node id and one mutation to add it,
// then one mutation per change of the value the board shows, and nothing
// for the steps that change no state.
func TestBoardCostPerTask(t *testing.T) {
	h := boardHarness(t)
	warm := h.gh.OpenIssue(testRepo, "carol", "warm-up: the board's field", "")
	h.settle()
	wantBoard(t, h, warm, "pending")

	var n, pr int
	var sha string
	steps := []struct {
		name              string
		act               func()
		queries, mutation int
	}{
		{"opened → pending", func() { n = h.gh.OpenIssue(testRepo, "carol", "Create login form component", "") }, 1, 2},
		{"pending → assigned", func() { h.gh.Assign(testRepo, n, "carol", "alice") }, 0, 1},
		{"assigned → in-progress (/start)", func() { h.gh.Comment(testRepo, n, "alice", "/start") }, 0, 1},
		{"draft PR linked", func() {
			pr, sha = h.gh.OpenPR(testRepo, "alice", githubtest.PROptions{Title: "Login form", Body: fmt.Sprintf("Fixes #%d", n), Draft: true})
		}, 0, 0},
		{"in-progress → review (PR ready)", func() { h.gh.ReadyForReview(testRepo, pr, "alice") }, 0, 1},
		{"review → completed (approval)", func() { h.gh.Review(testRepo, pr, "carol", "APPROVED", "") }, 0, 1},
		{"CI passes", func() { ciPasses(h, sha) }, 0, 0},
		{"completed → verified (/verify)", func() { h.gh.Comment(testRepo, n, "bob", "/verify works") }, 0, 1},
	}
	total := 0
	for _, s := range steps {
		h.gh.ResetRequests()
		s.act()
		h.settle()
		queries, mutations := 0, 0
		for _, r := range h.gh.Requests() {
			if r.GraphQL == "" || r.Installation == 0 {
				continue
			}
			if strings.HasPrefix(strings.TrimSpace(r.GraphQL), "mutation") {
				mutations++
			} else if strings.Contains(r.GraphQL, "projectV2") || strings.Contains(r.GraphQL, "issue(number") || strings.Contains(r.GraphQL, "node(") {
				queries++
			}
		}
		total += queries + mutations
		t.Logf("%-34s board reads %d, board mutations %d", s.name, queries, mutations)
		if queries != s.queries || mutations != s.mutation {
			t.Errorf("%s: %d board reads and %d mutations, want %d and %d", s.name, queries, mutations, s.queries, s.mutation)
		}
	}
	wantBoard(t, h, n, "verified")
	t.Logf("the board's extra requests for one task, opened to verified: %d", total)
}
