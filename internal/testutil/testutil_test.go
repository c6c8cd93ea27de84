package testutil_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/internal/testutil"
)

func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	testutil.Eventually(t, time.Second, "the third call", func() bool { return calls.Add(1) == 3 })
	if got := calls.Load(); got != 3 {
		t.Fatalf("cond was called %d times, want 3", got)
	}
}

// fakeT records a Fatalf instead of ending the test.
type fakeT struct {
	testing.TB
	msg string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.msg = format
	_ = args
	panic(f)
}

func TestEventuallyFailsAfterTheDeadline(t *testing.T) {
	t.Parallel()
	ft := &fakeT{TB: t}
	func() {
		defer func() {
			if r := recover(); r != ft {
				t.Fatalf("recovered %v, want the fake test's Fatalf", r)
			}
		}()
		testutil.Eventually(ft, 30*time.Millisecond, "never", func() bool { return false })
	}()
	if ft.msg != "timed out after %v waiting for %s" {
		t.Fatalf("Fatalf format = %q", ft.msg)
	}
}
