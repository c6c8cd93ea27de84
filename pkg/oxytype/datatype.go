package oxytype

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
	// the statusworker could not decode). It is not a stage of a doc: such a
	// record says a report about the doc was lost, not what became of the
	// doc, so it never resolves the doc.
	DataStatus DataType = "status"
)

// FinalDataType is the data type at which a doc is complete.
const FinalDataType = DataWritten

// Rank is the data type's position in the pipeline: 1 for DataPayload up to
// 4 for DataWritten, and 0 for any other data type (DataStatus, or one this
// version does not know), which ranks below every stage of the pipeline.
func (d DataType) Rank() int {
	switch d {
	case DataPayload:
		return 1
	case DataSubmitted:
		return 2
	case DataDone:
		return 3
	case DataWritten:
		return 4
	}
	return 0
}
