package payload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/oxypipe/oxypipe/internal/jsonscan"
)

// Field is one key of a payload with its value as raw JSON. Value holds the
// value's bytes as they were given, with insignificant whitespace removed.
type Field struct {
	Key   string
	Value json.RawMessage
}

// Payload is one WSA request body: a JSON object whose keys keep their order
// and whose values keep their bytes. The zero Payload is the empty object.
//
// Reads never change a Payload, and Set and Delete build a new field list,
// so copies of a Payload may be shared between goroutines and mutated
// independently.
type Payload struct {
	fields []Field
}

// inputKeys are the keys that name what a job scrapes; a payload has exactly
// one of them: the API takes the job's target from the one it finds.
var inputKeys = [...]string{"query", "url", "product_id", "prompt", "video_id", "channel_handle", "category_id"}

// InputKeys returns the keys that can hold a payload's input, in the order
// the API documentation lists them.
func InputKeys() []string { return append([]string(nil), inputKeys[:]...) }

// IsInputKey reports whether key is one of InputKeys.
func IsInputKey(key string) bool {
	for _, k := range inputKeys {
		if k == key {
			return true
		}
	}
	return false
}

// New returns a payload {"source": source, inputKey: input}.
func New(source, inputKey, input string) Payload {
	return Payload{fields: []Field{
		{Key: "source", Value: jsonString(source)},
		{Key: inputKey, Value: jsonString(input)},
	}}
}

// Len returns the number of fields, counting a key set twice twice.
func (p Payload) Len() int { return len(p.fields) }

// Fields returns a copy of the fields in their order. The values share
// memory with the payload and must not be modified.
func (p Payload) Fields() []Field { return append([]Field(nil), p.fields...) }

// Keys returns the keys in their order.
func (p Payload) Keys() []string {
	keys := make([]string, len(p.fields))
	for i, f := range p.fields {
		keys[i] = f.Key
	}
	return keys
}

// Get returns the raw value of key. When a key is set twice, the last value
// wins, as in encoding/json. The returned bytes must not be modified.
func (p Payload) Get(key string) (json.RawMessage, bool) {
	for i := len(p.fields) - 1; i >= 0; i-- {
		if p.fields[i].Key == key {
			return p.fields[i].Value, true
		}
	}
	return nil, false
}

// Has reports whether key is set.
func (p Payload) Has(key string) bool {
	_, ok := p.Get(key)
	return ok
}

// GetString returns the value of key when it is a JSON string.
func (p Payload) GetString(key string) (string, bool) {
	raw, ok := p.Get(key)
	if !ok || len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	return jsonscan.String(raw) // raw is valid JSON: it was parsed
}

// Set sets key to the JSON encoding of value (without HTML escaping). An
// existing key keeps its position; a new key goes last.
func (p *Payload) Set(key string, value any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(value); err != nil {
		return fmt.Errorf("payload: set %q: %w", key, err)
	}
	return p.SetRaw(key, bytes.TrimRight(buf.Bytes(), "\n"))
}

// SetRaw sets key to a raw JSON value, which must be valid JSON. An existing
// key keeps the position of its first occurrence and loses any duplicate; a
// new key goes last.
func (p *Payload) SetRaw(key string, raw json.RawMessage) error {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return fmt.Errorf("payload: set %q: %w", key, err)
	}
	value := json.RawMessage(buf.Bytes())
	fields := make([]Field, 0, len(p.fields)+1)
	replaced := false
	for _, f := range p.fields {
		if f.Key != key {
			fields = append(fields, f)
			continue
		}
		if !replaced {
			fields = append(fields, Field{Key: key, Value: value})
			replaced = true
		}
	}
	if !replaced {
		fields = append(fields, Field{Key: key, Value: value})
	}
	p.fields = fields
	return nil
}

// Delete removes every occurrence of key.
func (p *Payload) Delete(key string) {
	fields := make([]Field, 0, len(p.fields))
	for _, f := range p.fields {
		if f.Key != key {
			fields = append(fields, f)
		}
	}
	p.fields = fields
}

// Clone returns a deep copy.
func (p Payload) Clone() Payload {
	fields := make([]Field, len(p.fields))
	for i, f := range p.fields {
		fields[i] = Field{Key: f.Key, Value: append(json.RawMessage(nil), f.Value...)}
	}
	return Payload{fields: fields}
}

// Source returns the value of "source", or "" when it is missing or not a
// string.
func (p Payload) Source() string {
	s, _ := p.GetString("source")
	return s
}

// Input returns the payload's input key and its value: the first of
// InputKeys that is set, in the payload's own key order. value is "" when the
// key's value is not a string; key is "" when no input key is set.
func (p Payload) Input() (key, value string) {
	for _, f := range p.fields {
		if IsInputKey(f.Key) {
			s, _ := p.GetString(f.Key)
			return f.Key, s
		}
	}
	return "", ""
}

// Pages returns the number of pages the job fetches: "pages" when it is a
// positive integer (or a string holding one), else 1. The API charges each
// page against the rate limit.
func (p Payload) Pages() int {
	raw, ok := p.Get("pages")
	if !ok {
		return 1
	}
	text := string(raw)
	if s, isString := p.GetString("pages"); isString {
		text = s
	}
	n, err := strconv.Atoi(strings.TrimSpace(text))
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// Rendered reports whether the API charges the job against the rendered
// limit too: "render" is a non-empty value, "xhr" is true, or the input is a
// prompt (LLM sources).
func (p Payload) Rendered() bool {
	if raw, ok := p.Get("render"); ok {
		switch string(raw) {
		case "null", `""`, "false":
		default:
			return true
		}
	}
	if isTrue(p, "xhr") {
		return true
	}
	key, _ := p.Input()
	return key == "prompt"
}

// JSON returns the payload as one line of compact JSON: keys in their order,
// values as given, no HTML escaping. The slice is the caller's.
func (p Payload) JSON() []byte {
	return p.appendJSON(nil, "", nil)
}

// MarshalJSON implements json.Marshaler. Note that json.Marshal escapes <, >
// and & inside the result; use JSON, or an Encoder with SetEscapeHTML(false),
// for the exact bytes.
func (p Payload) MarshalJSON() ([]byte, error) { return p.JSON(), nil }

// UnmarshalJSON implements json.Unmarshaler; it accepts a JSON object only.
func (p *Payload) UnmarshalJSON(b []byte) error {
	fields, err := parseObject(b)
	if err != nil {
		return err
	}
	p.fields = fields
	return nil
}

// String returns the redacted JSON, so that printing a payload never shows a
// credential.
func (p Payload) String() string { return string(p.Redacted()) }

// appendJSON appends the payload to dst. When replaceKey is not empty, that
// key's value is replacement instead of its own.
func (p Payload) appendJSON(dst []byte, replaceKey string, replacement []byte) []byte {
	size := 2
	for _, f := range p.fields {
		size += len(f.Key) + len(f.Value) + 4
	}
	if replaceKey != "" {
		size += len(replacement)
	}
	if dst == nil {
		dst = make([]byte, 0, size)
	}
	dst = append(dst, '{')
	for i, f := range p.fields {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, f.Key)
		dst = append(dst, ':')
		if replaceKey != "" && f.Key == replaceKey {
			dst = append(dst, replacement...)
		} else {
			dst = append(dst, f.Value...)
		}
	}
	return append(dst, '}')
}

// appendString appends s as a JSON string without HTML escaping.
func appendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			return append(dst, jsonString(s)...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// jsonString encodes s as a JSON string without HTML escaping.
func jsonString(s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // encoding a string cannot fail
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// isTrue reports whether key is true or "true".
func isTrue(p Payload, key string) bool {
	raw, ok := p.Get(key)
	return ok && (string(raw) == "true" || string(raw) == `"true"`)
}

// StorageURL returns the payload's non-empty "storage_url": the API then
// uploads the job's results to that cloud-storage location itself, and
// reports the upload in the job's "statuses".
func (p Payload) StorageURL() (string, bool) {
	s, ok := p.GetString("storage_url")
	return s, ok && s != ""
}
