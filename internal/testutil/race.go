//go:build race

package testutil

// Race reports that the tests run under the race detector, which makes the
// pipeline several times slower: tests that bound how long something takes
// widen the bound, and tests that size a run shrink it.
const Race = true
