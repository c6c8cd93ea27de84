package messages

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// fuzzFastPath holds a fast decode table to encoding/json: wherever the fast
// path answers, encoding/json decodes the same bytes without error into the
// same value, Extra included. seeds are encoded envelopes of T, then bytes.
func fuzzFastPath[T any](f *testing.F, ff fastCodec[T], generic func(*T, []byte) error, setExtra func(*T, Extra), seeds ...string) {
	common := []string{
		`{"v":1,"RUN":"r1"}`, `{"v":1,"run":"r1","run":"r2"}`, `{"v":null}`, `{"v":1.0}`, `{"v":"1"}`, `{"v":-0}`,
		`{"v":1234567890123456789012}`, `{"run":"a\u0026b \"q\" \ud83d\ude00"}`, "{\"run\":\"\xff\"}", `[]`, `{`, `{"\u0076":1}`,
		`{"v":1,"x_future":{"a":[1,"}"]},"x_flag":true}`, `{"payload":[1, 2]}`, `{"payload":null}`,
	}
	for _, s := range append(seeds, common...) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var fast T
		extra, ok := ff.decode(&fast, data)
		if !ok {
			if !reflect.DeepEqual(fast, *new(T)) {
				t.Fatalf("the fast path declined %q and left %#v", data, fast)
			}
			return
		}
		setExtra(&fast, extra)
		var want T
		if err := generic(&want, data); err != nil {
			t.Fatalf("fast path decoded %q, encoding/json refuses it: %v", data, err)
		}
		if !reflect.DeepEqual(fast, want) {
			t.Fatalf("decode of %q:\nfast          %#v\nencoding/json %#v", data, fast, want)
		}
	})
}

var (
	fuzzAt      = time.Date(2026, 9, 29, 17, 4, 12, 345_000_000, time.UTC)
	fuzzPayload = json.RawMessage(`{"source":"universal","url":"https://a.io/?a=1&b=<2>","context":[{"key":"k","value":true}]}`)
	fuzzCode    = 507
)

func mustJSON(t testing.TB, e json.Marshaler) string {
	t.Helper()
	b, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func FuzzStatusEventFastPath(f *testing.F) {
	fuzzFastPath(f, statusEventCodec, (*StatusEvent).unmarshalGeneric, func(e *StatusEvent, x Extra) { e.Extra = x },
		append(statusEventSamples(f),
			`{"origin":{"type":"a"},"origin":{"name":"b"}}`, `{"origin":{"type":"a","x":1}}`, `{"time":"2026-13-01T00:00:00Z"}`,
			`{"time":"x"}`, `{"error":{"status_code":"x"}}`, `{"ſtate":"done"}`, `{"consumer":{"type":1}}`)...)
}

func FuzzPayloadFastPath(f *testing.F) {
	fuzzFastPath(f, payloadCodec, (*Payload).unmarshalGeneric, func(p *Payload, x Extra) { p.Extra = x },
		mustJSON(f, &Payload{Run: "r1", Doc: "12", Attempt: 1, Payload: fuzzPayload}))
}

func FuzzSubmittedFastPath(f *testing.F) {
	fuzzFastPath(f, submittedCodec, (*Submitted).unmarshalGeneric, func(s *Submitted, x Extra) { s.Extra = x },
		mustJSON(f, &Submitted{Run: "r1", Doc: "12", APIJobID: "7000000000000000001", Payload: fuzzPayload, SubmittedAt: fuzzAt}),
		`{"submitted_at":"2026-09-29T17:04:12+02:00"}`)
}

func FuzzDoneFastPath(f *testing.F) {
	fuzzFastPath(f, doneCodec, (*Done).unmarshalGeneric, func(d *Done, x Extra) { d.Extra = x },
		mustJSON(f, &Done{Run: "r1", Doc: "12", Attempt: 2, APIJobID: "7000000000000000001", Payload: fuzzPayload, Status: JobStatusDone, FinishedAt: fuzzAt}),
		`{"finished_at":"0001-01-01T00:00:00Z"}`)
}

func FuzzClaimFastPath(f *testing.F) {
	fuzzFastPath(f, claimCodec, (*Claim).unmarshalGeneric, func(c *Claim, x Extra) { c.Extra = x },
		mustJSON(f, &Claim{Run: "r1", Doc: "12", Attempt: 1, State: ClaimSubmitted, By: "submitter/pod-1", ClaimedAt: fuzzAt,
			APIJobID: "7000000000000000001", SubmittedAt: fuzzAt, Reason: "r", MayHaveBilled: true, Retries: 1}),
		`{"may_have_billed":false}`, `{"may_have_billed":1}`, `{"may_have_billed":"true"}`)
}

// statusEventSamples are status events as the stages write them: a success
// with its payload, a hard failure with its error, state, consumer and
// upload.
func statusEventSamples(t testing.TB) []string {
	return []string{
		mustJSON(t, &StatusEvent{Run: "r1", Doc: "12", DataType: oxytype.DataSubmitted, Outcome: oxytype.Success,
			Origin: oxytype.Party{Type: "submitter", Name: "pod-1"},
			Facts:  oxytype.Facts{APIJobID: "7000000000000000001", Payload: fuzzPayload}, Time: fuzzAt}),
		mustJSON(t, &StatusEvent{Run: "r1", Doc: "12", Attempt: 2, DataType: oxytype.DataDone, Outcome: oxytype.HardFailure,
			Origin: oxytype.Party{Type: "poller"}, Consumer: oxytype.Party{Type: "writer", Name: "w"}, RetryCount: 3, Reason: "disk full",
			Facts: oxytype.Facts{Error: &oxytype.ErrorInfo{StatusCode: &fuzzCode, Message: "no space"}, State: oxytype.Unfetched,
				Upload: &oxytype.Upload{Code: 200, Message: "ok"}}, Time: fuzzAt}),
	}
}

// TestFastPathTakesWhatThisBuildWrites checks that the envelopes the stages
// write are the ones the fast paths decode, into the value encoded.
func TestFastPathTakesWhatThisBuildWrites(t *testing.T) {
	t.Parallel()
	check := func(name string, data string, ok bool, got, want any) {
		t.Helper()
		if !ok {
			t.Fatalf("%s: the fast path left %s to encoding/json", name, data)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: decode of %s:\ngot  %#v\nwant %#v", name, data, got, want)
		}
	}
	for _, data := range statusEventSamples(t) {
		var want StatusEvent
		if err := want.unmarshalGeneric([]byte(data)); err != nil {
			t.Fatal(err)
		}
		var got StatusEvent
		extra, ok := statusEventCodec.decode(&got, []byte(data))
		got.Extra = extra
		check("status event", data, ok, got, want)
	}
	p := Payload{V: Version, Run: "r1", Doc: "12", Attempt: 1, Payload: fuzzPayload}
	data := mustJSON(t, &p)
	var gotP Payload
	_, ok := payloadCodec.decode(&gotP, []byte(data))
	check("payload", data, ok, gotP, p)
	s := Submitted{V: Version, Run: "r1", Doc: "12", APIJobID: "7000000000000000001", Payload: fuzzPayload, SubmittedAt: fuzzAt}
	data = mustJSON(t, &s)
	var gotS Submitted
	_, ok = submittedCodec.decode(&gotS, []byte(data))
	check("submitted", data, ok, gotS, s)
	d := Done{V: Version, Run: "r1", Doc: "12", Attempt: 2, APIJobID: "7000000000000000001", Payload: fuzzPayload, Status: JobStatusDone, FinishedAt: fuzzAt}
	data = mustJSON(t, &d)
	var gotD Done
	_, ok = doneCodec.decode(&gotD, []byte(data))
	check("done", data, ok, gotD, d)
	c := Claim{V: Version, Run: "r1", Doc: "12", State: ClaimSubmitted, By: "submitter/pod-1", ClaimedAt: fuzzAt,
		APIJobID: "7000000000000000001", SubmittedAt: fuzzAt, MayHaveBilled: true}
	data = mustJSON(t, &c)
	var gotC Claim
	_, ok = claimCodec.decode(&gotC, []byte(data))
	check("claim", data, ok, gotC, c)
}
