package intake

import (
	"os"
	"path/filepath"
	"testing"
)

// The envelope and what recognising an echo needs are read in one pass.
func TestReadEnvelopeReadsEchoFieldsOnce(t *testing.T) {
	payload, err := os.ReadFile(filepath.Join("..", "..", "testdata", "github-webhooks", "issue_comment", "created.payload.json"))
	if err != nil {
		t.Fatal(err)
	}
	env, err := readEnvelope(payload)
	if err != nil {
		t.Fatal(err)
	}
	if env.notEcho || env.Comment == nil || env.Issue == nil || env.Issue.Number == 0 || env.repo() == "" || env.Sender == nil {
		t.Fatalf("envelope %+v: comment, issue, repository and sender not all read", env)
	}
}

// A payload whose echo fields have another shape is still read for its
// envelope (and is no echo); a payload that is not JSON is refused.
func TestReadEnvelopeOtherShapes(t *testing.T) {
	env, err := readEnvelope([]byte(`{"action":"created","comment":"a text","label":7,"issue":{"number":3,"labels":"x"},"repository":{"full_name":"acme/web"},"sender":{"login":"x[bot]","type":"Bot"}}`))
	if err != nil {
		t.Fatalf("payload with other shapes refused: %v", err)
	}
	if !env.notEcho || env.number() != 3 || env.repo() != "acme/web" || env.key() != "acme/web#3" || env.Action != "created" {
		t.Fatalf("envelope %+v", env)
	}
	if _, err := readEnvelope([]byte(`{"action":`)); err == nil {
		t.Fatal("malformed JSON read")
	}
	if _, err := readEnvelope([]byte(`{"issue":{"number":"three"}}`)); err == nil {
		t.Fatal("an envelope of the wrong shape read")
	}
}
