package oxytype

import "fmt"

// State is what became of one payload. The set is closed: a run log line
// holds exactly one of these.
type State string

// The five states of a payload at the end of a run.
const (
	// Done: the job finished and its body was written to the destination.
	Done State = "done"
	// Faulted: the API ran the job and it faulted. It was not billed; it may
	// be resubmitted.
	Faulted State = "faulted"
	// Rejected: the API (or local validation) refused the payload; no job exists.
	Rejected State = "rejected"
	// Unsubmitted: the payload was never accepted by the API (stopped, auth
	// failure, retries exhausted, or an outcome that is unknown).
	Unsubmitted State = "unsubmitted"
	// Unfetched: a job exists (it has an id) but its result was not written;
	// it can be fetched again by id at no cost.
	Unfetched State = "unfetched"
)

// Valid reports whether s is one of the five states.
func (s State) Valid() bool {
	switch s {
	case Done, Faulted, Rejected, Unsubmitted, Unfetched:
		return true
	}
	return false
}

// MayHaveBilledText is the human wording of the may-have-billed mark, at the
// end of the error message of every payload marked so
// (ErrorInfo.MayHaveBilled). It is text for a reader: tools read the
// structured field, never this.
const MayHaveBilledText = "the API may have created (and billed) a job"

// ErrorInfo is the error behind a rejected, unsubmitted or unfetched payload.
// StatusCode is nil for errors that are not HTTP answers (network errors,
// write failures, local validation).
//
// MayHaveBilled is the structured "may have billed" mark: true when the
// payload's submission may have created (and billed) a job although no job
// id is known (the API answered a 5xx, the answer was lost or unreadable
// after the request was sent, a submitter stopped inside its request, or the
// doc's claim could not be read at the end). It is written as
// "may_have_billed": true inside the run log line's error, and left out when
// false, so a line without it has the three error keys status_code, message
// and trace_id. Recovery tools read this field, never the message text:
// resubmitting a marked payload may bill it twice.
type ErrorInfo struct {
	StatusCode    *int   `json:"status_code"`
	Message       string `json:"message"`
	TraceID       string `json:"trace_id"`
	MayHaveBilled bool   `json:"may_have_billed,omitempty"`
}

// String renders the error the way the API client prints it: "404 Not Found"
// with a status code, the bare message without one.
func (e *ErrorInfo) String() string {
	if e == nil {
		return ""
	}
	if e.StatusCode == nil {
		return e.Message
	}
	return fmt.Sprintf("%d %s", *e.StatusCode, e.Message)
}

// Upload is the cloud-storage upload entry of a job (the API's "statuses"
// entry): code 13000 means the upload succeeded.
type Upload struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}
