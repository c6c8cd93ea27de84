package feeder

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"

	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/payload"
)

// DefaultMaxPayloadBytes is the largest payload ReadJSONL accepts by default:
// a little under the 1 MiB a NATS server carries per message by default,
// leaving room for the envelope around the payload.
const DefaultMaxPayloadBytes = 1<<20 - 8<<10

// Source is a run's payloads, in input order. It must be readable more than
// once (announcing counts, feeding reads, resuming reads again).
type Source interface {
	// Len is the number of payloads.
	Len() int
	// All ranges over the payloads in order. A non-nil error ends the range.
	All() iter.Seq2[payload.Payload, error]
}

// Check returns the reason a payload cannot be fed at all (oxytype.ErrNoSource,
// oxytype.ErrNoInput), or nil. Everything else payload.Validate finds is left to the
// submitter, which records the payload rejected (see the package
// documentation).
func Check(p payload.Payload) error {
	if p.Source() == "" {
		return oxytype.ErrNoSource
	}
	if key, _ := p.Input(); key == "" {
		return oxytype.ErrNoInput
	}
	return nil
}

// Slice is a Source over payloads held in memory (the Go API's input).
type Slice []payload.Payload

// Len implements Source.
func (s Slice) Len() int { return len(s) }

// All implements Source.
func (s Slice) All() iter.Seq2[payload.Payload, error] {
	return func(yield func(payload.Payload, error) bool) {
		for _, p := range s {
			if !yield(p, nil) {
				return
			}
		}
	}
}

// Check checks every payload with Check and against maxBytes (0: no limit),
// returning an *oxytype.InputError for the first that cannot be fed.
func (s Slice) Check(maxBytes int) error {
	for i, p := range s {
		err := Check(p)
		if err == nil && maxBytes > 0 && len(p.JSON()) > maxBytes {
			err = fmt.Errorf("%w (%d bytes, at most %d)", oxytype.ErrTooLarge, len(p.JSON()), maxBytes)
		}
		if err != nil {
			return &oxytype.InputError{Doc: i, Err: err}
		}
	}
	return nil
}

// ReadConfig configures ReadJSONL.
type ReadConfig struct {
	// Dir is the folder of the spool file. Default os.TempDir().
	Dir string
	// MaxLineBytes is the longest line read. Default
	// payload.DefaultMaxLineBytes.
	MaxLineBytes int
	// MaxPayloadBytes is the largest payload that can be fed: the broker
	// refuses larger messages. Default DefaultMaxPayloadBytes; negative: no
	// limit.
	MaxPayloadBytes int
}

// Spool is a Source whose payloads were read from a JSONL input, checked,
// and written to a file, one compact payload per line. Close removes the
// file (unless it was kept with MoveTo).
type Spool struct {
	path string
	n    int
	max  int
}

// ReadJSONL reads every line of r, checks each payload (see the package
// documentation) and spools the payloads to a file in cfg.Dir. The first line
// that cannot be fed ends the read with an *oxytype.InputError; blank lines are
// skipped. Nothing is announced or sent.
func ReadJSONL(r io.Reader, cfg ReadConfig) (*Spool, error) {
	if cfg.Dir == "" {
		cfg.Dir = os.TempDir()
	}
	if cfg.MaxPayloadBytes == 0 {
		cfg.MaxPayloadBytes = DefaultMaxPayloadBytes
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("feeder: spool: %w", err)
	}
	f, err := os.CreateTemp(cfg.Dir, "payloads-*.jsonl")
	if err != nil {
		return nil, fmt.Errorf("feeder: spool: %w", err)
	}
	s := &Spool{path: f.Name()}
	fail := func(err error) (*Spool, error) {
		_ = f.Close()
		_ = os.Remove(s.path)
		return nil, err
	}
	w := bufio.NewWriterSize(f, 256<<10)
	rd := payload.NewReader(r)
	rd.MaxLineBytes = cfg.MaxLineBytes
	for {
		p, line, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		var le *payload.LineError
		if errors.As(err, &le) {
			return fail(&oxytype.InputError{Line: le.Line, Doc: -1, Err: le.Err})
		}
		if err != nil {
			return fail(fmt.Errorf("feeder: read input: %w", err))
		}
		if err := Check(p); err != nil {
			return fail(&oxytype.InputError{Line: line, Doc: s.n, Err: err})
		}
		b := p.JSON()
		if cfg.MaxPayloadBytes > 0 && len(b) > cfg.MaxPayloadBytes {
			return fail(&oxytype.InputError{Line: line, Doc: s.n, Err: fmt.Errorf("%w (%d bytes, at most %d)", oxytype.ErrTooLarge, len(b), cfg.MaxPayloadBytes)})
		}
		s.max = max(s.max, len(b))
		if _, err := w.Write(append(b, '\n')); err != nil {
			return fail(fmt.Errorf("feeder: spool: %w", err))
		}
		s.n++
	}
	if err := w.Flush(); err != nil {
		return fail(fmt.Errorf("feeder: spool: %w", err))
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(s.path)
		return nil, fmt.Errorf("feeder: spool: %w", err)
	}
	return s, nil
}

// OpenSpool opens a spool file kept by an earlier process (see MoveTo), to
// resume its run.
func OpenSpool(path string) (*Spool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("feeder: open spool: %w", err)
	}
	defer func() { _ = f.Close() }() // read-only
	s := &Spool{path: path}
	br := bufio.NewReaderSize(f, 256<<10)
	cur := 0
	for {
		line, err := br.ReadSlice('\n')
		cur += len(line)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue // a long line: read on to its end
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("feeder: open spool: %w", err)
		}
		s.max = max(s.max, cur-1)
		cur = 0
		s.n++
	}
	return s, nil
}

// Len implements Source.
func (s *Spool) Len() int { return s.n }

// MaxBytes is the size of the largest payload.
func (s *Spool) MaxBytes() int { return s.max }

// Path is the spool file.
func (s *Spool) Path() string { return s.path }

// All implements Source: it reads the spool file from the start.
func (s *Spool) All() iter.Seq2[payload.Payload, error] {
	return func(yield func(payload.Payload, error) bool) {
		f, err := os.Open(s.path)
		if err != nil {
			yield(payload.Payload{}, fmt.Errorf("feeder: read spool: %w", err))
			return
		}
		defer func() { _ = f.Close() }() // read-only
		br := bufio.NewReaderSize(f, 256<<10)
		for i := 0; i < s.n; i++ {
			line, err := br.ReadBytes('\n')
			if err != nil {
				yield(payload.Payload{}, fmt.Errorf("feeder: read spool line %d: %w", i+1, err))
				return
			}
			p, err := payload.Parse(line[:len(line)-1], i+1)
			if err != nil {
				yield(payload.Payload{}, fmt.Errorf("feeder: read spool: %w", err))
				return
			}
			if !yield(p, nil) {
				return
			}
		}
	}
}

// MoveTo moves the spool file to path (copying it when path is on another
// filesystem), for example
// into a state directory under the run's id so that a resumed process finds
// it. The folder is created when missing.
func (s *Spool) MoveTo(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("feeder: keep spool: %w", err)
	}
	if err := os.Rename(s.path, path); err != nil {
		// Another filesystem: copy, then remove the original.
		if cerr := copyFile(s.path, path); cerr != nil {
			return fmt.Errorf("feeder: keep spool: %w", errors.Join(err, cerr))
		}
		_ = os.Remove(s.path)
	}
	s.path = path
	return nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }() // read-only
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		_ = os.Remove(to)
		return err
	}
	return out.Close()
}

// Close removes the spool file.
func (s *Spool) Close() error {
	if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("feeder: remove spool: %w", err)
	}
	return nil
}
