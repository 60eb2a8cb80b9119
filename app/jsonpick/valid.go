package jsonpick

// valid is json.Valid, several times faster: a recursive descent over the
// grammar of RFC 8259 (what encoding/json's scanner accepts, to the same
// nesting limit), without its state machine's call per byte.
func valid(data []byte) bool {
	i, ok := value(data, space(data, 0), 0)
	return ok && space(data, i) == len(data)
}

// maxDepth is encoding/json's limit on nesting.
const maxDepth = 10000

// value checks the value at data[i] and returns the index after it.
func value(data []byte, i, depth int) (int, bool) {
	if i >= len(data) {
		return i, false
	}
	switch c := data[i]; {
	case c == '{':
		if depth++; depth > maxDepth {
			return i, false
		}
		i = space(data, i+1)
		if i < len(data) && data[i] == '}' {
			return i + 1, true
		}
		for {
			if i >= len(data) || data[i] != '"' {
				return i, false
			}
			var ok bool
			if i, ok = str(data, i); !ok {
				return i, false
			}
			i = space(data, i)
			if i >= len(data) || data[i] != ':' {
				return i, false
			}
			if i, ok = value(data, space(data, i+1), depth); !ok {
				return i, false
			}
			i = space(data, i)
			if i >= len(data) {
				return i, false
			}
			switch data[i] {
			case ',':
				i = space(data, i+1)
			case '}':
				return i + 1, true
			default:
				return i, false
			}
		}
	case c == '[':
		if depth++; depth > maxDepth {
			return i, false
		}
		i = space(data, i+1)
		if i < len(data) && data[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = value(data, i, depth); !ok {
				return i, false
			}
			i = space(data, i)
			if i >= len(data) {
				return i, false
			}
			switch data[i] {
			case ',':
				i = space(data, i+1)
			case ']':
				return i + 1, true
			default:
				return i, false
			}
		}
	case c == '"':
		return str(data, i)
	case c == '-' || ('0' <= c && c <= '9'):
		return number(data, i)
	case c == 't':
		return literal(data, i, "true")
	case c == 'f':
		return literal(data, i, "false")
	case c == 'n':
		return literal(data, i, "null")
	}
	return i, false
}

// str checks the string starting at data[i] (a quote).
func str(data []byte, i int) (int, bool) {
	for i++; i < len(data); i++ {
		switch c := data[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return i, false
		case c == '\\':
			i++
			if i >= len(data) {
				return i, false
			}
			switch data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(data) {
					return i, false
				}
				for _, h := range data[i+1 : i+5] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return i, false
					}
				}
				i += 4
			default:
				return i, false
			}
		}
	}
	return i, false
}

// number checks the number starting at data[i].
func number(data []byte, i int) (int, bool) {
	if data[i] == '-' {
		i++
	}
	digits := func() bool {
		start := i
		for i < len(data) && '0' <= data[i] && data[i] <= '9' {
			i++
		}
		return i > start
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case !digits():
		return i, false
	}
	if i < len(data) && data[i] == '.' {
		i++
		if !digits() {
			return i, false
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if !digits() {
			return i, false
		}
	}
	return i, true
}

func literal(data []byte, i int, lit string) (int, bool) {
	if len(data)-i < len(lit) || string(data[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}
