package oxytype

import (
	"errors"
	"fmt"
	"time"
)

// The errors of feeding and resuming a run, which the feeder returns and
// callers of package oxy (the CLI among them) tell apart with errors.Is and
// errors.As. They live here, in the shared vocabulary, so that telling them
// apart needs no internal package.
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
	// ErrRunCompleted: a resume of a run that already completed; there is
	// nothing to feed.
	ErrRunCompleted = errors.New("the run already completed")
	// ErrInputMismatch: a resume was given another number of payloads than
	// the run was announced with, or none when the run's are not kept.
	ErrInputMismatch = errors.New("the input does not match the run")
	// ErrRunNotFound: the broker holds no record of this run.
	ErrRunNotFound = errors.New("run not found")
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

// StoppedError is the cause of a run that was stopped before every payload
// was submitted: by the user (the first Ctrl+C, Run.Stop) or by a stage.
type StoppedError struct {
	// Reason is the reason recorded with the stop in the runs bucket.
	Reason string
}

// Error implements error.
func (e *StoppedError) Error() string {
	if e.Reason == "" {
		return "the run was stopped"
	}
	return "the run was stopped: " + e.Reason
}
