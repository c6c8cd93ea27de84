package runlog

import (
	"encoding/json"

	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// Line is one line of a run log. The JSON keys are exactly state, id,
// payload, error and upload; ID is nil when no job exists. Payload must
// already be redacted (see internal/redact) when the line is written.
type Line struct {
	State   oxytype.State      `json:"state"`
	ID      *string            `json:"id"`
	Payload json.RawMessage    `json:"payload"`
	Error   *oxytype.ErrorInfo `json:"error"`
	Upload  *oxytype.Upload    `json:"upload"`
}
