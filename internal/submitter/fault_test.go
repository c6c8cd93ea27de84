package submitter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/internal/submitter"
	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// retryUnknownOnce opts a test's submitter in to the one retry after an
// unknown outcome.
func retryUnknownOnce(c *submitter.Config) { c.RetryUnknownOnce = true }

// failOn scripts submissions whose input matches pattern to fail with f.
func failOn(pattern string, f emulator.Failure) emulator.Rule {
	return emulator.Rule{Pattern: regexp.MustCompile(pattern), Outcome: emulator.Outcome{SubmitFailure: &f}}
}

// markedUnsubmitted checks that ev is the hard failure of an unsubmitted
// payload carrying the structured may-have-billed mark.
func markedUnsubmitted(t *testing.T, ev messages.StatusEvent) {
	t.Helper()
	if ev.Outcome != oxytype.HardFailure || ev.State != oxytype.Unsubmitted || ev.Error == nil || !ev.Error.MayHaveBilled {
		t.Fatalf("event = %+v (error %+v), want unsubmitted with may_have_billed", ev, ev.Error)
	}
}

// billed returns how many jobs the emulator created for doc i's input.
func (e *env) billed(i int) int64 { return e.api.Emulator.Stats().CreatedByInput[url(i)] }

func TestFaultAnAnswerThatProvesNothingIsNeverSentAgain(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		emulator emulator.Config
		docs     int
		jobs     int64 // created per doc
	}{
		{"a 500 after the job was created", emulator.Config{Rules: []emulator.Rule{
			failOn(`/item/0$`, emulator.Failure{Status: 500, AfterCreate: true}),
		}}, 1, 1},
		{"a connection dropped after the job was created", emulator.Config{Rules: []emulator.Rule{
			failOn(`/item/0$`, emulator.Failure{Drop: true, AfterCreate: true}),
		}}, 1, 1},
		{"a flood of 503s", emulator.Config{Faults: []emulator.Fault{{
			On: []emulator.Endpoint{emulator.EndpointSubmit}, Failure: emulator.Failure{Status: 503},
		}}}, 1, 0},
		{"a 500 on a batch marks every payload of it", emulator.Config{Rules: []emulator.Rule{
			failOn(`/item/1$`, emulator.Failure{Status: 500, AfterCreate: true}),
		}}, 3, 1},
		{"a batch answer cut short, which names no job", emulator.Config{Rules: []emulator.Rule{
			failOn(`/item/2$`, emulator.Failure{CutBody: true, AfterCreate: true}),
		}}, 3, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, options{emulator: tc.emulator})
			e.feedUniversal(0, tc.docs)
			e.start()
			evs := e.settled()

			if len(evs) != tc.docs {
				t.Fatalf("events = %+v, want one per payload", evs)
			}
			for _, ev := range evs {
				markedUnsubmitted(t, ev)
			}
			if n := e.requests(emulator.EndpointSubmit) + e.requests(emulator.EndpointBatch); n != 1 {
				t.Fatalf("%d requests, want 1: nothing is sent again", n)
			}
			for i := range tc.docs {
				if got := e.billed(i); got != tc.jobs {
					t.Errorf("doc %d billed %d times, want %d", i, got, tc.jobs)
				}
				if c := e.claim(i); c == nil || c.State != messages.ClaimUnknown || !c.MayHaveBilled {
					t.Errorf("doc %d claim = %+v, want unknown and marked", i, c)
				}
			}
			if n := e.logged("Retrying"); n != 0 {
				t.Errorf("%d retry warnings, want none: nothing was retried", n)
			}
		})
	}
}

func TestFaultAnUnreadable202WithAJobIDHeaderIsThatJob(t *testing.T) {
	t.Parallel()
	// A single submission's answer names its job in x-oxylabs-job-id: an
	// answer cut short still tells which job was created.
	e := setup(t, options{emulator: emulator.Config{Rules: []emulator.Rule{
		failOn(`/item/0$`, emulator.Failure{CutBody: true, AfterCreate: true}),
	}}})
	e.feedUniversal(0, 1)
	e.start()
	evs := e.settled()

	if len(evs) != 1 || evs[0].Outcome != oxytype.Success || evs[0].DataType != oxytype.DataSubmitted {
		t.Fatalf("events = %+v, want the success", evs)
	}
	id := evs[0].APIJobID
	if _, err := e.cfg.API.Status(context.Background(), id); err != nil {
		t.Fatalf("job %q of the success: %v", id, err)
	}
	if e.jobs() != 1 || e.api.Emulator.Stats().FaultsInjected != 1 {
		t.Fatalf("%d jobs, %d faults; want 1 and 1", e.jobs(), e.api.Emulator.Stats().FaultsInjected)
	}
	if c := e.claim(0); c == nil || c.State != messages.ClaimSubmitted || c.APIJobID != id || c.MayHaveBilled {
		t.Fatalf("claim = %+v, want submitted as %s", c, id)
	}
}

func TestFaultRetryUnknownOnceSendsAPayloadExactlyOnceMore(t *testing.T) {
	t.Parallel()
	const warning = "Retrying a submission of universal https://example.com/item/0 after 500 Internal Server Error; " +
		"the API may have created its job, and a duplicate bills"
	t.Run("a 500 after the job was created, then a job: billed twice, with a warning", func(t *testing.T) {
		t.Parallel()
		e := setup(t, options{configure: retryUnknownOnce, emulator: emulator.Config{Rules: []emulator.Rule{
			failOn(`/item/0$`, emulator.Failure{Status: 500, AfterCreate: true, Times: 1}),
		}}})
		e.feedUniversal(0, 1)
		e.start()
		evs := e.settled()

		if len(evs) != 2 || evs[0].Outcome != oxytype.SoftFailure || evs[1].Outcome != oxytype.Success {
			t.Fatalf("events = %+v, want a soft failure then a success", evs)
		}
		if evs[0].Error == nil || !evs[0].Error.MayHaveBilled {
			t.Fatalf("soft failure error %+v is not marked", evs[0].Error)
		}
		if e.billed(0) != 2 {
			t.Fatalf("billed %d times, want 2 (the hidden job and the retry)", e.billed(0))
		}
		if n := e.logged(warning); n != 1 {
			t.Fatalf("%d warnings %q, want 1", n, warning)
		}
		if c := e.claim(0); c == nil || c.State != messages.ClaimSubmitted || c.Retries != 1 || !c.MayHaveBilled {
			t.Fatalf("claim = %+v, want submitted after one retry, marked", c)
		}
	})
	t.Run("500s after the jobs were created every time: billed twice at most, marked", func(t *testing.T) {
		t.Parallel()
		e := setup(t, options{configure: retryUnknownOnce, emulator: emulator.Config{Rules: []emulator.Rule{
			failOn(`/item/0$`, emulator.Failure{Status: 500, AfterCreate: true}),
		}}})
		e.feedUniversal(0, 1)
		e.start()
		evs := e.settled()

		if len(evs) != 2 || evs[0].Outcome != oxytype.SoftFailure {
			t.Fatalf("events = %+v, want a soft failure then the hard one", evs)
		}
		markedUnsubmitted(t, evs[1])
		if e.billed(0) != 2 || e.requests(emulator.EndpointSubmit) != 2 {
			t.Fatalf("billed %d times in %d requests, want 2 and 2", e.billed(0), e.requests(emulator.EndpointSubmit))
		}
		if c := e.claim(0); c == nil || c.State != messages.ClaimUnknown || c.Retries != 1 {
			t.Fatalf("claim = %+v, want unknown after its one retry", c)
		}
	})
	t.Run("a 500 after the job was created, then 429s: the mark sticks", func(t *testing.T) {
		t.Parallel()
		var first atomic.Bool
		e := setup(t, options{maxDeliver: 4, configure: retryUnknownOnce, emulator: emulator.Config{Rules: []emulator.Rule{
			{Match: func(emulator.Submission) bool { return first.CompareAndSwap(false, true) },
				Outcome: emulator.Outcome{SubmitFailure: &emulator.Failure{Status: 500, AfterCreate: true}}},
			failOn(`/item/0$`, emulator.Failure{Status: 429}),
		}}})
		e.feedUniversal(0, 1)
		e.start()
		evs := e.settled()

		if len(evs) != 4 {
			t.Fatalf("events = %+v, want three soft failures and the hard one", evs)
		}
		for _, ev := range evs[:3] {
			if ev.Outcome != oxytype.SoftFailure || ev.Error == nil || !ev.Error.MayHaveBilled {
				t.Fatalf("soft failure %+v (error %+v) is not marked", ev, ev.Error)
			}
		}
		last := evs[3]
		markedUnsubmitted(t, last)
		if last.Error.StatusCode == nil || *last.Error.StatusCode != 429 {
			t.Fatalf("last error %+v, want the last answer, a 429", last.Error)
		}
		if e.billed(0) != 1 || e.requests(emulator.EndpointSubmit) != 4 {
			t.Fatalf("billed %d times in %d requests, want 1 and 4", e.billed(0), e.requests(emulator.EndpointSubmit))
		}
		if n := e.logged("Retrying a submission"); n != 1 {
			t.Fatalf("%d retry warnings, want 1 (429s prove that no job was created)", n)
		}
	})
	t.Run("a batch is retried once, with one warning", func(t *testing.T) {
		t.Parallel()
		e := setup(t, options{configure: retryUnknownOnce, emulator: emulator.Config{Rules: []emulator.Rule{
			failOn(`/item/1$`, emulator.Failure{Status: 502, AfterCreate: true, Times: 1}),
		}}})
		e.feedUniversal(0, 3)
		e.start()
		testutil.Eventually(t, 10*time.Second, "three successes", func() bool { return e.count(oxytype.Success) == 3 })
		e.settled()
		for i := range 3 {
			if e.billed(i) != 2 {
				t.Errorf("doc %d billed %d times, want 2", i, e.billed(i))
			}
		}
		if n := e.logged("Retrying a batch of 3 universal payloads after 502 Bad Gateway"); n != 1 {
			t.Fatalf("%d batch retry warnings, want 1", n)
		}
	})
}

func TestFaultTheMarkSurvivesAClaimThatCannotBeRead(t *testing.T) {
	t.Parallel()
	deleteClaims := func(e *env) {
		e.t.Helper()
		if err := e.js.DeleteKeyValue(context.Background(), topology.BucketClaims); err != nil {
			e.t.Fatal(err)
		}
	}
	t.Run("at the last delivery", func(t *testing.T) {
		t.Parallel()
		e := setup(t, options{maxDeliver: 3})
		deleteClaims(e)
		e.feedUniversal(0, 1)
		e.start()
		evs := e.settled()

		if len(evs) != 3 || evs[0].Outcome != oxytype.SoftFailure || evs[1].Outcome != oxytype.SoftFailure {
			t.Fatalf("events = %+v, want two soft failures then the hard one", evs)
		}
		markedUnsubmitted(t, evs[2])
		if !strings.Contains(evs[2].Reason, "the payload's claim could not be read") {
			t.Fatalf("reason %q does not say why", evs[2].Reason)
		}
		if e.requests(emulator.EndpointSubmit) != 0 {
			t.Fatal("a payload without a claim was sent")
		}
	})
	t.Run("in the dead letter", func(t *testing.T) {
		t.Parallel()
		// Short handler calls, so that the fewest deliveries the settings
		// allow (3) wait out a claim at a few hundred milliseconds each.
		e := setup(t, options{maxDeliver: 3, configure: func(c *submitter.Config) {
			c.Stage.Consumer.HandlerTimeout, c.SubmitTimeout, c.KVTimeout = 600*time.Millisecond, 100*time.Millisecond, 100*time.Millisecond
			c.ClaimStaleAfter, c.ClaimRecheck = 600*time.Millisecond, 600*time.Millisecond
		}})
		// A claim held by a live submitter that stays young throughout: the
		// payload's deliveries run out waiting for it, and the dead letter
		// keeps waiting too, until the claim cannot be read.
		if _, err := e.topo.Claims().Acquire(context.Background(), run, "0", 0, "slow-pod", time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		e.feedUniversal(0, 1)
		e.start()
		testutil.Eventually(t, 10*time.Second, "the deliveries' waits and one in the dead letter", func() bool {
			return e.counter("oxy_submitter_payloads_total", "wait") >= 4
		})
		deleteClaims(e)
		evs := e.settled()

		if len(evs) != 1 {
			t.Fatalf("events = %+v, want the dead letter", evs)
		}
		markedUnsubmitted(t, evs[0])
		if !strings.Contains(evs[0].Reason, "poison message") || !strings.Contains(evs[0].Reason, "the payload's claim could not be read") {
			t.Fatalf("reason %q", evs[0].Reason)
		}
	})
	t.Run("in a stopped run, from a released claim", func(t *testing.T) {
		t.Parallel()
		e := setup(t, options{})
		e.createRun(oxytype.RunStateStopping, "stopped by the user")
		ctx := context.Background()
		claims := e.topo.Claims()
		ref, err := claims.Acquire(ctx, run, "0", 0, "pod", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := claims.MarkUnknown(ctx, ref, "500 Internal Server Error"); err != nil {
			t.Fatal(err)
		}
		if ref, err = claims.Retake(ctx, *ref, 0, "pod", time.Now(), true); err != nil {
			t.Fatal(err)
		}
		if err := claims.Release(ctx, ref, "429"); err != nil {
			t.Fatal(err)
		}
		e.feedUniversal(0, 1)
		e.start()
		evs := e.settled()

		if len(evs) != 1 {
			t.Fatalf("events = %+v", evs)
		}
		markedUnsubmitted(t, evs[0])
		if !strings.HasPrefix(evs[0].Error.Message, "the run was stopped before this payload was submitted") {
			t.Fatalf("error %+v", evs[0].Error)
		}
	})
}

// badBatchID answers batch submissions through api, with the first job's
// id replaced by one that cannot be a job id.
func badBatchID(api http.Handler) http.Handler {
	return firstBatchIDAs("../../etc/passwd")(api)
}

// firstBatchIDAs answers batch submissions through api, with the first
// job's id replaced by id.
func firstBatchIDAs(id string) func(api http.Handler) http.Handler {
	return func(api http.Handler) http.Handler { return replaceFirstBatchID(api, id) }
}

func replaceFirstBatchID(api http.Handler, id string) http.Handler {
	firstID := regexp.MustCompile(`"id":"[0-9]+"`)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/queries/batch" {
			api.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		if loc := firstID.FindIndex(body); loc != nil {
			body = append(append(append([]byte(nil), body[:loc[0]]...), `"id":"`+id+`"`...), body[loc[1]:]...)
		}
		for k, v := range rec.Header() {
			if k != "Content-Length" {
				w.Header()[k] = v
			}
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(body)
	})
}

func TestFaultBatchJobIDsAreValidated(t *testing.T) {
	t.Parallel()
	e := setup(t, options{proxy: badBatchID})
	e.feedUniversal(0, 3)
	e.start()
	evs := e.settled()

	var marked, ok int
	for _, ev := range evs {
		switch {
		case ev.Outcome == oxytype.Success && ev.APIJobID != "" && !strings.Contains(ev.APIJobID, "/"):
			ok++
		case ev.Outcome == oxytype.HardFailure:
			markedUnsubmitted(t, ev)
			marked++
		default:
			t.Fatalf("event %+v", ev)
		}
	}
	if ok != 2 || marked != 1 {
		t.Fatalf("%d successes, %d marked; want 2 and 1 (events %+v)", ok, marked, evs)
	}
	for _, s := range e.submitted() {
		if strings.Contains(s.APIJobID, "/") {
			t.Fatalf("a bad job id was passed on: %+v", s)
		}
	}
	if e.jobs() != 3 || e.requests(emulator.EndpointBatch) != 1 {
		t.Fatalf("%d jobs in %d batches, want 3 in 1", e.jobs(), e.requests(emulator.EndpointBatch))
	}
}

func TestFaultAPayloadNearTheMessageLimitIsRejectedNotUnsubmitted(t *testing.T) {
	t.Parallel()
	// Its failure event names the input beside a copy of the payload; an
	// input over half the broker's 1 MB limit once made it too large to
	// publish, and the payload was redelivered until it was dead-lettered
	// as unsubmitted.
	// Handling one takes long enough under the race detector on a loaded
	// machine that heartbeats a third of a 1 s AckWait apart came late and
	// the payloads were redelivered until they were dead-lettered: this
	// test is about their size, not about redelivery.
	e := setup(t, options{ackWait: testutil.Patient(5 * time.Second)})
	pad := strings.Repeat("x", 540<<10)
	big := func(source, host string) json.RawMessage {
		b, _ := json.Marshal(map[string]string{"source": source, "url": "https://" + host + "/?q=" + pad})
		return b
	}
	e.feed(0, big("universal", "1.2.3.4"))                 // refused locally: an ip address
	e.feed(1, big("no_such_source", "sandbox.oxylabs.io")) // refused by the API: 400
	e.feed(2, big("universal", "sandbox.oxylabs.io"))      // accepted
	e.start()
	// Half-megabyte payloads are slow to handle under the race detector.
	testutil.Eventually(t, 60*time.Second, "every payload is settled", func() bool { return e.pending() == 0 })
	evs := e.events()

	if len(evs) != 3 {
		t.Fatalf("%d events, want 3", len(evs))
	}
	byDoc := map[string]messages.StatusEvent{}
	for _, ev := range evs {
		byDoc[ev.Doc] = ev
		if len(ev.Reason) > 8<<10 {
			t.Errorf("doc %s: a reason of %d bytes", ev.Doc, len(ev.Reason))
		}
	}
	if ev := byDoc["0"]; ev.State != oxytype.Rejected || ev.Error == nil || ev.Error.Message != "The hostname cannot be an ip address." {
		t.Errorf("doc 0: %+v", ev)
	}
	if ev := byDoc["1"]; ev.State != oxytype.Rejected || ev.Error == nil || ev.Error.StatusCode == nil || *ev.Error.StatusCode != 400 {
		t.Errorf("doc 1: %+v", ev)
	}
	if ev := byDoc["2"]; ev.Outcome != oxytype.Success || !bytes.Contains(ev.Payload, []byte(pad)) {
		t.Errorf("doc 2: outcome %s, state %s, reason %.300q", ev.Outcome, ev.State, ev.Reason)
	}
	if e.jobs() != 1 || e.counter("oxy_stage_messages_total", "dead_letter") != 0 {
		t.Fatalf("%d jobs, %v dead letters; want 1 and 0", e.jobs(), e.counter("oxy_stage_messages_total", "dead_letter"))
	}
}
