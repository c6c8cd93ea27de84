package retry

import (
	"errors"
	"fmt"
	"time"
)

// Reasons why Do stopped, matched with errors.Is on the error it returns.
var (
	// ErrExhausted: the attempt limit or the MaxElapsed deadline was reached
	// while the operation kept failing with retryable errors.
	ErrExhausted = errors.New("retries exhausted")
	// ErrPermanent: the operation failed with an error that is not worth
	// retrying, either marked with Permanent or rejected by Policy.Retryable.
	ErrPermanent = errors.New("permanent error")
)

// Error is what Do returns when the operation did not succeed. It matches
// (errors.Is/As) both its Reason and the last error of the operation.
type Error struct {
	// Attempts is the number of attempts that ran.
	Attempts int
	// Err is the error of the last attempt; nil when the context was done
	// before the first attempt.
	Err error
	// Reason says why Do stopped: ErrExhausted, ErrPermanent, or the
	// context's error (context.Canceled or context.DeadlineExceeded).
	Reason error
}

// Error says how many attempts ran, why the loop stopped, and the last error.
func (e *Error) Error() string {
	plural := "s"
	if e.Attempts == 1 {
		plural = ""
	}
	if e.Err == nil {
		return fmt.Sprintf("retry: stopped after %d attempt%s: %v", e.Attempts, plural, e.Reason)
	}
	return fmt.Sprintf("retry: stopped after %d attempt%s (%v): %v", e.Attempts, plural, e.Reason, e.Err)
}

// Unwrap returns the reason and the last error, so errors.Is matches both.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Reason}
	}
	return []error{e.Reason, e.Err}
}

// permanentError marks an error as not worth retrying.
type permanentError struct{ err error }

func (e *permanentError) Error() string        { return e.err.Error() }
func (e *permanentError) Unwrap() error        { return e.err }
func (e *permanentError) Is(target error) bool { return target == ErrPermanent }

// Permanent marks err as not worth retrying: Do returns at once when the
// operation returns it (or an error wrapping it). The result still matches
// err with errors.Is/As. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// IsPermanent reports whether err, or an error it wraps, was marked with
// Permanent.
func IsPermanent(err error) bool { return errors.Is(err, ErrPermanent) }

// retryAfterError carries a server's "try again no sooner than" hint.
type retryAfterError struct {
	err   error
	after time.Duration
}

func (e *retryAfterError) Error() string { return e.err.Error() }
func (e *retryAfterError) Unwrap() error { return e.err }

// RetryAfter marks err as retryable no sooner than d from now, for servers
// that say when to come back (HTTP 429/503 with Retry-After). Do waits at
// least d, even beyond Policy.Max; the MaxElapsed deadline still applies.
// RetryAfter(nil, d) is nil.
func RetryAfter(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &retryAfterError{err: err, after: d}
}

// retryAfterOf returns the RetryAfter hint carried by err, or zero.
func retryAfterOf(err error) time.Duration {
	var ra *retryAfterError
	if errors.As(err, &ra) {
		return ra.after
	}
	return 0
}

// On returns a Policy.Retryable classifier that retries exactly the errors
// matching (errors.Is) one of targets, e.g. retry.On(jobresults.ErrTransient).
func On(targets ...error) func(err error) bool {
	return func(err error) bool {
		for _, t := range targets {
			if errors.Is(err, t) {
				return true
			}
		}
		return false
	}
}
