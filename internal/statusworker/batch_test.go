package statusworker_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/pkg/jobresults"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// A batch message's events are applied in their order (a later event of the
// same record wins, as between messages), and a malformed event in it is
// recorded as a failure of its own while the batch's other events count.
func TestABatchIsAppliedEventByEvent(t *testing.T) {
	t.Parallel()
	e := setup(t)
	store := jobresults.NewMemoryStore()
	sw := e.start(e.config(store, nil))
	run, _ := e.announce(3, e.logDir)
	now := time.Now().UTC()
	enc := func(ev *messages.StatusEvent) []byte {
		ev.Time = now
		b, err := ev.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	soft := &messages.StatusEvent{Run: run, Doc: "0", DataType: oxytype.DataSubmitted, Outcome: oxytype.SoftFailure,
		Origin: submitter, Consumer: poller, RetryCount: 1, Reason: "status check timed out"}
	body := messages.JoinStatusEvents([][]byte{
		enc(fed(run, 0)), enc(submitted(run, 0)), enc(soft), enc(faulted(run, 0)),
		[]byte(`{"v":1,"run":"` + run + `","doc":"1","data_type":"written","outcome":"exploded","time":"2026-09-29T17:04:12Z"}`),
		[]byte(`{"v":1,"run":"` + run + `","data_type":"done","outcome":"success","time":"2026-09-29T17:04:12Z"}`),
		// Malformed and about "status" itself: counted, not recorded.
		[]byte(`{"v":1,"run":"` + run + `","doc":"2","data_type":"status","outcome":"exploded","time":"2026-09-29T17:04:12Z"}`),
	})
	e.publishRaw(&nats.Msg{Subject: messages.StatusSubject(run), Data: body})

	testutil.Eventually(t, 10*time.Second, "3 malformed events counted and doc 0's failure applied", func() bool {
		fails, err := store.GetFailures(t.Context(), run, string(oxytype.DataSubmitted))
		return err == nil && len(fails) == 1 && counter(t, sw.cfg, "oxy_statusworker_events_total", "result", "malformed") == 3
	})
	fails, err := store.GetFailures(t.Context(), run, string(oxytype.DataSubmitted))
	if err != nil {
		t.Fatal(err)
	}
	if f := fails[0]; f.DocID != "0" || !strings.Contains(f.HardFailure, "faulted") || f.State != oxytype.Faulted || len(f.SoftFailures) != 0 {
		t.Fatalf("doc 0 at submitted: %+v; want the hard failure, the last event of the batch", f)
	}
	testutil.Eventually(t, 10*time.Second, "the batch's two malformed events are recorded as status failures", func() bool {
		fails, err := store.GetFailures(t.Context(), run, string(oxytype.DataStatus))
		return err == nil && len(fails) == 2
	})
	fails, err = store.GetFailures(t.Context(), run, string(oxytype.DataStatus))
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]string{}
	for _, f := range fails {
		reasons[f.DocID] = f.HardFailure
	}
	var unknown string
	for doc := range reasons {
		if messages.IsUnknownDocID(doc) {
			unknown = doc
		}
	}
	if !strings.Contains(reasons["1"], `outcome "exploded"`) || !strings.HasPrefix(unknown, "?OXY_STATUS:") || !strings.HasSuffix(unknown, ":5") {
		t.Fatalf("status failures: %q; want doc 1's and the doc-less 6th event's (index 5)", reasons)
	}
	// The batch message itself was acked: nothing is redelivered.
	info, err := e.js.Consumer(t.Context(), "OXY_STATUS", "statusworker")
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "no status message pending", func() bool {
		ci, err := info.Info(t.Context())
		return err == nil && ci.NumAckPending == 0 && ci.NumPending == 0 && ci.NumRedelivered == 0
	})
}
