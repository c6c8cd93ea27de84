package messages

import "strings"

// DataType is a ledger stage: the kind of record a stage produced for a doc.
type DataType string

// The ledger's stages in pipeline order. Written is the final data type: a
// doc is complete once it succeeds there.
const (
	// DataPayload: the feeder published the payload (success recorded by the
	// feeder). Submitter failures are recorded here.
	DataPayload DataType = "payload"
	// DataSubmitted: the API accepted the payload and returned a job id
	// (success recorded by the submitter). Poller failures are recorded here.
	DataSubmitted DataType = "submitted"
	// DataDone: the job is done at the API (success recorded by the poller).
	// Writer failures are recorded here.
	DataDone DataType = "done"
	// DataWritten: the job's body is in the destination (success recorded by
	// the writer). The final data type.
	DataWritten DataType = "written"
	// DataStatus is used only for the failure of a status event itself (one
	// the statusworker could not decode). It is not a stage of a doc.
	DataStatus DataType = "status"
)

// FinalDataType is the data type at which a doc is complete.
const FinalDataType = DataWritten

// Outcome is what a status event says happened.
type Outcome string

// The outcomes of a status event.
const (
	// Success: the doc reached the event's data type.
	Success Outcome = "success"
	// SoftFailure: the stage failed this time and will retry (the message was
	// redelivered later). Not final.
	SoftFailure Outcome = "soft_failure"
	// HardFailure: the stage gave up on the doc; State says what the run log
	// will call it. Final unless the doc is deliberately re-driven.
	HardFailure Outcome = "hard_failure"
)

// Valid reports whether o is one of the three outcomes.
func (o Outcome) Valid() bool {
	return o == Success || o == SoftFailure || o == HardFailure
}

// Actor names a participant: a kind ("feeder", "submitter", "poller",
// "writer", "statusworker") and an instance name (a host or pod name).
type Actor struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

// String renders the actor as "type/name" (the form of the Oxy-Origin
// header).
func (a Actor) String() string {
	if a.Name == "" {
		return a.Type
	}
	return a.Type + "/" + a.Name
}

// ParseActor parses the "type/name" form written by [Actor.String].
func ParseActor(s string) Actor {
	typ, name, _ := strings.Cut(s, "/")
	return Actor{Type: typ, Name: name}
}
