package runlog

import (
	"time"

	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// DocOutcome is a fact that finishes a doc: its success at the run's final
// data type (the doc is done), or a hard failure at some stage. A doc may
// meet several (a duplicate message's success after a hard failure, hard
// failures at two stages); Beats says which one decides the doc's state.
//
// It is the one rule of a doc's outcome, applied by the run log (Derive,
// over the ledger's records) and by the live progress (over the status
// events as they arrive), so that what a run shows while it runs and what
// its run log says at the end never disagree.
type DocOutcome struct {
	// DataType is the stage of the fact.
	DataType oxytype.DataType
	// Done is true for the success at the final data type.
	Done bool
	// State is a hard failure's state hint (see FailureLine).
	State oxytype.State
	// Time is when the fact was recorded.
	Time time.Time
}

// FinalOutcome returns the outcome a fact about a doc at dataType
// (a success, or a hard failure with its state hint) amounts to, and false
// when the fact does not finish the doc: a success at finalDataType does,
// a hard failure does unless it is at oxytype.DataStatus (a lost report says
// nothing about the doc), a success elsewhere and a soft failure do not.
func FinalOutcome(finalDataType, dataType oxytype.DataType, success, hardFailure bool, state oxytype.State, at time.Time) (DocOutcome, bool) {
	switch {
	case success && dataType == finalDataType:
		return DocOutcome{DataType: dataType, Done: true, Time: at}, true
	case hardFailure && dataType != oxytype.DataStatus && !success:
		return DocOutcome{DataType: dataType, State: state, Time: at}, true
	}
	return DocOutcome{}, false
}

// Beats reports whether o decides the doc's state instead of prev, the
// outcome that decided it so far:
//
//   - a done beats every hard failure, whichever came first: the written
//     file is proof, and nothing beats a done;
//   - between hard failures, the one at the later stage of the pipeline wins
//     (oxytype.DataType.Rank: stages it does not know rank below the
//     pipeline's); at the
//     same stage, the later one (by Time; a rewrite of the same data type
//     replaces what it rewrote).
func (o DocOutcome) Beats(prev DocOutcome) bool {
	switch {
	case prev.Done:
		return false
	case o.Done:
		return true
	}
	ro, rp := o.DataType.Rank(), prev.DataType.Rank()
	if ro != rp {
		return ro > rp
	}
	if o.DataType == prev.DataType {
		return !o.Time.Before(prev.Time)
	}
	return o.Time.After(prev.Time)
}

// FailureLine returns the run-log state and job id of a doc decided by a
// hard failure with the state hint, whose own job id is ownID, in a doc
// whose latest known job id is anyID:
//
//   - faulted and unfetched keep their state, with the failure's job id,
//     else the doc's;
//   - rejected and unsubmitted keep their state and the failure's own job
//     id only (a job id another stage knew does not make a rejection a job);
//   - any other hint (none, or one that is not a failure) is unfetched when
//     a job id is known (its result can be fetched by id), else unsubmitted.
func FailureLine(hint oxytype.State, ownID, anyID string) (oxytype.State, string) {
	switch hint {
	case oxytype.Rejected, oxytype.Unsubmitted:
		return hint, ownID
	}
	id := ownID
	if id == "" {
		id = anyID
	}
	switch hint {
	case oxytype.Faulted, oxytype.Unfetched:
		return hint, id
	}
	if id != "" {
		return oxytype.Unfetched, id
	}
	return oxytype.Unsubmitted, ""
}
