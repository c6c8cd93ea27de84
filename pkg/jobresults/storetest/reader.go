package storetest

import (
	"context"
	"errors"

	"github.com/oxypipe/oxypipe/pkg/jobresults"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// readerCases check ForEachRecord and the behaviour under a cancelled
// context.
var readerCases = []testCase{
	{name: "records stream in document order: numeric ids by value, then stages by data type", run: func(h *harness) {
		for _, doc := range []string{"10", "2", "b", "1", "007", "a"} {
			h.success(stageWritten, doc, writer)
			h.success(stageSubmitted, doc, submitter)
		}
		h.hard(stageDone, "2", poller, writer, "faulted")
		var got []jobresults.Key
		for _, r := range h.allRecords() {
			got = append(got, r.Key)
		}
		equal(h, "order", got, []jobresults.Key{
			h.key(stageSubmitted, "a"), h.key(stageWritten, "a"),
			h.key(stageSubmitted, "b"), h.key(stageWritten, "b"),
			h.key(stageSubmitted, "1"), h.key(stageWritten, "1"),
			h.key(stageDone, "2"), h.key(stageSubmitted, "2"), h.key(stageWritten, "2"),
			h.key(stageSubmitted, "007"), h.key(stageWritten, "007"),
			h.key(stageSubmitted, "10"), h.key(stageWritten, "10"),
		})
		equal(h, "a streamed record", h.allRecords()[6], jobresults.Record{
			Key: h.key(stageDone, "2"), Origin: poller, Consumer: writer, HardFailure: "faulted", Time: t0,
		})
	}},
	{name: "an error from the callback stops the stream and is returned as is", run: func(h *harness) {
		for _, doc := range []string{"1", "2", "3"} {
			h.success(stageDone, doc, poller)
		}
		errStop := errors.New("stop here")
		calls := 0
		err := h.store.ForEachRecord(h.ctx, h.job, func(jobresults.Record) error {
			calls++
			if calls == 2 {
				return errStop
			}
			return nil
		})
		if err != errStop { //nolint:errorlint // the very same error value must come back
			h.Fatalf("ForEachRecord = %v, want the callback's error itself", err)
		}
		equal(h, "calls", calls, 2)
	}},
	{name: "the callback may use the store", run: func(h *harness) {
		h.success(stageDone, "1", poller)
		h.success(stageDone, "2", poller)
		var seen []int
		err := h.store.ForEachRecord(h.ctx, h.job, func(r jobresults.Record) error {
			recs, err := h.store.GetDocStatus(h.ctx, h.job, r.DocID)
			seen = append(seen, len(recs))
			if err != nil {
				return err
			}
			return h.store.RecordSuccess(h.ctx, h.key(stageWritten, r.DocID), writer)
		})
		if err != nil {
			h.Fatalf("ForEachRecord: %v", err)
		}
		equal(h, "records seen per document", seen, []int{1, 1})
		equal(h, "written by the callback", h.completed(stageWritten), 2)
	}},
	{name: "a cancelled context fails reads and writes", run: func(h *harness) {
		h.success(stageDone, "1", poller)
		ctx, cancel := context.WithCancel(h.ctx)
		cancel()
		check := func(what string, err error) {
			h.Helper()
			if !errors.Is(err, context.Canceled) {
				h.Errorf("%s with a cancelled context = %v, want context.Canceled", what, err)
			}
		}
		check("RecordSuccess", h.store.RecordSuccess(ctx, h.key(stageDone, "2"), poller))
		_, err := h.store.Apply(ctx, []jobresults.Entry{h.entry(stageDone, "3", oxytype.Success, 1)})
		check("Apply", err)
		_, err = h.store.GetStageCounts(ctx, h.job)
		check("GetStageCounts", err)
		_, err = h.store.CountCompletedDocs(ctx, h.job, stageDone)
		check("CountCompletedDocs", err)
		check("ForEachRecord", h.store.ForEachRecord(ctx, h.job, func(jobresults.Record) error { return nil }))
		equal(h, "completed", h.completed(stageDone), 1)
	}},
}
