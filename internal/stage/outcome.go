package stage

import (
	"errors"
	"fmt"
	"time"

	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// Sentinels matched by the outcome errors with errors.Is.
var (
	// ErrRetry matches a *RetryError.
	ErrRetry = errors.New("stage: retry later")
	// ErrWait matches a *WaitError.
	ErrWait = errors.New("stage: wait")
	// ErrHard matches a *HardError.
	ErrHard = errors.New("stage: hard failure")
)

// RetryError asks for the message to be redelivered after Delay, recording a
// soft failure with Reason. On the MaxDeliver-th delivery it becomes a dead
// letter instead.
type RetryError struct {
	// Delay before redelivery; 0 uses the consumer's RetryBackoff.
	Delay  time.Duration
	Reason string
	// Info is the structured error, if any (kept if the retry turns into a
	// dead letter).
	Info *oxytype.ErrorInfo
	// Cause is the underlying error, for errors.Is/As and logs.
	Cause error
}

// RetryAfter returns a *RetryError: record a soft failure with reason and
// redeliver after d (0: the consumer's RetryBackoff schedule).
func RetryAfter(d time.Duration, reason string) error {
	return &RetryError{Delay: d, Reason: reason}
}

func (e *RetryError) Error() string {
	if e.Delay > 0 {
		return fmt.Sprintf("retry after %v: %s", e.Delay, e.Reason)
	}
	return "retry: " + e.Reason
}

// Is makes errors.Is(err, ErrRetry) true.
func (e *RetryError) Is(target error) bool { return target == ErrRetry }

// Unwrap returns Cause.
func (e *RetryError) Unwrap() error { return e.Cause }

// WaitError asks for the message to be redelivered after Delay without
// recording anything: the work is not failing, it is not ready yet (a job
// still pending at the API).
type WaitError struct {
	Delay time.Duration
}

// Wait returns a *WaitError: redeliver the message after d, record nothing.
func Wait(d time.Duration) error { return &WaitError{Delay: d} }

func (e *WaitError) Error() string { return fmt.Sprintf("wait %v", e.Delay) }

// Is makes errors.Is(err, ErrWait) true.
func (e *WaitError) Is(target error) bool { return target == ErrWait }

// HardError gives up on the message: a hard-failure status event, then Term.
type HardError struct {
	// State is the run-log state the failure implies (rejected, unsubmitted,
	// faulted, unfetched). Empty: messages.FailureState of the message's job
	// id.
	State  oxytype.State
	Reason string
	// Info is the structured error (status code, message, trace id).
	Info *oxytype.ErrorInfo
	// APIJobID overrides the job id read from the message, when the handler
	// knows better.
	APIJobID string
	// Upload is the job's cloud-storage upload entry, when the API reported
	// one (a faulted job whose results were still uploaded). It is carried
	// into the failure event.
	Upload *oxytype.Upload
	Cause  error
}

// Hard returns a *HardError: record a hard failure in state with reason and
// info (nil when there is no structured error), and terminate the message.
func Hard(state oxytype.State, reason string, info *oxytype.ErrorInfo) error {
	return &HardError{State: state, Reason: reason, Info: info}
}

func (e *HardError) Error() string {
	if e.State != "" {
		return fmt.Sprintf("hard failure (%s): %s", e.State, e.Reason)
	}
	return "hard failure: " + e.Reason
}

// Is makes errors.Is(err, ErrHard) true.
func (e *HardError) Is(target error) bool { return target == ErrHard }

// Unwrap returns Cause.
func (e *HardError) Unwrap() error { return e.Cause }

// ConsumerLostError is returned by Run when the consumer was lost, with a
// live connection, for longer than the grace period.
type ConsumerLostError struct {
	Stage  string
	Grace  time.Duration
	Detail string
}

func (e *ConsumerLostError) Error() string {
	return fmt.Sprintf("stage %s: consumer lost for %v with a live connection (%s); exiting so the orchestrator restarts this worker",
		e.Stage, e.Grace, e.Detail)
}
