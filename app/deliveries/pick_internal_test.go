package deliveries

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// Reading a payload's action and sender without decoding the rest gives
// what decoding the whole payload gives.
func TestPickHeadAgreesWithDecoding(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "github-webhooks", "*", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test payloads: %v", err)
	}
	payloads := [][]byte{[]byte(`{"sender":null}`), []byte(`{"action":"a","sender":{"Type":"Bot"}}`), []byte(`{"sender":"x"}`), []byte(`{"action":1}`), []byte(`[]`)}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		payloads = append(payloads, b)
	}
	for _, p := range payloads {
		type head struct {
			Action string `json:"action"`
			Sender struct {
				Type string `json:"type"`
			} `json:"sender"`
		}
		var got, want head
		if !pickHead(p, &got.Action, &got.Sender) {
			continue
		}
		if err := json.Unmarshal(p, &want); err != nil || got != want {
			t.Errorf("pickHead(%.100s) = %+v; decoding: %+v, %v", p, got, want, err)
		}
	}
}
