package bolt

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
)

// A key's meta is written and read on every write that touches the key
// (several per delivery), so it is encoded and decoded by hand: the same
// JSON encoding/json gives (earlier versions read it, and what they wrote is
// read), without reflection. Anything the hand-written code does not expect
// (a string that needs escaping, spaces, a field it does not know) goes
// through encoding/json instead.

// encodeMeta is json.Marshal(m).
func encodeMeta(m *keyMeta) ([]byte, error) {
	if !plainJSON(m.Token) || !plainJSON(m.Owner) || !plainJSON(m.Parked) {
		return json.Marshal(m)
	}
	b := make([]byte, 0, 64+len(m.Token)+len(m.Owner)+len(m.Parked)+base64.StdEncoding.EncodedLen(len(m.Ready)))
	b = append(b, '{')
	field := func(name string) {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, '"', ':')
	}
	for _, f := range []struct {
		name string
		v    uint64
	}{{"qh", m.QHead}, {"qt", m.QTail}, {"oh", m.OHead}, {"ot", m.OTail}} {
		if f.v != 0 {
			field(f.name)
			b = strconv.AppendUint(b, f.v, 10)
		}
	}
	for _, f := range []struct{ name, v string }{{"tok", m.Token}, {"own", m.Owner}} {
		if f.v != "" {
			field(f.name)
			b = append(b, '"')
			b = append(b, f.v...)
			b = append(b, '"')
		}
	}
	if m.LeaseExp != 0 {
		field("exp")
		b = strconv.AppendInt(b, m.LeaseExp, 10)
	}
	if len(m.Ready) > 0 {
		field("ready")
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, m.Ready)
		b = append(b, '"')
	}
	if m.Parked != "" {
		field("park")
		b = append(b, '"')
		b = append(b, m.Parked...)
		b = append(b, '"')
	}
	if m.Urgent {
		field("urg")
		b = append(b, "true"...)
	}
	b = append(b, '}')
	return b, nil
}

// plainJSON reports whether encoding/json writes s as it is between quotes:
// printable ASCII, none of " \ < > &.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// decodeMeta is json.Unmarshal(v, m) for a zero m.
func decodeMeta(v []byte, m *keyMeta) error {
	if !decodeMetaFast(v, m) {
		*m = keyMeta{}
		return json.Unmarshal(v, m)
	}
	return nil
}

// decodeMetaFast decodes what encodeMeta writes, and reports false for
// anything else.
func decodeMetaFast(v []byte, m *keyMeta) bool {
	if len(v) < 2 || v[0] != '{' || v[len(v)-1] != '}' {
		return false
	}
	v = v[1 : len(v)-1]
	for len(v) > 0 {
		if v[0] != '"' {
			return false
		}
		end := bytes.IndexByte(v[1:], '"')
		if end < 0 || len(v) < end+3 || v[end+2] != ':' {
			return false
		}
		name := string(v[1 : end+1])
		v = v[end+3:]
		var val []byte
		if len(v) > 0 && v[0] == '"' {
			close := bytes.IndexByte(v[1:], '"')
			if close < 0 {
				return false
			}
			val, v = v[:close+2], v[close+2:]
			if bytes.IndexByte(val, '\\') >= 0 {
				return false
			}
		} else {
			comma := bytes.IndexByte(v, ',')
			if comma < 0 {
				comma = len(v)
			}
			val, v = v[:comma], v[comma:]
		}
		if len(v) > 0 {
			if v[0] != ',' || len(v) == 1 {
				return false
			}
			v = v[1:]
		}
		if !decodeMetaField(m, name, val) {
			return false
		}
	}
	return true
}

// decodeMetaField sets m's field name from its JSON value val.
func decodeMetaField(m *keyMeta, name string, val []byte) bool {
	str := func() (string, bool) {
		if len(val) < 2 || val[0] != '"' {
			return "", false
		}
		return string(val[1 : len(val)-1]), plainJSON(string(val[1 : len(val)-1]))
	}
	var ok bool
	var err error
	switch name {
	case "qh":
		m.QHead, err = strconv.ParseUint(string(val), 10, 64)
	case "qt":
		m.QTail, err = strconv.ParseUint(string(val), 10, 64)
	case "oh":
		m.OHead, err = strconv.ParseUint(string(val), 10, 64)
	case "ot":
		m.OTail, err = strconv.ParseUint(string(val), 10, 64)
	case "exp":
		m.LeaseExp, err = strconv.ParseInt(string(val), 10, 64)
	case "tok":
		m.Token, ok = str()
		return ok
	case "own":
		m.Owner, ok = str()
		return ok
	case "park":
		m.Parked, ok = str()
		return ok
	case "ready":
		if len(val) < 3 || val[0] != '"' { // "": encoding/json's empty slice
			return false
		}
		m.Ready, err = base64.StdEncoding.AppendDecode(nil, val[1:len(val)-1])
	case "urg":
		switch string(val) {
		case "true":
			m.Urgent = true
		case "false":
			m.Urgent = false
		default:
			return false
		}
	default:
		return false
	}
	return err == nil
}
