package feeder_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// A feed's fed events go out in status batch messages of 256, in input
// order, the last (partial) one when the feed ends: 1,000 docs cost the
// status stream 4 messages, not 1,000.
func TestFedEventsGoOutInBatches(t *testing.T) {
	t.Parallel()
	var resolved atomic.Int64
	f, topo, payloads := paced(t, 1<<20, &resolved)
	const n = 1000
	res, err := f.Feed(context.Background(), "batched", products(n))
	if err != nil {
		t.Fatal(err)
	}
	if res.Payloads != n || res.Events != n || payloads() != n {
		t.Fatalf("feed = %+v with %d payloads stored; want %d payloads and events", res, payloads(), n)
	}

	js := topo.JetStream()
	msgs := testutil.StreamMsgs(t, js, topology.StreamStatus)
	if len(msgs) != 4 {
		t.Fatalf("the status stream holds %d messages for %d fed docs; want 4 (batches of 256)", len(msgs), n)
	}
	for _, m := range msgs {
		if got := messages.OriginOf(m.Header); got != f.Origin() {
			t.Errorf("status message %d has origin %v; want the feeder's %v", m.Sequence, got, f.Origin())
		}
	}
	evs := testutil.StreamDecodedEach(t, js, topology.StreamStatus, messages.StatusEvents)
	if len(evs) != n {
		t.Fatalf("%d fed events stored; want %d", len(evs), n)
	}
	for i, ev := range evs {
		if ev.Doc != messages.DocID(i) || ev.DataType != oxytype.DataPayload || ev.Outcome != oxytype.Success || ev.Payload == nil {
			t.Fatalf("event %d is %s at %s (%s, payload %v); want doc %s fed with its payload, in input order",
				i, ev.Doc, ev.DataType, ev.Outcome, ev.Payload != nil, messages.DocID(i))
		}
	}
}
