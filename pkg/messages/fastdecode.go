package messages

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/oxypipe/oxypipe/internal/jsonscan"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// The fast path of envelope decoding.
//
// Every doc passes three work messages and four status events, and each is
// decoded by one stage or more (status events by the statusworker and by
// every progress watcher). encoding/json decodes a struct by validating the
// bytes, then reflecting over every member; for these small, flat envelopes
// that costs a run several percent of its CPU. The fast path validates once
// and then slices, member by member, through a table of the envelope's
// fields.
//
// The rule that keeps it honest: the fast path either decodes exactly what
// encoding/json decodes from the same bytes, or declines and lets
// encoding/json decode them (which also phrases any error). It declines on
// anything but the shapes this build writes: a null, a key given twice or
// spelled in another case (encoding/json matches keys case-insensitively), a
// value of another type, a party with members other than type and name.
// The fuzz tests hold each table to encoding/json.

// fastFields is an envelope type's table: for each JSON key, the bit that
// marks it seen and the function that decodes a value into its field,
// reporting false for a value it leaves to encoding/json.
type fastFields[T any] struct {
	known map[string]struct{}
	set   map[string]fastField[T]
}

type fastField[T any] struct {
	bit    uint64
	decode func(*T, []byte) bool
}

// newFastFields builds the table of T, whose JSON keys are known. It panics
// unless decode has exactly the keys of known (at most 64): a field added to
// an envelope must be added to its table.
func newFastFields[T any](known map[string]struct{}, decode map[string]func(*T, []byte) bool) fastFields[T] {
	if len(decode) != len(known) || len(known) > 64 {
		panic(fmt.Sprintf("messages: fast decode table of %T has %d keys, the type %d", *new(T), len(decode), len(known)))
	}
	set := make(map[string]fastField[T], len(decode))
	for k, fn := range decode {
		if _, ok := known[k]; !ok {
			panic(fmt.Sprintf("messages: fast decode table of %T has unknown key %q", *new(T), k))
		}
		set[k] = fastField[T]{bit: 1 << len(set), decode: fn}
	}
	return fastFields[T]{known: known, set: set}
}

// decode decodes data into *v as encoding/json would decode it into a
// zero T, and returns the members T does not know; ok is false, with *v as
// it was, when it leaves data to encoding/json. (It decodes in place: a T
// of its own would escape to the heap through the table's functions.)
func (ff fastFields[T]) decode(v *T, data []byte) (extra Extra, ok bool) {
	if !json.Valid(data) {
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
		f, known := ff.set[string(name)]
		switch {
		case !known:
			ok = !foldsToKnown(name, ff.known)
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
	return unknownFields(data, ff.known), true
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

// The field decoders of the tables, each for one Go type of field.

func intField[T any](field func(*T) *int) func(*T, []byte) bool {
	return func(v *T, value []byte) bool {
		n, ok := scanInt(value)
		*field(v) = n
		return ok
	}
}

func stringField[T any, S ~string](field func(*T) *S) func(*T, []byte) bool {
	return func(v *T, value []byte) bool {
		s, ok := jsonscan.String(value)
		*field(v) = S(s)
		return ok
	}
}

func rawField[T any](field func(*T) *json.RawMessage) func(*T, []byte) bool {
	return func(v *T, value []byte) bool {
		*field(v) = append(json.RawMessage(nil), value...) // as RawMessage.UnmarshalJSON copies
		return true
	}
}

func timeField[T any](field func(*T) *time.Time) func(*T, []byte) bool {
	return func(v *T, value []byte) bool { return field(v).UnmarshalJSON(value) == nil }
}

func partyField[T any](field func(*T) *oxytype.Party) func(*T, []byte) bool {
	return func(v *T, value []byte) bool {
		p, ok := scanParty(value)
		*field(v) = p
		return ok
	}
}

// objectField decodes a rare nested object (an error, an upload) with
// encoding/json into a new value, as encoding/json fills a nil pointer.
func objectField[T, F any](field func(*T) **F) func(*T, []byte) bool {
	return func(v *T, value []byte) bool {
		f := new(F)
		*field(v) = f
		return json.Unmarshal(value, f) == nil
	}
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
