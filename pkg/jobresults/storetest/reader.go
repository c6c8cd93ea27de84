package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

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

// runLogFactCase writes every fact a run log is derived from, for complete
// documents (successes at every stage, which a store may keep compactly) and
// a failed one, and reads each back exactly: by GetDocStatus and by
// ForEachRecord, before and after FinishJob.
var runLogFactCase = testCase{name: "every run-log fact of a complete document reads back exactly", run: func(h *harness) {
	// A payload with spacing and escapes: stored bytes are kept as given.
	pl := func(doc string) json.RawMessage {
		return json.RawMessage(`{"source": "universal",  "url":"https://shop.example/p?id=` + doc + `&x=<1>", "n": 1.50}`)
	}
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	odd := oxytype.Party{Type: "submitter", Name: "submitter-7 \u00e9"}
	var want []jobresults.Record
	for i, doc := range []string{"x-named", "3", "12"} {
		id := fmt.Sprintf("75000000000000000%02d", i)
		v := uint64(10 * (i + 1))
		upload := func() *oxytype.Upload {
			return &oxytype.Upload{Code: 13000, Message: "uploaded to s3://bucket/" + id + ".json"}
		}
		entries := []jobresults.Entry{
			{Key: h.key(stagePayload, doc), Outcome: oxytype.Success, Origin: publisher, Version: v + 1, Time: at(1),
				Facts: oxytype.Facts{Payload: pl(doc)}},
			{Key: h.key(stageSubmitted, doc), Outcome: oxytype.Success, Origin: odd, Version: v + 2, Time: at(2),
				Facts: oxytype.Facts{APIJobID: id, Payload: pl(doc)}},
			{Key: h.key(stageDone, doc), Outcome: oxytype.Success, Origin: poller, Version: v + 3, Time: at(3),
				Facts: oxytype.Facts{APIJobID: id}},
			{Key: h.key(stageWritten, doc), Outcome: oxytype.Success, Origin: writer, Version: v + 4, Time: at(4),
				Facts: oxytype.Facts{APIJobID: id, State: oxytype.Done, Upload: upload()}},
		}
		h.apply(len(entries), entries...)
		want = append(want,
			jobresults.Record{Key: h.key(stageDone, doc), Success: true, Origin: poller, Time: at(3), Version: v + 3,
				Facts: oxytype.Facts{APIJobID: id}},
			jobresults.Record{Key: h.key(stagePayload, doc), Success: true, Origin: publisher, Time: at(1), Version: v + 1,
				Facts: oxytype.Facts{Payload: pl(doc)}},
			jobresults.Record{Key: h.key(stageSubmitted, doc), Success: true, Origin: odd, Time: at(2), Version: v + 2,
				Facts: oxytype.Facts{APIJobID: id, Payload: pl(doc)}},
			jobresults.Record{Key: h.key(stageWritten, doc), Success: true, Origin: writer, Time: at(4), Version: v + 4,
				Facts: oxytype.Facts{APIJobID: id, State: oxytype.Done, Upload: upload()}},
		)
	}
	failedFacts := func() oxytype.Facts {
		return oxytype.Facts{State: oxytype.Unsubmitted, Payload: pl("5"),
			Error: &oxytype.ErrorInfo{StatusCode: intPtr(500), Message: "Internal Server Error", TraceID: "trace-5", MayHaveBilled: true}}
	}
	failed := jobresults.Entry{Key: h.key(stageSubmitted, "5"), Outcome: oxytype.HardFailure, Origin: publisher, Consumer: submitter,
		Version: 99, Time: at(5), Reason: "500 Internal Server Error", Facts: failedFacts()}
	h.apply(1, failed)
	failedRec := jobresults.Record{Key: failed.Key, Origin: publisher, Consumer: submitter, HardFailure: failed.Reason, Time: at(5),
		Version: 99, Facts: failedFacts()}
	// Document order: the named id, then 3, 5, 12.
	ordered := slices.Concat(want[:8], []jobresults.Record{failedRec}, want[8:])
	check := func(when string) {
		h.Helper()
		equal(h, "ForEachRecord "+when, h.allRecords(), ordered)
		for _, doc := range []string{"x-named", "3", "12", "5"} {
			var docWant []jobresults.Record
			for _, r := range ordered {
				if r.DocID == doc {
					docWant = append(docWant, r)
				}
			}
			equal(h, "GetDocStatus("+doc+") "+when, h.docStatus(doc), docWant)
		}
		equal(h, "counts "+when, []int{h.completed(stageWritten), h.hardFailedDocs(), h.resolved(stageWritten)}, []int{3, 1, 4})
	}
	check("while the job is open")
	end := at(60)
	h.finish(end)
	for i := range ordered {
		ordered[i].FinishedAt = end
	}
	check("after FinishJob")
	// A late duplicate is refused by its version, and a newer write to a
	// complete document applies on top of everything it holds.
	h.apply(0, jobresults.Entry{Key: h.key(stageDone, "3"), Outcome: oxytype.Success, Origin: poller, Version: 1, Time: at(70)})
	h.apply(1, jobresults.Entry{Key: h.key(stageDone, "3"), Outcome: oxytype.Success, Origin: poller, Version: 1000, Time: at(70),
		Facts: oxytype.Facts{APIJobID: "7500000000000000001"}})
	ordered[4].Version, ordered[4].Time = 1000, at(70)
	check("after a newer write")
}}
