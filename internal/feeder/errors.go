package feeder

import (
	"errors"
	"fmt"
	"time"

	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

var (
	// ErrNoSource is the reason for a payload without a "source" string.
	ErrNoSource = errors.New(`the payload has no "source"`)
	// ErrNoInput is the reason for a payload without an input key.
	ErrNoInput = errors.New("the payload has no input key (query, url, product_id, prompt, video_id, channel_handle or category_id)")
	// ErrTooLarge is the reason for a payload larger than the broker accepts.
	ErrTooLarge = errors.New("the payload is larger than the broker accepts")
	// ErrNoStatusWorker matches a *NoStatusWorkerError.
	ErrNoStatusWorker = errors.New("no statusworker answered")
	// ErrRunFailed matches a *RunFailedError.
	ErrRunFailed = errors.New("run failed")
	// ErrRunCompleted: Resume of a run that already completed; there is
	// nothing to feed.
	ErrRunCompleted = errors.New("the run already completed")
	// ErrInputMismatch: Resume was given another number of payloads than
	// the run was announced with.
	ErrInputMismatch = errors.New("the input does not match the run")
)

// InputError is a payload that cannot be fed at all: a line that is not a
// payload, or a payload with no source or no input. It is returned before
// anything is announced or billed; the CLI exits 2 with its text, which
// names the line and the reason but never the line's content.
type InputError struct {
	// Line is the 1-based line of a JSONL input (0 for payloads given in
	// code).
	Line int
	// Doc is the payload's position among the payloads (0-based); -1 when
	// the line held no payload at all.
	Doc int
	// Err is the reason: a JSON syntax error, payload.ErrNotObject,
	// payload.ErrLineTooLong, ErrNoSource, ErrNoInput or ErrTooLarge.
	Err error
}

// Error implements error: "line 3: invalid JSON: …" or, for payloads given in
// code, "payload 2: the payload has no input key …".
func (e *InputError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %v", e.Line, e.Err)
	}
	return fmt.Sprintf("payload %d: %v", e.Doc, e.Err)
}

// Unwrap returns the reason.
func (e *InputError) Unwrap() error { return e.Err }

// RunFailedError says the statusworker refused the run before anything was
// fed (for example, the run log cannot be written). Nothing was billed.
type RunFailedError struct {
	Run    string
	Reason string
}

// Error implements error.
func (e *RunFailedError) Error() string {
	return fmt.Sprintf("run %s failed before anything was submitted: %s", e.Run, e.Reason)
}

// Is makes errors.Is(err, ErrRunFailed) true.
func (e *RunFailedError) Is(target error) bool { return target == ErrRunFailed }

// NoStatusWorkerError says no statusworker marked the run ready or failed in
// time: in the distributed shape, none is running or none reaches the broker.
type NoStatusWorkerError struct {
	Run  string
	Wait time.Duration
}

// Error implements error.
func (e *NoStatusWorkerError) Error() string {
	return fmt.Sprintf("no statusworker answered within %s; is one running?", e.Wait)
}

// Is makes errors.Is(err, ErrNoStatusWorker) true.
func (e *NoStatusWorkerError) Is(target error) bool { return target == ErrNoStatusWorker }

// runStateError wraps a state a run cannot be resumed from.
func runStateError(run string, rec *messages.RunRecord) error {
	switch rec.State {
	case oxytype.RunStateCompleted:
		return fmt.Errorf("feeder: run %s: %w", run, ErrRunCompleted)
	case oxytype.RunStateFailed:
		return &RunFailedError{Run: run, Reason: rec.Reason}
	}
	return nil
}
