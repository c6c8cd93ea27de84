package emulator

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/oxypipe/oxypipe/internal/jsonscan"
)

// The emulator writes its JSON by hand from templates: encoding/json would
// allocate a map or a struct per response, and the emulator must never be a
// pipeline's bottleneck. Like the live API it does not escape <, > and &.

const hexDigits = "0123456789abcdef"

// appendEscaped appends s as the inside of a JSON string (no quotes).
func appendEscaped(dst []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(dst, s[start:]...)
}

// appendString appends s as a quoted JSON string.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = appendEscaped(dst, s)
	return append(dst, '"')
}

// rawInt decodes a raw JSON integer, or a string of digits when digits is set.
func rawInt(raw json.RawMessage, digits bool) (int, bool) {
	if len(raw) > 0 && raw[0] == '"' {
		if !digits {
			return 0, false
		}
		s, ok := jsonscan.String(raw)
		if !ok {
			return 0, false
		}
		n, err := strconv.Atoi(s)
		return n, err == nil
	}
	n, err := strconv.Atoi(string(raw))
	return n, err == nil
}

// truthy reports whether a raw JSON value turns a feature on. The API echoes
// "parse":"true" as sent and still parses.
func truthy(raw json.RawMessage) bool {
	switch string(raw) {
	case "true", "1", `"true"`, `"True"`, `"1"`:
		return true
	}
	return false
}

// isNull reports whether raw is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}
