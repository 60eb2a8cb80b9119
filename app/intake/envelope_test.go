package intake

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
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

// Reading an envelope without decoding the members it does not read gives
// what decoding the whole payload gives, for every payload of the test data
// and for other shapes; what it cannot read so is decoded whole.
func TestPickEnvelopeAgreesWithDecoding(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "github-webhooks", "*", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test payloads: %v", err)
	}
	var payloads [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		payloads = append(payloads, b)
	}
	for _, p := range []string{
		`{"action":"opened","repository":null,"issue":{"number":3,"labels":[{"name":"state:pending"}]},"sender":{"login":"a[bot]","type":"Bot"}}`,
		`{"repository":{"full_name":null,"owner":{"full_name":"x"}},"label":{"name":"x"}}`,
		`{"repository":"acme/web"}`,
		`{"repository":{"Full_Name":"acme/web"}}`,
		`{"Repository":{"full_name":"acme/web"}}`,
		`{"repository":{"full_name":"a"},"repository":{"full_name":"b"}}`,
		`{"comment":"a text","label":7}`,
		`{"issue":{"number":"three"}}`,
		`{"action":`,
		`[]`,
		`null`,
	} {
		payloads = append(payloads, []byte(p))
	}
	picked := 0
	for _, p := range payloads {
		got, ok := pickEnvelope(p)
		if !ok {
			continue
		}
		picked++
		var want envelope
		if err := json.Unmarshal(p, &want); err != nil {
			t.Errorf("pickEnvelope(%.100s) read what decoding refuses: %v", p, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("pickEnvelope(%.100s) = %+v, decoding gives %+v", p, got, want)
		}
	}
	if picked < len(files) {
		t.Errorf("%d of %d payloads picked, want at least every test payload", picked, len(payloads))
	}
}
