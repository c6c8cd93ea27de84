package statusworker

import (
	"context"
	"errors"
	"fmt"

	"github.com/oxypipe/oxypipe/pkg/jobresults"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/runlog"
)

// SequencedEvent is a status event with its place in the status stream:
// the sequence of its message and its index in that message (0 unless the
// message is a batch), which version its ledger write.
type SequencedEvent struct {
	Event *messages.StatusEvent
	Seq   uint64
	Index int
}

// ReplayRunLog returns the run log the statusworker would write for the run
// announced as ann after applying events to its ledger: the same ledger
// entries (one per event, versioned by its place in the stream), applied to a
// memory ledger, and the same derivation of the lines from the records. It
// lets a test compare what a run showed live with what its run log says
// without running a statusworker.
func ReplayRunLog(ctx context.Context, ann messages.RunAnnounced, events []SequencedEvent) ([]runlog.Line, error) {
	store := jobresults.NewMemoryStore()
	for _, e := range events {
		if e.Event.Run != ann.Run {
			continue
		}
		// One at a time, as the statusworker isolates a batch the ledger
		// refuses: an entry refused as invalid becomes a lost report (a
		// hard failure at the status data type), which decides no doc.
		_, err := store.Apply(ctx, []jobresults.Entry{toEntry(e.Event, messages.StatusVersion(e.Seq, e.Index))})
		if err != nil && !errors.Is(err, jobresults.ErrInvalidInput) {
			return nil, fmt.Errorf("replaying the event of doc %q at sequence %d: %w", e.Event.Doc, e.Seq, err)
		}
	}
	rec := messages.RunRecord{Announced: ann}
	spec := runlog.Spec{Total: ann.Total, FinalDataType: finalDataType(rec)}
	var lines []runlog.Line
	_, err := runlog.Walk(ctx, spec, func(ctx context.Context, fn func(runlog.Record) error) error {
		return store.ForEachRecord(ctx, ann.Run, func(r jobresults.Record) error { return fn(logRecord(r)) })
	}, func(l runlog.Line) error {
		lines = append(lines, l)
		return nil
	})
	return lines, err
}
