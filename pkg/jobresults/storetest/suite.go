package storetest

import (
	"context"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/pkg/jobresults"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// Options configure a ledger built for one test.
type Options struct {
	// Scoping turns scoping on (jobresults.WithScoping, MongoConfig.Scoping).
	Scoping bool
	// Now is the clock the store must use for writes without an event time.
	Now func() time.Time
}

// NewLedger returns a fresh, empty ledger configured by opts. The suite
// calls Setup itself. It is called once per test, possibly in parallel.
type NewLedger func(t *testing.T, opts Options) jobresults.Ledger

// testCase is one test of the suite.
type testCase struct {
	name    string
	scoping bool
	run     func(h *harness)
}

// Run runs the whole conformance suite against the ledgers newLedger makes.
// Each test gets its own ledger and runs in parallel with the others.
func Run(t *testing.T, newLedger NewLedger) {
	t.Helper()
	var cases []testCase
	cases = append(cases, writeCases...)
	cases = append(cases, queryCases...)
	cases = append(cases, applyCases...)
	cases = append(cases, readerCases...)
	cases = append(cases, runLogFactCase)
	cases = append(cases, inputCases...)
	cases = append(cases, scopeCases...)
	cases = append(cases, concurrencyCases...)
	cases = append(cases, modelCases...)
	cases = append(cases, finishCases...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clock := newClock()
			store := newLedger(t, Options{Scoping: tc.scoping, Now: clock.Now})
			ctx := context.Background()
			if err := store.Setup(ctx); err != nil {
				t.Fatalf("Setup: %v", err)
			}
			tc.run(&harness{T: t, ctx: ctx, store: store, clock: clock, job: "job-2026-09-29-0a1b2c3d"})
		})
	}
}

// Parties used by the tests.
var (
	publisher = oxytype.Party{Type: "publisher", Name: "feeder"}
	submitter = oxytype.Party{Type: "submitter", Name: "submitter-0"}
	poller    = oxytype.Party{Type: "poller", Name: "poller-1"}
	writer    = oxytype.Party{Type: "writer", Name: "writer-2"}
)

// Stages used by the tests, in data-type order.
const (
	stageDone      = "done"
	stagePayload   = "payload"
	stageSubmitted = "submitted"
	stageWritten   = "written"
)

// t0 is the clock's start: a millisecond-precision UTC time, as stored.
var t0 = time.Date(2026, 9, 29, 17, 4, 12, 345_000_000, time.UTC)

// clock is a settable clock, safe for concurrent use.
type clock struct{ ms atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ms.Store(t0.UnixMilli())
	return c
}

// Now returns the clock's time.
func (c *clock) Now() time.Time { return time.UnixMilli(c.ms.Load()).UTC() }

// Advance moves the clock forward by d and returns the new time.
func (c *clock) Advance(d time.Duration) time.Time {
	return time.UnixMilli(c.ms.Add(d.Milliseconds())).UTC()
}

// harness holds one test's ledger and helpers that fail the test on error.
type harness struct {
	*testing.T
	ctx   context.Context
	store jobresults.Ledger
	clock *clock
	job   string
}

func (h *harness) key(dataType, doc string) jobresults.Key {
	return jobresults.Key{Run: h.job, DataType: dataType, DocID: doc}
}

func (h *harness) success(dataType, doc string, origin oxytype.Party) {
	h.Helper()
	if err := h.store.RecordSuccess(h.ctx, h.key(dataType, doc), origin); err != nil {
		h.Fatalf("RecordSuccess(%s, %s): %v", dataType, doc, err)
	}
}

func (h *harness) soft(dataType, doc string, origin, consumer oxytype.Party, retry int, reason string) {
	h.Helper()
	if err := h.store.RecordSoftFailure(h.ctx, h.key(dataType, doc), origin, consumer, retry, reason); err != nil {
		h.Fatalf("RecordSoftFailure(%s, %s): %v", dataType, doc, err)
	}
}

func (h *harness) hard(dataType, doc string, origin, consumer oxytype.Party, msg string) {
	h.Helper()
	if err := h.store.RecordHardFailure(h.ctx, h.key(dataType, doc), origin, consumer, msg); err != nil {
		h.Fatalf("RecordHardFailure(%s, %s): %v", dataType, doc, err)
	}
}

func (h *harness) apply(want int, entries ...jobresults.Entry) {
	h.Helper()
	got, err := h.store.Apply(h.ctx, entries)
	if err != nil {
		h.Fatalf("Apply: %v", err)
	}
	if got != want {
		h.Fatalf("Apply applied %d entries, want %d", got, want)
	}
}

func (h *harness) docStatus(doc string) []jobresults.Record {
	h.Helper()
	recs, err := h.store.GetDocStatus(h.ctx, h.job, doc)
	if err != nil {
		h.Fatalf("GetDocStatus(%s): %v", doc, err)
	}
	return recs
}

// record returns the one record of doc at dataType.
func (h *harness) record(dataType, doc string) jobresults.Record {
	h.Helper()
	for _, r := range h.docStatus(doc) {
		if r.DataType == dataType {
			return r
		}
	}
	h.Fatalf("no record for %s at %s", doc, dataType)
	return jobresults.Record{}
}

func (h *harness) stageCounts() []jobresults.StageCount {
	h.Helper()
	sc, err := h.store.GetStageCounts(h.ctx, h.job)
	if err != nil {
		h.Fatalf("GetStageCounts: %v", err)
	}
	return sc
}

func (h *harness) failures(dataType string) []jobresults.Record {
	h.Helper()
	recs, err := h.store.GetFailures(h.ctx, h.job, dataType)
	if err != nil {
		h.Fatalf("GetFailures(%q): %v", dataType, err)
	}
	return recs
}

func (h *harness) uniqueErrors(dataType string) []jobresults.UniqueError {
	h.Helper()
	ue, err := h.store.GetUniqueErrors(h.ctx, h.job, dataType)
	if err != nil {
		h.Fatalf("GetUniqueErrors(%q): %v", dataType, err)
	}
	return ue
}

func (h *harness) completed(final string) int {
	h.Helper()
	n, err := h.store.CountCompletedDocs(h.ctx, h.job, final)
	if err != nil {
		h.Fatalf("CountCompletedDocs(%s): %v", final, err)
	}
	return n
}

func (h *harness) hardFailedDocs() int {
	h.Helper()
	n, err := h.store.CountHardFailedDocs(h.ctx, h.job)
	if err != nil {
		h.Fatalf("CountHardFailedDocs: %v", err)
	}
	return n
}

func (h *harness) resolved(final string) int {
	h.Helper()
	n, err := h.store.CountResolvedDocs(h.ctx, h.job, final)
	if err != nil {
		h.Fatalf("CountResolvedDocs(%s): %v", final, err)
	}
	return n
}

func (h *harness) allRecords() []jobresults.Record {
	h.Helper()
	var out []jobresults.Record
	if err := h.store.ForEachRecord(h.ctx, h.job, func(r jobresults.Record) error {
		out = append(out, r)
		return nil
	}); err != nil {
		h.Fatalf("ForEachRecord: %v", err)
	}
	return out
}

// equal fails the test when got and want differ.
func equal[T any](h *harness, what string, got, want T) {
	h.Helper()
	if !reflect.DeepEqual(normalize(got), normalize(want)) {
		h.Fatalf("%s:\n got: %s\nwant: %s", what, show(got), show(want))
	}
}

// normalize makes times comparable with reflect.DeepEqual (same instant,
// same representation) in records, unique errors and slices of them.
func normalize(v any) any {
	norm := func(t time.Time) time.Time {
		if t.IsZero() {
			return time.Time{}
		}
		return time.UnixMilli(t.UnixMilli()).UTC()
	}
	switch x := v.(type) {
	case jobresults.Record:
		x.Time, x.FinishedAt = norm(x.Time), norm(x.FinishedAt)
		return x
	case time.Time:
		return norm(x)
	case []jobresults.Record:
		out := make([]jobresults.Record, len(x))
		for i, r := range x {
			out[i] = normalize(r).(jobresults.Record)
		}
		return out
	case []jobresults.UniqueError:
		out := make([]jobresults.UniqueError, len(x))
		for i, u := range x {
			u.FirstSeen, u.LastSeen = norm(u.FirstSeen), norm(u.LastSeen)
			out[i] = u
		}
		return out
	}
	return v
}

// show renders values readably, dereferencing the run-log pointers.
func show(v any) string {
	switch x := v.(type) {
	case jobresults.Record:
		s := fmt.Sprintf("%+v", x)
		if x.Error != nil {
			code := "nil"
			if x.Error.StatusCode != nil {
				code = fmt.Sprint(*x.Error.StatusCode)
			}
			s += fmt.Sprintf(" Error=%+v(code %s)", *x.Error, code)
		}
		if x.Upload != nil {
			s += fmt.Sprintf(" Upload=%+v", *x.Upload)
		}
		return s + fmt.Sprintf(" Payload=%q", x.Payload)
	case []jobresults.Record:
		s := fmt.Sprintf("%d records", len(x))
		for _, r := range x {
			s += "\n  " + show(r)
		}
		return s
	}
	return fmt.Sprintf("%+v", v)
}
