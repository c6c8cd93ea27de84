package messages_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// benchPayload is a WSA body of the size the pipeline benchmark feeds.
var benchPayload = json.RawMessage(`{"source":"universal","url":"https://sandbox.oxylabs.io/products/12345","render":"html","context":[{"key":"follow_redirects","value":true}]}`)

var benchAt = time.Date(2026, 9, 29, 17, 4, 12, 345_000_000, time.UTC)

func benchEncode(b *testing.B, e messages.Envelope) []byte {
	b.Helper()
	data, err := e.MarshalJSON()
	if err != nil {
		b.Fatal(err)
	}
	return data
}

func benchDecode[T any](b *testing.B, subject string, data []byte, decode func(string, []byte) (T, error)) {
	b.Helper()
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := decode(subject, data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeStatusEvent decodes a writer's success event, the most
// frequent message of a run.
func BenchmarkDecodeStatusEvent(b *testing.B) {
	e := &messages.StatusEvent{Run: run, Doc: "12345", DataType: oxytype.DataSubmitted, Outcome: oxytype.Success,
		Origin: oxytype.Party{Type: "submitter", Name: "pod-1"}, Facts: oxytype.Facts{APIJobID: "7000000000000000001", Payload: benchPayload}, Time: benchAt}
	benchDecode(b, e.Subject(), benchEncode(b, e), messages.DecodeStatusEvent)
}

// BenchmarkDecodeStatusEventExtra decodes an event with two fields this
// build does not know.
func BenchmarkDecodeStatusEventExtra(b *testing.B) {
	e := &messages.StatusEvent{Run: run, Doc: "12345", DataType: oxytype.DataSubmitted, Outcome: oxytype.Success,
		Origin: oxytype.Party{Type: "submitter", Name: "pod-1"}, Facts: oxytype.Facts{APIJobID: "7000000000000000001", Payload: benchPayload}, Time: benchAt,
		Extra: messages.Extra{"x_future": json.RawMessage(`{"a":[1,2,"}"]}`), "x_flag": json.RawMessage(`true`)}}
	benchDecode(b, e.Subject(), benchEncode(b, e), messages.DecodeStatusEvent)
}

// BenchmarkDecodePayload decodes a feeder message.
func BenchmarkDecodePayload(b *testing.B) {
	e := &messages.Payload{Run: run, Doc: "12345", Payload: benchPayload}
	benchDecode(b, e.Subject(), benchEncode(b, e), messages.DecodePayload)
}

// BenchmarkDecodeSubmitted decodes a submitter message.
func BenchmarkDecodeSubmitted(b *testing.B) {
	e := &messages.Submitted{Run: run, Doc: "12345", APIJobID: "7000000000000000001", Payload: benchPayload, SubmittedAt: benchAt}
	benchDecode(b, e.Subject(), benchEncode(b, e), messages.DecodeSubmitted)
}

// BenchmarkDecodeDone decodes a poller message.
func BenchmarkDecodeDone(b *testing.B) {
	e := &messages.Done{Run: run, Doc: "12345", APIJobID: "7000000000000000001", Payload: benchPayload, FinishedAt: benchAt}
	benchDecode(b, e.Subject(), benchEncode(b, e), messages.DecodeDone)
}

// BenchmarkDecodeClaim decodes a claims-bucket value.
func BenchmarkDecodeClaim(b *testing.B) {
	data := []byte(`{"v":1,"state":"submitted","api_job_id":"7000000000000000001","owner":"pod-1","at":"2026-09-29T17:04:12.345Z"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := messages.DecodeClaim(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeStatusEvent encodes a writer's success event.
func BenchmarkEncodeStatusEvent(b *testing.B) {
	e := &messages.StatusEvent{Run: run, Doc: "12345", DataType: oxytype.DataSubmitted, Outcome: oxytype.Success,
		Origin: oxytype.Party{Type: "submitter", Name: "pod-1"}, Facts: oxytype.Facts{APIJobID: "7000000000000000001", Payload: benchPayload}, Time: benchAt}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.MarshalJSON(); err != nil {
			b.Fatal(err)
		}
	}
}
