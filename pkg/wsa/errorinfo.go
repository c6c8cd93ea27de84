package wsa

import (
	"errors"
	"net/http"

	"github.com/oxypipe/oxypipe/internal/redact"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// The environment variables every oxypipe program reads the API settings
// from. The credentials are read from the environment only, never from a
// flag, so that they never show in a process listing.
const (
	// EnvUsername holds the API user's name.
	EnvUsername = "OXY_WSA_USERNAME"
	// EnvPassword holds the API user's password.
	EnvPassword = "OXY_WSA_PASSWORD"
	// EnvBaseURL holds the API's base URL (default DefaultBaseURL), e.g. an
	// emulator's.
	EnvBaseURL = "OXY_API_URL"
)

// ErrorInfo is the run log's error for a failed call, the one mapping every
// stage and tool uses: an *APIError gives its status code (none when no
// answer arrived), message and trace id; a *NoContentError (a job whose
// results are gone or not there yet) is status 204 with its text; any other
// error is its text alone. Every message is redacted (credentials in a URL
// replaced), whatever its origin, since a run log is shared. nil gives nil.
func ErrorInfo(err error) *oxytype.ErrorInfo {
	if err == nil {
		return nil
	}
	if ae, ok := errors.AsType[*APIError](err); ok {
		info := &oxytype.ErrorInfo{Message: redact.String(ae.Message), TraceID: ae.TraceID}
		if ae.StatusCode > 0 {
			code := ae.StatusCode
			info.StatusCode = &code
		}
		return info
	}
	if nc, ok := errors.AsType[*NoContentError](err); ok {
		code := http.StatusNoContent
		return &oxytype.ErrorInfo{StatusCode: &code, Message: redact.String(nc.Error())}
	}
	return &oxytype.ErrorInfo{Message: redact.String(err.Error())}
}
