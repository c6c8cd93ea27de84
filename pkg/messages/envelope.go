package messages

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sort"
	"strings"
)

// Version is the envelope version this build writes and the newest it reads.
const Version = 1

// Envelope is a message that knows where it goes. Every envelope type of this
// package implements it; stages publish envelopes, never bare bytes.
type Envelope interface {
	// Subject is the subject the envelope is published on.
	Subject() string
	// MsgID is the Nats-Msg-Id for broker-side deduplication, or "" for none.
	MsgID() string
	json.Marshaler
}

// Extra holds the fields of a decoded envelope that this build does not
// know. They are written back, unchanged and after the known fields, when the
// envelope is encoded again. Keys that collide with a known field are
// ignored on encode.
type Extra map[string]json.RawMessage

// jsonKeys lists the JSON names of a struct type's encoded fields.
func jsonKeys(t reflect.Type) map[string]struct{} {
	keys := make(map[string]struct{}, t.NumField())
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" || !f.IsExported() {
			continue
		}
		if f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct {
			for k := range jsonKeys(f.Type) {
				keys[k] = struct{}{}
			}
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		keys[name] = struct{}{}
	}
	return keys
}

// marshalJSON is json.Marshal without HTML escaping: '<', '>' and '&' in a
// payload (a json.RawMessage) or a string stay as they are instead of
// becoming \u003c, \u003e and \u0026, so payload bytes pass the pipeline
// unchanged and run logs read as written.
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil // Encode ends every value with a newline
}

// marshalWithExtra encodes v (a struct without its own MarshalJSON), without
// HTML escaping, and appends the unknown fields of extra.
//
// The result is only free of HTML escapes when it is used as is (NewMsg, or
// a direct MarshalJSON call): json.Marshal of an envelope escapes what its
// MarshalJSON returned again.
func marshalWithExtra(v any, extra Extra, known map[string]struct{}) ([]byte, error) {
	b, err := marshalJSON(v)
	if err != nil {
		return nil, err
	}
	return appendExtra(b, extra, known)
}

// appendExtra appends to b, an encoded object, the fields of extra that are
// not known, in key order.
func appendExtra(b []byte, extra Extra, known map[string]struct{}) ([]byte, error) {
	if len(extra) == 0 {
		return b, nil
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		if _, ok := known[k]; !ok {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return b, nil
	}
	sort.Strings(keys)
	var buf bytes.Buffer
	buf.Grow(len(b) + 32*len(keys))
	buf.Write(b[:len(b)-1]) // without the closing brace
	for _, k := range keys {
		raw := extra[k]
		if !json.Valid(raw) {
			continue // never emit invalid JSON for a field someone else put there
		}
		name, err := marshalJSON(k)
		if err != nil {
			return nil, err
		}
		if buf.Len() > 1 {
			buf.WriteByte(',')
		}
		buf.Write(name)
		buf.WriteByte(':')
		buf.Write(raw)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// unmarshalWithExtra decodes data into v (a pointer to a struct without its
// own UnmarshalJSON) and returns the fields that v does not know. The struct
// is decoded once; the unknown fields are then picked out of the (by then
// known to be valid) bytes without decoding them again.
func unmarshalWithExtra(data []byte, v any, known map[string]struct{}) (Extra, error) {
	if err := json.Unmarshal(data, v); err != nil {
		return nil, err
	}
	return unknownFields(data, known), nil
}
