// Package testutil holds the helpers the project's tests share, so that every
// package waits on conditions the same way instead of keeping its own copy.
package testutil

import (
	"testing"
	"time"
)

// Eventually polls cond every 10 ms until it holds and fails the test when
// within passes first, naming what it waited for. Tests wait on conditions
// with it, never with bare sleeps.
func Eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
