package runlog

import (
	"encoding/json"
	"time"

	"github.com/oxypipe/oxypipe/internal/redact"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// Record is what the ledger holds about one doc at one stage, reduced to
// what the run log needs. (The ledger's own record type lives in
// pkg/jobresults; both embed oxytype.Facts, so a caller converts one into the
// other by copying its key fields and its Facts.)
type Record struct {
	// Doc is the doc id: the payload's position as a decimal string, or an
	// id that is not a position (an undecodable message's).
	Doc string
	// DataType is the stage of the record (payload, submitted, done,
	// written, …).
	DataType oxytype.DataType
	// Success is true when the stage's last outcome was a success.
	Success bool
	// HardFailure is the error text of a hard failure; "" when the record is
	// not hard-failed.
	HardFailure string
	// Facts are the ledger's run-log facts of the record: the State hint
	// and Error of its last outcome, the job id, the (redacted) payload and
	// the upload entry once any write carried them.
	oxytype.Facts
	// Time is the time of the record's last write.
	Time time.Time
}

// Messages of lines for docs that never reached a final outcome.
const (
	// MsgNoRecord is the error of a payload the ledger holds nothing about.
	// It should not happen (the feeder records every payload it publishes);
	// the line is written anyway, because a run log never drops a payload.
	MsgNoRecord = "no record of this payload was found in the ledger"
	// MsgUnresolved is the error of a payload that had not reached a final
	// outcome when the run log was written.
	MsgUnresolved = "the run ended before this payload reached a final outcome"
)

// Derive returns the run-log line of one doc from its ledger records (all of
// one doc, at any stages) and whether the doc is resolved, that is final:
//
//   - a success at finalDataType is done, whatever else happened (the
//     written file is proof), with the job id;
//   - else a hard failure gives its State hint (rejected, unsubmitted,
//     faulted, unfetched) with its structured error and job id; faulted has
//     error null; a hard failure without a usable hint is unfetched when a
//     job id is known, else unsubmitted; a hard failure without a structured
//     error gets its error text as the message;
//   - else the doc is unresolved: unfetched when a job id is known,
//     otherwise unsubmitted, with the error MsgUnresolved (only a run log
//     written before the run completed has such lines);
//   - no records at all is unsubmitted with the error MsgNoRecord.
//
// A line without a job id whose doc has any record with a marked error
// (ErrorInfo.MayHaveBilled: a submission may have billed) keeps the mark,
// even when a later outcome's error does not carry it: a payload that may
// have billed is never shown as one that surely did not.
//
// When a doc has hard failures at several stages the one at the latest stage
// of the pipeline wins (stages the derivation does not know rank below the
// pipeline's), then the latest by time. A hard failure at oxytype.DataStatus
// (a lost report about the doc, not an outcome of it) does not count. Which
// fact decides is DocOutcome's rule (FinalOutcome, Beats, FailureLine), the
// one the live progress applies to the status events too. The payload is the
// one recorded at oxytype.DataPayload, else any recorded one, redacted again
// for safety.
func Derive(finalDataType oxytype.DataType, recs []Record) (Line, bool) {
	line, resolved := derive(finalDataType, recs)
	if line.ID == nil && line.Error != nil && !line.Error.MayHaveBilled && anyMarked(recs) {
		e := *line.Error
		e.MayHaveBilled = true
		line.Error = &e
	}
	return line, resolved
}

// derive is Derive without the sticky mark.
func derive(finalDataType oxytype.DataType, recs []Record) (line Line, resolved bool) {
	if len(recs) == 0 {
		return Line{State: oxytype.Unsubmitted, Error: &oxytype.ErrorInfo{Message: MsgNoRecord}}, false
	}
	line.Payload = pickPayload(recs)
	line.Upload = pickUpload(recs, finalDataType)
	anyID := pickJobID(recs, finalDataType)

	// The record that decides the doc: the one rule the live progress
	// applies too (DocOutcome).
	var (
		hard *Record
		won  DocOutcome
	)
	for i := range recs {
		r := &recs[i]
		o, final := FinalOutcome(finalDataType, r.DataType, r.Success, r.HardFailure != "", r.State, r.Time)
		if final && (hard == nil || o.Beats(won)) {
			hard, won = r, o
		}
	}
	if hard != nil && won.Done {
		id := hard.APIJobID
		if id == "" {
			id = anyID
		}
		line.State, line.ID = oxytype.Done, idPtr(id)
		return line, true
	}
	if hard == nil {
		state := oxytype.Unsubmitted
		if anyID != "" {
			state = oxytype.Unfetched
		}
		line.State, line.ID = state, idPtr(anyID)
		line.Error = &oxytype.ErrorInfo{Message: MsgUnresolved}
		return line, false
	}

	state, id := FailureLine(hard.State, hard.APIJobID, anyID)
	line.State, line.ID = state, idPtr(id)
	if state != oxytype.Faulted {
		if hard.Error != nil {
			e := *hard.Error
			e.Message = redact.String(e.Message)
			line.Error = &e
		} else {
			line.Error = &oxytype.ErrorInfo{Message: redact.String(hard.HardFailure)}
		}
	}
	return line, true
}

// anyMarked reports whether any record's error carries the may-have-billed
// mark.
func anyMarked(recs []Record) bool {
	for _, r := range recs {
		if r.Error != nil && r.Error.MayHaveBilled {
			return true
		}
	}
	return false
}

func pickPayload(recs []Record) json.RawMessage {
	var other json.RawMessage
	for _, r := range recs {
		if len(r.Payload) == 0 {
			continue
		}
		if r.DataType == oxytype.DataPayload {
			return redact.Bytes(r.Payload)
		}
		if other == nil {
			other = r.Payload
		}
	}
	if other == nil {
		return nil
	}
	return redact.Bytes(other)
}

// pickJobID returns the job id of the latest stage that knows one.
func pickJobID(recs []Record, final oxytype.DataType) string {
	best, rank := "", -1
	for _, r := range recs {
		if r.APIJobID == "" {
			continue
		}
		k := r.DataType.Rank()
		if r.DataType == final {
			k = 100
		}
		if k > rank {
			best, rank = r.APIJobID, k
		}
	}
	return best
}

// pickUpload returns the upload entry of the final stage, else of the latest
// stage that has one.
func pickUpload(recs []Record, final oxytype.DataType) *oxytype.Upload {
	var best *oxytype.Upload
	rank := -1
	for _, r := range recs {
		if r.Upload == nil {
			continue
		}
		k := r.DataType.Rank()
		if r.DataType == final {
			k = 100
		}
		if k > rank {
			u := *r.Upload
			best, rank = &u, k
		}
	}
	return best
}

func idPtr(id string) *string {
	if id == "" {
		return nil
	}
	return &id
}
