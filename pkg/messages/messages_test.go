package messages_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

const run = "20260929T170412.345Z"

func TestRunIDs(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 9, 29, 19, 4, 12, 345_900_000, time.FixedZone("CEST", 2*3600))
	if got := messages.NewRunID(start); got != run {
		t.Fatalf("NewRunID = %q, want %q", got, run)
	}
	back, err := messages.ParseRunTime(run)
	if err != nil || !back.Equal(time.Date(2026, 9, 29, 17, 4, 12, 345_000_000, time.UTC)) {
		t.Fatalf("ParseRunTime = %v, %v", back, err)
	}
	for _, ok := range []string{run, "01J9ZQ5X8M6V0Q2D3E4F5G6H7J", "a", "run-1.2"} {
		if err := messages.ValidateRunID(ok); err != nil {
			t.Errorf("ValidateRunID(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "with_underscore", ".lead", "a b", "a*", "a>", strings.Repeat("x", 65)} {
		if err := messages.ValidateRunID(bad); !errors.Is(err, messages.ErrInvalidRunID) {
			t.Errorf("ValidateRunID(%q) = %v, want ErrInvalidRunID", bad, err)
		}
	}
	if tok := messages.RunToken(run); tok != "20260929T170412_345Z" || messages.RunFromToken(tok) != run {
		t.Fatalf("RunToken = %q", tok)
	}
}

func TestDocIDs(t *testing.T) {
	t.Parallel()
	if messages.DocID(0) != "0" || messages.DocID(1234) != "1234" {
		t.Fatal("DocID")
	}
	for doc, want := range map[string]int{"0": 0, "7": 7, "1999": 1999} {
		if got, err := messages.ParseDocID(doc); err != nil || got != want {
			t.Errorf("ParseDocID(%q) = %d, %v", doc, got, err)
		}
	}
	for _, bad := range []string{"", "07", "-1", "+1", " 1", "1.0", "x", "?OXY:1"} {
		if _, err := messages.ParseDocID(bad); !errors.Is(err, messages.ErrInvalidDocID) {
			t.Errorf("ParseDocID(%q) = %v, want ErrInvalidDocID", bad, err)
		}
	}
	u := messages.UnknownDocID("OXY_PAYLOADS", 42)
	if u != "?OXY_PAYLOADS:42" || !messages.IsUnknownDocID(u) || messages.IsUnknownDocID("42") {
		t.Fatalf("UnknownDocID = %q", u)
	}
}

func TestSubjects(t *testing.T) {
	t.Parallel()
	cases := []struct {
		subject string
		kind    messages.Kind
	}{
		{messages.RunSubject(run), messages.KindRunAnnounced},
		{messages.RunCompletedSubject(run), messages.KindRunCompleted},
		{messages.PayloadSubject(run), messages.KindPayload},
		{messages.SubmittedSubject(run), messages.KindSubmitted},
		{messages.DoneSubject(run), messages.KindDone},
		{messages.StatusSubject(run), messages.KindStatus},
	}
	want := []string{
		"oxy.run.20260929T170412_345Z", "oxy.run.20260929T170412_345Z.completed",
		"oxy.payload.20260929T170412_345Z", "oxy.submitted.20260929T170412_345Z",
		"oxy.done.20260929T170412_345Z", "oxy.status.20260929T170412_345Z",
	}
	for i, c := range cases {
		if c.subject != want[i] {
			t.Errorf("subject %d = %q, want %q", i, c.subject, want[i])
		}
		kind, r, err := messages.ParseSubject(c.subject)
		if err != nil || kind != c.kind || r != run {
			t.Errorf("ParseSubject(%q) = %q, %q, %v", c.subject, kind, r, err)
		}
		s, err := messages.SubjectFor(c.kind, run)
		if err != nil || s != c.subject {
			t.Errorf("SubjectFor(%q) = %q, %v", c.kind, s, err)
		}
	}
	for _, bad := range []string{"", "oxy", "oxy.payload", "nats.payload.x", "oxy.payload.x.y", "oxy.other.x", "oxy.run.x.other"} {
		if _, _, err := messages.ParseSubject(bad); err == nil {
			t.Errorf("ParseSubject(%q) succeeded", bad)
		}
	}
}

func TestUnknownFieldsSurviveARoundTrip(t *testing.T) {
	t.Parallel()
	in := `{"v":1,"run":"` + run + `","doc":"3","payload":{"source":"universal","url":"https://example.com"},"future":{"a":[1,2]},"zz":"last"}`
	p, err := messages.DecodePayload(messages.PayloadSubject(run), []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if string(p.Extra["future"]) != `{"a":[1,2]}` || string(p.Extra["zz"]) != `"last"` || len(p.Extra) != 2 {
		t.Fatalf("Extra = %v", p.Extra)
	}
	out, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"v":1,"run":"` + run + `","doc":"3","payload":{"source":"universal","url":"https://example.com"},"future":{"a":[1,2]},"zz":"last"}`
	if string(out) != want {
		t.Fatalf("re-encoded\n got %s\nwant %s", out, want)
	}
	// A known key smuggled into Extra does not produce a duplicate key.
	p.Extra["doc"] = json.RawMessage(`"999"`)
	out, _ = json.Marshal(p)
	if strings.Count(string(out), `"doc"`) != 1 {
		t.Fatalf("duplicate key: %s", out)
	}
}

func TestEveryEnvelopeRoundTrips(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 9, 29, 17, 4, 12, 0, time.UTC)
	payload := json.RawMessage(`{"source":"universal","url":"https://example.com"}`)
	extra := messages.Extra{"x_new": json.RawMessage(`true`)}
	envs := []messages.Envelope{
		&messages.RunAnnounced{Run: run, Total: 3, FinalDataType: oxytype.FinalDataType, Destination: "s3://b/p", RunLog: "logs", StartedAt: at, Extra: extra},
		&messages.Payload{Run: run, Doc: "0", Payload: payload, Extra: extra},
		&messages.Submitted{Run: run, Doc: "0", APIJobID: "7000000000000000001", Payload: payload, SubmittedAt: at, Extra: extra},
		&messages.Done{Run: run, Doc: "0", APIJobID: "7000000000000000001", Payload: payload, FinishedAt: at, Extra: extra},
		&messages.StatusEvent{Run: run, Doc: "0", DataType: oxytype.DataSubmitted, Outcome: oxytype.Success, Origin: oxytype.Party{Type: "submitter", Name: "pod-1"}, Facts: oxytype.Facts{APIJobID: "7000000000000000001"}, Time: at, Extra: extra},
		&messages.RunCompleted{Run: run, Total: 3, Done: 1, Faulted: 1, Unfetched: 1, CompletedAt: at, RunLog: "logs/" + run + ".jsonl", Extra: extra},
	}
	for _, e := range envs {
		data, err := e.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var back messages.Envelope
		switch e.(type) {
		case *messages.RunAnnounced:
			back, err = messages.DecodeRunAnnounced(e.Subject(), data)
		case *messages.Payload:
			back, err = messages.DecodePayload(e.Subject(), data)
		case *messages.Submitted:
			back, err = messages.DecodeSubmitted(e.Subject(), data)
		case *messages.Done:
			back, err = messages.DecodeDone(e.Subject(), data)
		case *messages.StatusEvent:
			back, err = messages.DecodeStatusEvent(e.Subject(), data)
		case *messages.RunCompleted:
			back, err = messages.DecodeRunCompleted(e.Subject(), data)
		}
		if err != nil {
			t.Fatalf("%T: %v (%s)", e, err, data)
		}
		again, err := back.MarshalJSON()
		if err != nil || string(again) != string(data) {
			t.Fatalf("%T round trip\n got %s\nwant %s", e, again, data)
		}
		if !strings.HasPrefix(string(data), `{"v":1,`) || !strings.HasSuffix(string(data), `"x_new":true}`) {
			t.Fatalf("%T encoded as %s", e, data)
		}
	}
}

// A payload with '<', '>' and '&' passes every envelope byte for byte: no
// \u003c in a message or a run log.
func TestPayloadBytesAreNotHTMLEscaped(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 9, 29, 17, 4, 12, 0, time.UTC)
	const raw = `{"source":"universal","url":"https://example.com/p?q=<a href=\"x?a=1&b=2\">","context":[{"key":"x","value":"a>b"}]}`
	payload := json.RawMessage(raw)
	extra := messages.Extra{"x_html": json.RawMessage(`"<b>&amp;</b>"`)}
	envs := []messages.Envelope{
		&messages.Payload{Run: run, Doc: "0", Payload: payload, Extra: extra},
		&messages.Submitted{Run: run, Doc: "0", APIJobID: "7000000000000000001", Payload: payload, SubmittedAt: at, Extra: extra},
		&messages.Done{Run: run, Doc: "0", APIJobID: "7000000000000000001", Payload: payload, FinishedAt: at, Extra: extra},
		&messages.StatusEvent{Run: run, Doc: "0", DataType: oxytype.DataPayload, Outcome: oxytype.HardFailure, Facts: oxytype.Facts{State: oxytype.Rejected, Payload: payload},
			Origin: oxytype.Party{Type: "feeder", Name: "t"}, Reason: "bad <url> & more", Time: at, Extra: extra},
	}
	for _, e := range envs {
		m, err := messages.NewMsg(e, oxytype.Party{Type: "test", Name: "t"})
		if err != nil {
			t.Fatal(err)
		}
		data := m.Data
		if !strings.Contains(string(data), `"payload":`+raw) || !strings.Contains(string(data), `"x_html":"<b>&amp;</b>"`) ||
			strings.Contains(string(data), `\u00`) || strings.HasSuffix(string(data), "\n") {
			t.Fatalf("%T encoded as %s", e, data)
		}
		var got json.RawMessage
		switch e.(type) {
		case *messages.Payload:
			var p *messages.Payload
			p, err = messages.DecodePayload(m.Subject, data)
			if p != nil {
				got = p.Payload
			}
		case *messages.Submitted:
			var s *messages.Submitted
			s, err = messages.DecodeSubmitted(m.Subject, data)
			if s != nil {
				got = s.Payload
			}
		case *messages.Done:
			var d *messages.Done
			d, err = messages.DecodeDone(m.Subject, data)
			if d != nil {
				got = d.Payload
			}
		case *messages.StatusEvent:
			var ev *messages.StatusEvent
			ev, err = messages.DecodeStatusEvent(m.Subject, data)
			if ev != nil {
				got = ev.Payload
				if ev.Reason != "bad <url> & more" || !strings.Contains(string(data), `"reason":"bad <url> & more"`) {
					t.Fatalf("reason = %q in %s", ev.Reason, data)
				}
			}
		}
		if err != nil {
			t.Fatalf("%T: %v (%s)", e, err, data)
		}
		if string(got) != raw {
			t.Fatalf("%T payload after a round trip\n got %s\nwant %s", e, got, raw)
		}
	}
}

func TestDecodeErrorsSayWhatIsWrong(t *testing.T) {
	t.Parallel()
	subj := messages.PayloadSubject(run)
	body := func(s string) []byte { return []byte(s) }
	cases := []struct {
		name, subject string
		data          []byte
		reason        string
		doc           string
	}{
		{"not JSON", subj, body(`{"v":1,"run":`), "invalid JSON: unexpected end of JSON input", ""},
		{"a JSON array", subj, body(`[1]`), "the message is a JSON array, want an object", ""},
		{"no version", subj, body(`{"run":"` + run + `","doc":"1","payload":{}}`), `missing "v" (envelope version)`, "1"},
		{"a newer version", subj, body(`{"v":2,"run":"` + run + `","doc":"1","payload":{}}`), "unsupported envelope version 2 (this build reads up to 1)", "1"},
		{"a run that is not the subject's", subj, body(`{"v":1,"run":"20260101T000000.000Z","doc":"1","payload":{}}`), `run "20260101T000000.000Z" does not match the subject's run "` + run + `"`, "1"},
		{"a doc that is not a position", subj, body(`{"v":1,"run":"` + run + `","doc":"01","payload":{}}`), `invalid doc id "01": want a decimal position such as "0" or "17"`, ""},
		{"a payload that is not an object", subj, body(`{"v":1,"run":"` + run + `","doc":"2","payload":"x"}`), `"payload" must be a JSON object (a WSA request body)`, "2"},
		{"the wrong subject", messages.DoneSubject(run), body(`{"v":1,"run":"` + run + `","doc":"2","payload":{}}`), "subject is not a payload subject", "2"},
		{"a doc of the wrong type", subj, body(`{"v":1,"run":"` + run + `","doc":2,"payload":{}}`), `field "doc" is a JSON number, want a string`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := messages.DecodePayload(c.subject, c.data)
			var de *messages.DecodeError
			if !errors.As(err, &de) || !errors.Is(err, messages.ErrMalformed) {
				t.Fatalf("err = %v, want a DecodeError", err)
			}
			if de.Reason != c.reason {
				t.Fatalf("reason = %q, want %q", de.Reason, c.reason)
			}
			if de.Run != run || de.Doc != c.doc || de.Subject != c.subject || de.Kind != messages.KindPayload {
				t.Fatalf("identity = run %q doc %q subject %q kind %q", de.Run, de.Doc, de.Subject, de.Kind)
			}
		})
	}
}

func TestDecodeChecksPerKind(t *testing.T) {
	t.Parallel()
	reason := func(err error) string {
		var de *messages.DecodeError
		if !errors.As(err, &de) {
			return "no DecodeError: " + err.Error()
		}
		return de.Reason
	}
	_, err := messages.DecodeSubmitted("", []byte(`{"v":1,"run":"`+run+`","doc":"1","payload":{}}`))
	if r := reason(err); r != `missing "api_job_id"` {
		t.Errorf("submitted: %s", r)
	}
	_, err = messages.DecodeDone("", []byte(`{"v":1,"run":"`+run+`","doc":"1","api_job_id":"1","status":"pending"}`))
	if r := reason(err); r != `"status" is "pending", want "done"` {
		t.Errorf("done: %s", r)
	}
	_, err = messages.DecodeStatusEvent("", []byte(`{"v":1,"run":"`+run+`","doc":"1","data_type":"payload","outcome":"maybe","time":"2026-01-01T00:00:00Z"}`))
	if r := reason(err); r != `outcome "maybe" is not success, soft_failure or hard_failure` {
		t.Errorf("status: %s", r)
	}
	_, err = messages.DecodeStatusEvent("", []byte(`{"v":1,"run":"`+run+`","doc":"1","data_type":"payload","outcome":"hard_failure","time":"2026-01-01T00:00:00Z"}`))
	if r := reason(err); r != `a hard failure needs a "state"` {
		t.Errorf("status: %s", r)
	}
	ev, err := messages.DecodeStatusEvent("", []byte(`{"v":1,"run":"`+run+`","doc":"?OXY_PAYLOADS:9","data_type":"payload","outcome":"hard_failure","state":"unsubmitted","time":"2026-01-01T00:00:00Z"}`))
	if err != nil || ev.Doc != "?OXY_PAYLOADS:9" || ev.State != oxytype.Unsubmitted {
		t.Errorf("status with an unknown doc: %v %v", ev, err)
	}
	_, err = messages.DecodeRunCompleted("", []byte(`{"v":1,"run":"`+run+`","total":3,"done":1}`))
	if r := reason(err); r != "outcomes add up to 1, total is 3" {
		t.Errorf("completed: %s", r)
	}
	_, err = messages.DecodeRunAnnounced("", []byte(`{"v":1,"run":"`+run+`","total":3,"final_data_type":"written"}`))
	if r := reason(err); r != `missing "started_at"` {
		t.Errorf("announced: %s", r)
	}
}

func TestStatusEventsAreRedactedOnEncode(t *testing.T) {
	t.Parallel()
	ev := messages.StatusEvent{
		Run: run, Doc: "4", DataType: oxytype.DataDone, Outcome: oxytype.HardFailure, Facts: oxytype.Facts{State: oxytype.Unfetched, Error: &oxytype.ErrorInfo{Message: "dial https://u:p@h"}, Payload: json.RawMessage(`{"storage_url":"https://KEY:SECRET@host/bucket"}`)},
		Reason: "PUT https://AKIA:s3cr3t@minio.local/b failed",
		Time:   time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	data, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"s3cr3t", "AKIA", "SECRET", "u:p@"} {
		if strings.Contains(string(data), secret) {
			t.Fatalf("%q leaked: %s", secret, data)
		}
	}
	if ev.Error.Message != "dial https://u:p@h" {
		t.Fatal("encoding changed the caller's event")
	}
	if !strings.Contains(string(data), `"storage_url":"https://redacted:redacted@host/bucket"`) {
		t.Fatalf("payload not redacted as expected: %s", data)
	}
}

func TestPeekReadsWhatItCan(t *testing.T) {
	t.Parallel()
	k := messages.Peek(messages.DoneSubject(run), []byte(`{"doc":"12","attempt":2,"api_job_id":"77","payload":{"a":1},"v":"junk"}`))
	if k.Run != run || k.Doc != "12" || k.Attempt != 2 || k.APIJobID != "77" || string(k.Payload) != `{"a":1}` {
		t.Fatalf("Peek = %+v", k)
	}
	k = messages.Peek("elsewhere", []byte(`{"run":"`+run+`","doc":"x1"}`))
	if k.Run != run || k.Doc != "" {
		t.Fatalf("Peek from body = %+v", k)
	}
	k = messages.Peek(messages.PayloadSubject(run), []byte("\x00garbage"))
	if k.Run != run || k.Doc != "" || k.Payload != nil {
		t.Fatalf("Peek garbage = %+v", k)
	}
}

func TestNewMsgSetsSubjectAndHeaders(t *testing.T) {
	t.Parallel()
	p := &messages.Payload{Run: run, Doc: "5", Attempt: 1, Payload: json.RawMessage(`{}`)}
	m, err := messages.NewMsg(p, oxytype.Party{Type: "feeder", Name: "laptop"})
	if err != nil {
		t.Fatal(err)
	}
	if m.Subject != "oxy.payload.20260929T170412_345Z" ||
		m.Header.Get(messages.HeaderMsgID) != run+"/5/payload/1" ||
		m.Header.Get(messages.HeaderOrigin) != "feeder/laptop" {
		t.Fatalf("msg = %q %v", m.Subject, m.Header)
	}
	if o := messages.OriginOf(m.Header); o != (oxytype.Party{Type: "feeder", Name: "laptop"}) {
		t.Fatalf("OriginOf = %+v", o)
	}
	ev, err := messages.NewMsg(&messages.StatusEvent{Run: run}, oxytype.Party{})
	if err != nil {
		t.Fatal(err)
	}
	if ev.Header.Get(messages.HeaderMsgID) != "" || ev.Header.Get(messages.HeaderOrigin) != "" {
		t.Fatalf("status event headers = %v", ev.Header)
	}
}

func TestClaimsAndRunRecords(t *testing.T) {
	t.Parallel()
	if k := messages.ClaimKey(run, "17"); k != "20260929T170412_345Z.17" {
		t.Fatalf("ClaimKey = %q", k)
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := messages.Claim{Run: run, Doc: "17", State: messages.ClaimSubmitted, By: "pod", ClaimedAt: at, APIJobID: "1", SubmittedAt: at}
	data, _ := json.Marshal(c)
	back, err := messages.DecodeClaim(data)
	if err != nil || back.APIJobID != "1" || back.V != 1 {
		t.Fatalf("DecodeClaim = %+v, %v", back, err)
	}
	if _, err := messages.DecodeClaim([]byte(`{"v":1,"state":"submitted"}`)); err == nil {
		t.Fatal("a submitted claim without a job id decoded")
	}
	rec := messages.RunRecord{Announced: messages.RunAnnounced{Run: run, Total: 1, FinalDataType: oxytype.FinalDataType, StartedAt: at}, State: oxytype.RunStateReady, UpdatedAt: at}
	data, _ = json.Marshal(rec)
	r, err := messages.DecodeRunRecord(data)
	if err != nil || r.State != oxytype.RunStateReady || r.Announced.Run != run || r.Announced.V != 1 {
		t.Fatalf("DecodeRunRecord = %+v, %v", r, err)
	}
}
