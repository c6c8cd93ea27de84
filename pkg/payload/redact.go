package payload

import "github.com/oxypipe/oxypipe/internal/redact"

// Redacted returns the payload's JSON (as JSON returns it) with the
// credentials of every URL in it replaced by "redacted:redacted", for logs,
// status events and run logs. Use JSON for the body that is sent.
func (p Payload) Redacted() []byte {
	return redact.Bytes(p.JSON())
}
