// Package storetest is the conformance suite of the job-results ledger:
// every store (jobresults.MemoryStore, jobresults.MongoStore, any future
// one) runs the same tests, so that they behave identically.
//
// A store's test calls Run with a constructor of fresh, empty ledgers:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T, opts storetest.Options) jobresults.Ledger {
//			return jobresults.NewMemoryStore(jobresults.WithScoping(opts.Scoping), jobresults.WithClock(opts.Now))
//		})
//	}
//
// The suite covers the Store API's write rules, every query, soft-failure and
// distinct-document counting, stage filters, unique-error grouping and
// order, versioned batch writes, document-order streaming, scoping, bad
// input, cancelled contexts, concurrent writers, the finish stamp that
// retention counts from, two known ways a ledger miscounts (soft failures
// counted as none, a document both completed and hard-failed counted
// twice), and a randomized
// comparison against a reference model.
package storetest
