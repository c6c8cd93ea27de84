package oxytype

import "encoding/json"

// Facts are what the run log needs to know about a doc from one stage's
// outcome. A stage puts them in its status event, the statusworker copies
// them into the ledger entry, the ledger stores them in its record, and the
// run log derives its line from them: every one of those types embeds
// Facts, so a copy is one assignment and a new run-log fact is added here
// once.
//
// State and Error describe the outcome they came with (the ledger replaces
// them with each write, and clears them on a success); APIJobID, Payload and
// Upload describe the doc (the ledger keeps the last non-empty one).
type Facts struct {
	// Error is the structured error behind a failure, as the run log prints
	// it.
	Error *ErrorInfo `json:"error,omitempty"`
	// State is, for a hard failure, the run-log state it implies (Rejected,
	// Unsubmitted, Faulted or Unfetched); "" for none.
	State State `json:"state,omitempty"`
	// APIJobID is the API's job id where one exists.
	APIJobID string `json:"api_job_id,omitempty"`
	// Payload is the doc's WSA body where known, valid JSON (redacted before
	// it leaves the process or is stored).
	Payload json.RawMessage `json:"payload,omitempty"`
	// Upload is the job's cloud-storage upload entry where the API reported
	// one.
	Upload *Upload `json:"upload,omitempty"`
}
