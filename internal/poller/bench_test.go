package poller_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/internal/poller"
	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/payload"
)

// BenchmarkPoller measures the poller stage alone: b.N submitted jobs,
// already done at the emulator, each checked once and handed on as done.
// Run it with a fixed count, e.g. -bench Poller -benchtime 5000x.
func BenchmarkPoller(b *testing.B) {
	f := setup(b, emulator.Config{TimeScale: 0.001})
	f.cfg.Schedule = poller.Schedule{First: time.Millisecond, Step: time.Millisecond, Until: 10 * time.Millisecond, Interval: 5 * time.Millisecond}
	f.cfg.PendingLimit = time.Second
	var ps []payload.Payload
	var bodies []string
	for i := range b.N {
		body := fmt.Sprintf(`{"source":"universal","url":"https://sandbox.oxylabs.io/products/%d"}`, i)
		p, err := payload.Parse([]byte(body), 1)
		if err != nil {
			b.Fatal(err)
		}
		ps, bodies = append(ps, p), append(bodies, body)
	}
	var ids []string
	for start := 0; start < len(ps); start += payload.MaxBatch {
		res, _, err := f.client.SubmitBatch(b.Context(), ps[start:min(len(ps), start+payload.MaxBatch)])
		if err != nil {
			b.Fatal(err)
		}
		for _, it := range res.Items {
			ids = append(ids, it.Job.ID)
		}
	}
	testutil.Eventuallyf(b, time.Minute, func() bool { return f.api.Emulator.Stats().JobsDone == int64(b.N) }, "the jobs are done")
	submitted := time.Now().Add(-time.Second) // past the first check
	for i, id := range ids {
		f.publish(&messages.Submitted{Run: run, Doc: messages.DocID(i), APIJobID: id, Payload: json.RawMessage(bodies[i]), SubmittedAt: submitted})
	}
	b.ResetTimer()
	f.start()
	testutil.Eventuallyf(b, 10*time.Minute, func() bool {
		return f.counter("oxy_poller_checks_total", map[string]string{"result": "done"}) == float64(b.N)
	}, "%d jobs are seen done", b.N)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "docs/s")
	b.ReportMetric(float64(f.statusRequests())/float64(b.N), "checks/doc")
}
