package submitter_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/oxypipe/oxypipe/internal/submitter"
	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// Every test runs the real nats-server and the project's API emulator in
// process and asserts what a run would show: the status events on
// OXY_STATUS, the Submitted messages, the claims, and what the emulator
// billed.

// unknownOutcomeErrorText is the run-log error of every payload whose
// submission's outcome is unknown.
const unknownOutcomeErrorText = "the outcome of this payload's submission is unknown: a submitter claimed it and never recorded " +
	"the API's answer (it most likely stopped inside the request); the API may have created (and billed) a job, so it is not resubmitted automatically"

func TestSubmitsAPayloadOnce(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	body := json.RawMessage(`{"source":"universal","url":"https://user:secret@example.com/a?x=<1>&y=2"}`)
	e.feed(0, body)
	e.start()
	evs := e.settled()

	if len(evs) != 1 || evs[0].Outcome != oxytype.Success || evs[0].DataType != oxytype.DataSubmitted {
		t.Fatalf("events = %+v, want one success at submitted", evs)
	}
	ev := evs[0]
	if len(ev.APIJobID) != 19 || ev.Doc != "0" || ev.Run != run || ev.Origin.Type != "submitter" || ev.Origin.Name != "test-pod" {
		t.Fatalf("success event = %+v", ev)
	}
	if !strings.Contains(string(ev.Payload), "redacted:redacted") || strings.Contains(string(ev.Payload), "secret") {
		t.Fatalf("event payload not redacted: %s", ev.Payload)
	}
	subs := e.submitted()
	if len(subs) != 1 || subs[0].APIJobID != ev.APIJobID || !sameJSON(t, subs[0].Payload, body) || subs[0].SubmittedAt.IsZero() {
		t.Fatalf("Submitted = %+v, want the job %s with the payload unchanged", subs, ev.APIJobID)
	}
	c := e.claim(0)
	if c == nil || c.State != messages.ClaimSubmitted || c.APIJobID != ev.APIJobID || c.By != "test-pod" {
		t.Fatalf("claim = %+v", c)
	}
	if e.jobs() != 1 || e.requests(emulator.EndpointSubmit) != 1 || e.requests(emulator.EndpointBatch) != 0 {
		t.Fatalf("jobs %d, submit requests %d, batch requests %d; want 1, 1, 0",
			e.jobs(), e.requests(emulator.EndpointSubmit), e.requests(emulator.EndpointBatch))
	}
}

func TestRedeliveredPayloadWithAJobIDIsNotResubmitted(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	e.feedUniversal(0, 1)
	e.start()
	e.settled()
	first := e.submitted()
	if len(first) != 1 || e.jobs() != 1 {
		t.Fatalf("first delivery: %d Submitted, %d jobs", len(first), e.jobs())
	}
	// The same message again, as after a crash between publishing and acking.
	e.publish(&messages.Payload{Run: run, Doc: "0", Payload: universal(0)}, false)
	testutil.Eventually(t, 10*time.Second, "a second success", func() bool { return len(e.eventsOf("0", oxytype.Success)) == 2 })
	e.settled()

	if e.jobs() != 1 || e.requests(emulator.EndpointSubmit) != 1 {
		t.Fatalf("billed %d jobs in %d requests, want 1 and 1", e.jobs(), e.requests(emulator.EndpointSubmit))
	}
	ok := e.eventsOf("0", oxytype.Success)
	if ok[1].APIJobID != first[0].APIJobID {
		t.Fatalf("republished success has job %s, want %s", ok[1].APIJobID, first[0].APIJobID)
	}
	// Republished with the same message id: the broker kept one copy.
	if subs := e.submitted(); len(subs) != 1 || subs[0].APIJobID != first[0].APIJobID {
		t.Fatalf("Submitted messages = %+v, want the one first published", subs)
	}
}

func TestAJobIDStoredBeforeACrashIsPublishedFromTheClaim(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	ctx := context.Background()
	// A submitter stored the job id and died before publishing Submitted.
	at := time.Now().Add(-time.Minute).UTC()
	ref, err := e.topo.Claims().Acquire(ctx, run, "0", 0, "dead-pod", at)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.topo.Claims().MarkSubmitted(ctx, ref, "7500000000000000042", at); err != nil {
		t.Fatal(err)
	}
	e.feedUniversal(0, 1)
	e.start()
	evs := e.settled()

	if len(evs) != 1 || evs[0].Outcome != oxytype.Success || evs[0].APIJobID != "7500000000000000042" {
		t.Fatalf("events = %+v, want one success with the claim's job", evs)
	}
	subs := e.submitted()
	if len(subs) != 1 || subs[0].APIJobID != "7500000000000000042" || !subs[0].SubmittedAt.Equal(at) {
		t.Fatalf("Submitted = %+v", subs)
	}
	if n := e.requests(emulator.EndpointSubmit) + e.requests(emulator.EndpointBatch); n != 0 {
		t.Fatalf("%d requests, want none", n)
	}
}

func TestAStaleClaimWithoutAJobIDIsAnUnknownOutcome(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	// A submitter claimed the doc an hour ago and died inside its request.
	claimedAt := time.Date(2026, 9, 29, 17, 4, 12, 345000000, time.UTC)
	if _, err := e.topo.Claims().Acquire(context.Background(), run, "0", 0, "dead-pod", claimedAt); err != nil {
		t.Fatal(err)
	}
	e.feedUniversal(0, 1)
	e.start()
	evs := e.settled()

	if len(evs) != 1 || evs[0].Outcome != oxytype.HardFailure || evs[0].State != oxytype.Unsubmitted || evs[0].Error == nil {
		t.Fatalf("events = %+v, want one hard failure unsubmitted", evs)
	}
	// The run log's error is the same for every such payload (a report
	// groups them); the reason names the claimant and the time.
	if got := evs[0].Error.Message; got != unknownOutcomeErrorText {
		t.Errorf("error message %q, want %q", got, unknownOutcomeErrorText)
	}
	for _, want := range []string{"outcome of this payload's submission is unknown", "dead-pod", "2026-09-29T17:04:12.345Z", "may have created (and billed) a job", "not resubmitted"} {
		if !strings.Contains(evs[0].Reason, want) {
			t.Errorf("reason %q lacks %q", evs[0].Reason, want)
		}
	}
	if evs[0].Error.StatusCode != nil {
		t.Errorf("status code = %d, want null", *evs[0].Error.StatusCode)
	}
	if n := e.requests(emulator.EndpointSubmit) + e.requests(emulator.EndpointBatch); n != 0 || e.jobs() != 0 {
		t.Fatalf("%d requests and %d jobs, want none", n, e.jobs())
	}
	if c := e.claim(0); c == nil || c.State != messages.ClaimHeld || c.By != "dead-pod" {
		t.Fatalf("claim = %+v, want it left as it was", c)
	}
}

func TestAYoungClaimIsWaitedForUntilItsHolderStoresTheJob(t *testing.T) {
	t.Parallel()
	e := setup(t, options{maxDeliver: 100})
	ctx := context.Background()
	ref, err := e.topo.Claims().Acquire(ctx, run, "0", 0, "busy-pod", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	e.feedUniversal(0, 1)
	e.start()
	testutil.Eventually(t, 10*time.Second, "the payload waited twice", func() bool { return e.counter("oxy_submitter_payloads_total", "wait") >= 2 })
	if n := len(e.events()); n != 0 {
		t.Fatalf("%d events while waiting, want none", n)
	}
	// The holder's request returns and it stores the job id.
	if err := e.topo.Claims().MarkSubmitted(ctx, ref, "7500000000000000077", time.Now()); err != nil {
		t.Fatal(err)
	}
	evs := e.settled()
	if len(evs) != 1 || evs[0].Outcome != oxytype.Success || evs[0].APIJobID != "7500000000000000077" {
		t.Fatalf("events = %+v, want the holder's job as a success", evs)
	}
	if n := e.requests(emulator.EndpointSubmit) + e.requests(emulator.EndpointBatch); n != 0 {
		t.Fatalf("%d requests, want none", n)
	}
}

func TestLocalValidationRejectsWithoutARequest(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	e.feed(0, json.RawMessage(`{"source":"universal","url":"https://127.0.0.1/x"}`))
	e.start()
	evs := e.settled()

	if len(evs) != 1 || evs[0].Outcome != oxytype.HardFailure || evs[0].State != oxytype.Rejected || evs[0].DataType != oxytype.DataPayload {
		t.Fatalf("events = %+v, want one rejection at payload", evs)
	}
	if info := evs[0].Error; info == nil || info.StatusCode != nil || info.Message != "The hostname cannot be an ip address." {
		t.Fatalf("error = %+v, want the validation message without a status code", info)
	}
	if evs[0].Consumer.Type != "submitter" || evs[0].Origin != feeder {
		t.Fatalf("consumer %v, origin %v", evs[0].Consumer, evs[0].Origin)
	}
	if n := e.requests(emulator.EndpointSubmit) + e.requests(emulator.EndpointBatch); n != 0 || e.claim(0) != nil {
		t.Fatalf("%d requests, claim %+v; want none", n, e.claim(0))
	}
}

func TestAn400IsRejectedWithItsStatusAndMessage(t *testing.T) {
	t.Parallel()
	e := setup(t, options{emulator: emulator.Config{Rules: []emulator.Rule{{
		Pattern: regexp.MustCompile(`/item/0$`),
		Outcome: emulator.Outcome{Reject: &emulator.Rejection{Status: 400, Message: "Parameter `geo_location` with value `United States` is not valid."}},
	}}}})
	e.feedUniversal(0, 1)
	e.start()
	evs := e.settled()

	if len(evs) != 1 || evs[0].State != oxytype.Rejected || evs[0].Error == nil || evs[0].Error.StatusCode == nil {
		t.Fatalf("events = %+v, want one rejection with a status code", evs)
	}
	if info := evs[0].Error; *info.StatusCode != 400 || info.Message != "Parameter `geo_location` with value `United States` is not valid." || info.TraceID == "" {
		t.Fatalf("error = %d %q trace %q", *info.StatusCode, info.Message, info.TraceID)
	}
	if c := e.claim(0); c == nil || c.State != messages.ClaimReleased {
		t.Fatalf("claim = %+v, want released", c)
	}
	if e.jobs() != 0 || e.requests(emulator.EndpointSubmit) != 1 {
		t.Fatalf("jobs %d, requests %d; want 0 and 1", e.jobs(), e.requests(emulator.EndpointSubmit))
	}
}

func TestPayloadsDifferingOnlyInTheirURLGoAsOneBatch(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	e.feedUniversal(0, 10)
	e.start()
	evs := e.settled()

	if e.requests(emulator.EndpointBatch) != 1 || e.requests(emulator.EndpointSubmit) != 0 || e.jobs() != 10 {
		t.Fatalf("batch requests %d, single requests %d, jobs %d; want 1, 0, 10; events %+v",
			e.requests(emulator.EndpointBatch), e.requests(emulator.EndpointSubmit), e.jobs(), evs)
	}
	if len(evs) != 10 {
		t.Fatalf("%d events, want 10", len(evs))
	}
	jobs := map[string]string{}
	for _, s := range e.submitted() {
		var p struct{ URL string }
		if err := json.Unmarshal(s.Payload, &p); err != nil {
			t.Fatal(err)
		}
		doc := mustDoc(t, s.Doc)
		if p.URL != url(doc) {
			t.Errorf("doc %s carries %s", s.Doc, p.URL)
		}
		jobs[s.Doc] = s.APIJobID
	}
	if len(jobs) != 10 {
		t.Fatalf("Submitted for %d docs, want 10", len(jobs))
	}
	for doc, job := range jobs {
		if c := e.claim(mustDoc(t, doc)); c == nil || c.APIJobID != job {
			t.Errorf("doc %s: claim %+v, Submitted job %s", doc, c, job)
		}
		if n := e.api.Emulator.Stats().CreatedByInput[url(mustDoc(t, doc))]; n != 1 {
			t.Errorf("doc %s billed %d times", doc, n)
		}
	}
}

func TestABatchAcceptedInPart(t *testing.T) {
	t.Parallel()
	const refused = "Parameter `url` is invalid."
	e := setup(t, options{emulator: emulator.Config{Rules: []emulator.Rule{{
		Pattern: regexp.MustCompile(`/item/[147]$`),
		Outcome: emulator.Outcome{Reject: &emulator.Rejection{Message: refused}},
	}}}})
	e.feedUniversal(0, 10)
	e.start()
	e.settled()

	if e.requests(emulator.EndpointBatch) != 1 || e.requests(emulator.EndpointSubmit) != 0 || e.jobs() != 7 {
		t.Fatalf("batch requests %d, single requests %d, jobs %d; want 1, 0, 7",
			e.requests(emulator.EndpointBatch), e.requests(emulator.EndpointSubmit), e.jobs())
	}
	for i := range 10 {
		doc := messages.DocID(i)
		ok, failed := e.eventsOf(doc, oxytype.Success), e.eventsOf(doc, oxytype.HardFailure)
		if i == 1 || i == 4 || i == 7 {
			if len(ok) != 0 || len(failed) != 1 || failed[0].State != oxytype.Rejected || failed[0].Error == nil ||
				failed[0].Error.StatusCode == nil || *failed[0].Error.StatusCode != 202 || failed[0].Error.Message != refused {
				t.Errorf("doc %s: successes %+v, failures %+v; want one rejection with 202", doc, ok, failed)
			}
			if c := e.claim(i); c == nil || c.State != messages.ClaimReleased {
				t.Errorf("doc %s: claim %+v, want released", doc, c)
			}
			continue
		}
		if len(ok) != 1 || len(failed) != 0 || e.claim(i).APIJobID != ok[0].APIJobID {
			t.Errorf("doc %s: successes %+v, failures %+v", doc, ok, failed)
		}
	}
	if n := len(e.submitted()); n != 7 {
		t.Fatalf("%d Submitted, want 7", n)
	}
}

func TestASourceThatTakesNoBatchesFallsBackToSingles(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	walmart := func(i int) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"source":"walmart_search","query":"shoes %d"}`, i))
	}
	for i := range 3 {
		e.feed(i, walmart(i))
	}
	e.start()
	e.settled()
	if e.requests(emulator.EndpointBatch) != 1 || e.requests(emulator.EndpointSubmit) != 3 || e.jobs() != 3 || e.count(oxytype.Success) != 3 {
		t.Fatalf("batch %d, single %d, jobs %d, successes %d; want 1, 3, 3, 3",
			e.requests(emulator.EndpointBatch), e.requests(emulator.EndpointSubmit), e.jobs(), e.count(oxytype.Success))
	}
	// The source is remembered: no more batch attempts.
	for i := 3; i < 6; i++ {
		e.feed(i, walmart(i))
	}
	testutil.Eventually(t, 10*time.Second, "six successes", func() bool { return e.count(oxytype.Success) == 6 })
	e.settled()
	if e.requests(emulator.EndpointBatch) != 1 || e.requests(emulator.EndpointSubmit) != 6 || e.jobs() != 6 {
		t.Fatalf("batch %d, single %d, jobs %d; want 1, 6, 6",
			e.requests(emulator.EndpointBatch), e.requests(emulator.EndpointSubmit), e.jobs())
	}
	if n := e.count(oxytype.HardFailure) + e.count(oxytype.SoftFailure); n != 0 {
		t.Fatalf("%d failures, want none", n)
	}
}

func TestA429IsRetriedAndBilledOnce(t *testing.T) {
	t.Parallel()
	e := setup(t, options{emulator: emulator.Config{Faults: []emulator.Fault{{
		On: []emulator.Endpoint{emulator.EndpointSubmit}, Failure: emulator.Failure{Status: 429, Times: 1},
	}}}})
	e.feedUniversal(0, 1)
	e.start()
	evs := e.settled()

	if len(evs) != 2 || evs[0].Outcome != oxytype.SoftFailure || evs[1].Outcome != oxytype.Success {
		t.Fatalf("events = %+v, want a soft failure then a success", evs)
	}
	if info := evs[0].Error; info == nil || info.StatusCode == nil || *info.StatusCode != 429 || evs[0].DataType != oxytype.DataPayload {
		t.Fatalf("soft failure = %+v", evs[0])
	}
	if e.jobs() != 1 || e.requests(emulator.EndpointSubmit) != 2 {
		t.Fatalf("jobs %d in %d requests, want 1 in 2", e.jobs(), e.requests(emulator.EndpointSubmit))
	}
	if n := e.logged("may have created"); n != 0 {
		t.Fatalf("%d duplicate-billing warnings after a 429, want none", n)
	}
}

func TestA401StopsTheRun(t *testing.T) {
	t.Parallel()
	e := setup(t, options{emulator: emulator.Config{Username: "user", Password: "right"}, password: "wrong"})
	e.createRun(oxytype.RunStateReady, "")
	e.feedUniversal(0, 3)
	e.start()
	evs := e.settled()

	const reason = "Stopped submitting, because the API returned 401 Unauthorized"
	if len(evs) != 3 {
		t.Fatalf("events = %+v, want 3", evs)
	}
	for _, ev := range evs {
		if ev.Outcome != oxytype.HardFailure || ev.State != oxytype.Unsubmitted || ev.Reason != reason ||
			ev.Error == nil || ev.Error.StatusCode == nil || *ev.Error.StatusCode != 401 {
			t.Errorf("event = %+v, want unsubmitted with the 401", ev)
		}
	}
	if rec := e.runRecord(); rec.State != oxytype.RunStateStopping || rec.Reason != reason ||
		rec.Stop == nil || rec.Stop.Cause != messages.StopBySubmission || !rec.Stop.Deadline.After(rec.Stop.At) {
		t.Fatalf("run record %s %q %+v, want stopping with %q, by submission, with a deadline", rec.State, rec.Reason, rec.Stop, reason)
	}
	if n := e.logged(reason); n != 1 {
		t.Fatalf("the stop was logged %d times, want once", n)
	}
	// The rest of the run is recorded without hammering the API.
	before := e.api.Emulator.Stats().Unauthorized
	e.feedUniversal(3, 6)
	testutil.Eventually(t, 10*time.Second, "six failures", func() bool { return e.count(oxytype.HardFailure) == 6 })
	e.settled()
	for i := 3; i < 6; i++ {
		f := e.eventsOf(messages.DocID(i), oxytype.HardFailure)
		if len(f) != 1 || f[0].State != oxytype.Unsubmitted || f[0].Error == nil ||
			f[0].Error.Message != reason {
			t.Errorf("doc %d: %+v", i, f)
		}
	}
	if after := e.api.Emulator.Stats().Unauthorized; after != before || before != 1 {
		t.Fatalf("401s before %d, after %d; want 1 and 1", before, after)
	}
	if e.logged(reason) != 1 {
		t.Fatal("the stop was logged again")
	}
}

func TestADomainThrottleIsNeverRetried(t *testing.T) {
	t.Parallel()
	e := setup(t, options{emulator: emulator.Config{Rules: []emulator.Rule{{Outcome: emulator.Outcome{Throttle: true}}}}})
	e.feedUniversal(0, 1)
	e.start()
	evs := e.settled()

	if len(evs) != 1 || evs[0].State != oxytype.Unsubmitted || evs[0].Error == nil || evs[0].Error.StatusCode == nil ||
		*evs[0].Error.StatusCode != 429 || !strings.Contains(evs[0].Error.Message, "has been limited to 1 req/s") ||
		evs[0].Error.MayHaveBilled {
		t.Fatalf("events = %+v, want one unsubmitted with the throttle", evs)
	}
	if e.requests(emulator.EndpointSubmit) != 1 || e.jobs() != 0 {
		t.Fatalf("%d requests, %d jobs; want 1 and 0", e.requests(emulator.EndpointSubmit), e.jobs())
	}
	if c := e.claim(0); c == nil || c.State != messages.ClaimReleased {
		t.Fatalf("claim = %+v, want released", c)
	}
}

func TestExhaustedRetriesAreUnsubmittedWithTheLastError(t *testing.T) {
	t.Parallel()
	// 429s of the rate limit create no job: the payload is sent again until
	// its deliveries run out, and ends unsubmitted, not marked.
	e := setup(t, options{maxDeliver: 3, emulator: emulator.Config{Faults: []emulator.Fault{{
		On: []emulator.Endpoint{emulator.EndpointSubmit}, Failure: emulator.Failure{Status: 429},
	}}}})
	e.feedUniversal(0, 1)
	e.start()
	evs := e.settled()

	if len(evs) != 3 || evs[0].Outcome != oxytype.SoftFailure || evs[1].Outcome != oxytype.SoftFailure || evs[2].Outcome != oxytype.HardFailure {
		t.Fatalf("events = %+v, want two soft failures and a hard one", evs)
	}
	last := evs[2]
	if last.State != oxytype.Unsubmitted || !strings.HasPrefix(last.Reason, "gave up after 3 deliveries: submitting universal "+url(0)+" failed: 429") ||
		strings.Contains(last.Reason, "poison") || last.Error == nil || last.Error.StatusCode == nil || *last.Error.StatusCode != 429 {
		t.Fatalf("last event = %+v", last)
	}
	if last.Error.MayHaveBilled {
		t.Fatalf("last error %+v is marked as possibly billed after 429s only", last.Error)
	}
	if e.requests(emulator.EndpointSubmit) != 3 || e.jobs() != 0 {
		t.Fatalf("%d requests, %d jobs; want 3 and 0", e.requests(emulator.EndpointSubmit), e.jobs())
	}
	if c := e.claim(0); c == nil || c.State != messages.ClaimReleased || c.MayHaveBilled {
		t.Fatalf("claim = %+v, want released, unmarked", c)
	}
	if n := e.logged("Retrying a submission"); n != 0 {
		t.Fatalf("%d duplicate-billing warnings after 429s, want none", n)
	}
}

func TestAStoppedRunsPayloadsAreNotSubmitted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		state oxytype.RunState
		want  string
	}{
		{"stopped by the user", oxytype.RunStateStopping, "the run was stopped before this payload was submitted (stopped by the user)"},
		// A payload delivered after its run completed (a stopped run is
		// completed at its deadline with payloads still queued) would bill
		// with no run log left to record it.
		{"already completed", oxytype.RunStateCompleted, "the run had ended before this payload was submitted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, options{})
			e.createRun(tc.state, "stopped by the user")
			e.feedUniversal(0, 2)
			e.start()
			evs := e.settled()

			if len(evs) != 2 {
				t.Fatalf("events = %+v, want 2", evs)
			}
			for _, ev := range evs {
				if ev.State != oxytype.Unsubmitted || ev.Error == nil || ev.Error.StatusCode != nil || ev.Error.Message != tc.want {
					t.Errorf("event = %+v, want unsubmitted with %q", ev, tc.want)
				}
			}
			if n := e.requests(emulator.EndpointSubmit) + e.requests(emulator.EndpointBatch); n != 0 || e.claim(0) != nil {
				t.Fatalf("%d requests, claim %+v; want none", n, e.claim(0))
			}
		})
	}
}

func TestAMalformedMessageIsAHardFailureAndTheWorkerGoesOn(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	bad := nats.NewMsg(messages.PayloadSubject(run))
	bad.Data = []byte(`{"v":1,"run":"` + run + `","doc":"0","payload":"not an object"}`)
	if _, err := e.js.PublishMsg(context.Background(), bad); err != nil {
		t.Fatal(err)
	}
	junk := nats.NewMsg(messages.PayloadSubject(run))
	junk.Data = []byte(`}{`)
	if _, err := e.js.PublishMsg(context.Background(), junk); err != nil {
		t.Fatal(err)
	}
	e.feedUniversal(1, 2)
	e.start()
	evs := e.settled()

	if len(evs) != 3 {
		t.Fatalf("events = %+v, want 3", evs)
	}
	byDoc := map[string]messages.StatusEvent{}
	var unknown []messages.StatusEvent
	for _, ev := range evs {
		if messages.IsUnknownDocID(ev.Doc) {
			unknown = append(unknown, ev)
			continue
		}
		byDoc[ev.Doc] = ev
	}
	if ev := byDoc["0"]; ev.Outcome != oxytype.HardFailure || ev.State != oxytype.Unsubmitted ||
		!strings.Contains(ev.Reason, `"payload" must be a JSON object`) {
		t.Errorf("doc 0 (payload not an object): %+v", ev)
	}
	if len(unknown) != 1 || unknown[0].Outcome != oxytype.HardFailure || !strings.Contains(unknown[0].Reason, "invalid JSON") {
		t.Errorf("undecodable message: %+v", unknown)
	}
	if ev := byDoc["1"]; ev.Outcome != oxytype.Success {
		t.Errorf("doc 1: %+v", ev)
	}
	if e.jobs() != 1 {
		t.Fatalf("%d jobs, want 1", e.jobs())
	}
}

func TestDuplicatePayloadMessagesAreBilledOnce(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	for range 3 {
		e.publish(&messages.Payload{Run: run, Doc: "0", Payload: universal(0)}, false)
	}
	e.feedUniversal(1, 3)
	e.publish(&messages.Payload{Run: run, Doc: "2", Payload: universal(2)}, false)
	e.start()
	e.settled()

	if e.jobs() != 3 {
		t.Fatalf("%d jobs, want 3", e.jobs())
	}
	for i, copies := range []int{3, 1, 2} {
		ok := e.eventsOf(messages.DocID(i), oxytype.Success)
		if len(ok) != copies {
			t.Fatalf("doc %d: %d successes, want %d", i, len(ok), copies)
		}
		for _, ev := range ok {
			if ev.APIJobID != e.claim(i).APIJobID {
				t.Errorf("doc %d: success with job %s, claim holds %s", i, ev.APIJobID, e.claim(i).APIJobID)
			}
		}
	}
	if n := len(e.submitted()); n != 3 {
		t.Fatalf("%d Submitted, want one per doc", n)
	}
	if n := e.count(oxytype.HardFailure) + e.count(oxytype.SoftFailure); n != 0 {
		t.Fatalf("%d failures, want none", n)
	}
}

func TestADeadLetterWithAHeldClaimSaysTheOutcomeIsUnknown(t *testing.T) {
	t.Parallel()
	e := setup(t, options{maxDeliver: 3})
	// A claim left an hour ago: stale.
	if _, err := e.topo.Claims().Acquire(context.Background(), run, "0", 0, "stuck-pod", time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	e.feedUniversal(0, 1)
	e.spendDeliveries(3)
	e.start()
	evs := e.settled()

	if len(evs) != 1 || evs[0].State != oxytype.Unsubmitted || evs[0].Error == nil ||
		!strings.Contains(evs[0].Reason, "outcome of this payload's submission is unknown: stuck-pod claimed it") ||
		evs[0].Error.Message != unknownOutcomeErrorText {
		t.Fatalf("events = %+v, want an unknown outcome", evs)
	}
	if n := e.requests(emulator.EndpointSubmit) + e.requests(emulator.EndpointBatch); n != 0 {
		t.Fatalf("%d requests, want none", n)
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	for name, change := range map[string]func(*submitter.Config){
		"no API client":            func(c *submitter.Config) { c.API = nil },
		"no topology":              func(c *submitter.Config) { c.Topology = nil },
		"batch of one":             func(c *submitter.Config) { c.MaxBatch = 1 },
		"batch above 5000":         func(c *submitter.Config) { c.MaxBatch = 5001 },
		"request outlasts call":    func(c *submitter.Config) { c.SubmitTimeout = c.Stage.Consumer.HandlerTimeout },
		"claims go stale early":    func(c *submitter.Config) { c.ClaimStaleAfter = time.Second },
		"another stage's settings": func(c *submitter.Config) { c.Stage.Consumer.Stage = "poller" },
	} {
		cfg := e.cfg
		cfg.Stage.Registerer = nil
		change(&cfg)
		if _, err := submitter.New(cfg); err == nil {
			t.Errorf("%s: New accepted the config", name)
		}
	}
}

// sameJSON reports whether two JSON texts hold the same value (the
// envelopes' encoder escapes <, > and & inside strings).
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(x, y)
}

func mustDoc(t *testing.T, doc string) int {
	t.Helper()
	n, err := messages.ParseDocID(doc)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// counter reads a counter of the submitter's registry by its outcome label.
func (e *env) counter(name, outcome string) float64 {
	e.t.Helper()
	return e.metric(name, "outcome", outcome)
}

func TestPacedSubmissionsStayWithinTheRateLimitAndBillOnce(t *testing.T) {
	t.Parallel()
	e := setup(t, options{emulator: emulator.Config{RateWindow: 200 * time.Millisecond}, configure: func(c *submitter.Config) {
		c.Pacer.Window = 200 * time.Millisecond
	}})
	for i := range 40 {
		e.feed(i, json.RawMessage(fmt.Sprintf(`{"source":"walmart_search","query":"shoes %d"}`, i)))
	}
	e.feedUniversal(40, 160)
	e.start()
	testutil.Eventually(t, 20*time.Second, "160 successes", func() bool { return e.count(oxytype.Success) == 160 })
	e.settled()

	// The pacer keeps within the budget; a window it opens before the API
	// opens its own can still overlap by a request under heavy load (the
	// race detector), and a 429 is only a retry, so a few are tolerated.
	st := e.api.Emulator.Stats()
	if st.RateLimited > 2 || st.JobsCreated != 160 {
		t.Fatalf("%d 429s, %d jobs; want at most 2 and 160", st.RateLimited, st.JobsCreated)
	}
	// Universal payloads went in batches of at most the limit (50).
	if n := e.requests(emulator.EndpointBatch); n < 3 || n > 6 {
		t.Fatalf("%d batch requests for 120 batchable payloads and one probe of walmart_search, want 3-6", n)
	}
	for i := range 160 {
		if n := len(e.eventsOf(messages.DocID(i), oxytype.Success)); n != 1 {
			t.Fatalf("doc %d: %d successes", i, n)
		}
	}
	for input, n := range st.CreatedByInput {
		if n != 1 {
			t.Fatalf("%s billed %d times", input, n)
		}
	}
}

func TestADrainReleasesWhatWasNotSentAndARestartFinishesOnce(t *testing.T) {
	t.Parallel()
	e := setup(t, options{emulator: emulator.Config{RateLimit: 1, RateWindow: 300 * time.Millisecond}, configure: func(c *submitter.Config) {
		c.Pacer = wsa.PacerConfig{Limit: 1, Window: 300 * time.Millisecond}
		c.DisableBatch = true
	}})
	e.feedUniversal(0, 6)
	stop := e.start()
	testutil.Eventually(t, 10*time.Second, "a first success", func() bool { return e.count(oxytype.Success) >= 1 })
	began := time.Now()
	if err := stop(); err != nil {
		t.Fatalf("Run returned %v, want nil", err)
	}
	if d := time.Since(began); d > 3*time.Second {
		t.Fatalf("draining took %v", d)
	}
	done := e.count(oxytype.Success)
	if done == 6 {
		t.Fatal("every payload was submitted before the drain began; the test did not drain anything")
	}
	if int(e.jobs()) != done || e.pending() != 6-done {
		t.Fatalf("after the drain: %d jobs, %d successes, %d payloads left", e.jobs(), done, e.pending())
	}
	for i := range 6 {
		c := e.claim(i)
		ok := e.eventsOf(messages.DocID(i), oxytype.Success)
		switch {
		case len(ok) == 1 && c != nil && c.State == messages.ClaimSubmitted && c.APIJobID == ok[0].APIJobID:
		case len(ok) == 0 && (c == nil || c.State == messages.ClaimReleased):
		default:
			t.Fatalf("doc %d after the drain: claim %+v, successes %+v", i, c, ok)
		}
	}
	if n := e.count(oxytype.HardFailure) + e.count(oxytype.SoftFailure); n != 0 {
		t.Fatalf("%d failures recorded by the drain, want none", n)
	}

	// A new submitter (the pod restarted) finishes the run, billing each once.
	again, err := submitter.New(e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.sub = again
	e.start()
	testutil.Eventually(t, 10*time.Second, "six successes", func() bool { return e.count(oxytype.Success) == 6 })
	e.settled()
	if e.jobs() != 6 {
		t.Fatalf("%d jobs, want 6", e.jobs())
	}
	for i := range 6 {
		if n := e.api.Emulator.Stats().CreatedByInput[url(i)]; n != 1 {
			t.Fatalf("doc %d billed %d times", i, n)
		}
	}
}

func TestADeadLetterWhoseClaimHoldsAJobIsTheJobsSuccess(t *testing.T) {
	t.Parallel()
	e := setup(t, options{maxDeliver: 20, configure: func(c *submitter.Config) { c.ClaimRecheck = 500 * time.Millisecond }})
	ctx := context.Background()
	ref, err := e.topo.Claims().Acquire(ctx, run, "0", 0, "slow-pod", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	e.feedUniversal(0, 1)
	// Every allowed delivery was spent; the next one is past MaxDeliver and
	// goes to the dead letter without the handler, which waits for the
	// young claim.
	e.spendDeliveries(20)
	e.start()
	testutil.Eventually(t, 10*time.Second, "a wait", func() bool { return e.counter("oxy_submitter_payloads_total", "wait") >= 1 })
	if err := e.topo.Claims().MarkSubmitted(ctx, ref, "7500000000000000099", time.Now()); err != nil {
		t.Fatal(err)
	}
	evs := e.settled()

	if len(evs) != 1 || evs[0].Outcome != oxytype.Success || evs[0].DataType != oxytype.DataSubmitted ||
		evs[0].APIJobID != "7500000000000000099" || evs[0].Origin.Type != "submitter" {
		t.Fatalf("events = %+v, want the success of the claim's job", evs)
	}
	if subs := e.submitted(); len(subs) != 1 || subs[0].APIJobID != "7500000000000000099" {
		t.Fatalf("Submitted = %+v", subs)
	}
	if e.counter("oxy_stage_messages_total", "dead_letter") != 1 {
		t.Fatal("the message did not go through the dead letter")
	}
}
