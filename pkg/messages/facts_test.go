package messages_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// TestStatusEventFactsAreTopLevelKeys pins the wire form of a status event
// whose run-log facts come from the embedded oxytype.Facts: the keys are the
// event's own, in the same order, and a decoded event keeps no fact in
// Extra (which would write it twice on the next encode).
func TestStatusEventFactsAreTopLevelKeys(t *testing.T) {
	t.Parallel()
	code := 404
	ev := messages.StatusEvent{
		Run: run, Doc: "3", Attempt: 2, DataType: oxytype.DataSubmitted, Outcome: oxytype.HardFailure,
		Origin: oxytype.Party{Type: "submitter", Name: "s-1"}, Consumer: oxytype.Party{Type: "poller", Name: "p-1"},
		RetryCount: 1, Reason: "Stopped checking job 7, because the API returned 404 Not Found",
		Facts: oxytype.Facts{
			Error:    &oxytype.ErrorInfo{StatusCode: &code, Message: "Not Found", TraceID: "t-1", MayHaveBilled: true},
			State:    oxytype.Unfetched,
			APIJobID: "7",
			Payload:  json.RawMessage(`{"url":"https://u:p@h/"}`),
			Upload:   &oxytype.Upload{Code: 13001, Message: "upload failed"},
		},
		Time:  time.Date(2026, 9, 29, 17, 4, 12, 0, time.UTC),
		Extra: messages.Extra{"zz": json.RawMessage(`1`)},
	}
	const want = `{"v":1,"run":"20260929T170412.345Z","doc":"3","attempt":2,"data_type":"submitted","outcome":"hard_failure",` +
		`"origin":{"type":"submitter","name":"s-1"},"consumer":{"type":"poller","name":"p-1"},"retry_count":1,` +
		`"reason":"Stopped checking job 7, because the API returned 404 Not Found",` +
		`"error":{"status_code":404,"message":"Not Found","trace_id":"t-1","may_have_billed":true},"state":"unfetched",` +
		`"api_job_id":"7","payload":{"url":"https://redacted:redacted@h/"},"upload":{"code":13001,"message":"upload failed"},` +
		`"time":"2026-09-29T17:04:12Z","zz":1}`
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != want {
		t.Fatalf("encoded\n%s\nwant\n%s", b, want)
	}
	var back messages.StatusEvent
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Extra) != 1 || string(back.Extra["zz"]) != "1" {
		t.Fatalf("Extra = %v, want only zz", back.Extra)
	}
	if back.State != oxytype.Unfetched || back.APIJobID != "7" || back.Upload == nil || back.Upload.Code != 13001 || !back.Error.MayHaveBilled {
		t.Fatalf("decoded facts %+v", back.Facts)
	}
	again, err := json.Marshal(back)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != want {
		t.Fatalf("re-encoded\n%s\nwant\n%s", again, want)
	}
}
