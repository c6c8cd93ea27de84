package storetest

import (
	"encoding/json"
	"time"

	"github.com/oxypipe/oxypipe/pkg/jobresults"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

func (h *harness) entry(dataType, doc string, outcome oxytype.Outcome, version uint64) jobresults.Entry {
	en := jobresults.Entry{Key: h.key(dataType, doc), Outcome: outcome, Version: version, Origin: poller}
	if outcome != oxytype.Success {
		en.Consumer = writer
	}
	return en
}

func withReason(en jobresults.Entry, retry int, reason string) jobresults.Entry {
	en.RetryCount, en.Reason = retry, reason
	return en
}

func intPtr(n int) *int { return &n }

// applyCases check versioned batch writes (BatchWriter).
var applyCases = []testCase{
	{name: "an empty batch applies nothing", run: func(h *harness) {
		h.apply(0)
		equal(h, "stage counts", h.stageCounts(), []jobresults.StageCount{})
	}},
	{name: "an older entry never overwrites a newer one", run: func(h *harness) {
		h.apply(1, h.entry(stageDone, "1", oxytype.Success, 12))
		h.apply(0, withReason(h.entry(stageDone, "1", oxytype.SoftFailure, 10), 1, "pending"))
		h.apply(0, withReason(h.entry(stageDone, "1", oxytype.HardFailure, 11), 0, "faulted"))
		equal(h, "record", h.record(stageDone, "1"), jobresults.Record{
			Key: h.key(stageDone, "1"), Success: true, Origin: poller, Time: t0, Version: 12,
		})
		equal(h, "stage counts", h.stageCounts(), []jobresults.StageCount{{DataType: stageDone, Total: 1, Succeeded: 1}})
	}},
	{name: "a duplicated entry does not append its reason twice", run: func(h *harness) {
		soft := withReason(h.entry(stageDone, "1", oxytype.SoftFailure, 5), 1, "pending")
		h.apply(1, soft)
		h.apply(0, soft)
		h.apply(0, soft, soft)
		r := h.record(stageDone, "1")
		equal(h, "soft failures", r.SoftFailures, []string{"pending"})
		equal(h, "version", r.Version, uint64(5))
	}},
	{name: "a batch applies its entries in order and skips the stale ones", run: func(h *harness) {
		h.apply(4,
			withReason(h.entry(stageDone, "1", oxytype.SoftFailure, 1), 1, "a"),
			withReason(h.entry(stageDone, "1", oxytype.SoftFailure, 2), 2, "b"),
			withReason(h.entry(stageDone, "1", oxytype.SoftFailure, 2), 2, "b"), // duplicate
			h.entry(stageDone, "1", oxytype.Success, 1),                         // older
			h.entry(stageWritten, "2", oxytype.Success, 7),
			h.entry(stageWritten, "2", oxytype.Success, 3), // older, record created in this batch
			withReason(h.entry(stageWritten, "2", oxytype.HardFailure, 8), 0, "denied"),
		)
		equal(h, "doc 1", h.record(stageDone, "1"), jobresults.Record{
			Key: h.key(stageDone, "1"), Origin: poller, Consumer: writer, RetryCount: 2,
			SoftFailures: []string{"a", "b"}, Time: t0, Version: 2,
		})
		equal(h, "doc 2", h.record(stageWritten, "2"), jobresults.Record{
			Key: h.key(stageWritten, "2"), Origin: poller, Consumer: writer, HardFailure: "denied", Time: t0, Version: 8,
		})
	}},
	{name: "a stale first write of a record in a batch is skipped", run: func(h *harness) {
		// The record does not exist when the batch starts; its second entry
		// is older than the first (the duplicate-key path of an upsert).
		h.apply(1,
			h.entry(stageDone, "1", oxytype.Success, 30),
			withReason(h.entry(stageDone, "1", oxytype.SoftFailure, 20), 1, "late"),
		)
		equal(h, "outcome", h.record(stageDone, "1").Outcome(), oxytype.Success)
	}},
	{name: "a batch may span jobs", run: func(h *harness) {
		other := *h
		other.job = "job-2026-09-29-ffffffff"
		h.apply(3,
			h.entry(stageDone, "1", oxytype.Success, 1),
			other.entry(stageDone, "1", oxytype.Success, 1),
			h.entry(stageDone, "2", oxytype.Success, 1),
		)
		equal(h, "completed", h.completed(stageDone), 2)
		equal(h, "other completed", other.completed(stageDone), 1)
	}},
	{name: "unversioned writes always apply and keep the stored version", run: func(h *harness) {
		h.apply(1, h.entry(stageDone, "1", oxytype.Success, 5))
		h.soft(stageDone, "1", poller, writer, 1, "seed write") // a Store method, so version 0
		h.apply(1, withReason(h.entry(stageDone, "1", oxytype.SoftFailure, 0), 2, "unversioned"))
		r := h.record(stageDone, "1")
		equal(h, "soft failures", r.SoftFailures, []string{"seed write", "unversioned"})
		equal(h, "version", r.Version, uint64(5))
		h.apply(0, h.entry(stageDone, "1", oxytype.Success, 5))
		h.apply(1, h.entry(stageDone, "1", oxytype.Success, 6))
		equal(h, "version after a newer write", h.record(stageDone, "1").Version, uint64(6))
	}},
	{name: "entries carry the event time; without one the store's clock is used", run: func(h *harness) {
		event := time.Date(2026, 9, 29, 19, 0, 0, 123_456_789, time.FixedZone("CEST", 2*3600))
		en := h.entry(stageDone, "1", oxytype.Success, 1)
		en.Time = event
		h.apply(2, en, h.entry(stageDone, "2", oxytype.Success, 1))
		equal(h, "event time, UTC, millisecond precision", h.record(stageDone, "1").Time,
			time.Date(2026, 9, 29, 17, 0, 0, 123_000_000, time.UTC))
		equal(h, "clock time", h.record(stageDone, "2").Time, t0)
	}},
	{name: "run-log fields are stored; outcome fields are replaced, document fields kept", run: func(h *harness) {
		payload := json.RawMessage(`{"source":"universal","url":"https://example.com/?q=1"}`)
		h.apply(1, jobresults.Entry{
			Key: h.key(stageSubmitted, "1"), Outcome: oxytype.Success, Origin: submitter, Version: 1,
			Facts: oxytype.Facts{APIJobID: "7339524535381539841", Payload: payload},
		})
		h.apply(1, jobresults.Entry{
			Key: h.key(stageWritten, "1"), Outcome: oxytype.HardFailure, Origin: writer, Consumer: writer, Version: 9,
			Reason: "403 Forbidden", Facts: oxytype.Facts{State: oxytype.Unfetched, APIJobID: "7339524535381539841", Error: &oxytype.ErrorInfo{StatusCode: intPtr(403), Message: "Forbidden", TraceID: "trace-1"}, Upload: &oxytype.Upload{Code: 13001, Message: "upload failed"}},
		})
		equal(h, "submitted record", h.record(stageSubmitted, "1"), jobresults.Record{
			Key: h.key(stageSubmitted, "1"), Success: true, Origin: submitter, Time: t0, Version: 1,
			Facts: oxytype.Facts{APIJobID: "7339524535381539841", Payload: payload},
		})
		failed := jobresults.Record{
			Key: h.key(stageWritten, "1"), Origin: writer, Consumer: writer, HardFailure: "403 Forbidden", Time: t0, Version: 9,
			Facts: oxytype.Facts{State: oxytype.Unfetched, APIJobID: "7339524535381539841", Error: &oxytype.ErrorInfo{StatusCode: intPtr(403), Message: "Forbidden", TraceID: "trace-1"}, Upload: &oxytype.Upload{Code: 13001, Message: "upload failed"}},
		}
		equal(h, "written record", h.record(stageWritten, "1"), failed)

		// A failure without an HTTP status stores a null status code.
		h.apply(1, jobresults.Entry{
			Key: h.key(stageWritten, "1"), Outcome: oxytype.SoftFailure, Origin: writer, Consumer: writer, Version: 10,
			Reason: "connection reset", Facts: oxytype.Facts{State: oxytype.Unfetched, Error: &oxytype.ErrorInfo{Message: "connection reset"}},
		})
		failed.HardFailure, failed.SoftFailures, failed.Version = "", []string{"connection reset"}, 10
		failed.Error = &oxytype.ErrorInfo{Message: "connection reset"}
		equal(h, "after a soft failure", h.record(stageWritten, "1"), failed)

		// The retry succeeds: the outcome fields go, the document fields stay.
		h.apply(1, jobresults.Entry{Key: h.key(stageWritten, "1"), Outcome: oxytype.Success, Origin: writer, Version: 11, Facts: oxytype.Facts{State: oxytype.Done}})
		equal(h, "after the success", h.record(stageWritten, "1"), jobresults.Record{
			Key: h.key(stageWritten, "1"), Success: true, Origin: writer, Time: t0, Version: 11, Facts: oxytype.Facts{State: oxytype.Done, APIJobID: "7339524535381539841", Upload: &oxytype.Upload{Code: 13001, Message: "upload failed"}},
		})

		// A write through a Store method ("seed write" below) is an entry
		// without run-log fields: it clears the outcome fields too.
		h.hard(stageWritten, "1", writer, writer, "gone")
		r := h.record(stageWritten, "1")
		equal(h, "state after a seed write", r.State, oxytype.State(""))
		equal(h, "api job id after a seed write", r.APIJobID, "7339524535381539841")
	}},
	{name: "the may-have-billed mark is stored with its error, and replaced with it", run: func(h *harness) {
		marked := &oxytype.ErrorInfo{StatusCode: intPtr(500), Message: "Internal Server Error", TraceID: "t-5", MayHaveBilled: true}
		h.apply(1, jobresults.Entry{
			Key: h.key(stagePayload, "1"), Outcome: oxytype.HardFailure, Origin: submitter, Consumer: submitter, Version: 3,
			Reason: "500 Internal Server Error", Facts: oxytype.Facts{State: oxytype.Unsubmitted, Error: marked},
		})
		equal(h, "marked error", h.record(stagePayload, "1").Error, marked)
		// The submitter carries the mark into every later outcome of the
		// doc; an outcome without it replaces it, like any error.
		h.apply(1, jobresults.Entry{
			Key: h.key(stagePayload, "1"), Outcome: oxytype.HardFailure, Origin: submitter, Consumer: submitter, Version: 4,
			Reason: "429", Facts: oxytype.Facts{State: oxytype.Unsubmitted, Error: &oxytype.ErrorInfo{StatusCode: intPtr(429), Message: "Too many requests."}},
		})
		equal(h, "later error", h.record(stagePayload, "1").Error, &oxytype.ErrorInfo{StatusCode: intPtr(429), Message: "Too many requests."})
	}},
	{name: "credentials in payloads, reasons and error messages are redacted", run: func(h *harness) {
		h.apply(1, jobresults.Entry{
			Key: h.key(stageWritten, "1"), Outcome: oxytype.HardFailure, Origin: writer, Consumer: writer,
			Reason: "PUT https://AKIA:secret@bucket.example/x failed",
			Facts:  oxytype.Facts{Payload: json.RawMessage(`{"storage_url":"s3://KEY:SECRET@bucket/path"}`), Error: &oxytype.ErrorInfo{Message: "dial https://u:p@host failed"}},
		})
		h.soft(stageDone, "1", poller, writer, 1, "GET https://user:pw@api.example/v1 timed out")
		r := h.record(stageWritten, "1")
		equal(h, "hard failure", r.HardFailure, "PUT https://redacted:redacted@bucket.example/x failed")
		equal(h, "payload", string(r.Payload), `{"storage_url":"s3://redacted:redacted@bucket/path"}`)
		equal(h, "error message", r.Error.Message, "dial https://redacted:redacted@host failed")
		equal(h, "soft failures", h.record(stageDone, "1").SoftFailures, []string{"GET https://redacted:redacted@api.example/v1 timed out"})
	}},
	{name: "records returned are copies", run: func(h *harness) {
		h.apply(1, jobresults.Entry{
			Key: h.key(stageDone, "1"), Outcome: oxytype.SoftFailure, Origin: poller, Consumer: writer, Reason: "a",
			Facts: oxytype.Facts{Payload: json.RawMessage(`{"a":1}`), Error: &oxytype.ErrorInfo{StatusCode: intPtr(500), Message: "m"}},
		})
		r := h.record(stageDone, "1")
		r.SoftFailures[0] = "mutated"
		r.Payload[1] = 'X'
		*r.Error.StatusCode = 1
		again := h.record(stageDone, "1")
		equal(h, "soft failures", again.SoftFailures, []string{"a"})
		equal(h, "payload", string(again.Payload), `{"a":1}`)
		equal(h, "status code", *again.Error.StatusCode, 500)
	}},
}
