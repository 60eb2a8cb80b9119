package store

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"
)

// Limits shared by both implementations, checked before anything is written so
// that bad input is rejected with an error instead of failing half-way.
const (
	// maxNameLen bounds delivery ids, ordering keys and record keys (bbolt keys
	// are limited to 32 KiB; real names are far shorter).
	maxNameLen = 4096
	// maxDuration bounds lease ttls and Nack delays, so that "now + d" never
	// overflows.
	maxDuration = 10 * 365 * 24 * time.Hour
)

// errInvalid is wrapped by every input validation error (see ErrInvalid).
var errInvalid = ErrInvalid

func invalidf(format string, args ...any) error {
	return fmt.Errorf("store: %w: %s", errInvalid, fmt.Sprintf(format, args...))
}

// checkName validates a delivery id or ordering key: non-empty, bounded, UTF-8
// (deliveries are stored as JSON, which would silently rewrite invalid UTF-8).
func checkName(what, s string) error {
	switch {
	case s == "":
		return invalidf("empty %s", what)
	case len(s) > maxNameLen:
		return invalidf("%s longer than %d bytes", what, maxNameLen)
	case !utf8.ValidString(s):
		return invalidf("%s is not valid UTF-8", what)
	}
	return nil
}

// checkRecordKey validates a record key: non-empty and bounded (any bytes).
func checkRecordKey(k string) error {
	switch {
	case k == "":
		return invalidf("empty record key")
	case len(k) > maxNameLen:
		return invalidf("record key longer than %d bytes", maxNameLen)
	}
	return nil
}

func checkDelivery(d *Delivery) error {
	if err := checkName("delivery id", d.ID); err != nil {
		return err
	}
	return checkName("delivery key", d.Key)
}

func checkClaim(c *Claim) error {
	switch {
	case c == nil:
		return invalidf("nil claim")
	case c.Key == "" || c.Token == "":
		return invalidf("claim without key or token")
	}
	return nil
}

func checkTTL(ttl time.Duration) (time.Duration, error) {
	if ttl <= 0 {
		return 0, invalidf("non-positive lease ttl %s", ttl)
	}
	return min(ttl, maxDuration), nil
}

func clampDelay(d time.Duration) time.Duration {
	return min(max(d, 0), maxDuration)
}

// checkCommit validates w and encodes its derived deliveries.
func checkCommit(w *Commit, now time.Time) ([][]byte, error) {
	for k := range w.Records {
		if err := checkRecordKey(k); err != nil {
			return nil, err
		}
	}
	enc := make([][]byte, len(w.Enqueue))
	for i := range w.Enqueue {
		d := w.Enqueue[i]
		if err := checkDelivery(&d); err != nil {
			return nil, err
		}
		b, err := encodeDelivery(d, now)
		if err != nil {
			return nil, err
		}
		enc[i] = b
	}
	return enc, nil
}

// encodeDelivery is the stored form of a delivery. It must stay plain
// json.Marshal of Delivery: headPrefix relies on "id" being its first field.
func encodeDelivery(d Delivery, now time.Time) ([]byte, error) {
	if d.ReceivedAt.IsZero() {
		d.ReceivedAt = now
	}
	b, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("store: encode delivery %q: %w", d.ID, err)
	}
	return b, nil
}

func decodeDelivery(b []byte) (*Delivery, error) {
	var d Delivery
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("store: decode delivery: %w", err)
	}
	return &d, nil
}

// headPrefix is how every encoded delivery with that id starts, which lets a
// store check "the head of the queue is still this delivery" without decoding it.
func headPrefix(id string) []byte {
	b, _ := json.Marshal(id) // a string always marshals
	out := make([]byte, 0, len(b)+7)
	out = append(out, `{"id":`...)
	out = append(out, b...)
	return append(out, ',')
}

func isHead(raw []byte, id string) bool {
	return raw != nil && bytes.HasPrefix(raw, headPrefix(id))
}

func newToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("store: lease token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// errNotHead is returned when a claim's delivery is no longer at the head of its
// queue although the lease still holds (for example a second Commit of the same
// claim): nothing is written. Callers wrap it with the store and operation.
func errNotHead(c *Claim) error {
	return fmt.Errorf("delivery %q is not at the head of the queue of %q (already committed?)", c.Delivery.ID, c.Key)
}
