package poller_test

import (
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// traceID is the emulator's trace id form.
var traceID = regexp.MustCompile(`^[0-9a-f]{8}-0{24}$`)

func TestDoneJob(t *testing.T) {
	t.Parallel()
	f := setup(t, emulator.Config{})
	f.start()
	s := f.submit(0, urlPayload("products/1"))

	evs := f.final("0")
	if len(evs) != 1 {
		t.Fatalf("events = %+v, want one success", evs)
	}
	ev := evs[0]
	if ev.Outcome != oxytype.Success || ev.DataType != oxytype.DataDone || ev.APIJobID != s.APIJobID ||
		ev.Origin.Type != "poller" || ev.Run != run || ev.Upload != nil || string(ev.Payload) != string(s.Payload) {
		t.Fatalf("event = %+v, want a success at done for job %s", ev, s.APIJobID)
	}
	dones := f.dones()
	if len(dones) != 1 {
		t.Fatalf("Done messages = %d, want 1", len(dones))
	}
	d := dones[0]
	if d.Run != run || d.Doc != "0" || d.APIJobID != s.APIJobID || string(d.Payload) != string(s.Payload) || d.Status != messages.JobStatusDone {
		t.Fatalf("Done = %+v", d)
	}
	job, err := f.client.Status(t.Context(), s.APIJobID)
	if err != nil {
		t.Fatal(err)
	}
	if !d.FinishedAt.Equal(job.UpdatedAt) || d.FinishedAt.IsZero() {
		t.Fatalf("FinishedAt = %v, want the job's updated_at %v", d.FinishedAt, job.UpdatedAt)
	}
	if got := f.counter("oxy_poller_checks_total", map[string]string{"result": "done"}); got != 1 {
		t.Fatalf("done checks = %v, want 1", got)
	}
}

func TestPendingJobIsCheckedOnItsSchedule(t *testing.T) {
	t.Parallel()
	// A 3 s job at TimeScale 0.1 is done 300 ms after its submission; the
	// schedule checks at 100, 200 and 300 ms.
	f := setup(t, emulator.Config{JobTime: 3 * time.Second})
	f.start()
	s := f.submit(0, urlPayload("products/2"))

	evs := f.final("0")
	if elapsed := time.Since(s.SubmittedAt); elapsed > 2*time.Second {
		t.Errorf("done noticed after %v, want about 300ms", elapsed)
	}
	if len(evs) != 1 || evs[0].Outcome != oxytype.Success {
		t.Fatalf("events = %+v, want one success and no soft failure", evs)
	}
	checks := f.statusRequests()
	t.Logf("a 300 ms job: %d status requests, done seen %v after its submission", checks, evs[0].Time.Sub(s.SubmittedAt).Round(time.Millisecond))
	if checks < 1 || checks > 3 {
		t.Fatalf("status requests = %d, want at most 3 (checks at 100, 200, 300 ms)", checks)
	}
	// The first delivery (at once) waits without asking; every pending check
	// waits again: one wait per request.
	waits := f.counter("oxy_stage_messages_total", map[string]string{"stage": "poller", "outcome": "wait"})
	if int64(waits) != checks {
		t.Fatalf("waits = %v, want one per status request (%d)", waits, checks)
	}
	if got := f.counter("oxy_poller_checks_total", map[string]string{"result": "pending"}); int64(got) != checks-1 {
		t.Fatalf("pending checks = %v, want %d", got, checks-1)
	}
}

func TestFaultedJob(t *testing.T) {
	t.Parallel()
	f := setup(t, emulator.Config{Rules: []emulator.Rule{{Pattern: regexp.MustCompile(`faulty`), Outcome: emulator.Outcome{Fault: true}}}})
	f.start()
	s := f.submit(3, urlPayload("faulty"))

	evs := f.final("3")
	if len(evs) != 1 {
		t.Fatalf("events = %+v, want one hard failure", evs)
	}
	ev := evs[0]
	want := messages.StatusEvent{Outcome: oxytype.HardFailure, Facts: oxytype.Facts{State: oxytype.Faulted, APIJobID: s.APIJobID}, DataType: oxytype.DataSubmitted,
		Reason: "faulted", Consumer: oxytype.Party{Type: "poller", Name: "poller-test"}, Origin: submitter}
	if ev.Outcome != want.Outcome || ev.State != want.State || ev.DataType != want.DataType || ev.Reason != want.Reason ||
		ev.APIJobID != want.APIJobID || ev.Error != nil || ev.Consumer != want.Consumer || ev.Origin != want.Origin {
		t.Fatalf("event = %+v, want %+v with no error", ev, want)
	}
	if n := len(f.dones()); n != 0 {
		t.Fatalf("Done messages = %d, want none", n)
	}
	if got := f.api.Emulator.Stats().JobsCreated; got != 1 {
		t.Fatalf("jobs created = %d, want 1 (never resubmitted)", got)
	}
}

func TestNotFoundOnStatus(t *testing.T) {
	t.Parallel()
	f := setup(t, emulator.Config{Rules: []emulator.Rule{{Pattern: regexp.MustCompile(`gone`),
		Outcome: emulator.Outcome{StatusFailure: &emulator.Failure{Status: 404, Message: "Query not found."}}}}})
	f.start()
	s := f.submit(0, urlPayload("gone"))
	// A job id the API never issued gets the API's own 404.
	unknown := &messages.Submitted{Run: run, Doc: "1", APIJobID: "7599999999999999999", Payload: json.RawMessage(urlPayload("x")), SubmittedAt: time.Now()}
	f.publish(unknown)

	for doc, id := range map[string]string{"0": s.APIJobID, "1": unknown.APIJobID} {
		evs := f.final(doc)
		if len(evs) != 1 {
			t.Fatalf("doc %s: events = %+v, want one hard failure", doc, evs)
		}
		ev := evs[0]
		if ev.Outcome != oxytype.HardFailure || ev.State != oxytype.Unfetched || ev.APIJobID != id || ev.Error == nil {
			t.Fatalf("doc %s: event = %+v, want unfetched with an error", doc, ev)
		}
		if ev.Error.StatusCode == nil || *ev.Error.StatusCode != 404 || ev.Error.Message != "Query not found." || !traceID.MatchString(ev.Error.TraceID) {
			t.Fatalf("doc %s: error = %+v, want 404 \"Query not found.\" with the trace id", doc, *ev.Error)
		}
		if !strings.Contains(ev.Reason, "404 Query not found.") || !strings.Contains(ev.Reason, id) {
			t.Fatalf("doc %s: reason = %q", doc, ev.Reason)
		}
	}
	if got := f.counter("oxy_poller_checks_total", map[string]string{"result": "not_found"}); got != 2 {
		t.Fatalf("not_found checks = %v, want 2", got)
	}
}

func TestPendingLimit(t *testing.T) {
	t.Parallel()
	f := setup(t, emulator.Config{Rules: []emulator.Rule{{Pattern: regexp.MustCompile(`slow`), Outcome: emulator.Outcome{StayPending: true}}}})
	f.cfg.PendingLimit = 350 * time.Millisecond
	f.start()
	s := f.submit(0, urlPayload("slow"))

	evs := f.final("0")
	if len(evs) != 1 {
		t.Fatalf("events = %+v, want one hard failure", evs)
	}
	ev := evs[0]
	wantErr := oxytype.ErrorInfo{Message: "still pending after 350ms; stopped checking"}
	if ev.Outcome != oxytype.HardFailure || ev.State != oxytype.Unfetched || ev.APIJobID != s.APIJobID ||
		ev.Error == nil || !reflect.DeepEqual(*ev.Error, wantErr) {
		t.Fatalf("event = %+v (error %+v), want unfetched with %+v", ev, ev.Error, wantErr)
	}
	if elapsed := time.Since(s.SubmittedAt); elapsed < 350*time.Millisecond {
		t.Fatalf("gave up after %v, before the limit", elapsed)
	}
	// Checks at 100, 200, 300 ms and the last one at the limit.
	if got := f.statusRequests(); got > 4 {
		t.Fatalf("status requests = %d, want at most 4", got)
	}
}

func TestTransientFailuresAreRetried(t *testing.T) {
	t.Parallel()
	f := setup(t, emulator.Config{Rules: []emulator.Rule{{Pattern: regexp.MustCompile(`flaky`),
		Outcome: emulator.Outcome{StatusFailure: &emulator.Failure{Status: 500, Times: 2}}}}})
	f.start()
	s := f.submit(0, urlPayload("flaky"))

	evs := f.final("0")
	if len(evs) != 3 {
		t.Fatalf("events = %+v, want two soft failures and a success", evs)
	}
	for i, ev := range evs[:2] {
		if ev.Outcome != oxytype.SoftFailure || ev.DataType != oxytype.DataSubmitted || ev.Error == nil ||
			ev.Error.StatusCode == nil || *ev.Error.StatusCode != 500 || !traceID.MatchString(ev.Error.TraceID) {
			t.Fatalf("event %d = %+v (error %+v), want a soft failure with the 500", i, ev, ev.Error)
		}
	}
	if last := evs[2]; last.Outcome != oxytype.Success || last.DataType != oxytype.DataDone || last.APIJobID != s.APIJobID {
		t.Fatalf("last event = %+v, want a success at done", last)
	}
	if n := len(f.dones()); n != 1 {
		t.Fatalf("Done messages = %d, want 1", n)
	}
}

func TestExhaustedRetriesKeepTheLastError(t *testing.T) {
	t.Parallel()
	f := setup(t, emulator.Config{Rules: []emulator.Rule{{Pattern: regexp.MustCompile(`down`),
		Outcome: emulator.Outcome{StatusFailure: &emulator.Failure{Status: 503}}}}})
	f.cfg.Retry.MaxAttempts = 3
	f.start()
	s := f.submit(0, urlPayload("down"))

	evs := f.final("0")
	if len(evs) != 3 {
		t.Fatalf("events = %+v, want two soft failures and a hard one", evs)
	}
	last := evs[2]
	if last.Outcome != oxytype.HardFailure || last.State != oxytype.Unfetched || last.APIJobID != s.APIJobID || last.Error == nil {
		t.Fatalf("last event = %+v, want unfetched", last)
	}
	if last.Error.StatusCode == nil || *last.Error.StatusCode != 503 || last.Error.Message != "Service Unavailable" ||
		!traceID.MatchString(last.Error.TraceID) {
		t.Fatalf("error = %+v, want the last 503 with its trace id", *last.Error)
	}
	if !strings.Contains(last.Reason, "after 3 failed checks") || strings.Contains(last.Reason, "poison") {
		t.Fatalf("reason = %q, want the exhausted retries", last.Reason)
	}
}

func TestUnauthorizedCheckStopsTheJob(t *testing.T) {
	t.Parallel()
	f := setup(t, emulator.Config{Username: "user", Password: "right"})
	wrong, err := wsa.New(wsa.Config{BaseURL: f.api.URL, Username: "user", Password: "wrong"})
	if err != nil {
		t.Fatal(err)
	}
	f.cfg.API = wrong
	f.start()
	s := f.submit(0, urlPayload("products/4"))

	evs := f.final("0")
	if len(evs) != 1 {
		t.Fatalf("events = %+v, want one hard failure", evs)
	}
	ev := evs[0]
	if ev.Outcome != oxytype.HardFailure || ev.State != oxytype.Unfetched || ev.APIJobID != s.APIJobID ||
		ev.Error == nil || ev.Error.StatusCode == nil || *ev.Error.StatusCode != 401 {
		t.Fatalf("event = %+v (error %+v), want unfetched with the 401", ev, ev.Error)
	}
	if strings.Contains(ev.Reason, "wrong") || strings.Contains(ev.Error.Message, "wrong") {
		t.Fatalf("the password leaked: %q / %q", ev.Reason, ev.Error.Message)
	}
}

func TestMalformedMessagesDoNotStopThePoller(t *testing.T) {
	t.Parallel()
	f := setup(t, emulator.Config{})
	f.start()
	subject := messages.SubmittedSubject(run)
	bad := []*nats.Msg{
		{Subject: subject, Data: []byte("not json at all")},
		{Subject: subject, Data: []byte(`{"v":1,"run":"` + run + `","doc":"7","payload":{"source":"universal"}}`)}, // no job id
		{Subject: subject, Data: []byte(`{"v":1,"run":"` + run + `","doc":"8","api_job_id":"../../etc","payload":{}}`)},
	}
	for _, m := range bad {
		if _, err := f.js.PublishMsg(t.Context(), m); err != nil {
			t.Fatal(err)
		}
	}
	s := f.submit(0, urlPayload("products/5"))

	if evs := f.final("0"); evs[len(evs)-1].Outcome != oxytype.Success || evs[len(evs)-1].APIJobID != s.APIJobID {
		t.Fatalf("the good job after the bad messages: %+v", evs)
	}
	testutil.Eventuallyf(t, 5*time.Second, func() bool {
		hard := 0
		for _, ev := range f.events() {
			if ev.Outcome == oxytype.HardFailure {
				hard++
			}
		}
		return hard == 3
	}, "the three malformed messages are recorded as hard failures")
	for _, ev := range f.events() {
		switch {
		case ev.Outcome != oxytype.HardFailure:
		case ev.Doc == "7":
			if ev.State != oxytype.Unsubmitted || !strings.Contains(ev.Reason, `missing "api_job_id"`) {
				t.Errorf("doc 7: %+v", ev)
			}
		case ev.Doc == "8":
			if ev.State != oxytype.Unfetched || ev.Error == nil || ev.Error.Message != "invalid api job id" {
				t.Errorf("doc 8: %+v", ev)
			}
		case messages.IsUnknownDocID(ev.Doc):
			if !strings.Contains(ev.Reason, "malformed") {
				t.Errorf("undecodable message: %+v", ev)
			}
		default:
			t.Errorf("unexpected hard failure %+v", ev)
		}
	}
	if got := f.statusRequests(); got == 0 {
		t.Fatal("no status request at all")
	}
}

func TestUploadEntryIsCarried(t *testing.T) {
	t.Parallel()
	f := setup(t, emulator.Config{Rules: []emulator.Rule{
		// The entries appear 200 ms after the job finished.
		{Pattern: regexp.MustCompile(`stored-fault`), Outcome: emulator.Outcome{Fault: true, UploadDelay: 2 * time.Second}},
		{Pattern: regexp.MustCompile(`stored-denied`), Outcome: emulator.Outcome{UploadCode: 13103, UploadDelay: 2 * time.Second}},
		{Pattern: regexp.MustCompile(`stored`), Outcome: emulator.Outcome{UploadDelay: 2 * time.Second}},
	}})
	f.start()
	stored := func(path string) string {
		return `{"source":"universal","url":"https://sandbox.oxylabs.io/` + path + `","storage_type":"s3","storage_url":"s3://bucket/results"}`
	}
	ok := f.submit(0, stored("stored"))
	faulted := f.submit(1, stored("stored-fault"))
	denied := f.submit(2, stored("stored-denied"))

	cases := []struct {
		s       *messages.Submitted
		outcome oxytype.Outcome
		upload  oxytype.Upload
	}{
		{ok, oxytype.Success, oxytype.Upload{Code: 13000, Message: "Upload Successful"}},
		{faulted, oxytype.HardFailure, oxytype.Upload{Code: 13000, Message: "Upload Successful"}},
		{denied, oxytype.Success, oxytype.Upload{Code: 13103, Message: "Access Denied"}},
	}
	for _, c := range cases {
		evs := f.final(c.s.Doc)
		if len(evs) != 1 {
			t.Fatalf("doc %s: events = %+v, want one", c.s.Doc, evs)
		}
		ev := evs[0]
		if ev.Outcome != c.outcome || ev.APIJobID != c.s.APIJobID || ev.Upload == nil || *ev.Upload != c.upload {
			t.Fatalf("doc %s: event = %+v (upload %+v), want %s with %+v", c.s.Doc, ev, ev.Upload, c.outcome, c.upload)
		}
		if c.outcome == oxytype.HardFailure && (ev.State != oxytype.Faulted || ev.Error != nil || ev.Reason != "faulted" ||
			ev.Consumer.Type != "poller" || ev.Origin != submitter || ev.DataType != oxytype.DataSubmitted) {
			t.Fatalf("doc %s: faulted event = %+v", c.s.Doc, ev)
		}
	}
	if n := len(f.dones()); n != 2 {
		t.Fatalf("Done messages = %d, want 2 (the faulted job has none)", n)
	}
}

func TestNoUploadEntryInTimeIsAFailedUpload(t *testing.T) {
	t.Parallel()
	f := setup(t, emulator.Config{Rules: []emulator.Rule{
		{Pattern: regexp.MustCompile(`late`), Outcome: emulator.Outcome{UploadDelay: time.Hour}},
	}})
	f.cfg.UploadWait = 500 * time.Millisecond
	f.start()
	s := f.submit(0, `{"source":"universal","url":"https://sandbox.oxylabs.io/late","storage_type":"s3","storage_url":"s3://bucket/results"}`)
	evs := f.final(s.Doc)
	if len(evs) != 1 {
		t.Fatalf("events = %+v, want one", evs)
	}
	want := oxytype.Upload{Code: 0, Message: "no upload entry within 500ms after the job finished"}
	if ev := evs[0]; ev.Outcome != oxytype.Success || ev.Upload == nil || *ev.Upload != want {
		t.Fatalf("event = %+v (upload %+v), want a success with %+v", ev, ev.Upload, want)
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	f := setup(t, emulator.Config{})
	cases := map[string]func(){
		"no API":                func() { f.cfg.API = nil },
		"negative limit":        func() { f.cfg.PendingLimit = -5 * time.Second },
		"until before first":    func() { f.cfg.Schedule = fastSchedule(); f.cfg.Schedule.Until = 50 * time.Millisecond },
		"limit over maxdeliver": func() { f.cfg.Schedule = fastSchedule(); f.cfg.PendingLimit = 24 * time.Hour },
	}
	base := f.cfg
	for name, change := range cases {
		f.cfg = base
		change()
		if p, err := newPoller(f); err == nil {
			t.Errorf("%s: New succeeded with %+v", name, p.Config())
		}
	}
	f.cfg = base
	f.cfg.PendingLimit = -1 // NoPendingLimit
	if _, err := newPoller(f); err != nil {
		t.Fatalf("NoPendingLimit: %v", err)
	}
}
