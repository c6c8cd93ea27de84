//go:build race

package testutil

// RaceEnabled reports whether the tests run under the race detector, which
// slows the code about tenfold and inflates its allocations: tests that
// bound how long something takes widen the bound, tests that size a run
// shrink it, and a test whose scenario needs speed (a rate limit reached) or
// counts allocations says so instead of failing.
const RaceEnabled = true
