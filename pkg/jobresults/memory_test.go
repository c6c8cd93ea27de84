package jobresults_test

import (
	"path/filepath"
	"testing"

	"github.com/oxypipe/oxypipe/pkg/jobresults"
	"github.com/oxypipe/oxypipe/pkg/jobresults/storetest"
)

func TestMemoryStoreConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, opts storetest.Options) jobresults.Ledger {
		return jobresults.NewMemoryStore(jobresults.WithScoping(opts.Scoping), jobresults.WithClock(opts.Now))
	})
}

// TestMemoryStoreSpillingConformance runs the suite against stores that
// spill complete documents: at the suite's last stage (as a run does), and
// at earlier ones, so that nearly every document of the suite is spilled
// and read back by the writes and reads that follow.
func TestMemoryStoreSpillingConformance(t *testing.T) {
	t.Parallel()
	for _, final := range []string{"written", "done", "payload"} {
		t.Run("complete at "+final, func(t *testing.T) {
			t.Parallel()
			storetest.Run(t, func(t *testing.T, opts storetest.Options) jobresults.Ledger {
				s := jobresults.NewMemoryStore(jobresults.WithScoping(opts.Scoping), jobresults.WithClock(opts.Now),
					jobresults.WithSpill(filepath.Join(t.TempDir(), "ledger.spill"), final))
				if err := s.SpillError(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					if err := s.Close(); err != nil {
						t.Error(err)
					}
				})
				return s
			})
		})
	}
}
