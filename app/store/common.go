package store

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
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
// (keys are also Redis keys and log attributes, and ids were stored as JSON).
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

// A delivery is stored in a small binary form: the payload stays the bytes
// GitHub sent instead of base64 inside JSON, so storing and reading it back
// costs a copy rather than an encoding, a JSON scan and a decoding.
//
//	0x01                       format marker (a JSON record starts with '{')
//	uvarint len, id            id first: headPrefix relies on it
//	uvarint len, event
//	uvarint len, key
//	uvarint len, action
//	varint  received at, Unix seconds; uvarint nanoseconds
//	varint  attempts
//	uvarint len, last error
//	payload                    the rest
//
// Records written before this form are plain json.Marshal of Delivery (the
// payload base64 inside it); decodeDelivery and isHead read both, so
// deliveries queued by an older version are processed after an upgrade.
const deliveryFormat byte = 0x01

// encodeDelivery is the stored form of a delivery.
func encodeDelivery(d Delivery, now time.Time) ([]byte, error) {
	if d.ReceivedAt.IsZero() {
		d.ReceivedAt = now
	}
	n := 1 + 6*binary.MaxVarintLen64 + len(d.ID) + len(d.Event) + len(d.Key) + len(d.Action) + len(d.LastError) + len(d.Payload)
	b := make([]byte, 0, n)
	b = append(b, deliveryFormat)
	for _, s := range []string{d.ID, d.Event, d.Key, d.Action} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = binary.AppendVarint(b, d.ReceivedAt.Unix())
	b = binary.AppendUvarint(b, uint64(d.ReceivedAt.Nanosecond()))
	b = binary.AppendVarint(b, int64(d.Attempts))
	b = binary.AppendUvarint(b, uint64(len(d.LastError)))
	b = append(b, d.LastError...)
	return append(b, d.Payload...), nil
}

// decodeDelivery reads a stored delivery, in either form. The result shares
// no memory with b (a bbolt value is only valid within its transaction).
func decodeDelivery(b []byte) (*Delivery, error) {
	if len(b) > 0 && b[0] == '{' {
		var d Delivery
		if err := json.Unmarshal(b, &d); err != nil {
			return nil, fmt.Errorf("store: decode delivery: %w", err)
		}
		return &d, nil
	}
	if len(b) == 0 || b[0] != deliveryFormat {
		return nil, fmt.Errorf("store: decode delivery: unknown format")
	}
	r := deliveryReader{b: b[1:]}
	d := &Delivery{ID: r.str(), Event: r.str(), Key: r.str(), Action: r.str()}
	sec, nsec := r.varint(), r.uvarint()
	d.Attempts = int(r.varint())
	d.LastError = r.str()
	if r.err != nil {
		return nil, fmt.Errorf("store: decode delivery: %w", r.err)
	}
	if nsec >= uint64(time.Second) {
		return nil, fmt.Errorf("store: decode delivery %q: bad time", d.ID)
	}
	d.ReceivedAt = time.Unix(sec, int64(nsec)).UTC()
	if len(r.b) > 0 {
		d.Payload = bytes.Clone(r.b)
	}
	return d, nil
}

// deliveryReader reads the fields of a binary delivery; the first error
// sticks and later reads return zero values.
type deliveryReader struct {
	b   []byte
	err error
}

var errTruncated = errors.New("truncated record")

func (r *deliveryReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errTruncated
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *deliveryReader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errTruncated
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *deliveryReader) str() string {
	n := r.uvarint()
	if r.err != nil {
		return ""
	}
	if n > uint64(len(r.b)) {
		r.err = errTruncated
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// headPrefix is how every delivery with that id stored by this version
// starts, which lets a store check "the head of the queue is still this
// delivery" without decoding it.
func headPrefix(id string) []byte {
	out := make([]byte, 0, 1+binary.MaxVarintLen64+len(id))
	out = append(out, deliveryFormat)
	out = binary.AppendUvarint(out, uint64(len(id)))
	return append(out, id...)
}

// legacyHeadPrefix is headPrefix for a delivery stored as JSON by an earlier
// version: json.Marshal of Delivery starts with its id.
func legacyHeadPrefix(id string) []byte {
	b, _ := json.Marshal(id) // a string always marshals
	out := make([]byte, 0, len(b)+7)
	out = append(out, `{"id":`...)
	out = append(out, b...)
	return append(out, ',')
}

func isHead(raw []byte, id string) bool {
	if len(raw) > 0 && raw[0] == '{' {
		return bytes.HasPrefix(raw, legacyHeadPrefix(id))
	}
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
