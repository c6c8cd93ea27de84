package jobresults

import (
	"time"

	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// Record is the stored state of one document at one stage.
//
// The fields of the [Store] API follow its rules: a success clears every
// failure field (Consumer, RetryCount, SoftFailures, HardFailure, and the outcome
// fields State and Error); a soft failure appends its reason to SoftFailures
// and replaces RetryCount; a hard failure sets HardFailure and clears
// RetryCount and SoftFailures.
type Record struct {
	Key
	// Success is true when the last outcome was a success.
	Success bool
	// Origin produced the message the outcome is about.
	Origin oxytype.Party
	// Consumer failed to consume it (failures only).
	Consumer oxytype.Party
	// RetryCount is the retry count of the last soft failure.
	RetryCount int
	// SoftFailures holds the reasons of the soft failures since the last
	// success or hard failure, oldest first; nil when there are none.
	SoftFailures []string
	// HardFailure is the error of a hard failure; "" when there is none.
	HardFailure string
	// Time is the time of the last write (the entry's event time when it
	// gave one), in UTC with millisecond precision.
	Time time.Time
	// Scope is the scope of the last write that carried one; "" when the
	// store has scoping disabled.
	Scope string

	// Version is the version of the last versioned write (Entry.Version);
	// 0 when only unversioned writes have reached the record.
	Version uint64
	// Facts are the run-log facts: State and Error of the last outcome
	// (empty when it gave none; Error nil after a success), and the
	// APIJobID, (redacted) Payload and Upload of the last write that
	// carried each.
	oxytype.Facts
	// FinishedAt is when the record's job finished, as Finisher.FinishJob
	// stamped it (UTC, millisecond precision); zero while the job is open.
	// A MongoStore with a TTL removes the record that long after it, and
	// never a record without it.
	FinishedAt time.Time
}

// Outcome is the outcome a record holds, derived from its fields.
func (r Record) Outcome() oxytype.Outcome {
	switch {
	case r.Success:
		return oxytype.Success
	case r.HardFailure != "":
		return oxytype.HardFailure
	default:
		return oxytype.SoftFailure
	}
}

// CurrentError returns the record's hard failure, else its last soft-failure
// reason, else "" (for a success).
func (r Record) CurrentError() string {
	if r.Success {
		return ""
	}
	if r.HardFailure != "" {
		return r.HardFailure
	}
	if n := len(r.SoftFailures); n > 0 {
		return r.SoftFailures[n-1]
	}
	return ""
}

// StageCount is the progress of one stage of a job. Every record is counted
// once in Total and in exactly one of Succeeded, SoftFailed and HardFailed.
type StageCount struct {
	DataType   string
	Total      int
	Succeeded  int
	SoftFailed int
	HardFailed int
}

// UniqueError is a group of failed records of a job that share their current
// error and data type.
type UniqueError struct {
	// Error is the current error: the hard failure, else the last
	// soft-failure reason.
	Error    string
	DataType string
	// Count is the number of records (document and stage) in the group.
	Count int
	// FirstSeen and LastSeen are the earliest and latest Time of those
	// records.
	FirstSeen time.Time
	LastSeen  time.Time
}
