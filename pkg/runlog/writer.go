package runlog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// Writer writes run-log lines as JSONL: one JSON object per line with the
// keys state, id, payload, error and upload, in that order.
//
// It writes the payload's bytes as they are (no re-encoding, no HTML
// escaping of <, > and &, which encoding/json's Marshal would do), so a
// payload read back from the run log is byte for byte the one that was
// recorded. Only a payload that spans several lines is compacted, since a
// JSONL line cannot hold a newline; one that is not valid JSON (which the
// ledger never stores) is written as a JSON string rather than dropped.
type Writer struct {
	w     io.Writer
	buf   bytes.Buffer
	enc   *json.Encoder
	lines int
}

// NewWriter returns a Writer on w. Wrap w in a bufio.Writer for many lines;
// the Writer does one Write of w per line.
func NewWriter(w io.Writer) *Writer {
	lw := &Writer{w: w}
	lw.enc = json.NewEncoder(&lw.buf)
	lw.enc.SetEscapeHTML(false)
	return lw
}

// WriteLine writes one line.
func (w *Writer) WriteLine(l Line) error {
	w.buf.Reset()
	if err := w.appendLine(l); err != nil {
		return err
	}
	if _, err := w.w.Write(w.buf.Bytes()); err != nil {
		return err
	}
	w.lines++
	return nil
}

// Lines returns the number of lines written.
func (w *Writer) Lines() int { return w.lines }

// AppendLine appends the JSONL encoding of l, newline included, to dst.
func AppendLine(dst []byte, l Line) ([]byte, error) {
	w := NewWriter(io.Discard)
	if err := w.appendLine(l); err != nil {
		return dst, err
	}
	return append(dst, w.buf.Bytes()...), nil
}

func (w *Writer) appendLine(l Line) error {
	if !l.State.Valid() {
		return fmt.Errorf("runlog: invalid state %q", l.State)
	}
	w.buf.WriteString(`{"state":`)
	if err := w.value(l.State); err != nil {
		return err
	}
	w.buf.WriteString(`,"id":`)
	if l.ID == nil {
		w.buf.WriteString("null")
	} else if err := w.value(*l.ID); err != nil {
		return err
	}
	w.buf.WriteString(`,"payload":`)
	if err := w.payload(l.Payload); err != nil {
		return err
	}
	w.buf.WriteString(`,"error":`)
	if l.Error == nil {
		w.buf.WriteString("null")
	} else if err := w.value(l.Error); err != nil {
		return err
	}
	w.buf.WriteString(`,"upload":`)
	if l.Upload == nil {
		w.buf.WriteString("null")
	} else if err := w.value(l.Upload); err != nil {
		return err
	}
	w.buf.WriteString("}\n")
	return nil
}

// value encodes v without HTML escaping and without the encoder's newline.
func (w *Writer) value(v any) error {
	if err := w.enc.Encode(v); err != nil {
		return fmt.Errorf("runlog: %w", err)
	}
	w.buf.Truncate(w.buf.Len() - 1) // the encoder's "\n"
	return nil
}

func (w *Writer) payload(p json.RawMessage) error {
	switch {
	case len(bytes.TrimSpace(p)) == 0:
		w.buf.WriteString("null")
	case !json.Valid(p):
		return w.value(string(p))
	case bytes.ContainsAny(p, "\r\n"):
		if err := json.Compact(&w.buf, p); err != nil {
			return fmt.Errorf("runlog: %w", err)
		}
	default:
		w.buf.Write(bytes.TrimSpace(p))
	}
	return nil
}
