package wsa

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/oxypipe/oxypipe/internal/redact"
)

// APIError is every failure of a call: an answer of the API with a failure
// status, an answer that could not be read, or a request that got no answer
// at all. Its text is the status code and the API's message, as a user
// sees it in the API's own answers: "404 Query not found.",
// "429 Too many requests. (Total Dynamic).", or for a network failure
// "ConnectError: dial tcp …: connection refused".
//
// errors.Is matches the status-code sentinels (ErrNotFound, …), the domain
// throttle (ErrDomainThrottle), and whatever Err wraps: ErrBadResponse,
// ErrTimeout, context.Canceled.
type APIError struct {
	// StatusCode is the HTTP status, or 0 when no answer arrived (a network
	// failure, a timeout, or the caller's context ending). A batch value the
	// API refused in its "errors" list has StatusCode 202.
	StatusCode int
	// Message is the body's "message", else its "errors" joined with spaces,
	// else the HTTP reason phrase; for a network failure it is the failure's
	// kind and text ("ReadError: unexpected EOF"). URL credentials are
	// redacted.
	Message string
	// TraceID is the body's "trace_id", or the "trace_id: X" found in the
	// HTML page of a 5xx; "" when there is none.
	TraceID string
	// Err is the cause: ErrBadResponse for a 2xx answer that could not be
	// read or decoded, ErrTimeout, the context's error, or the network error.
	Err error
	// RequestSent reports, for a failure with StatusCode 0, whether the
	// request had been written out in full before the failure: a submission
	// that failed after it was sent may have created (and billed) a job.
	RequestSent bool

	sentinel bool // a value to match with errors.Is, by status code only
	throttle bool // the ErrDomainThrottle sentinel
}

// Error returns "<code> <message>", or the message alone when there is no
// status code.
func (e *APIError) Error() string {
	switch {
	case e.StatusCode == 0 && e.Message == "" && e.Err != nil:
		return e.Err.Error()
	case e.StatusCode == 0:
		return e.Message
	case e.Message == "":
		return strconv.Itoa(e.StatusCode)
	}
	return strconv.Itoa(e.StatusCode) + " " + e.Message
}

// Unwrap returns the cause.
func (e *APIError) Unwrap() error { return e.Err }

// Is matches a status-code sentinel with the same code, and
// ErrDomainThrottle when the error is a domain throttle.
func (e *APIError) Is(target error) bool {
	t, ok := target.(*APIError)
	if !ok || !t.sentinel {
		return false
	}
	if t.throttle {
		return e.IsDomainThrottle()
	}
	return e.StatusCode == t.StatusCode && e.StatusCode != 0
}

// IsDomainThrottle reports whether the error is the 429 the API answers when
// it limits a target domain to 1 request per second after a low success
// rate. Unlike the account's rate limit it does not pass within seconds, so
// it is never retried.
func (e *APIError) IsDomainThrottle() bool {
	return e.StatusCode == http.StatusTooManyRequests && domainThrottle.MatchString(e.Message)
}

var domainThrottle = regexp.MustCompile(`Access to \S+ has been limited to \d+ req/s`)

func sentinel(code int) *APIError {
	return &APIError{StatusCode: code, Message: statusText(code), sentinel: true}
}

// Sentinels for errors.Is, matched on the status code of an *APIError.
var (
	ErrBadRequest          = sentinel(http.StatusBadRequest)          // 400: validation, malformed JSON
	ErrUnauthorized        = sentinel(http.StatusUnauthorized)        // 401: no or wrong credentials
	ErrForbidden           = sentinel(http.StatusForbidden)           // 403: no access to the resource
	ErrNotFound            = sentinel(http.StatusNotFound)            // 404: unknown or purged job ("Query not found.")
	ErrRequestTimeout      = sentinel(http.StatusRequestTimeout)      // 408: Realtime past its TTL
	ErrUnprocessable       = sentinel(http.StatusUnprocessableEntity) // 422: invalid payload (documented, not seen live)
	ErrTooManyRequests     = sentinel(http.StatusTooManyRequests)     // 429: rate limit or domain throttle
	ErrInternalServerError = sentinel(http.StatusInternalServerError) // 500
	ErrSiteTimeout         = sentinel(524)                            // 524: the API's "timeout" answer
	// ErrDomainThrottle matches a 429 whose message says the target domain
	// has been limited to 1 req/s (see APIError.IsDomainThrottle).
	ErrDomainThrottle = &APIError{StatusCode: http.StatusTooManyRequests, Message: "domain throttle", sentinel: true, throttle: true}
)

// Causes wrapped in APIError.Err.
var (
	// ErrBadResponse: the API answered 2xx but the body could not be read or
	// decoded. The request reached the API, so a submission may have created
	// a job.
	ErrBadResponse = errors.New("unreadable response")
	// ErrTimeout: no answer within Config.Timeout.
	ErrTimeout = errors.New("no answer")
)

// maxMessage bounds Message, so that an error page cannot flood a log.
const maxMessage = 1000

// maxErrorBody is how much of an error body is read.
const maxErrorBody = 64 << 10

// DecodeError builds the *APIError for an answer with a failure status from
// its body: Message from "message", else "errors" (a list of strings, a list
// of {"message": …} objects, or one such object) joined with spaces, else the
// reason phrase (http.StatusText when reason is ""); TraceID from
// "trace_id", else from "trace_id: X" in an HTML page.
func DecodeError(statusCode int, reason string, body []byte) *APIError {
	e := &APIError{StatusCode: statusCode}
	var doc struct {
		Message json.RawMessage `json:"message"`
		Errors  json.RawMessage `json:"errors"`
		TraceID json.RawMessage `json:"trace_id"`
	}
	if json.Unmarshal(body, &doc) == nil {
		e.Message = jsonText(doc.Message)
		if e.Message == "" {
			e.Message = strings.Join(errorMessages(doc.Errors), " ")
		}
		e.TraceID = jsonText(doc.TraceID)
	}
	if e.TraceID == "" {
		if m := htmlTraceID.FindSubmatch(body); m != nil {
			e.TraceID = string(m[1])
		}
	}
	if e.Message == "" {
		e.Message = reason
	}
	if e.Message == "" {
		e.Message = statusText(statusCode)
	}
	e.Message = clean(e.Message)
	e.TraceID = clean(e.TraceID)
	return e
}

var htmlTraceID = regexp.MustCompile(`trace_id:\s*(?:<[^>]{0,100}>\s*)*([0-9A-Za-z][0-9A-Za-z_.-]{0,127})`)

// errorMessages reads an "errors" value in any of the forms the API uses.
func errorMessages(raw json.RawMessage) []string {
	if len(raw) == 0 {
		return nil
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		if s := itemMessage(raw); s != "" {
			return []string{s}
		}
		return nil
	}
	var out []string
	for _, item := range list {
		if s := itemMessage(item); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// itemMessage is the text of one "errors" entry: a string, or an object's
// "message".
func itemMessage(raw json.RawMessage) string {
	if s := jsonText(raw); s != "" {
		return s
	}
	var obj struct {
		Message json.RawMessage `json:"message"`
	}
	if json.Unmarshal(raw, &obj) == nil {
		return jsonText(obj.Message)
	}
	return ""
}

// jsonText returns a JSON string's text, "" for anything else.
func jsonText(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return strings.TrimSpace(s)
}

// clean redacts credentials, makes the text one valid UTF-8 line, and bounds
// its length.
func clean(s string) string {
	s = redact.String(s)
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > maxMessage {
		cut := maxMessage
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// newBadResponse is the error for a 2xx answer whose body could not be read
// or decoded.
func newBadResponse(statusCode int, what string, cause error) *APIError {
	return &APIError{
		StatusCode: statusCode,
		Message:    clean(fmt.Sprintf("%s: %s: %v", ErrBadResponse, what, cause)),
		Err:        fmt.Errorf("%w: %w", ErrBadResponse, cause),
	}
}

// reasonPhrase extracts "Not Found" from a response's "404 Not Found". HTTP/2
// has no reason phrase, and Go's server writes "status code 524" for codes
// it does not know; both fall back to statusText.
func reasonPhrase(resp *http.Response) string {
	_, after, _ := strings.Cut(resp.Status, " ")
	after = strings.TrimSpace(after)
	if after == "" || after == "status code "+strconv.Itoa(resp.StatusCode) || after == http.StatusText(resp.StatusCode) {
		return statusText(resp.StatusCode)
	}
	return after
}

// statusText is http.StatusText, plus the code the API's edge uses for a
// timeout.
func statusText(code int) string {
	if code == 524 {
		return "A Timeout Occurred"
	}
	return http.StatusText(code)
}
