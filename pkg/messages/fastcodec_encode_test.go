package messages

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// fuzzValues builds envelope field values from fuzz inputs.
type fuzzValues struct {
	s1, s2, s3 string
	n          int
	raw        []byte
	at         time.Time
	flag       bool
}

func newFuzzValues(s1, s2, s3 string, n int, raw []byte, sec int64, offset int, flag bool) fuzzValues {
	var at time.Time
	if sec != 0 {
		at = time.Unix(sec, int64(n)%1e9).In(time.FixedZone("", offset%(30*3600)))
	}
	if len(raw) == 0 {
		raw = nil
	}
	return fuzzValues{s1, s2, s3, n, raw, at, flag}
}

// checkEncode holds a fast encoder to encoding/json: wherever it answers,
// its bytes are encoding/json's (without HTML escaping) for the same value.
func checkEncode[T any](t *testing.T, fe fastCodec[T], v *T, generic any) {
	t.Helper()
	fast, ok := fe.encode(v)
	if !ok {
		return
	}
	want, err := marshalJSON(generic)
	if err != nil {
		t.Fatalf("fast path encoded %s, encoding/json refuses the value: %v", fast, err)
	}
	if !bytes.Equal(fast, want) {
		t.Fatalf("encode:\nfast          %s\nencoding/json %s", fast, want)
	}
}

func addEncodeSeeds(f *testing.F) {
	f.Add("r1", "12", "pod-1", 2, []byte(`{"source":"universal","url":"https://a.io/?a=1&b=<2>"}`), int64(1790000000), 7200, true)
	f.Add("", "", "", 0, []byte(nil), int64(0), 0, false)
	f.Add("a\"b", "é", "\u2028", -1, []byte(`{"a": 1}`), int64(-62135596800), 0, false)
	f.Add("x", "y", "<&>", 1<<40, []byte(`[1,"a b",{"c":"\""}]`), int64(253402300800), 61, true)
	f.Add("x", "y", "z", 0, []byte(`{"a":1`), int64(1), -3600, false)
	f.Add("x", "y", "z", 3, []byte(`{"a": 1,"b":"c d"}`), int64(1790000000), 0, false)
	f.Add("x", "y", "z", 3, []byte("[\t1]"), int64(1790000000), 0, false)
}

func FuzzStatusEventEncoder(f *testing.F) {
	addEncodeSeeds(f)
	f.Fuzz(func(t *testing.T, s1, s2, s3 string, n int, raw []byte, sec int64, offset int, flag bool) {
		v := newFuzzValues(s1, s2, s3, n, raw, sec, offset, flag)
		e := StatusEvent{V: v.n, Run: v.s1, Doc: v.s2, Attempt: v.n, DataType: oxytype.DataType(v.s3), Outcome: oxytype.Outcome(v.s1),
			Origin: oxytype.Party{Type: v.s2, Name: v.s3}, RetryCount: v.n, Reason: v.s3,
			Facts: oxytype.Facts{State: oxytype.State(v.s2), APIJobID: v.s1, Payload: v.raw}, Time: v.at}
		if v.flag {
			e.Consumer = oxytype.Party{Type: v.s1}
			e.Error = &oxytype.ErrorInfo{Message: v.s1}
		}
		type plain StatusEvent
		checkEncode(t, statusEventCodec, &e, plain(e))
	})
}

func FuzzWorkEncoders(f *testing.F) {
	addEncodeSeeds(f)
	f.Fuzz(func(t *testing.T, s1, s2, s3 string, n int, raw []byte, sec int64, offset int, flag bool) {
		v := newFuzzValues(s1, s2, s3, n, raw, sec, offset, flag)
		p := Payload{V: v.n, Run: v.s1, Doc: v.s2, Attempt: v.n, Payload: v.raw}
		type plainP Payload
		checkEncode(t, payloadCodec, &p, plainP(p))
		s := Submitted{V: v.n, Run: v.s1, Doc: v.s2, Attempt: v.n, APIJobID: v.s3, Payload: v.raw, SubmittedAt: v.at}
		type plainS Submitted
		checkEncode(t, submittedCodec, &s, plainS(s))
		d := Done{V: v.n, Run: v.s1, Doc: v.s2, Attempt: v.n, APIJobID: v.s3, Payload: v.raw, Status: v.s1, FinishedAt: v.at}
		type plainD Done
		checkEncode(t, doneCodec, &d, plainD(d))
		c := Claim{V: v.n, Run: v.s1, Doc: v.s2, Attempt: v.n, State: ClaimState(v.s3), By: v.s3, ClaimedAt: v.at,
			APIJobID: v.s1, SubmittedAt: v.at, Reason: v.s2, MayHaveBilled: v.flag, Retries: v.n}
		type plainC Claim
		checkEncode(t, claimCodec, &c, plainC(c))
	})
}

// TestFastEncodersTakeWhatTheStagesWrite checks that the envelopes of a
// run take the fast path.
func TestFastEncodersTakeWhatTheStagesWrite(t *testing.T) {
	t.Parallel()
	payload := json.RawMessage(`{"source":"universal","url":"https://a.io/?a=1&b=<2>"}`)
	at := time.Date(2026, 9, 29, 17, 4, 12, 345_000_000, time.UTC)
	ev := StatusEvent{V: 1, Run: "r1", Doc: "12", DataType: oxytype.DataSubmitted, Outcome: oxytype.Success,
		Origin: oxytype.Party{Type: "submitter", Name: "pod-1"}, Facts: oxytype.Facts{APIJobID: "7000000000000000001", Payload: payload}, Time: at}
	p := Payload{V: 1, Run: "r1", Doc: "12", Payload: payload}
	s := Submitted{V: 1, Run: "r1", Doc: "12", APIJobID: "7000000000000000001", Payload: payload, SubmittedAt: at}
	d := Done{V: 1, Run: "r1", Doc: "12", APIJobID: "7000000000000000001", Payload: payload, Status: JobStatusDone, FinishedAt: at}
	c := Claim{V: 1, Run: "r1", Doc: "12", State: ClaimSubmitted, By: "submitter/pod-1", ClaimedAt: at, APIJobID: "7000000000000000001", SubmittedAt: at}
	for name, ok := range map[string]bool{
		"status event": second(statusEventCodec.encode(&ev)),
		"payload":      second(payloadCodec.encode(&p)),
		"submitted":    second(submittedCodec.encode(&s)),
		"done":         second(doneCodec.encode(&d)),
		"claim":        second(claimCodec.encode(&c)),
	} {
		if !ok {
			t.Errorf("%s: the fast encoder left it to encoding/json", name)
		}
	}
}

func second[A, B any](_ A, b B) B { return b }
