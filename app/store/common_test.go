package store

import (
	"bytes"
	"testing"
	"time"
)

// Commit, Nack and DeadLetter recognise the head of a queue by the prefix of
// its encoding; this breaks if Delivery's JSON stops starting with its id.
func TestEncodedDeliveryStartsWithHeadPrefix(t *testing.T) {
	for _, id := range []string{"72d3162e-cc78-11e3-81ab-4c9367dc0958", `a"b\c`, "<&>", "ünï", "\u2028", "x,y"} {
		raw, err := encodeDelivery(Delivery{ID: id, Key: "k", Payload: []byte("p")}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if !isHead(raw, id) {
			t.Errorf("encoding %s does not start with %s", raw, headPrefix(id))
		}
		if isHead(raw, id+"x") || isHead(raw, id[:len(id)-1]) {
			t.Errorf("encoding %s matches another id", raw)
		}
		d, err := decodeDelivery(raw)
		if err != nil || d.ID != id || !bytes.Equal(d.Payload, []byte("p")) {
			t.Errorf("decode = %+v, %v", d, err)
		}
	}
}

func TestSuccessor(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{"a", "b", true},
		{"task:", "task;", true},
		{"a\xff", "b", true},
		{"\xff\xff", "", false},
		{"", "", false},
	} {
		got, ok := successor(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("successor(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}
