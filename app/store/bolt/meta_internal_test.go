package bolt

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// The hand-written meta encoding is encoding/json's, byte for byte, and
// reads back what encoding/json (an earlier version) wrote.
func TestMetaCodecIsJSON(t *testing.T) {
	metas := []keyMeta{
		{},
		{QHead: 1, QTail: 2},
		{QHead: 3, QTail: 9, OHead: 1 << 40, OTail: 1<<64 - 1, Token: "0f3a9c", Owner: "host-1234/w3", LeaseExp: 1764300000123456789,
			Ready: []byte("\x00\x01\x02\x03\x04\x05\x06\x07\x00\x00\x00\x00\x00\x00\x00\x09acme/widgets#12"), Parked: "host-1234", Urgent: true},
		{OTail: 4, LeaseExp: -5, Ready: []byte{0xff}},
		{Token: "t", Owner: "<ops> & \"co\"", Parked: "é\u2028"},
		{Owner: "tab\there", Urgent: true},
	}
	for _, m := range metas {
		want, err := json.Marshal(&m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeMeta(&m)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("encodeMeta(%+v) = %s, %v; want %s", m, got, err, want)
		}
		var back keyMeta
		if err := decodeMeta(want, &back); err != nil || !reflect.DeepEqual(back, m) {
			t.Errorf("decodeMeta(%s) = %+v, %v; want %+v", want, back, err, m)
		}
	}
	// What encoding/json reads, decodeMeta reads alike (spaces, escapes,
	// fields in another order, unknown fields); what it refuses, refused.
	for _, v := range []string{
		`{"qh":1,"qt":2}`,
		`{ "qt" : 2 , "qh" : 1 }`,
		`{"own":"a\u0026b","tok":"x\"y"}`,
		`{"ready":"","urg":false}`,
		`{"ready":"AAE=","later":{"x":[1,2]}}`,
		`{"exp":-3,"park":"p","oh":7,"ot":8}`,
		`{"qh":-1}`,
		`{"qh":1.5}`,
		`{"qh":1,}`,
		`{"tok":"x}`,
		`not json`,
		`{}`,
	} {
		var want, got keyMeta
		wantErr := json.Unmarshal([]byte(v), &want)
		gotErr := decodeMeta([]byte(v), &got)
		if (wantErr != nil) != (gotErr != nil) || (wantErr == nil && !reflect.DeepEqual(got, want)) {
			t.Errorf("decodeMeta(%s) = %+v, %v; encoding/json: %+v, %v", v, got, gotErr, want, wantErr)
		}
	}
}
