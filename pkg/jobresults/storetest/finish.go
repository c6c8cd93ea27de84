package storetest

import (
	"context"
	"errors"
	"time"

	"github.com/oxypipe/oxypipe/pkg/jobresults"
)

// finishCases check the finish stamp that retention counts from: a store
// never removes the records of a job that was not finished, so a TTL counts
// from the job's end, not from a record's last write.
var finishCases = []testCase{
	{name: "FinishJob stamps every record of the job, and no other job's", run: func(h *harness) {
		h.success(stagePayload, "0", publisher)
		h.hard(stageSubmitted, "1", submitter, poller, "faulted")
		other := jobresults.Key{Run: "job-2026-09-29-other", DataType: stagePayload, DocID: "0"}
		if err := h.store.RecordSuccess(h.ctx, other, publisher); err != nil {
			h.Fatal(err)
		}
		at := h.clock.Advance(time.Hour)
		h.finish(at)
		for _, r := range h.allRecords() {
			equal(h, "finished at of "+r.DocID+"/"+r.DataType, r.FinishedAt, at)
		}
		recs, err := h.store.GetDocStatus(h.ctx, other.Run, "0")
		if err != nil {
			h.Fatal(err)
		}
		equal(h, "the other job's record", recs, []jobresults.Record{{Key: other, Success: true, Origin: publisher, Time: t0}})
	}},
	{name: "a stamp is never moved; a record written after it waits for the next FinishJob", run: func(h *harness) {
		h.success(stagePayload, "0", publisher)
		first := h.clock.Advance(time.Minute)
		h.finish(first)
		h.clock.Advance(time.Minute)
		h.success(stageWritten, "0", writer) // a late event of the finished job
		h.success(stagePayload, "1", publisher)
		equal(h, "late record", h.record(stagePayload, "1").FinishedAt, time.Time{})
		equal(h, "an updated stamped record keeps its stamp", h.record(stagePayload, "0").FinishedAt, first)
		h.finish(h.clock.Advance(time.Minute))
		equal(h, "stamped again", h.record(stagePayload, "1").FinishedAt, h.clock.Now())
		equal(h, "written record stamped again", h.record(stageWritten, "0").FinishedAt, h.clock.Now())
		equal(h, "the first stamp stays", h.record(stagePayload, "0").FinishedAt, first)
	}},
	{name: "FinishJob of a job without records does nothing; bad input is refused", run: func(h *harness) {
		h.finish(t0)
		equal(h, "records", len(h.allRecords()), 0)
		if err := h.store.FinishJob(h.ctx, "", t0); !errors.Is(err, jobresults.ErrInvalidInput) {
			h.Fatalf("FinishJob of an empty job id = %v", err)
		}
		if err := h.store.FinishJob(h.ctx, h.job, time.Time{}); !errors.Is(err, jobresults.ErrInvalidInput) {
			h.Fatalf("FinishJob without a time = %v", err)
		}
		ctx, cancel := context.WithCancel(h.ctx)
		cancel()
		if err := h.store.FinishJob(ctx, h.job, t0); !errors.Is(err, context.Canceled) {
			h.Fatalf("FinishJob with a cancelled context = %v", err)
		}
	}},
}

func (h *harness) finish(at time.Time) {
	h.Helper()
	if err := h.store.FinishJob(h.ctx, h.job, at); err != nil {
		h.Fatalf("FinishJob: %v", err)
	}
}
