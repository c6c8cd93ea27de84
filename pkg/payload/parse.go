package payload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/oxypipe/oxypipe/internal/jsonscan"
	"github.com/oxypipe/oxypipe/internal/jsonvalid"
)

// ErrNotObject is the reason for a line that is valid JSON but not an object.
var ErrNotObject = errors.New("a payload must be a JSON object")

// ErrEmptyLine is the reason for a line that holds nothing but whitespace.
var ErrEmptyLine = errors.New("empty line")

// LineError is a line of input that is not a payload. Its text names the line
// and the reason, never the line's content (which may hold credentials).
type LineError struct {
	// Line is the 1-based line number (0 when the caller gave none).
	Line int
	// Err is the reason: ErrNotObject, ErrEmptyLine, ErrLineTooLong or a
	// JSON syntax error.
	Err error
}

// Error implements error: "line 3: invalid JSON: …".
func (e *LineError) Error() string {
	if e.Line <= 0 {
		return e.Err.Error()
	}
	return fmt.Sprintf("line %d: %v", e.Line, e.Err)
}

// Unwrap returns the reason.
func (e *LineError) Unwrap() error { return e.Err }

// Parse reads one payload from one line of JSON. lineNo is only used to name
// the line in a *LineError. The line must hold a single JSON object; keys set
// twice are kept (Validate rejects them) so that what was given round-trips.
func Parse(line []byte, lineNo int) (Payload, error) {
	fields, err := parseObject(line)
	if err != nil {
		return Payload{}, &LineError{Line: lineNo, Err: err}
	}
	return Payload{fields: fields}, nil
}

// parseObject splits a JSON object into its fields, compacting each value.
//
// A payload is parsed at every stage it passes (read, fed, submitted,
// polled, finished), so the common case — a valid object — takes one
// validating scan and one slicing pass, without a token per member; only a
// line that is not a valid object goes through the streaming decoder, whose
// errors name the byte at fault.
func parseObject(b []byte) ([]Field, error) {
	b = trimJSONSpace(b)
	if len(b) == 0 {
		return nil, ErrEmptyLine
	}
	if b[0] == '{' && jsonvalid.Valid(b) {
		return splitObject(b), nil
	}
	return decodeObject(b)
}

// splitObject splits b, a valid JSON object, into its fields in order (a
// key given twice is kept twice), each value compacted into one shared
// buffer.
func splitObject(b []byte) []Field {
	n := 0
	jsonscan.Object(b, func(_, _ []byte) { n++ })
	fields := make([]Field, 0, n)
	ends := make([]int, 0, n)
	var values bytes.Buffer
	values.Grow(len(b)) // compacted values are never longer than the object
	jsonscan.Object(b, func(name, value []byte) {
		if value[0] == '{' || value[0] == '[' {
			_ = json.Compact(&values, value) // value is valid JSON: Compact cannot fail
		} else {
			values.Write(value) // a scalar has no space to elide
		}
		fields = append(fields, Field{Key: string(name)})
		ends = append(ends, values.Len())
	})
	all, start := values.Bytes(), 0
	for i, end := range ends {
		fields[i].Value = all[start:end:end]
		start = end
	}
	return fields
}

// decodeObject is parseObject for b that is not known to be a valid object:
// the streaming decoder, for its errors.
func decodeObject(b []byte) ([]Field, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return nil, syntaxReason(b, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("%w, not %s", ErrNotObject, kindOf(tok))
	}
	type span struct {
		key        string
		start, end int
	}
	var spans []span
	var values bytes.Buffer
	values.Grow(len(b))
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, syntaxReason(b, err)
		}
		key, ok := tok.(string)
		if !ok { // the decoder reports non-string keys as syntax errors
			return nil, fmt.Errorf("invalid JSON: object key is not a string")
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, syntaxReason(b, err)
		}
		start := values.Len()
		if err := json.Compact(&values, raw); err != nil {
			return nil, syntaxReason(b, err)
		}
		spans = append(spans, span{key: key, start: start, end: values.Len()})
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, syntaxReason(b, err)
	}
	if rest := b[dec.InputOffset():]; len(trimJSONSpace(rest)) > 0 {
		return nil, fmt.Errorf("invalid JSON: data after the object at byte %d", dec.InputOffset()+1)
	}
	all := values.Bytes()
	fields := make([]Field, len(spans))
	for i, s := range spans {
		fields[i] = Field{Key: s.key, Value: all[s.start:s.end:s.end]}
	}
	return fields, nil
}

// syntaxReason turns a decoder error into a reason that names the byte. The
// streaming decoder's offsets are relative to where it resumed, so the
// whole line is checked again for an offset that counts from its start.
func syntaxReason(line []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(json.Unmarshal(line, new(json.RawMessage)), &se) || errors.As(err, &se) {
		if se.Offset >= int64(len(line)) {
			return errors.New("invalid JSON: unexpected end of line")
		}
		return fmt.Errorf("invalid JSON: %s at byte %d", se.Error(), se.Offset)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("invalid JSON: unexpected end of line")
	}
	return fmt.Errorf("invalid JSON: %w", err)
}

// kindOf names the JSON type of a first token.
func kindOf(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '[' {
			return "an array"
		}
		return fmt.Sprintf("%q", v.String())
	case string:
		return "a string"
	case float64, json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return "something else"
}

// trimJSONSpace trims the four characters JSON counts as whitespace.
func trimJSONSpace(b []byte) []byte {
	return bytes.Trim(b, " \t\r\n")
}
