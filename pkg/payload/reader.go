package payload

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxLineBytes is the longest line a Reader accepts unless told
// otherwise. Payloads with inline parsing instructions or Base64 POST bodies
// reach megabytes; 64 MiB leaves room while bounding memory.
const DefaultMaxLineBytes = 64 << 20

// ErrLineTooLong is the reason for a line longer than Reader.MaxLineBytes.
var ErrLineTooLong = errors.New("line too long")

// Reader reads payloads from a JSONL stream (a file or stdin), one per line.
// Blank lines are skipped but counted, a trailing "\r" is ignored, and a
// UTF-8 byte order mark before the first line is dropped.
type Reader struct {
	// MaxLineBytes is the longest line accepted; longer lines give a
	// *LineError wrapping ErrLineTooLong and are skipped. Zero means
	// DefaultMaxLineBytes.
	MaxLineBytes int

	br   *bufio.Reader
	line int
	err  error
	buf  []byte
}

// NewReader returns a Reader reading r.
func NewReader(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 64<<10)}
}

// Next returns the next payload and its 1-based line number. At the end of
// the stream it returns io.EOF. A line that is not a payload gives a
// *LineError; the line is consumed and the next call reads on. Any other
// error is the stream's and is returned again by every later call.
func (r *Reader) Next() (Payload, int, error) {
	for {
		if r.err != nil {
			return Payload{}, r.line, r.err
		}
		line, tooLong, err := r.readLine()
		switch {
		case err == nil:
		case !errors.Is(err, io.EOF):
			r.err = fmt.Errorf("payload: read line %d: %w", r.line+1, err)
			return Payload{}, r.line, r.err
		case len(line) == 0 && !tooLong: // the end, after the last newline
			r.err = io.EOF
			return Payload{}, r.line, io.EOF
		default: // a last line without a newline: read it, then the end
			r.err = io.EOF
		}
		r.line++
		if tooLong {
			return Payload{}, r.line, &LineError{Line: r.line, Err: fmt.Errorf("%w: more than %d bytes", ErrLineTooLong, r.max())}
		}
		if r.line == 1 {
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
		}
		if len(trimJSONSpace(line)) == 0 {
			continue
		}
		p, perr := Parse(line, r.line)
		return p, r.line, perr
	}
}

// Line returns the number of the last line read.
func (r *Reader) Line() int { return r.line }

// readLine reads up to and excluding the next '\n'. A line over the limit is
// discarded up to its end and reported as tooLong. err is io.EOF when the
// stream ended, possibly after a last line.
func (r *Reader) readLine() (line []byte, tooLong bool, err error) {
	r.buf = r.buf[:0]
	limit := r.max()
	for {
		chunk, err := r.br.ReadSlice('\n')
		if !tooLong {
			if len(r.buf)+len(chunk) > limit+2 { // +2 for "\r\n"
				tooLong = true
				r.buf = r.buf[:0]
			} else {
				r.buf = append(r.buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		line = trimEOL(r.buf)
		if len(line) > limit {
			tooLong, line = true, nil
		}
		return line, tooLong, err
	}
}

func (r *Reader) max() int {
	if r.MaxLineBytes > 0 {
		return r.MaxLineBytes
	}
	return DefaultMaxLineBytes
}

func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}
