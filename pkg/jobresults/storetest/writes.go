package storetest

import (
	"time"

	"github.com/oxypipe/oxypipe/pkg/jobresults"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// writeCases check the Store API's write rules, one record per key.
var writeCases = []testCase{
	{name: "setup is idempotent and an unknown job reads as empty", run: func(h *harness) {
		if err := h.store.Setup(h.ctx); err != nil {
			h.Fatalf("second Setup: %v", err)
		}
		equal(h, "stage counts", h.stageCounts(), []jobresults.StageCount{})
		equal(h, "doc status", h.docStatus("1"), []jobresults.Record{})
		equal(h, "failures", h.failures(""), []jobresults.Record{})
		equal(h, "unique errors", h.uniqueErrors(""), []jobresults.UniqueError{})
		equal(h, "records", len(h.allRecords()), 0)
		equal(h, "completed", h.completed(stageWritten), 0)
		equal(h, "hard-failed docs", h.hardFailedDocs(), 0)
		equal(h, "resolved docs", h.resolved(stageWritten), 0)
	}},
	{name: "a success is stored with its origin and the write time", run: func(h *harness) {
		h.success(stageSubmitted, "1", submitter)
		equal(h, "doc status", h.docStatus("1"), []jobresults.Record{{
			Key: h.key(stageSubmitted, "1"), Success: true, Origin: submitter, Time: t0,
		}})
	}},
	{name: "soft failures append their reasons and replace the retry count", run: func(h *harness) {
		h.soft(stageSubmitted, "1", submitter, poller, 1, "429 too many requests")
		t1 := h.clock.Advance(time.Second)
		h.soft(stageSubmitted, "1", submitter, writer, 2, "503 unavailable")
		equal(h, "record", h.record(stageSubmitted, "1"), jobresults.Record{
			Key: h.key(stageSubmitted, "1"), Origin: submitter, Consumer: writer, RetryCount: 2,
			SoftFailures: []string{"429 too many requests", "503 unavailable"}, Time: t1,
		})
	}},
	{name: "a hard failure replaces the soft-failure fields", run: func(h *harness) {
		h.soft(stageDone, "1", poller, writer, 3, "timeout")
		t1 := h.clock.Advance(time.Second)
		h.hard(stageDone, "1", poller, writer, "403 forbidden")
		equal(h, "record", h.record(stageDone, "1"), jobresults.Record{
			Key: h.key(stageDone, "1"), Origin: poller, Consumer: writer, HardFailure: "403 forbidden", Time: t1,
		})
	}},
	{name: "a success clears every failure field", run: func(h *harness) {
		h.soft(stageDone, "1", poller, writer, 1, "timeout")
		h.hard(stageDone, "2", poller, writer, "bucket missing")
		t1 := h.clock.Advance(time.Minute)
		h.success(stageDone, "1", poller)
		h.success(stageDone, "2", publisher)
		equal(h, "doc 1", h.docStatus("1"), []jobresults.Record{{Key: h.key(stageDone, "1"), Success: true, Origin: poller, Time: t1}})
		equal(h, "doc 2", h.docStatus("2"), []jobresults.Record{{Key: h.key(stageDone, "2"), Success: true, Origin: publisher, Time: t1}})
	}},
	{name: "a soft failure after a hard failure clears it and starts a new reason list", run: func(h *harness) {
		h.soft(stageDone, "1", poller, writer, 1, "first")
		h.hard(stageDone, "1", poller, writer, "fatal")
		h.soft(stageDone, "1", poller, writer, 0, "again")
		equal(h, "record", h.record(stageDone, "1"), jobresults.Record{
			Key: h.key(stageDone, "1"), Origin: poller, Consumer: writer, SoftFailures: []string{"again"}, Time: t0,
		})
	}},
	{name: "a soft failure after a success starts a new reason list", run: func(h *harness) {
		h.soft(stageDone, "1", poller, writer, 1, "old")
		h.success(stageDone, "1", poller)
		h.soft(stageDone, "1", poller, writer, 1, "new")
		equal(h, "soft failures", h.record(stageDone, "1").SoftFailures, []string{"new"})
	}},
	{name: "a soft failure with an empty reason is still a soft failure", run: func(h *harness) {
		h.soft(stageDone, "1", poller, writer, 0, "")
		r := h.record(stageDone, "1")
		equal(h, "soft failures", r.SoftFailures, []string{""})
		equal(h, "outcome", r.Outcome(), oxytype.SoftFailure)
		equal(h, "stage counts", h.stageCounts(), []jobresults.StageCount{{DataType: stageDone, Total: 1, SoftFailed: 1}})
		equal(h, "unique errors", h.uniqueErrors(""), []jobresults.UniqueError{{Error: "", DataType: stageDone, Count: 1, FirstSeen: t0, LastSeen: t0}})
	}},
	{name: "doc status lists the document at every stage, ordered by data type", run: func(h *harness) {
		for _, doc := range []string{"7", "doc-x"} {
			h.success(stageWritten, doc, writer)
			h.success(stagePayload, doc, publisher)
			h.soft(stageSubmitted, doc, submitter, poller, 1, "slow")
		}
		h.success(stagePayload, "8", publisher)
		for _, doc := range []string{"7", "doc-x"} {
			equal(h, "doc "+doc, h.docStatus(doc), []jobresults.Record{
				{Key: h.key(stagePayload, doc), Success: true, Origin: publisher, Time: t0},
				{Key: h.key(stageSubmitted, doc), Origin: submitter, Consumer: poller, RetryCount: 1, SoftFailures: []string{"slow"}, Time: t0},
				{Key: h.key(stageWritten, doc), Success: true, Origin: writer, Time: t0},
			})
		}
	}},
	{name: "records of different jobs are independent", run: func(h *harness) {
		other := *h
		other.job = "job-2026-09-29-ffffffff"
		h.success(stageWritten, "1", writer)
		other.hard(stageWritten, "1", writer, writer, "boom")
		equal(h, "completed", h.completed(stageWritten), 1)
		equal(h, "hard failed", h.hardFailedDocs(), 0)
		equal(h, "other completed", other.completed(stageWritten), 0)
		equal(h, "other hard failed", other.hardFailedDocs(), 1)
		equal(h, "failures", len(h.failures("")), 0)
		equal(h, "other failures", len(other.failures("")), 1)
	}},
}
