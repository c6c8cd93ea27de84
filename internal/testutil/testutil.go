// Package testutil holds the helpers the project's tests share, so that every
// package waits on conditions, reads metrics and reads streams the same way
// instead of keeping its own copy.
package testutil

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// Eventually polls cond every 10 ms until it holds and fails the test when
// within passes first, naming what it waited for. Tests wait on conditions
// with it, never with bare sleeps.
func Eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	poll(t, within, cond, func() string { return "for " + what })
}

// Eventuallyf is Eventually for call sites that describe the condition
// after it: the test fails with "waiting until <format, args>".
func Eventuallyf(t testing.TB, within time.Duration, cond func() bool, format string, args ...any) {
	t.Helper()
	poll(t, within, cond, func() string { return "until " + fmt.Sprintf(format, args...) })
}

// EventuallyExplain is Eventually whose failure message is explain's answer
// at the deadline, so that it can say what was still missing.
func EventuallyExplain(t testing.TB, within time.Duration, cond func() bool, explain func() string) {
	t.Helper()
	poll(t, within, cond, func() string { return "until " + explain() })
}

func poll(t testing.TB, within time.Duration, cond func() bool, describe func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting %s", within, describe())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Patient widens a test's bound on how long the pipeline may take: four
// times under the race detector, which slows the stages about tenfold and
// makes a loaded 2-core machine's minute several. A bound that only the
// race detector breaks is a timing assumption, not a defect of the code.
func Patient(d time.Duration) time.Duration {
	if RaceEnabled {
		return 4 * d
	}
	return d
}

// RunUntilCleanup runs each of runs in a goroutine of its own until the
// test ends: the test's cleanup cancels their context and waits for them,
// and a run that returns an error fails the test, named by what. Tests
// start stages and servers with it, so that none outlives its test.
func RunUntilCleanup(t testing.TB, what string, runs ...func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, run := range runs {
		wg.Go(func() {
			if err := run(ctx); err != nil {
				t.Errorf("%s stopped: %v", what, err)
			}
		})
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
}
