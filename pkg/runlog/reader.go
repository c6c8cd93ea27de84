package runlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// ErrInvalidLine is matched (errors.Is) by every *ParseError.
var ErrInvalidLine = errors.New("runlog: invalid line")

// ParseError says which line of a run log could not be read, and why.
type ParseError struct {
	// Line is the 1-based line number in the file.
	Line int
	// Reason says what is wrong with it.
	Reason string
}

// Error implements error.
func (e *ParseError) Error() string {
	return fmt.Sprintf("run log line %d: %s", e.Line, e.Reason)
}

// Is makes errors.Is(err, ErrInvalidLine) true.
func (e *ParseError) Is(target error) bool { return target == ErrInvalidLine }

// Reader reads a run log back into Lines, for recovery (oxy recover):
// which payloads to resubmit, which job ids to fetch. It accepts run logs
// written by this package and by a Python WSA client that writes the same
// five keys.
// Blank lines are skipped; keys beyond the five are ignored.
type Reader struct {
	r    *bufio.Reader
	line int
}

// NewReader returns a Reader on r. Lines may be of any length.
func NewReader(r io.Reader) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 64<<10)}
}

// Next returns the next line and its 1-based line number, io.EOF after the
// last one, or a *ParseError naming the line that is not a run-log line
// (reading may continue after it).
func (r *Reader) Next() (Line, int, error) {
	for {
		raw, err := r.r.ReadBytes('\n')
		if len(raw) == 0 && err != nil {
			return Line{}, r.line, err
		}
		r.line++
		if err != nil && !errors.Is(err, io.EOF) {
			return Line{}, r.line, err
		}
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 {
			continue
		}
		l, perr := parseLine(raw)
		if perr != "" {
			return Line{}, r.line, &ParseError{Line: r.line, Reason: perr}
		}
		return l, r.line, nil
	}
}

// ReadAll reads every line of a run log. It stops at the first invalid line.
func ReadAll(r io.Reader) ([]Line, error) {
	rd := NewReader(r)
	var out []Line
	for {
		l, _, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, l)
	}
}

// parseLine decodes one line, returning the reason it is invalid ("" when it
// is fine).
func parseLine(raw []byte) (Line, string) {
	if raw[0] != '{' {
		return Line{}, "not a JSON object"
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return Line{}, "not valid JSON: " + err.Error()
	}
	for _, k := range []string{"state", "id", "payload", "error", "upload"} {
		if _, ok := fields[k]; !ok {
			return Line{}, fmt.Sprintf("missing key %q", k)
		}
	}
	var l Line
	if err := json.Unmarshal(raw, &l); err != nil {
		return Line{}, err.Error()
	}
	if !l.State.Valid() {
		return Line{}, fmt.Sprintf("state %q is not done, faulted, rejected, unsubmitted or unfetched", l.State)
	}
	if bytes.Equal(l.Payload, []byte("null")) {
		l.Payload = nil
	}
	if l.State == oxytype.Done && l.ID == nil {
		return Line{}, `a done line has no "id"`
	}
	return l, ""
}
