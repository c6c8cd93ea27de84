// Package jsonscan walks the members of JSON objects and the elements of
// JSON arrays that are already known to be valid, in one pass over the bytes
// and without allocating for plain member names.
//
// It exists because the hot paths of the pipeline read a few keys of
// objects they must keep whole: a WSA job (kept byte for byte in Job.Raw), a
// message envelope (unknown fields kept for forward compatibility), an
// emulator request. encoding/json would validate such an object once more
// for every decode into a struct or a map; here the caller validates it once
// (json.Valid, or because encoding/json handed it over) and then only slices.
//
// The functions never panic and always end on any input, but on input that
// is not valid JSON what they report is unspecified.
package jsonscan

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// Object calls fn for every member of the object data, in order. name is the
// member's name, unescaped; value is its raw JSON, space trimmed. Both alias
// data (or, for a name with escapes, a fresh buffer): copy what outlives the
// call. A name repeated in data is reported each time; as with
// encoding/json, the last one is the one that counts. It reports false when
// data is not an object.
func Object(data []byte, fn func(name, value []byte)) bool {
	i := SkipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i = SkipSpace(data, i+1)
	for i < len(data) && data[i] == '"' {
		keyStart := i
		i = skipString(data, i)
		name := unquoteName(data[keyStart:i])
		i = SkipSpace(data, i)
		if i < len(data) && data[i] == ':' {
			i++
		}
		i = SkipSpace(data, i)
		valueStart := i
		i = ValueEnd(data, i)
		fn(name, data[valueStart:i])
		i = SkipSpace(data, i)
		if i < len(data) && data[i] == ',' {
			i = SkipSpace(data, i+1)
		}
	}
	return true
}

// Array calls fn for every element of the array data, in order; value is
// the element's raw JSON, aliasing data. It reports false when data is not
// an array.
func Array(data []byte, fn func(value []byte)) bool {
	i := SkipSpace(data, 0)
	if i >= len(data) || data[i] != '[' {
		return false
	}
	i = SkipSpace(data, i+1)
	for i < len(data) && data[i] != ']' {
		start := i
		i = ValueEnd(data, i)
		if i == start { // not a value: stop rather than spin
			break
		}
		fn(data[start:i])
		i = SkipSpace(data, i)
		if i < len(data) && data[i] == ',' {
			i = SkipSpace(data, i+1)
		}
	}
	return true
}

// Member returns the raw value of the last member called name of the object
// data (aliasing data), and whether there is one.
func Member(data []byte, name string) ([]byte, bool) {
	var found []byte
	ok := false
	Object(data, func(n, v []byte) {
		if string(n) == name {
			found, ok = v, true
		}
	})
	return found, ok
}

// String decodes a raw JSON string value; ok is false for any other value.
// A string without escapes and of valid UTF-8 costs one copy.
func String(raw []byte) (s string, ok bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	if inner := raw[1 : len(raw)-1]; bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner), true
	}
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// unquoteName returns the text of a quoted member name: a slice of quoted
// when it needs no unescaping or UTF-8 repair (the common case), else the
// name as encoding/json decodes it.
func unquoteName(quoted []byte) []byte {
	if len(quoted) >= 2 {
		if inner := quoted[1 : len(quoted)-1]; plain(inner) {
			return inner
		}
	}
	var s string
	if json.Unmarshal(quoted, &s) != nil {
		return nil
	}
	return []byte(s)
}

// plain reports whether the inside of a JSON string reads as it is: no
// backslash and ASCII only (so no UTF-8 to repair). Quotes cannot occur.
func plain(inner []byte) bool {
	for _, c := range inner {
		if c == '\\' || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// SkipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func SkipSpace(data []byte, i int) int {
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
	return len(data)
}

// ValueEnd returns the index just after the JSON value that starts at
// data[i].
func ValueEnd(data []byte, i int) int {
	if i >= len(data) {
		return len(data)
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
