package wsa

import (
	"context"
	"errors"
	"net/http"

	"github.com/oxypipe/oxypipe/pkg/payload"
)

// Class says what a caller should do after a failed call: retry it, give the
// payload up as rejected, stop the run, or stop sending to a throttled
// domain.
type Class int

// The classes of a failure. The zero Class, None, is for a nil error and for
// errors that are outcomes rather than failures (*NoContentError).
const (
	// None: not a failure.
	None Class = iota
	// Retry: the request failed for a reason that may pass: a 429 of the
	// account's rate limit, any 5xx (500, 524, …), a network or protocol
	// failure, a timeout, or a 2xx whose body could not be read or decoded.
	// A submission may be sent again only when MayHaveCreatedJob is false;
	// otherwise its outcome is unknown and a second request may bill twice.
	Retry
	// Reject: the API refused this payload (400, 408, 422, or a batch
	// value's entry in "errors"), or local validation did; sending it again
	// gives the same answer. Record it and go on with the next payload.
	Reject
	// Stop: the API refuses the account or the request (401, 403, any other
	// 4xx, an unexpected status): stop submitting; jobs already accepted
	// can still be checked, unless a check itself got 401/403.
	Stop
	// Throttle: a 429 domain throttle ("Access to … has been limited to 1
	// req/s"). It lasts for minutes, so it is never retried: stop submitting.
	Throttle
	// Canceled: the caller's context ended the call. It says nothing about
	// the API.
	Canceled
)

// String returns the class's name.
func (c Class) String() string {
	switch c {
	case None:
		return "none"
	case Retry:
		return "retry"
	case Reject:
		return "reject"
	case Stop:
		return "stop"
	case Throttle:
		return "throttle"
	case Canceled:
		return "canceled"
	}
	return "unknown"
}

// Classify sorts an error returned by a Client call into a Class.
func Classify(err error) Class {
	if err == nil {
		return None
	}
	var nc *NoContentError
	if errors.As(err, &nc) {
		return None
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return Canceled
	}
	var ve *payload.ValidationError
	if errors.As(err, &ve) || errors.Is(err, payload.ErrNotBatchable) {
		return Reject
	}
	var ae *APIError
	if !errors.As(err, &ae) {
		return Stop // not from the API: a programming or configuration error
	}
	code := ae.StatusCode
	switch {
	case code == 0:
		return Retry
	case code >= 200 && code < 300:
		if ae.Err != nil {
			return Retry // an unreadable answer
		}
		return Reject // a batch value's entry in "errors"
	case code == http.StatusTooManyRequests:
		if ae.IsDomainThrottle() {
			return Throttle
		}
		return Retry
	case code >= 500:
		return Retry
	case code == http.StatusBadRequest, code == http.StatusUnprocessableEntity, code == http.StatusRequestTimeout:
		return Reject
	}
	return Stop
}

// MayHaveCreatedJob reports whether a failed submission may nevertheless
// have created a job that bills: the request reached the API and no answer
// proved otherwise. It is true after a 5xx, after a 2xx that could not be
// read (without a job id: see Client.Submit), and after a network failure,
// timeout or cancellation once the request had been sent; false after a
// failure before the request was sent in full (connection refused, DNS), a
// 429 or another 4xx, which create no job. The outcome of a submission for
// which it is true is unknown: sending the payload again may bill it twice.
func MayHaveCreatedJob(err error) bool {
	var ae *APIError
	if err == nil || !errors.As(err, &ae) {
		return false
	}
	switch code := ae.StatusCode; {
	case code == 0:
		return ae.RequestSent
	case code >= 200 && code < 300:
		return ae.Err != nil
	case code >= 500:
		return true
	}
	return false
}
