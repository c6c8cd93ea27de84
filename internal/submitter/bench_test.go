package submitter_test

import (
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/internal/submitter"
	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/pkg/emulator"
)

// BenchmarkSubmitter measures the submitter alone on an embedded broker
// against the emulator with no rate limit and no latency: b.N payloads of
// one batchable shape are fed first, then consumed. It reports docs/s and
// API requests per doc.
//
//	go test -run '^$' -bench Submitter -benchtime 5000x ./internal/submitter
func BenchmarkSubmitter(b *testing.B) {
	for _, tc := range []struct {
		name    string
		noBatch bool
	}{{"batched", false}, {"singles", true}} {
		b.Run(tc.name, func(b *testing.B) {
			e := setup(b, options{
				emulator: emulator.Config{RateLimit: emulator.Unlimited, RenderRateLimit: emulator.Unlimited},
				configure: func(c *submitter.Config) {
					c.Pacer.Limit, c.Pacer.RenderLimit = -1, -1
					c.DisableBatch = tc.noBatch
					c.Stage.Logger = nil
				},
			})
			for i := range b.N {
				e.feed(i, universal(i))
			}
			b.ResetTimer()
			start := time.Now()
			e.start()
			testutil.Eventually(b, 10*time.Minute, "every payload submitted", func() bool { return e.pending() == 0 })
			elapsed := time.Since(start)
			b.StopTimer()
			st := e.api.Emulator.Stats()
			if st.JobsCreated != int64(b.N) {
				b.Fatalf("%d jobs for %d payloads", st.JobsCreated, b.N)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "docs/s")
			reqs := st.Requests[emulator.EndpointSubmit] + st.Requests[emulator.EndpointBatch]
			b.ReportMetric(float64(reqs)/float64(b.N), "requests/doc")
		})
	}
}
