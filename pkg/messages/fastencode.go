package messages

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// The fast path of envelope encoding, the counterpart of the fast decode
// tables: every doc's envelopes are encoded once each, and encoding/json
// reflects over every field and then validates and compacts the payload
// again.
//
// The rule is the same: the fast path writes exactly the bytes encoding/json
// writes for the value (without HTML escaping, fields in struct order,
// omitempty and omitzero as tagged), or declines and lets encoding/json
// write them. It declines on a string with anything but printable ASCII
// without quotes or backslashes (encoding/json's escaping is then used as
// it is), a payload that is not compact valid JSON, a time encoding/json
// would refuse, and the rare nested error and upload objects. The fuzz
// tests hold each table to encoding/json.

// fastEncoder is an envelope type's fields in struct order.
type fastEncoder[T any] []encField[T]

type encField[T any] struct {
	key    string                          // the JSON key
	prefix string                          // `"key":`
	omit   func(*T) bool                   // nil: never omitted
	write  func([]byte, *T) ([]byte, bool) // false: leave the value to encoding/json
}

// newFastEncoder builds the encoder of T from fields in T's struct order. It
// panics unless the fields have exactly the keys of known: a field added to
// an envelope must be added to its encoder.
func newFastEncoder[T any](known map[string]struct{}, fields ...encField[T]) fastEncoder[T] {
	seen := make(map[string]bool, len(fields))
	for i, f := range fields {
		if _, ok := known[f.key]; !ok || seen[f.key] {
			panic(fmt.Sprintf("messages: fast encoder of %T: key %q unknown or repeated", *new(T), f.key))
		}
		seen[f.key] = true
		fields[i].prefix = strconv.Quote(f.key) + ":"
	}
	if len(seen) != len(known) {
		panic(fmt.Sprintf("messages: fast encoder of %T has %d keys, the type %d", *new(T), len(seen), len(known)))
	}
	return fastEncoder[T](fields)
}

// encode returns v as encoding/json (without HTML escaping) encodes it, or
// false when it leaves v to encoding/json.
func (fe fastEncoder[T]) encode(v *T) ([]byte, bool) {
	b := make([]byte, 0, 384)
	b = append(b, '{')
	for _, f := range fe {
		if f.omit != nil && f.omit(v) {
			continue
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, f.prefix...)
		var ok bool
		if b, ok = f.write(b, v); !ok {
			return nil, false
		}
	}
	return append(b, '}'), true
}

// The field encoders, each for one Go type of field; omitempty and omitzero
// say whether the field is tagged so.

func intEnc[T any](key string, omitempty bool, get func(*T) int) encField[T] {
	f := encField[T]{key: key, write: func(b []byte, v *T) ([]byte, bool) { return strconv.AppendInt(b, int64(get(v)), 10), true }}
	if omitempty {
		f.omit = func(v *T) bool { return get(v) == 0 }
	}
	return f
}

func boolEnc[T any](key string, omitempty bool, get func(*T) bool) encField[T] {
	f := encField[T]{key: key, write: func(b []byte, v *T) ([]byte, bool) { return strconv.AppendBool(b, get(v)), true }}
	if omitempty {
		f.omit = func(v *T) bool { return !get(v) }
	}
	return f
}

func stringEnc[T any, S ~string](key string, omitempty bool, get func(*T) S) encField[T] {
	f := encField[T]{key: key, write: func(b []byte, v *T) ([]byte, bool) { return appendPlainString(b, string(get(v))) }}
	if omitempty {
		f.omit = func(v *T) bool { return get(v) == "" }
	}
	return f
}

// rawEnc writes a payload as it is when it is compact valid JSON, which is
// what encoding/json makes of it then; nil is null unless omitted.
func rawEnc[T any](key string, omitempty bool, get func(*T) json.RawMessage) encField[T] {
	f := encField[T]{key: key, write: func(b []byte, v *T) ([]byte, bool) {
		raw := get(v)
		if raw == nil {
			return append(b, "null"...), true
		}
		if !compact(raw) || !json.Valid(raw) {
			return nil, false
		}
		return append(b, raw...), true
	}}
	if omitempty {
		f.omit = func(v *T) bool { return len(get(v)) == 0 }
	}
	return f
}

func timeEnc[T any](key string, omitzero bool, get func(*T) time.Time) encField[T] {
	f := encField[T]{key: key, write: func(b []byte, v *T) ([]byte, bool) {
		b = append(b, '"')
		b, err := get(v).AppendText(b) // the strict RFC 3339 of Time.MarshalJSON
		if err != nil {
			return nil, false
		}
		return append(b, '"'), true
	}}
	if omitzero {
		f.omit = func(v *T) bool { return get(v).IsZero() }
	}
	return f
}

func partyEnc[T any](key string, omitzero bool, get func(*T) oxytype.Party) encField[T] {
	f := encField[T]{key: key, write: func(b []byte, v *T) ([]byte, bool) {
		p := get(v)
		b = append(b, `{"type":`...)
		b, ok := appendPlainString(b, p.Type)
		if !ok {
			return nil, false
		}
		b = append(b, `,"name":`...)
		if b, ok = appendPlainString(b, p.Name); !ok {
			return nil, false
		}
		return append(b, '}'), true
	}}
	if omitzero {
		f.omit = func(v *T) bool { return get(v) == oxytype.Party{} }
	}
	return f
}

// objectEnc is a rare nested object (an error, an upload), omitted when
// nil and otherwise left to encoding/json.
func objectEnc[T, F any](key string, get func(*T) *F) encField[T] {
	return encField[T]{key: key,
		omit:  func(v *T) bool { return get(v) == nil },
		write: func([]byte, *T) ([]byte, bool) { return nil, false }}
}

// appendPlainString appends s quoted when every byte of it is printable
// ASCII other than a quote or a backslash (so encoding/json writes it as it
// is); ok is false otherwise.
func appendPlainString(b []byte, s string) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return nil, false
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), true
}

// compact reports whether raw has no white space outside its strings.
func compact(raw []byte) bool {
	inString := false
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case !inString && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return false
		}
	}
	return true
}
