package backend

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/countersign/countersign/app/store"
)

// Commit, Nack and DeadLetter recognise the head of a queue by the prefix of
// its encoding, in the binary form and in the JSON form of earlier versions.
func TestEncodedDeliveryStartsWithHeadPrefix(t *testing.T) {
	for _, id := range []string{"72d3162e-cc78-11e3-81ab-4c9367dc0958", `a"b\c`, "<&>", "ünï", "\u2028", "x,y", "\x01"} {
		in := store.Delivery{ID: id, Event: "issues", Key: "k", Action: "opened", Payload: []byte("p"), Attempts: 3, LastError: "e",
			ReceivedAt: time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)}
		raw, err := EncodeDelivery(in, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		legacy, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		for _, enc := range [][]byte{raw, legacy} {
			if !IsHead(enc, id) {
				t.Errorf("encoding %q does not start with its head prefix", enc)
			}
			if IsHead(enc, id+"x") || IsHead(enc, id[:len(id)-1]) {
				t.Errorf("encoding %q matches another id", enc)
			}
			d, err := DecodeDelivery(enc)
			if err != nil || d.ID != id || !bytes.Equal(d.Payload, in.Payload) || d.Event != in.Event || d.Key != in.Key ||
				d.Action != in.Action || d.Attempts != 3 || d.LastError != "e" || !d.ReceivedAt.Equal(in.ReceivedAt) {
				t.Errorf("decode = %+v, %v", d, err)
			}
		}
	}
}

// The binary form keeps the payload's bytes as they are, and a truncated or
// unknown record is an error, never a panic.
func TestDecodeDeliveryBadInput(t *testing.T) {
	raw, err := EncodeDelivery(store.Delivery{ID: "id", Key: "k", Payload: []byte("{\"a\":1}\xff")}, time.Unix(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(raw, []byte("{\"a\":1}\xff")) {
		t.Errorf("payload not stored as is: %q", raw)
	}
	for i := range len(raw) - len("{\"a\":1}\xff") {
		if d, err := DecodeDelivery(raw[:i]); err == nil {
			t.Errorf("decode of %q (truncated) = %+v, want an error", raw[:i], d)
		}
	}
	for _, bad := range []string{"", "\x02", "[]", "{"} {
		if _, err := DecodeDelivery([]byte(bad)); err == nil {
			t.Errorf("decode of %q: no error", bad)
		}
	}
}

func FuzzDecodeDelivery(f *testing.F) {
	raw, _ := EncodeDelivery(store.Delivery{ID: "id", Event: "e", Key: "k", Action: "a", Payload: []byte("p")}, time.Unix(1, 0))
	f.Add(raw)
	f.Add([]byte(`{"id":"x","payload":"cA=="}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := DecodeDelivery(b)
		if err != nil {
			return
		}
		again, err := EncodeDelivery(*d, time.Unix(1, 0))
		if err != nil {
			t.Fatal(err)
		}
		d2, err := DecodeDelivery(again)
		if err != nil || d2.ID != d.ID || d2.Key != d.Key || d2.Event != d.Event || d2.Action != d.Action ||
			!bytes.Equal(d2.Payload, d.Payload) || d2.Attempts != d.Attempts || d2.LastError != d.LastError ||
			(!d.ReceivedAt.IsZero() && !d2.ReceivedAt.Equal(d.ReceivedAt)) {
			t.Fatalf("round trip of %+v = %+v, %v", d, d2, err)
		}
		if !IsHead(again, d.ID) {
			t.Fatalf("re-encoded %q does not start with its head prefix", again)
		}
	})
}
