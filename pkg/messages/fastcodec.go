package messages

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/oxypipe/oxypipe/internal/jsonscan"
	"github.com/oxypipe/oxypipe/internal/jsonvalid"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// The fast path of envelope encoding and decoding.
//
// Every doc passes three work messages and four status events; each is
// encoded once and decoded by one reader or more (a status event by the
// statusworker and by every progress watcher). encoding/json validates the
// bytes and then reflects over every member, and on encode validates and
// compacts the payload again; for these small, flat envelopes that cost a
// run a large share of its JSON time. The fast path goes through one table
// per envelope type: its fields in struct order, each with its JSON key, its
// omitempty or omitzero rule and one accessor that serves both directions.
// Decoding validates once and then slices member by member.
//
// The rule that keeps it honest: the fast path gives exactly what
// encoding/json gives for the same bytes or value (encoding without HTML
// escaping), or declines and leaves the work to encoding/json, which also
// phrases any error. Decoding declines on a null, a key given twice or
// spelled in another case (encoding/json matches keys case-insensitively), a
// value of another type, a party with members other than type and name.
// Encoding declines on a string that is not plain printable ASCII without
// quotes or backslashes, a payload that is not compact valid JSON, a time
// encoding/json refuses, and the rare error and upload objects. The fuzz
// tests hold each table to encoding/json in both directions.

// fastCodec is an envelope type's table.
type fastCodec[T any] struct {
	known  map[string]struct{}
	fields []codecField[T]          // in struct order, for encoding
	byKey  map[string]codecField[T] // for decoding
}

// codecField is one field of a table.
type codecField[T any] struct {
	key    string
	prefix string // `"key":`
	bit    uint64 // marks the key seen while decoding
	omit   func(*T) bool
	// encode appends the value; decode sets it from raw JSON. Both report
	// false for what they leave to encoding/json.
	encode func([]byte, *T) ([]byte, bool)
	decode func(*T, []byte) bool
}

// newFastCodec builds the table of T, whose JSON keys are known, from its
// fields in struct order. It panics unless the fields have exactly the keys
// of known (at most 64): a field added to an envelope must be added to its
// table.
func newFastCodec[T any](known map[string]struct{}, fields ...codecField[T]) fastCodec[T] {
	byKey := make(map[string]codecField[T], len(fields))
	for i, f := range fields {
		if _, ok := known[f.key]; !ok {
			panic(fmt.Sprintf("messages: fast codec of %T: unknown key %q", *new(T), f.key))
		}
		if _, dup := byKey[f.key]; dup {
			panic(fmt.Sprintf("messages: fast codec of %T: key %q twice", *new(T), f.key))
		}
		fields[i].prefix = strconv.Quote(f.key) + ":"
		fields[i].bit = 1 << i
		byKey[f.key] = fields[i]
	}
	if len(byKey) != len(known) || len(known) > 64 {
		panic(fmt.Sprintf("messages: fast codec of %T has %d keys, the type %d", *new(T), len(byKey), len(known)))
	}
	return fastCodec[T]{known: known, fields: fields, byKey: byKey}
}

// encode returns v as encoding/json (without HTML escaping) encodes it, or
// false when it leaves v to encoding/json.
func (c fastCodec[T]) encode(v *T) ([]byte, bool) {
	b := make([]byte, 0, 384)
	b = append(b, '{')
	for _, f := range c.fields {
		if f.omit != nil && f.omit(v) {
			continue
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, f.prefix...)
		var ok bool
		if b, ok = f.encode(b, v); !ok {
			return nil, false
		}
	}
	return append(b, '}'), true
}

// decode decodes data into *v as encoding/json would decode it into a
// zero T, and returns the members T does not know; ok is false, with *v as
// it was, when it leaves data to encoding/json. (It decodes in place: a T
// of its own would escape to the heap through the table's functions.)
func (c fastCodec[T]) decode(v *T, data []byte) (extra Extra, ok bool) {
	if !jsonvalid.Valid(data) {
		return nil, false
	}
	old := *v
	var zero T
	*v = zero
	var seen uint64
	ok = true
	isObject := jsonscan.Object(data, func(name, value []byte) {
		if !ok {
			return
		}
		f, known := c.byKey[string(name)]
		switch {
		case !known:
			ok = !foldsToKnown(name, c.known)
		case seen&f.bit != 0 || value[0] == 'n': // a repeat, or a null
			ok = false
		default:
			seen |= f.bit
			ok = f.decode(v, value)
		}
	})
	if !isObject || !ok {
		*v = old
		return nil, false
	}
	return unknownFields(data, c.known), true
}

// foldsToKnown reports whether name, not itself a known key, is one under
// encoding/json's case-insensitive matching.
func foldsToKnown(name []byte, known map[string]struct{}) bool {
	for k := range known {
		if bytes.EqualFold(name, []byte(k)) {
			return true
		}
	}
	return false
}

// The fields of the tables, one constructor per Go type of field; omit says
// whether the field is tagged omitempty (omitzero for times and parties).

func intCodec[T any](key string, omit bool, field func(*T) *int) codecField[T] {
	f := codecField[T]{key: key,
		encode: func(b []byte, v *T) ([]byte, bool) { return strconv.AppendInt(b, int64(*field(v)), 10), true },
		decode: func(v *T, value []byte) (ok bool) {
			*field(v), ok = scanInt(value)
			return ok
		}}
	if omit {
		f.omit = func(v *T) bool { return *field(v) == 0 }
	}
	return f
}

func boolCodec[T any](key string, omit bool, field func(*T) *bool) codecField[T] {
	f := codecField[T]{key: key,
		encode: func(b []byte, v *T) ([]byte, bool) { return strconv.AppendBool(b, *field(v)), true },
		decode: func(v *T, value []byte) bool {
			*field(v) = string(value) == "true"
			return *field(v) || string(value) == "false"
		}}
	if omit {
		f.omit = func(v *T) bool { return !*field(v) }
	}
	return f
}

func stringCodec[T any, S ~string](key string, omit bool, field func(*T) *S) codecField[T] {
	f := codecField[T]{key: key,
		encode: func(b []byte, v *T) ([]byte, bool) { return appendPlainString(b, string(*field(v))) },
		decode: func(v *T, value []byte) bool {
			s, ok := jsonscan.String(value)
			*field(v) = S(s)
			return ok
		}}
	if omit {
		f.omit = func(v *T) bool { return *field(v) == "" }
	}
	return f
}

// rawCodec is a payload: written as it is when it is compact valid JSON
// (which is what encoding/json makes of it then), nil as null unless
// omitted, and copied on decode as RawMessage.UnmarshalJSON copies.
func rawCodec[T any](key string, omit bool, field func(*T) *json.RawMessage) codecField[T] {
	f := codecField[T]{key: key,
		encode: func(b []byte, v *T) ([]byte, bool) {
			raw := *field(v)
			if raw == nil {
				return append(b, "null"...), true
			}
			if !compact(raw) || !jsonvalid.Valid(raw) {
				return nil, false
			}
			return append(b, raw...), true
		},
		decode: func(v *T, value []byte) bool {
			*field(v) = append(json.RawMessage(nil), value...)
			return true
		}}
	if omit {
		f.omit = func(v *T) bool { return len(*field(v)) == 0 }
	}
	return f
}

func timeCodec[T any](key string, omit bool, field func(*T) *time.Time) codecField[T] {
	f := codecField[T]{key: key,
		encode: func(b []byte, v *T) ([]byte, bool) {
			b = append(b, '"')
			b, err := field(v).AppendText(b) // the strict RFC 3339 of Time.MarshalJSON
			if err != nil {
				return nil, false
			}
			return append(b, '"'), true
		},
		decode: func(v *T, value []byte) bool { return field(v).UnmarshalJSON(value) == nil }}
	if omit {
		f.omit = func(v *T) bool { return field(v).IsZero() }
	}
	return f
}

func partyCodec[T any](key string, omit bool, field func(*T) *oxytype.Party) codecField[T] {
	f := codecField[T]{key: key,
		encode: func(b []byte, v *T) ([]byte, bool) {
			p := field(v)
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
		},
		decode: func(v *T, value []byte) (ok bool) {
			*field(v), ok = scanParty(value)
			return ok
		}}
	if omit {
		f.omit = func(v *T) bool { return *field(v) == oxytype.Party{} }
	}
	return f
}

// objectCodec is a rare nested object (an error, an upload), always tagged
// omitempty: omitted when nil, otherwise encoded by encoding/json (the
// whole envelope then is), and decoded by encoding/json into a new value as
// encoding/json fills a nil pointer.
func objectCodec[T, F any](key string, field func(*T) **F) codecField[T] {
	return codecField[T]{key: key,
		omit:   func(v *T) bool { return *field(v) == nil },
		encode: func([]byte, *T) ([]byte, bool) { return nil, false },
		decode: func(v *T, value []byte) bool {
			f := new(F)
			*field(v) = f
			return json.Unmarshal(value, f) == nil
		}}
}

// scanInt reads a JSON number that is a plain integer of at most 18 digits
// (so it fits an int); ok is false for any other value.
func scanInt(value []byte) (n int, ok bool) {
	digits := value
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if value[0] == '-' {
		n = -n
	}
	return n, true
}

// scanParty reads a party object whose members are "type" and "name"
// strings, each at most once; ok is false for any other value.
func scanParty(value []byte) (p oxytype.Party, ok bool) {
	ok = true
	var seenType, seenName bool
	isObject := jsonscan.Object(value, func(name, v []byte) {
		if !ok {
			return
		}
		switch string(name) {
		case "type":
			ok = !seenType
			seenType = true
			if ok {
				p.Type, ok = jsonscan.String(v)
			}
		case "name":
			ok = !seenName
			seenName = true
			if ok {
				p.Name, ok = jsonscan.String(v)
			}
		default:
			ok = false
		}
	})
	return p, isObject && ok
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
