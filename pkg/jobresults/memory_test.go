package jobresults_test

import (
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
