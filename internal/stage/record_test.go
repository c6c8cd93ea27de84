package stage_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/internal/stage"
	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// The events that handlers record within the linger go out as one status
// message, which the statusworker's decoding splits back into every event.
func TestRecordedEventsGoOutAsOneBatchMessage(t *testing.T) {
	t.Parallel()
	const n = 20
	s := fastSubmitter()
	e := setup(t, s)
	e.feed(0, n)
	cfg := e.config(s)
	cfg.RecordLinger = 3 * time.Second // far longer than n handlers take to record
	var recorded atomic.Int32
	w, err := stage.New(cfg, stage.HandlerFunc(func(ctx context.Context, m *stage.Msg) error {
		if err := submit(ctx, m); err != nil {
			return err
		}
		recorded.Add(1)
		// Hold every handler until all have recorded, so that all events
		// are waiting in one batch before any could have gone out.
		deadline := time.Now().Add(5 * time.Second)
		for recorded.Load() < n && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	e.start(w)
	testutil.Eventually(t, 15*time.Second, "all payloads are acked", func() bool { return e.counter("submitter", "ack") == n })
	msgs := e.streamMsgs(topology.StreamStatus)
	if len(msgs) != 1 || !messages.IsStatusBatch(msgs[0].Data) {
		t.Fatalf("%d status messages, want 1 batch of %d events", len(msgs), n)
	}
	if got := msgs[0].Header.Get(messages.HeaderOrigin); got != submitterActor.String() {
		t.Fatalf("batch origin header %q, want %q", got, submitterActor)
	}
	docs := map[string]bool{}
	for _, ev := range e.events() {
		if ev.DataType != oxytype.DataSubmitted || ev.Outcome != oxytype.Success || ev.Origin != submitterActor {
			t.Fatalf("unexpected event %+v", ev)
		}
		docs[ev.Doc] = true
	}
	if len(docs) != n {
		t.Fatalf("the batch holds events of %d docs, want %d", len(docs), n)
	}
}

// A message whose recorded event cannot be stored is not acked: it is
// redelivered, and only the event of the delivery that was stored remains.
func TestAMessageIsNotAckedUntilItsEventsAreStored(t *testing.T) {
	t.Parallel()
	s := fastSubmitter()
	e := setup(t, s)
	st, err := e.js.Stream(t.Context(), topology.StreamStatus)
	if err != nil {
		t.Fatal(err)
	}
	sc := st.CachedInfo().Config
	sc.MaxMsgSize = 4096
	if _, err := e.js.UpdateStream(t.Context(), sc); err != nil {
		t.Fatal(err)
	}
	e.feed(0, 1)
	cfg := e.config(s)
	cfg.PublishRetryDelay = 50 * time.Millisecond
	cfg.RecordLinger = time.Millisecond
	var mu sync.Mutex
	var deliveries []int
	w, err := stage.New(cfg, stage.HandlerFunc(func(ctx context.Context, m *stage.Msg) error {
		mu.Lock()
		deliveries = append(deliveries, m.NumDelivered())
		mu.Unlock()
		reason := "small"
		if m.NumDelivered() < 3 {
			reason = strings.Repeat("x", 8192) // more than the stream takes
		}
		return m.Record(&messages.StatusEvent{DataType: oxytype.DataSubmitted, Outcome: oxytype.Success, Reason: reason})
	}))
	if err != nil {
		t.Fatal(err)
	}
	e.start(w)
	testutil.Eventually(t, 10*time.Second, "the payload is acked", func() bool { return e.counter("submitter", "ack") == 1 })
	mu.Lock()
	defer mu.Unlock()
	if len(deliveries) != 3 || deliveries[2] != 3 {
		t.Fatalf("deliveries = %v, want [1 2 3]", deliveries)
	}
	events := e.events()
	if len(events) != 1 || events[0].Reason != "small" || events[0].Doc != "0" {
		t.Fatalf("stored events %+v, want only the third delivery's", events)
	}
}

// Record refuses an event it cannot complete rather than publishing it.
func TestRecordNeedsAnOutcomeAndADataType(t *testing.T) {
	t.Parallel()
	s := fastSubmitter()
	e := setup(t, s)
	e.feed(0, 1)
	got := make(chan error, 1)
	w, err := stage.New(e.config(s), stage.HandlerFunc(func(ctx context.Context, m *stage.Msg) error {
		err := m.Record(&messages.StatusEvent{DataType: oxytype.DataSubmitted})
		select {
		case got <- err:
		default:
		}
		return submit(ctx, m)
	}))
	if err != nil {
		t.Fatal(err)
	}
	e.start(w)
	select {
	case err := <-got:
		if err == nil || !strings.Contains(err.Error(), "Outcome") {
			t.Fatalf("Record without an outcome: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal(errors.New("the handler was not called within 10s"))
	}
}
