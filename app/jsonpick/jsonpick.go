// Package jsonpick reads a few top-level members of a large JSON object (a
// webhook's payload) without decoding the rest: the members asked for are
// returned as they are, the others skipped by a scan that only matches
// brackets and quotes. The payload is checked to be valid JSON first, as
// encoding/json does (valid.go, faster than json.Valid). Decoding a webhook's payload into a small struct with
// encoding/json costs several times that: it decodes every member it
// skips.
package jsonpick

import (
	"encoding/json"
	"strings"
)

// Pick returns the raw values of the top-level members of the object data
// named by keys, in the order of keys (nil for a member that is absent; the
// last one for a member given twice, as encoding/json takes). ok is false
// when data is not valid JSON or not an object, or a member's name holds an
// escape or differs from a key only in case (encoding/json would match it):
// the caller then decodes data with encoding/json.
func Pick(data []byte, keys ...string) (vals []json.RawMessage, ok bool) {
	if !valid(data) {
		return nil, false
	}
	return Sub(data, keys...)
}

// Sub is Pick for a value Pick returned (already known to be valid JSON).
func Sub(data []byte, keys ...string) (vals []json.RawMessage, ok bool) {
	vals = make([]json.RawMessage, len(keys))
	i := space(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil, false
	}
	i = space(data, i+1)
	if i < len(data) && data[i] == '}' {
		return vals, true
	}
	for i < len(data) {
		if data[i] != '"' {
			return nil, false
		}
		start := i + 1
		end := start
		for end < len(data) && data[end] != '"' {
			if data[end] == '\\' {
				return nil, false
			}
			end++
		}
		if end >= len(data) {
			return nil, false
		}
		name := data[start:end]
		i = space(data, end+1)
		if i >= len(data) || data[i] != ':' {
			return nil, false
		}
		i = space(data, i+1)
		vstart := i
		i = skip(data, i)
		if i < 0 {
			return nil, false
		}
		for k, key := range keys {
			if string(name) == key {
				vals[k] = data[vstart:i]
			} else if strings.EqualFold(string(name), key) {
				return nil, false
			}
		}
		i = space(data, i)
		if i >= len(data) {
			return nil, false
		}
		switch data[i] {
		case ',':
			i = space(data, i+1)
		case '}':
			return vals, true
		default:
			return nil, false
		}
	}
	return nil, false
}

func space(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// skip returns the index just after the (valid) JSON value at data[i], or -1.
func skip(data []byte, i int) int {
	if i >= len(data) {
		return -1
	}
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for i < len(data) {
			switch data[i] {
			case '"':
				i = skipString(data, i)
				if i < 0 {
					return -1
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	default: // a number, true, false or null
		for i < len(data) {
			switch data[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
			i++
		}
		return i
	}
}

// skipString returns the index just after the string starting at data[i].
func skipString(data []byte, i int) int {
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}
