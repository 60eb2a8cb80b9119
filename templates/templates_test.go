package templates

import (
	"strings"
	"testing"
)

func TestCardMarkerRoundTrip(t *testing.T) {
	rec := map[string]any{"title": "close the --> comment </details>", "n": 7}
	m, err := CardMarker(rec)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(m, "-->") != 1 || !strings.HasSuffix(m, " -->") {
		t.Fatalf("marker can be closed early: %q", m)
	}
	body := m + "\n### card\n"
	if !IsCard(body) {
		t.Fatal("IsCard = false for a card")
	}
	got, ok := CardRecord(body)
	if !ok || !strings.Contains(string(got), `"n":7`) {
		t.Fatalf("CardRecord = %q, %v", got, ok)
	}
}

func TestCardRecordRejects(t *testing.T) {
	for _, body := range []string{
		"",
		"a comment that quotes <!-- countersign:card {} -->",
		"<!-- countersign:card {not json} -->",
		"<!-- countersign:card {\"a\":1}",
	} {
		if _, ok := CardRecord(body); ok {
			t.Errorf("CardRecord(%q) ok, want not a card", body)
		}
	}
}
