package writer_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/payload"
)

// BenchmarkWriter measures the writer stage alone: b.N done jobs (bodies of
// about 1.5 KB) queued on the done stream, written by one writer to a local
// folder or an in-process S3 server. Run it with a fixed count, e.g.
// -bench Writer -benchtime 2000x.
func BenchmarkWriter(b *testing.B) {
	for _, kind := range []string{"local", "s3"} {
		b.Run(kind, func(b *testing.B) {
			f := setup(b, emulator.Config{})
			dest := b.TempDir()
			if kind == "s3" {
				s3 := startFakeS3(b)
				f.cfg.Destinations.S3 = s3.config()
				dest = "s3://" + bucket + "/bench"
			}
			run := f.announce(dest, oxytype.FinalDataType)
			ids, bodies := f.doneJobs(b.N)
			for i, id := range ids {
				f.done(run, i, id, bodies[i])
			}
			b.ResetTimer()
			f.start()
			testutil.Eventuallyf(b, 10*time.Minute, func() bool {
				return f.counter("oxy_stage_messages_total", map[string]string{"outcome": "ack"}) == float64(b.N)
			}, "%d files are written", b.N)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "docs/s")
			b.ReportMetric(f.counter("oxy_writer_bytes_total", nil)/float64(b.N), "bytes/doc")
		})
	}
}

// doneJobs creates n jobs at the emulator in batches and waits until they
// are all done.
func (f *fixture) doneJobs(n int) (ids []string, bodies [][]byte) {
	f.t.Helper()
	for start := 0; start < n; start += payload.MaxBatch {
		var ps []payload.Payload
		for i := start; i < min(n, start+payload.MaxBatch); i++ {
			body := []byte(fmt.Sprintf(`{"source":"universal","url":"https://sandbox.oxylabs.io/products/%d"}`, i))
			p, err := payload.Parse(body, 1)
			if err != nil {
				f.t.Fatal(err)
			}
			ps = append(ps, p)
			bodies = append(bodies, body)
		}
		res, _, err := f.client.SubmitBatch(f.t.Context(), ps)
		if err != nil {
			f.t.Fatalf("SubmitBatch: %v", err)
		}
		for _, it := range res.Items {
			if it.Err != nil {
				f.t.Fatal(it.Err)
			}
			ids = append(ids, it.Job.ID)
		}
	}
	testutil.Eventuallyf(f.t, time.Minute, func() bool { return f.api.Emulator.Stats().JobsDone == int64(n) }, "%d jobs are done", n)
	return ids, bodies
}
