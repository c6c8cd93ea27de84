package stage_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/oxypipe/oxypipe/internal/stage"
	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

var submitterActor = oxytype.Party{Type: "submitter", Name: "test-pod"}

// submit is the handler of a well-behaved submitter: decode, publish
// Submitted, record success at submitted.
func submit(_ context.Context, m *stage.Msg) error {
	p, err := messages.DecodePayload(m.Subject(), m.Data())
	if err != nil {
		return err
	}
	out := submitted(p)
	if err := m.Publish(out); err != nil {
		return err
	}
	return m.Record(&messages.StatusEvent{Run: p.Run, Doc: p.Doc, Attempt: p.Attempt,
		DataType: oxytype.DataSubmitted, Outcome: oxytype.Success, Facts: oxytype.Facts{APIJobID: out.APIJobID}})
}

func TestSuccessPublishesOutputsAndEventsThenAcks(t *testing.T) {
	t.Parallel()
	s := fastSubmitter()
	e := setup(t, s)
	e.feed(0, 10)
	w, err := stage.New(e.config(s), stage.HandlerFunc(submit))
	if err != nil {
		t.Fatal(err)
	}
	e.start(w)
	testutil.Eventually(t, 10*time.Second, "all 10 payloads are acked", func() bool {
		return e.counter("submitter", "ack") == 10
	})
	if n := len(e.streamMsgs(topology.StreamSubmitted)); n != 10 {
		t.Fatalf("%d Submitted messages stored, want 10", n)
	}
	if n := len(e.streamMsgs(topology.StreamPayloads)); n != 0 {
		t.Fatalf("%d payloads left in the work queue, want 0", n)
	}
	info := e.consumerInfo(s)
	if info.NumAckPending != 0 || info.NumPending != 0 || info.NumRedelivered != 0 {
		t.Fatalf("consumer: ack pending %d, pending %d, redelivered %d", info.NumAckPending, info.NumPending, info.NumRedelivered)
	}
	events := e.events()
	if len(events) != 10 {
		t.Fatalf("%d status events, want 10", len(events))
	}
	docs := map[string]bool{}
	for _, ev := range events {
		if ev.Run != run || ev.DataType != oxytype.DataSubmitted || ev.Outcome != oxytype.Success ||
			ev.Origin != submitterActor || ev.Consumer != (oxytype.Party{}) || ev.APIJobID != "70000000000000000"+ev.Doc {
			t.Fatalf("unexpected event %+v", ev)
		}
		docs[ev.Doc] = true
	}
	if len(docs) != 10 {
		t.Fatalf("events for %d distinct docs, want 10", len(docs))
	}
}

// stray is an envelope for a subject no stream stores.
type stray struct{}

func (stray) Subject() string              { return "nowhere.at.all" }
func (stray) MsgID() string                { return "" }
func (stray) MarshalJSON() ([]byte, error) { return []byte(`{}`), nil }

func TestNothingIsAckedUntilItsOutputsAreStored(t *testing.T) {
	t.Parallel()
	s := fastSubmitter()
	e := setup(t, s)
	e.feed(0, 1)
	cfg := e.config(s)
	cfg.PublishRetryDelay = 50 * time.Millisecond
	var deliveries []int
	var mu sync.Mutex
	w, err := stage.New(cfg, stage.HandlerFunc(func(ctx context.Context, m *stage.Msg) error {
		mu.Lock()
		deliveries = append(deliveries, m.NumDelivered())
		mu.Unlock()
		if m.NumDelivered() < 3 {
			return m.Publish(stray{}) // the broker will not store it
		}
		return submit(ctx, m)
	}))
	if err != nil {
		t.Fatal(err)
	}
	e.start(w)
	testutil.Eventually(t, 10*time.Second, "the payload is acked", func() bool { return e.counter("submitter", "ack") == 1 })
	mu.Lock()
	defer mu.Unlock()
	if len(deliveries) != 3 || deliveries[0] != 1 || deliveries[1] != 2 || deliveries[2] != 3 {
		t.Fatalf("deliveries = %v, want [1 2 3]", deliveries)
	}
	if got := e.counter("submitter", "publish_error"); got != 2 {
		t.Fatalf("publish_error = %v, want 2", got)
	}
	if n := len(e.streamMsgs(topology.StreamSubmitted)); n != 1 {
		t.Fatalf("%d Submitted stored, want 1", n)
	}
}

func TestRetryLaterRecordsASoftFailureAndRedeliversAfterTheDelay(t *testing.T) {
	t.Parallel()
	s := fastSubmitter()
	e := setup(t, s)
	e.feed(0, 1)
	var mu sync.Mutex
	var times []time.Time
	w, err := stage.New(e.config(s), stage.HandlerFunc(func(ctx context.Context, m *stage.Msg) error {
		mu.Lock()
		times = append(times, time.Now())
		mu.Unlock()
		if m.NumDelivered() == 1 {
			return stage.RetryAfter(300*time.Millisecond, "429 Too Many Requests")
		}
		return submit(ctx, m)
	}))
	if err != nil {
		t.Fatal(err)
	}
	e.start(w)
	testutil.Eventually(t, 10*time.Second, "the payload is acked", func() bool { return e.counter("submitter", "ack") == 1 })
	mu.Lock()
	gap := times[1].Sub(times[0])
	mu.Unlock()
	if gap < 280*time.Millisecond {
		t.Fatalf("redelivered after %v, want at least the 300ms delay", gap)
	}
	events := e.events()
	if len(events) != 2 {
		t.Fatalf("%d events, want a soft failure and a success", len(events))
	}
	soft := events[0]
	if soft.Outcome != oxytype.SoftFailure || soft.DataType != oxytype.DataPayload || soft.Doc != "0" ||
		soft.RetryCount != 1 || soft.Reason != "429 Too Many Requests" || soft.State != "" ||
		soft.Consumer != submitterActor || soft.Origin != feeder {
		t.Fatalf("soft failure = %+v", soft)
	}
	if events[1].Outcome != oxytype.Success || events[1].DataType != oxytype.DataSubmitted {
		t.Fatalf("second event = %+v", events[1])
	}
	if got := e.counter("submitter", "retry"); got != 1 {
		t.Fatalf("retry = %v, want 1", got)
	}
}

func TestWaitRedeliversWithoutRecordingAnything(t *testing.T) {
	t.Parallel()
	s := fastSubmitter()
	e := setup(t, s)
	e.feed(0, 1)
	w, err := stage.New(e.config(s), stage.HandlerFunc(func(ctx context.Context, m *stage.Msg) error {
		if m.NumDelivered() <= 2 {
			return stage.Wait(30 * time.Millisecond)
		}
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	e.start(w)
	testutil.Eventually(t, 10*time.Second, "acked on the third delivery", func() bool { return e.counter("submitter", "ack") == 1 })
	if got := e.counter("submitter", "wait"); got != 2 {
		t.Fatalf("wait = %v, want 2", got)
	}
	if n := len(e.events()); n != 0 {
		t.Fatalf("%d status events, want none", n)
	}
}

func TestAHardFailureIsRecordedRedactedAndTerminated(t *testing.T) {
	t.Parallel()
	s := fastSubmitter()
	e := setup(t, s)
	e.publish(&messages.Payload{Run: run, Doc: "7", Payload: json.RawMessage(`{"source":"universal","storage_url":"https://KEY:SECRET@host/bucket"}`)})
	code := 400
	var calls atomic.Int32
	w, err := stage.New(e.config(s), stage.HandlerFunc(func(ctx context.Context, m *stage.Msg) error {
		calls.Add(1)
		return stage.Hard(oxytype.Rejected, "the API rejected the payload", &oxytype.ErrorInfo{StatusCode: &code, Message: "Bad Request", TraceID: "trace-1"})
	}))
	if err != nil {
		t.Fatal(err)
	}
	e.start(w)
	testutil.Eventually(t, 10*time.Second, "the hard failure is counted", func() bool { return e.counter("submitter", "hard_failure") == 1 })
	events := e.events()
	if len(events) != 1 {
		t.Fatalf("%d events, want 1", len(events))
	}
	ev := events[0]
	if ev.Outcome != oxytype.HardFailure || ev.State != oxytype.Rejected || ev.Doc != "7" || ev.DataType != oxytype.DataPayload ||
		ev.Reason != "the API rejected the payload" || ev.Error == nil || *ev.Error.StatusCode != 400 || ev.Error.TraceID != "trace-1" ||
		ev.Consumer != submitterActor || ev.Origin != feeder || ev.RetryCount != 1 || ev.Upload != nil {
		t.Fatalf("hard failure = %+v", ev)
	}
	if string(ev.Payload) != `{"source":"universal","storage_url":"https://redacted:redacted@host/bucket"}` {
		t.Fatalf("payload = %s", ev.Payload)
	}
	testutil.Eventually(t, 5*time.Second, "the payload leaves the work queue", func() bool {
		return len(e.streamMsgs(topology.StreamPayloads)) == 0
	})
	info := e.consumerInfo(s)
	if info.NumAckPending != 0 || info.NumRedelivered != 0 || calls.Load() != 1 {
		t.Fatalf("ack pending %d, redelivered %d, handler calls %d", info.NumAckPending, info.NumRedelivered, calls.Load())
	}
}

func TestAHardFailureCarriesItsUploadEntryAndJobID(t *testing.T) {
	t.Parallel()
	s := fastSubmitter()
	e := setup(t, s)
	e.feed(0, 1)
	upload := oxytype.Upload{Code: 13000, Message: "Upload Successful"}
	w, err := stage.New(e.config(s), stage.HandlerFunc(func(ctx context.Context, m *stage.Msg) error {
		u := upload
		return &stage.HardError{State: oxytype.Faulted, Reason: "faulted", APIJobID: "7000000000000000001", Upload: &u}
	}))
	if err != nil {
		t.Fatal(err)
	}
	e.start(w)
	testutil.Eventually(t, 10*time.Second, "the hard failure is counted", func() bool { return e.counter("submitter", "hard_failure") == 1 })
	events := e.events()
	if len(events) != 1 {
		t.Fatalf("%d events, want 1", len(events))
	}
	ev := events[0]
	if ev.Outcome != oxytype.HardFailure || ev.State != oxytype.Faulted || ev.Reason != "faulted" || ev.Error != nil ||
		ev.APIJobID != "7000000000000000001" || ev.Upload == nil || *ev.Upload != upload {
		t.Fatalf("hard failure = %+v (upload %+v)", ev, ev.Upload)
	}
}

func TestAMessageThatKeepsFailingBecomesADeadLetter(t *testing.T) {
	t.Parallel()
	s := fastSubmitter()
	s.MaxDeliver = 3
	e := setup(t, s)
	e.feed(0, 1)
	w, err := stage.New(e.config(s), stage.HandlerFunc(func(ctx context.Context, m *stage.Msg) error {
		return errors.New("boom")
	}))
	if err != nil {
		t.Fatal(err)
	}
	e.start(w)
	testutil.Eventually(t, 10*time.Second, "the dead letter is counted", func() bool { return e.counter("submitter", "dead_letter") == 1 })
	events := e.events()
	if len(events) != 3 {
		t.Fatalf("%d events, want 2 soft failures and a hard one: %+v", len(events), events)
	}
	for i, ev := range events[:2] {
		if ev.Outcome != oxytype.SoftFailure || ev.RetryCount != i+1 || ev.Reason != "boom" {
			t.Fatalf("event %d = %+v", i, ev)
		}
	}
	dead := events[2]
	if dead.Outcome != oxytype.HardFailure || dead.Reason != "poison message: delivered 3 times" ||
		dead.Error == nil || dead.Error.Message != "poison message: delivered 3 times; last error: boom" ||
		dead.State != oxytype.Unsubmitted || dead.RetryCount != 3 {
		t.Fatalf("dead letter = %+v", dead)
	}
}

// crashLooper dead-letters through its DeadLetter hook and counts calls.
type crashLooper struct{ calls atomic.Int32 }

func (c *crashLooper) Handle(context.Context, *stage.Msg) error {
	c.calls.Add(1)
	return nil
}

func (c *crashLooper) DeadLetter(_ context.Context, m *stage.Msg, ev *messages.StatusEvent) error {
	ev.Reason += " (checked by the stage)"
	return nil
}

func TestAMessageThatKilledItsWorkersIsDeadLetteredWithoutCallingTheHandler(t *testing.T) {
	t.Parallel()
	s := fastSubmitter()
	s.MaxDeliver = 2
	s.AckWait = 200 * time.Millisecond
	e := setup(t, s)
	e.feed(0, 1)
	// Two workers take the message and die without settling it.
	cons, err := e.js.Consumer(context.Background(), s.Stream, string(s.Stage))
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 2; i++ {
		m, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if meta, _ := m.Metadata(); meta.NumDelivered != uint64(i) {
			t.Fatalf("delivery %d has NumDelivered %d", i, meta.NumDelivered)
		}
	}
	h := &crashLooper{}
	w, err := stage.New(e.config(s), h)
	if err != nil {
		t.Fatal(err)
	}
	e.start(w)
	testutil.Eventually(t, 10*time.Second, "the dead letter is counted", func() bool { return e.counter("submitter", "dead_letter") == 1 })
	events := e.events()
	if len(events) != 1 || events[0].Reason != "poison message: delivered 3 times (checked by the stage)" ||
		events[0].Error.Message != "poison message: delivered 3 times" || events[0].RetryCount != 3 {
		t.Fatalf("events = %+v", events)
	}
	if h.calls.Load() != 0 {
		t.Fatalf("handler called %d times, want 0", h.calls.Load())
	}
}

func TestMalformedMessagesAreHardFailuresAndTheWorkerKeepsGoing(t *testing.T) {
	t.Parallel()
	s := fastSubmitter()
	e := setup(t, s)
	raw := func(subject, body string) {
		m := nats.NewMsg(subject)
		m.Data = []byte(body)
		e.publishRaw(m)
	}
	raw(messages.PayloadSubject(run), "not json")                                      // seq 1
	raw("oxy.payload.bad@run", `{"v":1}`)                                              // seq 2
	raw(messages.PayloadSubject(run), `{"v":1,"run":"`+run+`","doc":"5","payload":3}`) // seq 3
	e.feed(0, 1)                                                                       // seq 4
	w, err := stage.New(e.config(s), stage.HandlerFunc(submit))
	if err != nil {
		t.Fatal(err)
	}
	e.start(w)
	testutil.Eventually(t, 10*time.Second, "three malformed and one good message settle", func() bool {
		return e.counter("submitter", "malformed") == 3 && e.counter("submitter", "ack") == 1
	})
	byDoc := map[string]messages.StatusEvent{}
	for _, ev := range e.events() {
		byDoc[ev.Run+" "+ev.Doc] = ev
	}
	cases := map[string]string{
		run + " ?OXY_PAYLOADS:1":  "malformed payload message on oxy.payload.20260929T170412_345Z: invalid JSON: invalid character 'o' in literal null (expecting 'u')",
		"unknown ?OXY_PAYLOADS:2": `malformed payload message on oxy.payload.bad@run: the subject's run: invalid run id "bad@run": want 1-64 letters, digits, '.' or '-', starting with a letter or digit`,
		run + " 5":                `malformed payload message on oxy.payload.20260929T170412_345Z: "payload" must be a JSON object (a WSA request body)`,
	}
	for key, reason := range cases {
		ev, ok := byDoc[key]
		if !ok {
			t.Fatalf("no event for %q; have %v", key, byDoc)
		}
		if ev.Outcome != oxytype.HardFailure || ev.State != oxytype.Unsubmitted || ev.Reason != reason || ev.Origin != (oxytype.Party{Type: "unknown"}) {
			t.Errorf("%s: %+v\nwant reason %q", key, ev, reason)
		}
	}
	if ev := byDoc[run+" 0"]; ev.Outcome != oxytype.Success {
		t.Fatalf("the good payload: %+v", ev)
	}
}

func TestHeartbeatsKeepASlowMessageFromBeingRedelivered(t *testing.T) {
	t.Parallel()
	s := fastSubmitter()
	s.AckWait = 500 * time.Millisecond // heartbeat every 166ms; margin for a loaded machine
	e := setup(t, s)
	e.feed(0, 1)
	var calls atomic.Int32
	w, err := stage.New(e.config(s), stage.HandlerFunc(func(ctx context.Context, m *stage.Msg) error {
		calls.Add(1)
		select {
		case <-time.After(1200 * time.Millisecond): // slow work: over twice AckWait
		case <-ctx.Done():
			return ctx.Err()
		}
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	e.start(w)
	testutil.Eventually(t, 10*time.Second, "the slow message is acked", func() bool { return e.counter("submitter", "ack") == 1 })
	info := e.consumerInfo(s)
	if calls.Load() != 1 || info.NumRedelivered != 0 || info.NumAckPending != 0 {
		t.Fatalf("handler calls %d, redelivered %d, ack pending %d", calls.Load(), info.NumRedelivered, info.NumAckPending)
	}
}

func TestDrainFinishesInFlightWorkAndLeavesNothingUnacked(t *testing.T) {
	t.Parallel()
	s := fastSubmitter()
	e := setup(t, s)
	e.feed(0, 20)
	cfg := e.config(s)
	cfg.MaxInFlight = 4
	var started, finished atomic.Int32
	h := stage.HandlerFunc(func(ctx context.Context, m *stage.Msg) error {
		started.Add(1)
		time.Sleep(200 * time.Millisecond) // work that does not look at ctx
		finished.Add(1)
		return nil
	})
	w, err := stage.New(cfg, h)
	if err != nil {
		t.Fatal(err)
	}
	stop, _ := e.start(w)
	testutil.Eventually(t, 10*time.Second, "four handlers run", func() bool { return started.Load() >= 4 })
	begin := time.Now()
	if err := stop(); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	if took := time.Since(begin); took > 3*time.Second {
		t.Fatalf("drain took %v", took)
	}
	if started.Load() != finished.Load() {
		t.Fatalf("%d handlers started, %d finished", started.Load(), finished.Load())
	}
	acked := int(e.counter("submitter", "ack"))
	if acked != int(finished.Load()) || acked == 20 {
		t.Fatalf("acked %d, finished %d: want every finished message acked and some left", acked, finished.Load())
	}
	info := e.consumerInfo(s)
	left := len(e.streamMsgs(topology.StreamPayloads))
	if info.NumAckPending != 0 || left != 20-acked {
		t.Fatalf("after drain: ack pending %d, %d payloads left, want 0 and %d", info.NumAckPending, left, 20-acked)
	}

	// A new worker picks up exactly the rest.
	w2, err := stage.New(cfg, h)
	if err != nil {
		t.Fatal(err)
	}
	e.start(w2)
	testutil.Eventually(t, 10*time.Second, "all 20 are handled", func() bool { return finished.Load() == 20 })
	testutil.Eventually(t, 5*time.Second, "the work queue is empty", func() bool { return len(e.streamMsgs(topology.StreamPayloads)) == 0 })
}

func TestDrainTimeoutCancelsHandlersAndReleasesTheirMessages(t *testing.T) {
	t.Parallel()
	s := fastSubmitter()
	s.AckWait = 30 * time.Second // a message that was not released would be stuck this long
	e := setup(t, s)
	e.feed(0, 3)
	cfg := e.config(s)
	cfg.DrainTimeout = 200 * time.Millisecond
	var started atomic.Int32
	w, err := stage.New(cfg, stage.HandlerFunc(func(ctx context.Context, m *stage.Msg) error {
		started.Add(1)
		<-ctx.Done()
		return ctx.Err()
	}))
	if err != nil {
		t.Fatal(err)
	}
	stop, _ := e.start(w)
	testutil.Eventually(t, 10*time.Second, "three handlers run", func() bool { return started.Load() == 3 })
	if err := stop(); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	if got := e.counter("submitter", "released"); got != 3 {
		t.Fatalf("released = %v, want 3", got)
	}
	if n := len(e.events()); n != 0 {
		t.Fatalf("%d status events for released messages, want none", n)
	}

	// The released messages go to the next worker at once, not after AckWait.
	var redelivered atomic.Int32
	w2, err := stage.New(e.config(s), stage.HandlerFunc(func(ctx context.Context, m *stage.Msg) error {
		if m.NumDelivered() == 2 {
			redelivered.Add(1)
		}
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	e.start(w2)
	testutil.Eventually(t, 5*time.Second, "the next worker acks all three", func() bool { return redelivered.Load() == 3 })
	testutil.Eventually(t, 5*time.Second, "nothing is pending", func() bool {
		info := e.consumerInfo(s)
		return info.NumAckPending == 0 && len(e.streamMsgs(topology.StreamPayloads)) == 0
	})
}

func TestAPinnedMessageOutlivesTheDrainTimeout(t *testing.T) {
	t.Parallel()
	s := fastSubmitter()
	s.HandlerTimeout = 100 * time.Millisecond
	e := setup(t, s)
	e.feed(0, 2)
	cfg := e.config(s)
	cfg.DrainTimeout = 100 * time.Millisecond
	store, stuck := make(chan struct{}), make(chan struct{})
	defer close(stuck)
	var started atomic.Int32
	w, err := stage.New(cfg, stage.HandlerFunc(func(ctx context.Context, m *stage.Msg) error {
		started.Add(1)
		if m.Key().Doc != "0" {
			<-stuck // ignores ctx, and holds nothing of its own
			return nil
		}
		// Doc 0 holds what exists only here until it is stored.
		unpin := m.Pin()
		<-store // ignores ctx
		unpin()
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	stop, _ := e.start(w)
	testutil.Eventually(t, 10*time.Second, "both handlers run", func() bool { return started.Load() == 2 })
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	testutil.Eventually(t, 10*time.Second, "the unpinned message is released", func() bool { return e.counter("submitter", "released") == 1 })
	select {
	case err := <-stopped:
		t.Fatalf("Run returned %v while a message was pinned", err)
	case <-time.After(500 * time.Millisecond):
	}
	if st := w.Live(); !st.OK {
		t.Fatalf("Live = %+v while a pinned handler overruns, want OK", st)
	}
	close(store)
	if err := <-stopped; err != nil {
		t.Fatalf("Run = %v", err)
	}
	if got := e.counter("submitter", "ack"); got != 1 {
		t.Fatalf("acked = %v, want the pinned message", got)
	}
}

func TestAFailureEventTooLargeForTheBrokerGoesWithoutItsPayloadCopy(t *testing.T) {
	t.Parallel()
	s := fastSubmitter()
	e := setup(t, s)
	pad := strings.Repeat("x", 600<<10)
	e.publish(&messages.Payload{Run: run, Doc: "0", Payload: json.RawMessage(`{"source":"universal","url":"https://example.com/?q=` + pad + `"}`)})
	w, err := stage.New(e.config(s), stage.HandlerFunc(func(ctx context.Context, m *stage.Msg) error {
		return stage.Hard(oxytype.Rejected, "Rejected universal https://example.com/?q="+pad, &oxytype.ErrorInfo{Message: "refused " + pad})
	}))
	if err != nil {
		t.Fatal(err)
	}
	e.start(w)
	testutil.Eventually(t, 10*time.Second, "the hard failure is recorded", func() bool { return len(e.events()) == 1 })
	ev := e.events()[0]
	if ev.State != oxytype.Rejected || ev.Payload != nil || len(ev.Reason) > 4<<10 || !strings.HasSuffix(ev.Reason, "…") ||
		len(ev.Error.Message) > 4<<10 {
		t.Fatalf("event: state %s, payload %d bytes, reason %d bytes, message %d bytes", ev.State, len(ev.Payload), len(ev.Reason), len(ev.Error.Message))
	}
	if got := e.counter("submitter", "publish_error"); got != 0 {
		t.Fatalf("%v publish errors, want none", got)
	}
}

func TestTheWatchdogExitsWhenTheConsumerIsGone(t *testing.T) {
	t.Parallel()
	s := fastSubmitter()
	e := setup(t, s)
	cfg := e.config(s)
	cfg.ConsumerLostGrace = 300 * time.Millisecond
	w, err := stage.New(cfg, stage.HandlerFunc(submit))
	if err != nil {
		t.Fatal(err)
	}
	_, done := e.start(w)
	testutil.Eventually(t, 5*time.Second, "the worker is ready", func() bool { return w.Ready().OK })
	if err := e.js.DeleteConsumer(context.Background(), s.Stream, string(s.Stage)); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "the worker reports consumer_lost", func() bool {
		st := w.Ready()
		return !st.OK && st.State == stage.StateConsumerLost
	})
	select {
	case err := <-done:
		var lost *stage.ConsumerLostError
		if !errors.As(err, &lost) || !strings.Contains(err.Error(), "consumer lost for 300ms with a live connection") {
			t.Fatalf("Run = %v, want a ConsumerLostError", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after the grace period")
	}
}

func TestTheWatchdogForgivesAConsumerThatComesBack(t *testing.T) {
	t.Parallel()
	s := fastSubmitter()
	e := setup(t, s)
	cfg := e.config(s)
	cfg.ConsumerLostGrace = time.Second
	w, err := stage.New(cfg, stage.HandlerFunc(submit))
	if err != nil {
		t.Fatal(err)
	}
	_, done := e.start(w)
	testutil.Eventually(t, 5*time.Second, "the worker is ready", func() bool { return w.Ready().OK })
	if err := e.js.DeleteConsumer(context.Background(), s.Stream, string(s.Stage)); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "consumer_lost", func() bool { return w.Ready().State == stage.StateConsumerLost })
	if _, err := e.topo.EnsureConsumer(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "ready again", func() bool { return w.Ready().OK })
	recovered := time.Now()
	e.feed(0, 1)
	testutil.Eventually(t, 5*time.Second, "a payload is handled after the consumer came back", func() bool {
		return e.counter("submitter", "ack") == 1 && time.Since(recovered) > cfg.ConsumerLostGrace+200*time.Millisecond
	})
	select {
	case err := <-done:
		t.Fatalf("Run returned %v after the consumer came back", err)
	default:
	}
}

func TestLiveFailsWhileAHandlerOverrunsTwiceItsTimeout(t *testing.T) {
	t.Parallel()
	s := fastSubmitter()
	s.HandlerTimeout = 100 * time.Millisecond
	e := setup(t, s)
	e.feed(0, 1)
	release := make(chan struct{})
	w, err := stage.New(e.config(s), stage.HandlerFunc(func(ctx context.Context, m *stage.Msg) error {
		<-release // ignores ctx
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	e.start(w)
	testutil.Eventually(t, 5*time.Second, "live turns 503", func() bool {
		st := w.Live()
		return !st.OK && st.State == "stuck" && strings.HasPrefix(st.Detail, "a handler has run for ")
	})
	close(release)
	testutil.Eventually(t, 5*time.Second, "live again", func() bool { return w.Live().OK })
}

func TestABatchHandlerGetsBoundedBatchesWithPerMessageOutcomes(t *testing.T) {
	t.Parallel()
	s := fastSubmitter()
	e := setup(t, s)
	e.feed(0, 12)
	cfg := e.config(s)
	cfg.BatchSize = 5
	var mu sync.Mutex
	var sizes []int
	w, err := stage.NewBatch(cfg, stage.BatchHandlerFunc(func(ctx context.Context, batch []*stage.Msg) []error {
		mu.Lock()
		sizes = append(sizes, len(batch))
		mu.Unlock()
		errs := make([]error, len(batch))
		for i, m := range batch {
			if m.Key().Doc == "3" {
				errs[i] = stage.Hard(oxytype.Rejected, "doc 3 is bad", nil)
				continue
			}
			errs[i] = submit(ctx, m)
		}
		return errs
	}))
	if err != nil {
		t.Fatal(err)
	}
	e.start(w)
	testutil.Eventually(t, 10*time.Second, "11 acks and a hard failure", func() bool {
		return e.counter("submitter", "ack") == 11 && e.counter("submitter", "hard_failure") == 1
	})
	mu.Lock()
	defer mu.Unlock()
	total := 0
	for _, n := range sizes {
		if n < 1 || n > 5 {
			t.Fatalf("batch sizes %v exceed 5", sizes)
		}
		total += n
	}
	if total != 12 {
		t.Fatalf("batches %v hold %d messages, want 12", sizes, total)
	}
}

func TestAPanickingHandlerIsARetryNotACrash(t *testing.T) {
	t.Parallel()
	s := fastSubmitter()
	e := setup(t, s)
	e.feed(0, 1)
	w, err := stage.New(e.config(s), stage.HandlerFunc(func(ctx context.Context, m *stage.Msg) error {
		if m.NumDelivered() == 1 {
			panic("nil map")
		}
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	e.start(w)
	testutil.Eventually(t, 10*time.Second, "acked on the second delivery", func() bool { return e.counter("submitter", "ack") == 1 })
	events := e.events()
	if len(events) != 1 || events[0].Outcome != oxytype.SoftFailure || events[0].Reason != "handler panicked: nil map" {
		t.Fatalf("events = %+v", events)
	}
}

func TestTheStatusworkerCannotFeedItsOwnFailuresBackForever(t *testing.T) {
	t.Parallel()
	s, err := topology.DefaultConsumer(topology.StatusWorker)
	if err != nil {
		t.Fatal(err)
	}
	s.RetryBackoff = []time.Duration{20 * time.Millisecond}
	e := setup(t, s)
	e.publish(&messages.StatusEvent{Run: run, Doc: "0", DataType: oxytype.DataPayload, Outcome: oxytype.Success, Origin: feeder, Time: time.Now()})
	var calls atomic.Int32
	w, err := stage.New(e.config(s), stage.HandlerFunc(func(ctx context.Context, m *stage.Msg) error {
		if calls.Add(1) == 1 {
			return errors.New("ledger unavailable") // retried, not recorded
		}
		return stage.Hard(oxytype.Unsubmitted, "cannot apply", nil)
	}))
	if err != nil {
		t.Fatal(err)
	}
	e.start(w)
	testutil.Eventually(t, 10*time.Second, "both events are hard failures", func() bool {
		return e.counter("statusworker", "hard_failure") == 2
	})
	events := e.events()
	if len(events) != 2 || events[1].DataType != oxytype.DataStatus || events[1].Outcome != oxytype.HardFailure ||
		events[1].Reason != "cannot apply" || events[1].Consumer != (oxytype.Party{Type: "statusworker", Name: "test-pod"}) {
		t.Fatalf("status stream = %+v", events)
	}
	if got := e.counter("statusworker", "retry"); got != 1 {
		t.Fatalf("retry = %v, want 1", got)
	}
	info := e.consumerInfo(s)
	if info.NumPending != 0 || info.NumAckPending != 0 || calls.Load() != 3 {
		t.Fatalf("pending %d, ack pending %d, handler calls %d", info.NumPending, info.NumAckPending, calls.Load())
	}
}
