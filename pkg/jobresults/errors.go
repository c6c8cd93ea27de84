package jobresults

import (
	"errors"
	"fmt"

	"github.com/oxypipe/oxypipe/internal/redact"
)

var (
	// ErrTransient is matched (errors.Is) by store errors that are worth
	// retrying: the backend was briefly unreachable, timed out or was
	// failing over. Callers that must not drop a write (the status worker)
	// retry on it; every other store error is permanent.
	ErrTransient = errors.New("jobresults: transient store error")
	// ErrInvalidInput is matched by errors for invalid arguments: an empty
	// job, data type or doc id, a negative retry count, an empty hard-failure
	// error, an unknown outcome, an invalid scope. Nothing is written.
	ErrInvalidInput = errors.New("jobresults: invalid input")
	// ErrInvalidConfig is matched by errors for an invalid store
	// configuration (for example a negative TTL).
	ErrInvalidConfig = errors.New("jobresults: invalid configuration")
)

// StoreError is a failed backend call of a store. It matches ErrTransient
// when the failure is transient, and wraps the backend's error.
type StoreError struct {
	// Op is the store method that failed, e.g. "RecordSuccess".
	Op string
	// Transient reports whether retrying may succeed.
	Transient bool
	// Err is the backend's error.
	Err error
}

// Error names the operation and the cause, with any URL credentials redacted.
func (e *StoreError) Error() string {
	kind := "permanent"
	if e.Transient {
		kind = "transient"
	}
	return redact.String(fmt.Sprintf("jobresults: %s: %s store error: %v", e.Op, kind, e.Err))
}

// Unwrap returns the backend's error.
func (e *StoreError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrTransient) true for transient errors.
func (e *StoreError) Is(target error) bool { return target == ErrTransient && e.Transient }
