package deliveries

import (
	"testing"

	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
)

func TestBackground(t *testing.T) {
	person, bot := `"sender":{"login":"alice","type":"User"}`, `"sender":{"login":"countersign[bot]","type":"Bot"}`
	for _, tc := range []struct {
		name       string
		d          store.Delivery
		background bool
	}{
		{"a person's command", store.Delivery{Event: "issue_comment", Payload: []byte(`{"action":"created",` + person + `}`)}, false},
		{"a bot's comment", store.Delivery{Event: "issue_comment", Payload: []byte(`{"action":"created",` + bot + `}`)}, true},
		{"an opened issue", store.Delivery{Event: "issues", Payload: []byte(`{"action":"opened",` + person + `}`)}, true},
		{"a person's label", store.Delivery{Event: "issues", Action: "labeled", Payload: []byte(`{` + person + `}`)}, false},
		{"a CI result", store.Delivery{Event: "check_run", Payload: []byte(`{"action":"completed",` + bot + `}`)}, false},
		{"an installation", store.Delivery{Event: "installation", Payload: []byte(`{"action":"created",` + person + `}`)}, true},
		{"a person's review fanned out", Derived("r/1", Task, "o/r#1", TaskPayload{Event: rules.Event{Kind: rules.PRReviewed, Actor: rules.User{Login: "bob"}}}), false},
		{"a bot's push fanned out", Derived("p/1", Task, "o/r#1", TaskPayload{Event: rules.Event{Kind: rules.PRPushed, Actor: rules.User{Login: "ci[bot]"}}}), true},
		{"a check refresh a person waits for", Derived("c/1", Check, "o/r#2", CheckPayload{Interactive: true}), false},
		{"a check refresh", Derived("c/2", Check, "o/r#2", CheckPayload{}), true},
		{"a dashboard", Derived("d/1", Dashboard, "o/r@goal1", DashboardPayload{}), true},
		{"a regate", Derived("g/1", Regate, "o/r#2", RegatePayload{}), false},
	} {
		if got := Background(&tc.d); got != tc.background {
			t.Errorf("%s: Background = %v, want %v", tc.name, got, tc.background)
		}
		if tc.d.ID != "" && tc.d.Interactive == tc.background {
			t.Errorf("%s: Derived made Interactive %v", tc.name, tc.d.Interactive)
		}
	}
}
