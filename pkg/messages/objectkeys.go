package messages

import (
	"encoding/json"
	"unicode/utf8"
)

// unknownFields returns the members of the JSON object data whose names are
// not in known, last one winning for a repeated name, or nil when there are
// none. It is what decoding data into a map[string]json.RawMessage and
// dropping the known names returns, in one pass over the bytes and without
// an allocation for an object of known names only.
//
// data must be valid JSON (it has already been decoded into the envelope's
// struct); anything but an object yields nil.
func unknownFields(data []byte, known map[string]struct{}) Extra {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil
	}
	var extra Extra
	i = skipSpace(data, i+1)
	for i < len(data) && data[i] == '"' {
		keyStart := i
		i = skipString(data, i)
		rawKey := data[keyStart:i]
		i = skipSpace(data, i)
		if i < len(data) && data[i] == ':' {
			i++
		}
		i = skipSpace(data, i)
		valueStart := i
		i = skipValue(data, i)
		value := data[valueStart:i]

		if plain, ok := plainKey(rawKey); ok {
			if _, ok := known[string(plain)]; !ok { // no allocation for the lookup
				if extra == nil {
					extra = make(Extra)
				}
				extra[string(plain)] = append(json.RawMessage(nil), value...)
			}
		} else {
			var name string
			if json.Unmarshal(rawKey, &name) == nil {
				if _, ok := known[name]; !ok {
					if extra == nil {
						extra = make(Extra)
					}
					extra[name] = append(json.RawMessage(nil), value...)
				}
			}
		}

		i = skipSpace(data, i)
		if i < len(data) && data[i] == ',' {
			i = skipSpace(data, i+1)
		}
	}
	return extra
}

// plainKey returns the text of a quoted JSON name when it needs no
// unescaping and no UTF-8 repair (no backslash, ASCII only), which is every
// name this package writes.
func plainKey(quoted []byte) ([]byte, bool) {
	if len(quoted) < 2 {
		return nil, false
	}
	inner := quoted[1 : len(quoted)-1]
	for _, c := range inner {
		if c == '\\' || c >= utf8.RuneSelf {
			return nil, false
		}
	}
	return inner, true
}

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the index just after the string that starts with the
// quote at data[i].
func skipString(data []byte, i int) int {
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++ // the escaped byte (the rest of a \uXXXX is plain hex)
		case '"':
			return i + 1
		}
	}
	return i
}

// skipValue returns the index just after the value that starts at data[i].
func skipValue(data []byte, i int) int {
	if i >= len(data) {
		return i
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
		return i
	}
	for i < len(data) { // a number, true, false or null
		switch data[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}
