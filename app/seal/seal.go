// Package seal signs and checks the records countersign keeps on GitHub (the
// hidden record in a task card, and in a goal issue): anyone with write access
// can edit those comments and issues, so a record read back from GitHub is
// trusted only when it carries a valid signature made with a key only the
// server holds.
//
// A signature is HMAC-SHA256 over a fixed label, the record's scope (which
// task or goal it is about) and the record's exact bytes, with a key derived by
// HKDF-SHA256 from the configured key material. Several keys may be accepted
// at once (the current one and the previous ones, during a rotation); only the
// current one signs.
package seal

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
)

// version prefixes every signature, so the scheme can change later.
const version = "v1."

// info is HKDF's context label: a key derived for records is good for nothing else.
const info = "countersign hidden record signing key v1"

// Keys signs with one key and accepts signatures of several.
type Keys struct {
	current  []byte
	previous [][]byte
}

// New derives the signing key from material (a configured record key, or the
// webhook secret) and the keys it also accepts from previous (keys being
// rotated out). Empty material is an error: a record signed with no secret
// proves nothing.
func New(material []byte, previous ...[]byte) (*Keys, error) {
	if len(material) == 0 {
		return nil, errors.New("seal: empty key material")
	}
	k := &Keys{current: derive(material)}
	for _, p := range previous {
		if len(p) > 0 {
			k.previous = append(k.previous, derive(p))
		}
	}
	return k, nil
}

func derive(material []byte) []byte {
	key, err := hkdf.Key(sha256.New, material, nil, info, sha256.Size)
	if err != nil { // only for lengths HKDF-SHA256 cannot give; 32 bytes it always can
		panic("seal: " + err.Error())
	}
	return key
}

func mac(key []byte, scope string, record []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("countersign record\x00"))
	m.Write([]byte(scope))
	m.Write([]byte{0})
	m.Write(record)
	return m.Sum(nil)
}

// Sign is the signature of record (its exact bytes) as the record of scope
// (e.g. "task/owner/repo#12").
func (k *Keys) Sign(scope string, record []byte) string {
	return version + base64.RawURLEncoding.EncodeToString(mac(k.current, scope, record))
}

// Verify reports whether sig is a signature of record for scope by the
// current key or one of the previous ones.
func (k *Keys) Verify(scope string, record []byte, sig string) bool {
	if k == nil {
		return false
	}
	raw, ok := strings.CutPrefix(sig, version)
	if !ok {
		return false
	}
	got, err := base64.RawURLEncoding.DecodeString(raw)
	if err != nil || len(got) != sha256.Size {
		return false
	}
	for _, key := range append([][]byte{k.current}, k.previous...) {
		if hmac.Equal(got, mac(key, scope, record)) {
			return true
		}
	}
	return false
}
