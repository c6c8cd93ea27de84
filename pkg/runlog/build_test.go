package runlog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/runlog"
)

func intp(n int) *int { return &n }

// seedRecords are the ledger records of the three-payload example of examples/sandbox-rules.json: the
// first job's status check returns 404, the second faults, the third is
// written.
func seedRecords() []runlog.Record {
	p := func(n string) json.RawMessage {
		return json.RawMessage(`{"source":"universal","url":"https://sandbox.oxylabs.io/products/` + n + `"}`)
	}
	return []runlog.Record{
		{Doc: "0", DataType: "payload", Success: true, Facts: oxytype.Facts{Payload: p("1")}},
		{Doc: "0", DataType: "submitted", HardFailure: "Stopped checking job 7500000000000000001, because the API returned 404 Not Found",
			Facts: oxytype.Facts{State: oxytype.Unfetched, APIJobID: "7500000000000000001", Payload: p("1"), Error: &oxytype.ErrorInfo{StatusCode: intp(404), Message: "Not Found", TraceID: "00000001-000000000000000000000000"}},
		},
		{Doc: "1", DataType: "payload", Success: true, Facts: oxytype.Facts{Payload: p("2")}},
		{Doc: "1", DataType: "submitted", HardFailure: "Job 7500000000000000002 faulted", Facts: oxytype.Facts{State: oxytype.Faulted, APIJobID: "7500000000000000002", Error: &oxytype.ErrorInfo{Message: "faulted"}}},
		{Doc: "2", DataType: "done", Success: true, Facts: oxytype.Facts{APIJobID: "7500000000000000003"}},
		{Doc: "2", DataType: "payload", Success: true, Facts: oxytype.Facts{Payload: p("3")}},
		{Doc: "2", DataType: "submitted", Success: true, Facts: oxytype.Facts{APIJobID: "7500000000000000003"}},
		{Doc: "2", DataType: "written", Success: true, Facts: oxytype.Facts{APIJobID: "7500000000000000003"}},
	}
}

// seedLog is the run log of that run, byte for byte.
const seedLog = `{"state":"unfetched","id":"7500000000000000001","payload":{"source":"universal","url":"https://sandbox.oxylabs.io/products/1"},"error":{"status_code":404,"message":"Not Found","trace_id":"00000001-000000000000000000000000"},"upload":null}
{"state":"faulted","id":"7500000000000000002","payload":{"source":"universal","url":"https://sandbox.oxylabs.io/products/2"},"error":null,"upload":null}
{"state":"done","id":"7500000000000000003","payload":{"source":"universal","url":"https://sandbox.oxylabs.io/products/3"},"error":null,"upload":null}
`

func sliceSource(recs []runlog.Record) runlog.Source {
	return func(_ context.Context, fn func(runlog.Record) error) error {
		for _, r := range recs {
			if err := fn(r); err != nil {
				return err
			}
		}
		return nil
	}
}

func TestBuild(t *testing.T) {
	t.Parallel()
	spec := runlog.Spec{Total: 3, FinalDataType: "written"}

	t.Run("the seed example gives its three lines in input order", func(t *testing.T) {
		t.Parallel()
		var buf bytes.Buffer
		sum, err := runlog.Build(t.Context(), &buf, spec, sliceSource(seedRecords()))
		if err != nil {
			t.Fatal(err)
		}
		if buf.String() != seedLog {
			t.Fatalf("run log:\n%s\nwant:\n%s", buf.String(), seedLog)
		}
		want := runlog.Summary{Lines: 3, Done: 1, Faulted: 1, Unfetched: 1, Resolved: 3}
		if sum != want {
			t.Fatalf("summary %+v, want %+v", sum, want)
		}
	})

	t.Run("a doc without any record still gets its line, unsubmitted", func(t *testing.T) {
		t.Parallel()
		recs := seedRecords()[2:] // doc 0 has no records
		var buf bytes.Buffer
		sum, err := runlog.Build(t.Context(), &buf, runlog.Spec{Total: 4, FinalDataType: "written"}, sliceSource(recs))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
		if len(lines) != 4 {
			t.Fatalf("%d lines, want 4:\n%s", len(lines), buf.String())
		}
		wantMissing := `{"state":"unsubmitted","id":null,"payload":null,"error":{"status_code":null,"message":"` + runlog.MsgNoRecord + `","trace_id":""},"upload":null}`
		if lines[0] != wantMissing || lines[3] != wantMissing {
			t.Fatalf("lines 1 and 4:\n%s\n%s\nwant:\n%s", lines[0], lines[3], wantMissing)
		}
		if sum.Unsubmitted != 2 || sum.Resolved != 2 || sum.Lines != 4 {
			t.Fatalf("summary %+v", sum)
		}
	})

	t.Run("docs that are not positions of the run are counted, not written", func(t *testing.T) {
		t.Parallel()
		recs := append([]runlog.Record{
			{Doc: "?OXY_STATUS:7", DataType: "status", HardFailure: "malformed", Facts: oxytype.Facts{State: oxytype.Unsubmitted}},
			{Doc: "?OXY_STATUS:9", DataType: "status", HardFailure: "malformed", Facts: oxytype.Facts{State: oxytype.Unsubmitted}},
		}, seedRecords()...)
		recs = append(recs, runlog.Record{Doc: "3", DataType: "written", Success: true, Facts: oxytype.Facts{APIJobID: "1"}})
		var buf bytes.Buffer
		sum, err := runlog.Build(t.Context(), &buf, spec, sliceSource(recs))
		if err != nil {
			t.Fatal(err)
		}
		if buf.String() != seedLog {
			t.Fatalf("run log:\n%s", buf.String())
		}
		if sum.Unidentified != 3 {
			t.Fatalf("unidentified %d, want 3", sum.Unidentified)
		}
	})

	t.Run("records out of document order are an error, not a wrong log", func(t *testing.T) {
		t.Parallel()
		recs := seedRecords()
		recs[0], recs[len(recs)-1] = recs[len(recs)-1], recs[0]
		_, err := runlog.Walk(t.Context(), spec, sliceSource(recs), nil)
		if err == nil || !strings.Contains(err.Error(), "out of document order") {
			t.Fatalf("err = %v", err)
		}
	})

	t.Run("a zero-payload run has an empty log", func(t *testing.T) {
		t.Parallel()
		var buf bytes.Buffer
		sum, err := runlog.Build(t.Context(), &buf, runlog.Spec{FinalDataType: "written"}, sliceSource(nil))
		if err != nil || buf.Len() != 0 || sum != (runlog.Summary{}) {
			t.Fatalf("err %v, %d bytes, %+v", err, buf.Len(), sum)
		}
	})

	t.Run("the source's error is returned", func(t *testing.T) {
		t.Parallel()
		boom := errors.New("store down")
		src := func(context.Context, func(runlog.Record) error) error { return boom }
		if _, err := runlog.Build(t.Context(), &bytes.Buffer{}, spec, src); !errors.Is(err, boom) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestDerive(t *testing.T) {
	t.Parallel()
	payload := json.RawMessage(`{"source":"universal","url":"https://u:p@example.com/a?x=<1>&y=2"}`)
	tests := []struct {
		name     string
		recs     []runlog.Record
		want     string
		resolved bool
	}{
		{
			name: "a doc written and hard-failed counts once, as done",
			recs: []runlog.Record{
				{Doc: "0", DataType: "done", HardFailure: "write failed", Facts: oxytype.Facts{State: oxytype.Unfetched, APIJobID: "42"}},
				{Doc: "0", DataType: "payload", Success: true, Facts: oxytype.Facts{Payload: payload}},
				{Doc: "0", DataType: "written", Success: true, Facts: oxytype.Facts{APIJobID: "42"}},
			},
			want:     `{"state":"done","id":"42","payload":{"source":"universal","url":"https://redacted:redacted@example.com/a?x=<1>&y=2"},"error":null,"upload":null}`,
			resolved: true,
		},
		{
			name: "a rejected payload has no id and its structured error",
			recs: []runlog.Record{
				{Doc: "0", DataType: "payload", HardFailure: "400 bad", Facts: oxytype.Facts{State: oxytype.Rejected, Payload: payload, Error: &oxytype.ErrorInfo{StatusCode: intp(400), Message: "Bad Request", TraceID: "t1"}}},
			},
			want:     `{"state":"rejected","id":null,"payload":{"source":"universal","url":"https://redacted:redacted@example.com/a?x=<1>&y=2"},"error":{"status_code":400,"message":"Bad Request","trace_id":"t1"},"upload":null}`,
			resolved: true,
		},
		{
			name: "a hard failure without a structured error gets its text as the message",
			recs: []runlog.Record{
				{Doc: "0", DataType: "payload", HardFailure: "the run was stopped", Facts: oxytype.Facts{State: oxytype.Unsubmitted}},
			},
			want:     `{"state":"unsubmitted","id":null,"payload":null,"error":{"status_code":null,"message":"the run was stopped","trace_id":""},"upload":null}`,
			resolved: true,
		},
		{
			name: "a hard failure without a usable state is unfetched when a job id is known",
			recs: []runlog.Record{
				{Doc: "0", DataType: "submitted", Success: true, Facts: oxytype.Facts{APIJobID: "7"}},
				{Doc: "0", DataType: "done", HardFailure: "poison message: delivered 10 times"},
			},
			want:     `{"state":"unfetched","id":"7","payload":null,"error":{"status_code":null,"message":"poison message: delivered 10 times","trace_id":""},"upload":null}`,
			resolved: true,
		},
		{
			name: "the hard failure of the latest stage wins over the statusworker's own",
			recs: []runlog.Record{
				{Doc: "0", DataType: "status", HardFailure: "malformed status event", Facts: oxytype.Facts{State: oxytype.Unsubmitted}},
				{Doc: "0", DataType: "submitted", HardFailure: "Job 9 faulted", Facts: oxytype.Facts{State: oxytype.Faulted, APIJobID: "9"}},
			},
			want:     `{"state":"faulted","id":"9","payload":null,"error":null,"upload":null}`,
			resolved: true,
		},
		{
			name: "a lost status report does not resolve a doc",
			recs: []runlog.Record{
				{Doc: "0", DataType: "payload", Success: true},
				{Doc: "0", DataType: "status", HardFailure: "malformed status event", Facts: oxytype.Facts{State: oxytype.Unsubmitted}},
			},
			want:     `{"state":"unsubmitted","id":null,"payload":null,"error":{"status_code":null,"message":"` + runlog.MsgUnresolved + `","trace_id":""},"upload":null}`,
			resolved: false,
		},
		{
			name: "the may-have-billed mark is written inside the error",
			recs: []runlog.Record{
				{Doc: "0", DataType: "payload", HardFailure: "500", Facts: oxytype.Facts{State: oxytype.Unsubmitted, Error: &oxytype.ErrorInfo{StatusCode: intp(500), Message: "Internal Server Error", MayHaveBilled: true}}},
			},
			want:     `{"state":"unsubmitted","id":null,"payload":null,"error":{"status_code":500,"message":"Internal Server Error","trace_id":"","may_have_billed":true},"upload":null}`,
			resolved: true,
		},
		{
			name: "the mark of an earlier outcome sticks to a later unmarked one",
			recs: []runlog.Record{
				{Doc: "0", DataType: "payload", HardFailure: "run stopped", Facts: oxytype.Facts{State: oxytype.Unsubmitted, Error: &oxytype.ErrorInfo{Message: "the run was stopped"}}},
				{Doc: "0", DataType: "submitted", Facts: oxytype.Facts{Error: &oxytype.ErrorInfo{Message: "500", MayHaveBilled: true}}},
			},
			want:     `{"state":"unsubmitted","id":null,"payload":null,"error":{"status_code":null,"message":"the run was stopped","trace_id":"","may_have_billed":true},"upload":null}`,
			resolved: true,
		},
		{
			name: "an unresolved doc whose last soft failure was marked stays marked",
			recs: []runlog.Record{
				{Doc: "0", DataType: "payload", Facts: oxytype.Facts{Error: &oxytype.ErrorInfo{Message: "502", MayHaveBilled: true}}},
			},
			want:     `{"state":"unsubmitted","id":null,"payload":null,"error":{"status_code":null,"message":"` + runlog.MsgUnresolved + `","trace_id":"","may_have_billed":true},"upload":null}`,
			resolved: false,
		},
		{
			name: "a done doc carries no mark",
			recs: []runlog.Record{
				{Doc: "0", DataType: "payload", Facts: oxytype.Facts{Error: &oxytype.ErrorInfo{Message: "502", MayHaveBilled: true}}},
				{Doc: "0", DataType: "written", Success: true, Facts: oxytype.Facts{APIJobID: "5"}},
			},
			want:     `{"state":"done","id":"5","payload":null,"error":null,"upload":null}`,
			resolved: true,
		},
		{
			name: "a doc still in flight is not resolved",
			recs: []runlog.Record{
				{Doc: "0", DataType: "submitted", Success: true, Facts: oxytype.Facts{APIJobID: "8", Upload: &oxytype.Upload{Code: 13000, Message: "ok"}}},
			},
			want:     `{"state":"unfetched","id":"8","payload":null,"error":{"status_code":null,"message":"` + runlog.MsgUnresolved + `","trace_id":""},"upload":{"code":13000,"message":"ok"}}`,
			resolved: false,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			line, resolved := runlog.Derive("written", tc.recs)
			got, err := runlog.AppendLine(nil, line)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want+"\n" {
				t.Fatalf("line:\n%s\nwant:\n%s", got, tc.want)
			}
			if resolved != tc.resolved {
				t.Fatalf("resolved = %v, want %v", resolved, tc.resolved)
			}
		})
	}
}

func TestWriter(t *testing.T) {
	t.Parallel()
	t.Run("payload bytes are kept exactly, a multi-line payload is compacted", func(t *testing.T) {
		t.Parallel()
		id := "1"
		got, err := runlog.AppendLine(nil, runlog.Line{State: oxytype.Done, ID: &id, Payload: json.RawMessage(`{"q":"a<b>&c", "n":1.50}`)})
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"state":"done","id":"1","payload":{"q":"a<b>&c", "n":1.50},"error":null,"upload":null}` + "\n"; string(got) != want {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
		got, err = runlog.AppendLine(nil, runlog.Line{State: oxytype.Faulted, Payload: json.RawMessage("{\n \"q\": \"x\"\n}")})
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"state":"faulted","id":null,"payload":{"q":"x"},"error":null,"upload":null}` + "\n"; string(got) != want {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
	})
	t.Run("an invalid state is refused", func(t *testing.T) {
		t.Parallel()
		if _, err := runlog.AppendLine(nil, runlog.Line{State: "lost"}); err == nil {
			t.Fatal("no error")
		}
	})
}
