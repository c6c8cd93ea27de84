package core

import (
	"errors"
	"regexp"

	"github.com/oxypipe/oxypipe/internal/redact"
)

// Sentinels, re-exported by the root package. Implementations wrap the
// storage SDK's error with one of them where the cause is known, so callers
// can tell a permanent failure (a missing bucket, a refused credential, a bad
// name) from one worth retrying.
var (
	ErrInvalidName      = errors.New("invalid name")
	ErrNotFound         = errors.New("not found")
	ErrLocationNotFound = errors.New("location does not exist")
	ErrAccessDenied     = errors.New("access denied")
	ErrNoSpace          = errors.New("out of space")
	ErrUnknownScheme    = errors.New("unknown scheme")
	ErrInvalidLocation  = errors.New("invalid location")
)

// Error is the error every destination operation returns. Its text names the
// location (credentials redacted), the operation and the name it concerned.
type Error struct {
	// Op is the operation: open, probe, put, get, list or close.
	Op string
	// Location is the destination's String(): redacted, safe to log.
	Location string
	// Name is the file name the operation concerned; empty for probe, list
	// and open.
	Name string
	// Err is the cause, usually wrapping one of the sentinels and the storage
	// SDK's own error.
	Err error
}

// Error renders "destination LOCATION: OP NAME: CAUSE", with every credential
// the cause may carry (URL userinfo, signed query parameters, account keys)
// redacted.
func (e *Error) Error() string {
	s := "destination " + e.Location + ": " + e.Op
	if e.Name != "" {
		s += " " + e.Name
	}
	if e.Err != nil {
		s += ": " + Sanitize(e.Err.Error())
	}
	return s
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Fail wraps err as an *Error for op on name at location. A nil err stays nil.
func Fail(op, location, name string, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Op: op, Location: location, Name: name, Err: err}
}

// secretParams matches the values of query parameters and connection-string
// fields that carry credentials (SAS signatures, presigned-URL signatures,
// OAuth tokens, account keys). Storage SDKs put request URLs into network
// errors verbatim, so a SAS token would otherwise reach a log.
var secretParams = regexp.MustCompile(`(?i)((?:[?&;]|^)(?:sig|signature|x-amz-signature|x-amz-credential|x-amz-security-token|x-goog-signature|x-goog-credential|access_token|token|key|accountkey|sharedaccesssignature)=)[^&;\s"']+`)

// Sanitize removes credentials from an error text: URL userinfo (through
// internal/redact) and secret query or connection-string values.
func Sanitize(s string) string {
	return secretParams.ReplaceAllString(redact.String(s), "${1}REDACTED")
}
