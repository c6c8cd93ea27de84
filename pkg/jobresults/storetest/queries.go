package storetest

import (
	"time"

	"github.com/oxypipe/oxypipe/pkg/jobresults"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// queryCases check the progress and failure queries.
var queryCases = []testCase{
	{name: "stage counts count soft failures (a $type test of the array counts none)", run: func(h *harness) {
		for _, doc := range []string{"1", "2", "3", "4", "5"} {
			h.success(stagePayload, doc, publisher)
		}
		h.success(stageSubmitted, "1", submitter)
		h.soft(stageSubmitted, "2", submitter, poller, 1, "429")
		h.soft(stageSubmitted, "3", submitter, poller, 2, "429")
		h.soft(stageSubmitted, "3", submitter, poller, 3, "503")
		h.hard(stageSubmitted, "4", submitter, poller, "400 bad request")
		h.soft(stageSubmitted, "5", submitter, poller, 1, "429")
		h.success(stageSubmitted, "5", submitter) // recovered: no longer soft-failed
		h.soft(stageDone, "1", poller, writer, 1, "pending")
		equal(h, "stage counts", h.stageCounts(), []jobresults.StageCount{
			{DataType: stageDone, Total: 1, SoftFailed: 1},
			{DataType: stagePayload, Total: 5, Succeeded: 5},
			{DataType: stageSubmitted, Total: 5, Succeeded: 2, SoftFailed: 2, HardFailed: 1},
		})
	}},
	{name: "completed docs count successes at the final stage only", run: func(h *harness) {
		h.success(stageWritten, "1", writer)
		h.success(stageWritten, "2", writer)
		h.soft(stageWritten, "3", writer, writer, 1, "slow bucket")
		h.hard(stageWritten, "4", writer, writer, "denied")
		h.success(stageDone, "5", poller)
		h.success(stageWritten, "2", writer) // the same success twice is one document
		equal(h, "completed", h.completed(stageWritten), 2)
		equal(h, "completed at done", h.completed(stageDone), 1)
		equal(h, "completed at an unknown stage", h.completed("nothing"), 0)
	}},
	{name: "hard-failed docs are distinct documents", run: func(h *harness) {
		h.hard(stageSubmitted, "1", submitter, poller, "a")
		h.hard(stageDone, "1", poller, writer, "b") // same document, second stage
		h.hard(stageDone, "2", poller, writer, "c")
		h.hard(stageDone, "3", poller, writer, "d")
		equal(h, "hard failed", h.hardFailedDocs(), 3)
		h.success(stageDone, "3", poller) // retried and recovered
		equal(h, "after doc 3 recovered", h.hardFailedDocs(), 2)
		h.success(stageDone, "1", poller) // still hard-failed at submitted
		equal(h, "after doc 1 recovered at one stage", h.hardFailedDocs(), 2)
		h.soft(stageSubmitted, "1", submitter, poller, 1, "retrying")
		equal(h, "after doc 1 recovered everywhere", h.hardFailedDocs(), 1)
	}},
	{name: "resolved docs count a document that hard-failed and completed once", run: func(h *harness) {
		// Adding the completed and the hard-failed counts would count such
		// a document twice, and complete a run with a document still open.
		h.hard(stageSubmitted, "1", submitter, poller, "unknown outcome")
		h.success(stageWritten, "1", writer)
		h.success(stageWritten, "2", writer)
		h.hard(stageDone, "3", poller, writer, "faulted")
		h.soft(stageWritten, "4", writer, writer, 1, "slow")
		h.success(stageSubmitted, "5", submitter)
		equal(h, "completed", h.completed(stageWritten), 2)
		equal(h, "hard failed", h.hardFailedDocs(), 2)
		equal(h, "resolved", h.resolved(stageWritten), 3)
		h.success(stageSubmitted, "1", submitter) // doc 1 is now only completed
		equal(h, "resolved after doc 1 recovered", h.resolved(stageWritten), 3)
		h.hard(stageWritten, "2", writer, writer, "lost") // doc 2 is now only hard-failed
		equal(h, "resolved after doc 2 failed", h.resolved(stageWritten), 3)
		h.hard(stageDone, "4", poller, writer, "faulted")
		equal(h, "resolved after doc 4 failed", h.resolved(stageWritten), 4)
		equal(h, "resolved at another final stage", h.resolved(stageSubmitted), 5)
	}},
	{name: "failures are listed in document order and filtered by stage", run: func(h *harness) {
		h.soft(stageDone, "10", poller, writer, 1, "pending")
		h.hard(stageSubmitted, "10", submitter, poller, "rejected")
		h.hard(stageSubmitted, "2", submitter, poller, "rejected")
		h.soft(stageDone, "abc", poller, writer, 1, "pending")
		h.success(stageDone, "3", poller)
		h.success(stageSubmitted, "3", submitter)
		all := h.failures("")
		var keys []jobresults.Key
		for _, r := range all {
			keys = append(keys, r.Key)
		}
		equal(h, "failure keys", keys, []jobresults.Key{
			h.key(stageDone, "abc"), h.key(stageSubmitted, "2"), h.key(stageDone, "10"), h.key(stageSubmitted, "10"),
		})
		equal(h, "a failure record", all[0], jobresults.Record{
			Key: h.key(stageDone, "abc"), Origin: poller, Consumer: writer, RetryCount: 1, SoftFailures: []string{"pending"}, Time: t0,
		})
		equal(h, "failures at submitted", h.failures(stageSubmitted), []jobresults.Record{
			{Key: h.key(stageSubmitted, "2"), Origin: submitter, Consumer: poller, HardFailure: "rejected", Time: t0},
			{Key: h.key(stageSubmitted, "10"), Origin: submitter, Consumer: poller, HardFailure: "rejected", Time: t0},
		})
		equal(h, "failures at a stage without any", h.failures(stagePayload), []jobresults.Record{})
	}},
	{name: "unique errors group failed records by current error and stage, most frequent first", run: func(h *harness) {
		h.soft(stageDone, "1", poller, writer, 1, "timeout") // superseded below: not counted
		t2 := h.clock.Advance(time.Second)
		h.soft(stageDone, "1", poller, writer, 2, "503")
		t3 := h.clock.Advance(time.Second)
		h.soft(stageDone, "2", poller, writer, 1, "503")
		h.hard(stageDone, "3", poller, writer, "bad payload")
		t4 := h.clock.Advance(time.Second)
		h.soft(stageDone, "4", poller, writer, 1, "timeout")
		h.soft(stageSubmitted, "1", submitter, poller, 1, "503")
		h.success(stageSubmitted, "2", submitter)
		h.clock.Advance(time.Second)
		h.soft(stageDone, "5", poller, writer, 1, "503")
		h.success(stageDone, "5", poller) // recovered: no longer an error
		equal(h, "unique errors", h.uniqueErrors(""), []jobresults.UniqueError{
			{Error: "503", DataType: stageDone, Count: 2, FirstSeen: t2, LastSeen: t3},
			// Ties: by error, then by data type.
			{Error: "503", DataType: stageSubmitted, Count: 1, FirstSeen: t4, LastSeen: t4},
			{Error: "bad payload", DataType: stageDone, Count: 1, FirstSeen: t3, LastSeen: t3},
			{Error: "timeout", DataType: stageDone, Count: 1, FirstSeen: t4, LastSeen: t4},
		})
		equal(h, "unique errors at submitted", h.uniqueErrors(stageSubmitted), []jobresults.UniqueError{
			{Error: "503", DataType: stageSubmitted, Count: 1, FirstSeen: t4, LastSeen: t4},
		})
		equal(h, "unique errors at a stage without failures", h.uniqueErrors(stageWritten), []jobresults.UniqueError{})
	}},
	{name: "a hard failure is the current error even after earlier soft failures", run: func(h *harness) {
		h.soft(stageDone, "1", poller, writer, 1, "timeout")
		h.hard(stageDone, "1", poller, writer, "poison message: delivered 5 times")
		equal(h, "unique errors", h.uniqueErrors(""), []jobresults.UniqueError{
			{Error: "poison message: delivered 5 times", DataType: stageDone, Count: 1, FirstSeen: t0, LastSeen: t0},
		})
		r := h.record(stageDone, "1")
		equal(h, "current error", r.CurrentError(), "poison message: delivered 5 times")
		equal(h, "outcome", r.Outcome(), oxytype.HardFailure)
	}},
}
