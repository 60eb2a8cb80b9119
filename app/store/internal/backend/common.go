package backend

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

	"github.com/countersign/countersign/app/store"
)

// Limits shared by both implementations, checked before anything is written so
// that bad input is rejected with an error instead of failing half-way.
const (
	// maxNameLen bounds delivery ids, ordering keys and record keys (bbolt keys
	// are limited to 32 KiB; real names are far shorter).
	maxNameLen = 4096
	// MaxDuration bounds lease ttls and Nack delays, so that "now + d" never
	// overflows.
	MaxDuration = 10 * 365 * 24 * time.Hour
)

// errInvalid is wrapped by every input validation error (see ErrInvalid).
var errInvalid = store.ErrInvalid

func Invalidf(format string, args ...any) error {
	return fmt.Errorf("store: %w: %s", errInvalid, fmt.Sprintf(format, args...))
}

// CheckName validates a delivery id or ordering key: non-empty, bounded, UTF-8
// (keys are also Redis keys and log attributes, and ids were stored as JSON).
func CheckName(what, s string) error {
	switch {
	case s == "":
		return Invalidf("empty %s", what)
	case len(s) > maxNameLen:
		return Invalidf("%s longer than %d bytes", what, maxNameLen)
	case !utf8.ValidString(s):
		return Invalidf("%s is not valid UTF-8", what)
	}
	return nil
}

// CheckRecordKey validates a record key: non-empty and bounded (any bytes).
func CheckRecordKey(k string) error {
	switch {
	case k == "":
		return Invalidf("empty record key")
	case len(k) > maxNameLen:
		return Invalidf("record key longer than %d bytes", maxNameLen)
	}
	return nil
}

func CheckDelivery(d *store.Delivery) error {
	if err := CheckName("delivery id", d.ID); err != nil {
		return err
	}
	return CheckName("delivery key", d.Key)
}

func CheckClaim(c *store.Claim) error {
	switch {
	case c == nil:
		return Invalidf("nil claim")
	case c.Key == "" || c.Token == "":
		return Invalidf("claim without key or token")
	}
	return nil
}

func CheckTTL(ttl time.Duration) (time.Duration, error) {
	if ttl <= 0 {
		return 0, Invalidf("non-positive lease ttl %s", ttl)
	}
	return min(ttl, MaxDuration), nil
}

func ClampDelay(d time.Duration) time.Duration {
	return min(max(d, 0), MaxDuration)
}

// CheckCommit validates w and encodes its derived deliveries.
func CheckCommit(w *store.Commit, now time.Time) ([][]byte, error) {
	for k := range w.Records {
		if err := CheckRecordKey(k); err != nil {
			return nil, err
		}
	}
	enc := make([][]byte, len(w.Enqueue))
	for i := range w.Enqueue {
		d := w.Enqueue[i]
		if err := CheckDelivery(&d); err != nil {
			return nil, err
		}
		b, err := EncodeDelivery(d, now)
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
//	uvarint len, id            id first: HeadPrefix relies on it
//	uvarint len, event
//	uvarint len, key
//	uvarint len, action
//	varint  received at, Unix seconds; uvarint nanoseconds
//	varint  attempts
//	uvarint len, last error
//	payload                    the rest
//
// Records written before this form are plain json.Marshal of Delivery (the
// payload base64 inside it); DecodeDelivery and IsHead read both, so
// deliveries queued by an older version are processed after an upgrade.
const deliveryFormat byte = 0x01

// EncodeDelivery is the stored form of a delivery.
func EncodeDelivery(d store.Delivery, now time.Time) ([]byte, error) {
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

// DecodeDelivery reads a stored delivery, in either form. The result shares
// no memory with b (a bbolt value is only valid within its transaction).
func DecodeDelivery(b []byte) (*store.Delivery, error) {
	if len(b) > 0 && b[0] == '{' {
		var d store.Delivery
		if err := json.Unmarshal(b, &d); err != nil {
			return nil, fmt.Errorf("store: decode delivery: %w", err)
		}
		return &d, nil
	}
	if len(b) == 0 || b[0] != deliveryFormat {
		return nil, fmt.Errorf("store: decode delivery: unknown format")
	}
	r := deliveryReader{b: b[1:]}
	d := &store.Delivery{ID: r.str(), Event: r.str(), Key: r.str(), Action: r.str()}
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

// HeadPrefix is how every delivery with that id stored by this version
// starts, which lets a store check "the head of the queue is still this
// delivery" without decoding it.
func HeadPrefix(id string) []byte {
	out := make([]byte, 0, 1+binary.MaxVarintLen64+len(id))
	out = append(out, deliveryFormat)
	out = binary.AppendUvarint(out, uint64(len(id)))
	return append(out, id...)
}

// LegacyHeadPrefix is HeadPrefix for a delivery stored as JSON by an earlier
// version: json.Marshal of Delivery starts with its id.
func LegacyHeadPrefix(id string) []byte {
	b, _ := json.Marshal(id) // a string always marshals
	out := make([]byte, 0, len(b)+7)
	out = append(out, `{"id":`...)
	out = append(out, b...)
	return append(out, ',')
}

func IsHead(raw []byte, id string) bool {
	if len(raw) > 0 && raw[0] == '{' {
		return bytes.HasPrefix(raw, LegacyHeadPrefix(id))
	}
	return raw != nil && bytes.HasPrefix(raw, HeadPrefix(id))
}

func NewToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("store: lease token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// ErrNotHead is returned when a claim's delivery is no longer at the head of its
// queue although the lease still holds (for example a second Commit of the same
// claim): nothing is written. Callers wrap it with the store and operation.
func ErrNotHead(c *store.Claim) error {
	return fmt.Errorf("delivery %q is not at the head of the queue of %q (already committed?)", c.Delivery.ID, c.Key)
}
