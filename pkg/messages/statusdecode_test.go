package messages

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// FuzzStatusEventFastPath holds the fast decode of a status event to
// encoding/json: wherever the fast path answers, encoding/json decodes the
// same bytes without error into the same event, Extra included.
func FuzzStatusEventFastPath(f *testing.F) {
	for _, s := range []string{
		`{"v":1,"run":"r1","doc":"12","data_type":"submitted","outcome":"success","origin":{"type":"submitter","name":"pod-1"},"api_job_id":"7000000000000000001","payload":{"source":"universal","url":"https://a.io/"},"time":"2026-09-29T17:04:12.345Z"}`,
		`{"v":1,"run":"r1","doc":"12","attempt":2,"data_type":"done","outcome":"hard_failure","origin":{"type":"poller"},"consumer":{"type":"writer","name":"w"},"retry_count":3,"reason":"disk full","error":{"status_code":507,"message":"no space","trace_id":"t"},"state":"unfetched","upload":{"code":200,"message":"ok"},"time":"2026-09-29T17:04:12Z","x_future":{"a":[1,"}"]}}`,
		`{"v":1,"RUN":"r1"}`, `{"v":1,"run":"r1","run":"r2"}`, `{"v":null}`, `{"v":1.0}`, `{"v":"1"}`, `{"v":-0}`,
		`{"v":1234567890123456789012}`, `{"origin":{"type":"a"},"origin":{"name":"b"}}`, `{"origin":{"type":"a","x":1}}`,
		`{"reason":"a\u0026b \"q\" \ud83d\ude00"}`, "{\"reason\":\"\xff\"}", `{"time":"2026-13-01T00:00:00Z"}`, `{"time":"x"}`,
		`{"error":{"status_code":"x"}}`, `{"payload":[1, 2]}`, `[]`, `{`, `{"ſtate":"done"}`, `{"\u0076":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, ok := decodeStatusEvent(data)
		if !ok {
			return
		}
		var want StatusEvent
		if err := want.unmarshalGeneric(data); err != nil {
			t.Fatalf("fast path decoded %q, encoding/json refuses it: %v", data, err)
		}
		if !reflect.DeepEqual(fast, want) {
			t.Fatalf("decode of %q:\nfast    %#v\nencoding/json %#v", data, fast, want)
		}
	})
}

// TestStatusEventFastPathTakesThePipelinesEvents checks that the events
// this build writes — a success with its payload, a hard failure with its
// error, state and consumer — are the ones the fast path decodes, into the
// event that was encoded.
func TestStatusEventFastPathTakesThePipelinesEvents(t *testing.T) {
	t.Parallel()
	code := 507
	at := time.Date(2026, 9, 29, 17, 4, 12, 345_000_000, time.UTC)
	for _, e := range []StatusEvent{
		{V: Version, Run: "r1", Doc: "12", DataType: oxytype.DataSubmitted, Outcome: oxytype.Success,
			Origin: oxytype.Party{Type: "submitter", Name: "pod-1"},
			Facts:  oxytype.Facts{APIJobID: "7000000000000000001", Payload: json.RawMessage(`{"source":"universal","url":"https://a.io/?a=1&b=<2>"}`)}, Time: at},
		{V: Version, Run: "r1", Doc: "12", Attempt: 2, DataType: oxytype.DataDone, Outcome: oxytype.HardFailure,
			Origin: oxytype.Party{Type: "poller"}, Consumer: oxytype.Party{Type: "writer", Name: "w"}, RetryCount: 3, Reason: "disk full",
			Facts: oxytype.Facts{Error: &oxytype.ErrorInfo{StatusCode: &code, Message: "no space"}, State: oxytype.Unfetched,
				Upload: &oxytype.Upload{Code: 200, Message: "ok"}}, Time: at},
	} {
		data, err := e.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		got, ok := decodeStatusEvent(data)
		if !ok {
			t.Fatalf("the fast path left %s to encoding/json", data)
		}
		if !reflect.DeepEqual(got, e) {
			t.Fatalf("decode of %s:\ngot  %#v\nwant %#v", data, got, e)
		}
	}
}
