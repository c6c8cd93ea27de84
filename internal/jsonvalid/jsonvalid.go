// Package jsonvalid checks that a stream of bytes is one JSON value while
// the bytes pass, without holding them: a results body of 20 MB is checked
// on its way to the destination, at the speed of a copy, in a few hundred
// bytes of state.
//
// The writer stage needs it because it streams each results body straight
// into an atomic Put: a body that is not JSON (a proxy's HTML page, a body
// cut short) must fail the Put before the file appears, not be recorded as
// written. NewReader does that: it passes the bytes on and fails the read
// that would have been the end of the body when the body is not one
// complete JSON value, so the Put aborts.
//
// It checks the grammar of RFC 8259 as encoding/json.Valid does (strings
// are not checked for valid UTF-8, as Valid does not), with a nesting limit.
package jsonvalid

import (
	"errors"
	"fmt"
	"io"
)

// MaxDepth is the deepest nesting of arrays and objects accepted, as in
// encoding/json.
const MaxDepth = 10000

// ErrNotJSON is matched (errors.Is) by every *SyntaxError.
var ErrNotJSON = errors.New("not JSON")

// SyntaxError says where a stream stopped being JSON.
type SyntaxError struct {
	// Offset is the position of the offending byte (or the stream's length,
	// when it ended too early).
	Offset int64
	// Msg says what was wrong.
	Msg string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("not JSON: %s at byte %d", e.Msg, e.Offset)
}

// Is makes errors.Is(err, ErrNotJSON) true.
func (e *SyntaxError) Is(target error) bool { return target == ErrNotJSON }

type state uint8

const (
	stValue        state = iota // a value must come
	stValueOrClose              // after '[': a value or ']'
	stKeyOrClose                // after '{': a key or '}'
	stKey                       // after ',' in an object: a key
	stColon                     // after a key
	stCommaOrClose              // after a value in a container
	stEnd                       // after the top-level value: only space
	stString                    // inside a string
	stEscape                    // after '\' in a string
	stUnicode                   // inside \uXXXX
	stMinus                     // after a number's '-'
	stZero                      // after a number's leading 0
	stInt                       // in a number's integer digits
	stFracStart                 // after '.'
	stFrac                      // in the fraction's digits
	stExpStart                  // after 'e' or 'E'
	stExpSign                   // after the exponent's sign
	stExp                       // in the exponent's digits
	stLiteral                   // inside true, false or null
)

// plain marks the bytes a string may hold as they are: not '"', '\' or a
// control character.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// hexDigit marks hexadecimal digits.
var hexDigit = func() (t [256]bool) {
	for _, c := range "0123456789abcdefABCDEF" {
		t[c] = true
	}
	return t
}()

// space marks JSON's whitespace.
var space = [256]bool{' ': true, '\t': true, '\n': true, '\r': true}

// Validator checks the bytes written to it. Write fails at the first byte
// that cannot continue a JSON value; Close fails when the value is not
// complete. The zero value is ready to use.
type Validator struct {
	st    state
	key   bool   // the string being read is an object's key
	stack []byte // open containers: '{' or '['
	hex   int    // hex digits left in \uXXXX
	lit   string // the rest of the literal being read
	off   int64  // bytes consumed before the current Write
	err   error
}

// Write checks p. It returns len(p), or a *SyntaxError (with the count of
// bytes before the offending one) once the stream is not JSON; every later
// call returns the same error.
func (v *Validator) Write(p []byte) (int, error) {
	if v.err != nil {
		return 0, v.err
	}
	i, err := v.scan(p)
	v.off += int64(i)
	if err != nil {
		v.err = err
		return i, err
	}
	return len(p), nil
}

// Close says the stream ended: it returns nil when what was written is
// exactly one JSON value (surrounding space allowed), else a *SyntaxError.
func (v *Validator) Close() error {
	if v.err != nil {
		return v.err
	}
	switch v.st {
	case stEnd:
		return nil
	case stZero, stInt, stFrac, stExp:
		if len(v.stack) == 0 {
			return nil
		}
	}
	msg := "unexpected end of input"
	if v.off == 0 {
		msg = "empty input"
	}
	v.err = &SyntaxError{Offset: v.off, Msg: msg}
	return v.err
}

func (v *Validator) fail(i int, msg string, c byte) (int, error) {
	return i, &SyntaxError{Offset: v.off + int64(i), Msg: fmt.Sprintf("%s, found %q", msg, c)}
}

// afterValue is the state after a complete value.
func (v *Validator) afterValue() state {
	if len(v.stack) == 0 {
		return stEnd
	}
	return stCommaOrClose
}

// scan runs the state machine over p and returns how many bytes it
// accepted, with the error of the first one it did not.
func (v *Validator) scan(p []byte) (int, error) {
	i := 0
	for i < len(p) {
		switch v.st {
		case stString:
			// The hot loop: most of a results body is one long string.
			for i < len(p) && plain[p[i]] {
				i++
			}
			if i == len(p) {
				return i, nil
			}
			switch c := p[i]; c {
			case '"':
				if v.key {
					v.st = stColon
				} else {
					v.st = v.afterValue()
				}
			case '\\':
				v.st = stEscape
			default:
				return v.fail(i, "control character in a string", c)
			}
			i++
			continue
		case stEscape:
			switch c := p[i]; c {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				v.st = stString
			case 'u':
				v.st, v.hex = stUnicode, 4
			default:
				return v.fail(i, "invalid escape in a string", c)
			}
			i++
			continue
		case stUnicode:
			if c := p[i]; !hexDigit[c] {
				return v.fail(i, "invalid \\u escape in a string", c)
			}
			if v.hex--; v.hex == 0 {
				v.st = stString
			}
			i++
			continue
		case stLiteral:
			if c := p[i]; c != v.lit[0] {
				return v.fail(i, "invalid literal", c)
			}
			if v.lit = v.lit[1:]; v.lit == "" {
				v.st = v.afterValue()
			}
			i++
			continue
		case stMinus, stZero, stInt, stFracStart, stFrac, stExpStart, stExpSign, stExp:
			done, err := v.number(p[i])
			if err != nil {
				return v.fail(i, err.Error(), p[i])
			}
			if !done {
				i++
			}
			// A number ends at the byte after it, which the new state reads.
			continue
		}

		c := p[i]
		if space[c] {
			i++
			for i < len(p) && space[p[i]] {
				i++
			}
			continue
		}
		switch v.st {
		case stValue, stValueOrClose:
			if c == ']' && v.st == stValueOrClose {
				v.close()
				break
			}
			if err := v.value(c); err != nil {
				return v.fail(i, err.Error(), c)
			}
		case stKeyOrClose, stKey:
			switch {
			case c == '"':
				v.st, v.key = stString, true
			case c == '}' && v.st == stKeyOrClose:
				v.close()
			default:
				return v.fail(i, "expected a member name", c)
			}
		case stColon:
			if c != ':' {
				return v.fail(i, "expected ':' after a member name", c)
			}
			v.st = stValue
		case stCommaOrClose:
			top := v.stack[len(v.stack)-1]
			switch {
			case c == ',' && top == '{':
				v.st = stKey
			case c == ',':
				v.st = stValue
			case c == '}' && top == '{', c == ']' && top == '[':
				v.close()
			default:
				return v.fail(i, "expected ',' or the end of the "+containerName(top), c)
			}
		case stEnd:
			return v.fail(i, "data after the JSON value", c)
		}
		i++
	}
	return i, nil
}

func containerName(open byte) string {
	if open == '{' {
		return "object"
	}
	return "array"
}

// value starts the value whose first byte is c.
func (v *Validator) value(c byte) error {
	switch {
	case c == '"':
		v.st, v.key = stString, false
	case c == '{' || c == '[':
		if len(v.stack) >= MaxDepth {
			return errors.New("nested too deep")
		}
		v.stack = append(v.stack, c)
		v.st = stKeyOrClose
		if c == '[' {
			v.st = stValueOrClose
		}
	case c == '-':
		v.st = stMinus
	case c == '0':
		v.st = stZero
	case '1' <= c && c <= '9':
		v.st = stInt
	case c == 't':
		v.st, v.lit = stLiteral, "true"[1:]
	case c == 'f':
		v.st, v.lit = stLiteral, "false"[1:]
	case c == 'n':
		v.st, v.lit = stLiteral, "null"[1:]
	default:
		return errors.New("expected a value")
	}
	return nil
}

// close ends the innermost container.
func (v *Validator) close() {
	v.stack = v.stack[:len(v.stack)-1]
	v.st = v.afterValue()
}

// number reads one byte of a number. done reports that the number ended
// before c (the state is then the one after the number, and c is still to
// be read).
func (v *Validator) number(c byte) (done bool, err error) {
	digit := '0' <= c && c <= '9'
	switch v.st {
	case stMinus:
		switch {
		case c == '0':
			v.st = stZero
		case digit:
			v.st = stInt
		default:
			return false, errors.New("expected a digit after '-'")
		}
		return false, nil
	case stZero, stInt:
		switch {
		case digit && v.st == stInt:
		case c == '.':
			v.st = stFracStart
		case c == 'e' || c == 'E':
			v.st = stExpStart
		default:
			v.st = v.afterValue()
			return true, nil
		}
		return false, nil
	case stFracStart:
		if !digit {
			return false, errors.New("expected a digit after '.'")
		}
		v.st = stFrac
		return false, nil
	case stFrac:
		switch {
		case digit:
		case c == 'e' || c == 'E':
			v.st = stExpStart
		default:
			v.st = v.afterValue()
			return true, nil
		}
		return false, nil
	case stExpStart:
		switch {
		case c == '+' || c == '-':
			v.st = stExpSign
		case digit:
			v.st = stExp
		default:
			return false, errors.New("expected a digit in the exponent")
		}
		return false, nil
	case stExpSign:
		if !digit {
			return false, errors.New("expected a digit in the exponent")
		}
		v.st = stExp
		return false, nil
	default: // stExp
		if digit {
			return false, nil
		}
		v.st = v.afterValue()
		return true, nil
	}
}

// NewReader returns a reader of r's bytes that checks them as they pass
// (see Validator). A read fails with a *SyntaxError as soon as the bytes
// cannot be JSON, and the read that reaches the end of r fails with one,
// in place of io.EOF, when they were not exactly one complete JSON value.
// Errors of r itself are passed on as they are.
func NewReader(r io.Reader) io.Reader { return &reader{r: r} }

type reader struct {
	r io.Reader
	v Validator
}

func (r *reader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		if _, verr := r.v.Write(p[:n]); verr != nil {
			return 0, verr
		}
	}
	if errors.Is(err, io.EOF) {
		if verr := r.v.Close(); verr != nil {
			return n, verr
		}
	}
	return n, err
}

// Valid reports whether b is exactly one JSON value (surrounding space
// allowed), as encoding/json.Valid does. It is the same check as a
// Validator's, about three times as fast as encoding/json's scanner on an
// API answer or a message (BenchmarkValid), which the client and the
// message decoder run on every one they read.
func Valid(b []byte) bool {
	var v Validator
	if _, err := v.Write(b); err != nil {
		return false
	}
	return v.Close() == nil
}
