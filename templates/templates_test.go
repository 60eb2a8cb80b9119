package templates

import (
	"strings"
	"testing"
)

func TestCardMarkerRoundTrip(t *testing.T) {
	rec := map[string]any{"title": "close the --> comment </details>", "n": 7}
	m, err := CardMarker(rec, nil)
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

func TestRecordSignature(t *testing.T) {
	sign := func(b []byte) string { return "v1.sig-of-" + string(rune('0'+len(b)%10)) }
	m, err := CardMarker(map[string]any{"n": 7}, sign)
	if err != nil {
		t.Fatal(err)
	}
	body := m + "\n### card\n"
	rec, ok := CardRecord(body)
	if !ok || string(rec) != `{"n":7}` {
		t.Fatalf("CardRecord = %q, %v", rec, ok)
	}
	if sig, ok := RecordSignature(body); !ok || sig != sign(rec) {
		t.Fatalf("RecordSignature = %q, %v; want %q", sig, ok, sign(rec))
	}
	for _, body := range []string{
		"",
		"<!-- countersign:card {} -->",
		"<!-- countersign:card {} -->\n### card",
		"<!-- countersign:card {} -->\n<!-- countersign:sig  -->",
		"<!-- countersign:card {} -->\n<!-- countersign:sig v1.x",
		"<!-- countersign:card {} -->\ntext\n<!-- countersign:sig v1.x -->",
	} {
		if sig, ok := RecordSignature(body); ok {
			t.Errorf("RecordSignature(%q) = %q, want none", body, sig)
		}
	}
	if m, _ := CardMarker(map[string]any{}, func([]byte) string { return "x -->\n<b>" }); strings.Contains(m, "countersign:sig") {
		t.Errorf("a signature that could break out of its comment was written: %q", m)
	}
}
