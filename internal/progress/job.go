package progress

import (
	"bytes"
	"encoding/json"

	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/payload"
)

// Job is one payload of a run that reached its final outcome. A watcher
// reports each doc once, as soon as its outcome is known: a done job once its
// body is in the destination.
type Job struct {
	// Doc is the payload's position in the run's input (0-based).
	Doc int
	// ID is the API job id, or "" when no job exists (rejected, and
	// unsubmitted payloads).
	ID string
	// Status is the run-log state: done, faulted, rejected, unsubmitted or
	// unfetched.
	Status oxytype.State
	// Source and Input are the payload's source and input value (its url,
	// query, …), for messages such as "universal https://…".
	Source string
	Input  string
	// Payload is the payload as the run log holds it: the body that was
	// sent, with credentials in URLs replaced by "redacted:redacted".
	Payload json.RawMessage
	// File is where the job's result was written, "<destination>/<id>.json",
	// for a done job; "" otherwise.
	File string
	// Error is the error behind a rejected, unsubmitted or unfetched
	// payload (nil for done and faulted jobs), as the run log prints it.
	Error *oxytype.ErrorInfo
	// Reason is the stage's one-line explanation of a failure.
	Reason string
	// Stage is the data type at which the doc failed (payload: the
	// submitter, submitted: the poller, done: the writer); "" for a done job.
	Stage oxytype.DataType
	// Upload is the job's cloud-storage upload entry, when the API
	// reported one.
	Upload *oxytype.Upload
}

// ParsePayload returns the job's payload as a payload.Payload, ready to be
// submitted again (a faulted job, an unsubmitted payload). Credentials that
// were redacted must be put back before a resubmission needs them.
func (j Job) ParsePayload() (payload.Payload, error) {
	return payload.Parse(j.Payload, 0)
}

// Describe names the job's payload as the report lines do: "<source>
// <input>", e.g. "universal https://sandbox.oxylabs.io/products/1".
func (j Job) Describe() string {
	switch {
	case j.Source != "" && j.Input != "":
		return j.Source + " " + j.Input
	case j.Source != "":
		return j.Source
	case j.Input != "":
		return j.Input
	default:
		return "payload " + messages.DocID(j.Doc)
	}
}

// MarshalJSON writes the job as one line of stdout output:
// {"doc","id","status","source","input","file","error"}; id and error are
// null when there is none, file is left out unless the job was written.
func (j Job) MarshalJSON() ([]byte, error) {
	type out struct {
		Doc    int                `json:"doc"`
		ID     *string            `json:"id"`
		Status oxytype.State      `json:"status"`
		Source string             `json:"source"`
		Input  string             `json:"input"`
		File   string             `json:"file,omitempty"`
		Error  *oxytype.ErrorInfo `json:"error"`
		Upload *oxytype.Upload    `json:"upload,omitempty"`
	}
	o := out{Doc: j.Doc, Status: j.Status, Source: j.Source, Input: j.Input, File: j.File, Error: j.Error, Upload: j.Upload}
	if j.ID != "" {
		id := j.ID
		o.ID = &id
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(o); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
