package jobresults

import "fmt"

// Key identifies a record: one document at one stage of one run.
type Key struct {
	// Run is the run the document belongs to (the ledger API's "job"; it is
	// stored as job_id). It is not the API's job id, which is
	// Facts.APIJobID.
	Run string
	// DataType is the stage: the data type of the message that succeeded
	// or failed.
	DataType string
	// DocID identifies the document within the run. Decimal integer ids
	// (input positions) are ordered numerically by ForEachRecord.
	DocID string
}

// String renders the key as run/data type/doc, for messages.
func (k Key) String() string { return k.Run + "/" + k.DataType + "/" + k.DocID }

func (k Key) validate() error {
	switch {
	case k.Run == "":
		return fmt.Errorf("%w: run (job id) is empty", ErrInvalidInput)
	case k.DataType == "":
		return fmt.Errorf("%w: data type is empty (key %s)", ErrInvalidInput, k)
	case k.DocID == "":
		return fmt.Errorf("%w: doc id is empty (key %s)", ErrInvalidInput, k)
	}
	return nil
}

// docPosition returns the numeric position of a document id that is a
// decimal integer of at most 18 digits, so that "2" sorts before "10".
func docPosition(docID string) (int64, bool) {
	if docID == "" || len(docID) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(docID); i++ {
		c := docID[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

func validateJobID(jobID string) error {
	if jobID == "" {
		return fmt.Errorf("%w: job id is empty", ErrInvalidInput)
	}
	return nil
}

func validateDocID(docID string) error {
	if docID == "" {
		return fmt.Errorf("%w: doc id is empty", ErrInvalidInput)
	}
	return nil
}

func validateDataType(dataType string) error {
	if dataType == "" {
		return fmt.Errorf("%w: data type is empty", ErrInvalidInput)
	}
	return nil
}
