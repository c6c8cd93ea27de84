package wsa

import (
	"errors"

	"github.com/oxypipe/oxypipe/internal/redact"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// ErrorInfo is the run log's error for a failed call: the API's status code,
// message and trace id for an *APIError, the redacted text of anything else
// (no status code).
func ErrorInfo(err error) *oxytype.ErrorInfo {
	var ae *APIError
	if !errors.As(err, &ae) {
		return &oxytype.ErrorInfo{Message: redact.String(err.Error())}
	}
	info := &oxytype.ErrorInfo{Message: ae.Message, TraceID: ae.TraceID}
	if ae.StatusCode > 0 {
		code := ae.StatusCode
		info.StatusCode = &code
	}
	return info
}
