package retry_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/pkg/retry"
)

// fakeClock advances its time by every requested wait instead of sleeping.
type fakeClock struct {
	now    time.Time
	sleeps []time.Duration
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 9, 29, 17, 4, 12, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time { return c.now }

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	return nil
}

// constRand returns a random source that always draws r.
func constRand(r float64) func() float64 { return func() float64 { return r } }

var errBoom = errors.New("boom")

// failing returns an operation that fails n times with err, then succeeds,
// and a pointer to the number of calls made.
func failing(n int, err error) (func(context.Context) error, *int) {
	calls := 0
	return func(context.Context) error {
		calls++
		if calls <= n {
			return err
		}
		return nil
	}, &calls
}

func TestPolicyBoundGrowsExponentiallyUpToMax(t *testing.T) {
	t.Parallel()
	p := retry.Policy{Initial: 100 * time.Millisecond, Max: time.Second, Multiplier: 2}
	want := []time.Duration{
		100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond,
		800 * time.Millisecond, time.Second, time.Second,
	}
	for i, w := range want {
		if got := p.Bound(i + 1); got != w {
			t.Errorf("Bound(%d) = %s, want %s", i+1, got, w)
		}
	}
	if got := p.Bound(0); got != 100*time.Millisecond {
		t.Errorf("Bound(0) = %s, want the first bound 100ms", got)
	}
	if got := p.Bound(math.MaxInt); got != time.Second {
		t.Errorf("Bound(MaxInt) = %s, want Max without overflow", got)
	}
}

func TestPolicyDelayIsFullJitterOfTheBound(t *testing.T) {
	t.Parallel()
	base := retry.Policy{Initial: 100 * time.Millisecond, Max: time.Second}
	for _, tc := range []struct {
		r       float64
		attempt int
		want    time.Duration
	}{
		{r: 0, attempt: 3, want: 0},
		{r: 0.5, attempt: 1, want: 50 * time.Millisecond},
		{r: 0.5, attempt: 3, want: 200 * time.Millisecond},
		{r: 0.25, attempt: 10, want: 250 * time.Millisecond},
	} {
		p := base
		p.Rand = constRand(tc.r)
		if got := p.Delay(tc.attempt); got != tc.want {
			t.Errorf("Delay(%d) with r=%v = %s, want %s", tc.attempt, tc.r, got, tc.want)
		}
	}
}

func TestPolicyDelayWithTheDefaultRandomSourceStaysInsideTheBound(t *testing.T) {
	t.Parallel()
	p := retry.Policy{Initial: time.Second, Max: time.Minute}
	seen := map[time.Duration]bool{}
	for range 200 {
		d := p.Delay(3)
		if d < 0 || d >= 4*time.Second {
			t.Fatalf("Delay(3) = %s, want in [0, 4s)", d)
		}
		seen[d] = true
	}
	if len(seen) < 100 {
		t.Fatalf("200 delays took only %d distinct values; jitter is not random", len(seen))
	}
}

func TestWithDefaults(t *testing.T) {
	t.Parallel()
	p := retry.Policy{}.WithDefaults()
	if p.Initial != retry.DefaultInitial || p.Max != retry.DefaultMax ||
		p.Multiplier != retry.DefaultMultiplier || p.MaxAttempts != retry.DefaultMaxAttempts ||
		p.MaxElapsed != 0 || p.Clock == nil || p.Rand == nil {
		t.Fatalf("zero policy with defaults = %+v", p)
	}
	if got := (retry.Policy{MaxElapsed: time.Minute}).WithDefaults().MaxAttempts; got != 0 {
		t.Fatalf("with a deadline, MaxAttempts default = %d, want 0 (no count limit)", got)
	}
	if got := (retry.Policy{Initial: time.Minute}).WithDefaults().Max; got != time.Minute {
		t.Fatalf("Max default with Initial above DefaultMax = %s, want Initial", got)
	}
}

func TestDoRetriesUntilSuccessWaitingJitteredDelays(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	var notified []string
	p := retry.Policy{
		Initial: 100 * time.Millisecond, Max: time.Second, MaxAttempts: 5,
		Clock: clock, Rand: constRand(0.5),
		OnRetry: func(attempt int, err error, delay time.Duration) {
			notified = append(notified, fmt.Sprintf("%d %v %s", attempt, err, delay))
		},
	}
	fn, calls := failing(2, errBoom)
	if err := retry.Do(context.Background(), p, fn); err != nil {
		t.Fatalf("Do = %v, want nil", err)
	}
	if *calls != 3 {
		t.Fatalf("calls = %d, want 3", *calls)
	}
	wantSleeps := []time.Duration{50 * time.Millisecond, 100 * time.Millisecond}
	if fmt.Sprint(clock.sleeps) != fmt.Sprint(wantSleeps) {
		t.Fatalf("sleeps = %v, want %v", clock.sleeps, wantSleeps)
	}
	wantNotified := []string{"1 boom 50ms", "2 boom 100ms"}
	if fmt.Sprint(notified) != fmt.Sprint(wantNotified) {
		t.Fatalf("OnRetry calls = %q, want %q", notified, wantNotified)
	}
}

func TestDoGivesUpAfterMaxAttempts(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	p := retry.Policy{MaxAttempts: 4, Clock: clock, Rand: constRand(0.5)}
	fn, calls := failing(100, errBoom)
	err := retry.Do(context.Background(), p, fn)
	if *calls != 4 || len(clock.sleeps) != 3 {
		t.Fatalf("calls = %d, sleeps = %d; want 4 calls and 3 waits", *calls, len(clock.sleeps))
	}
	if !errors.Is(err, retry.ErrExhausted) || !errors.Is(err, errBoom) {
		t.Fatalf("err = %v, want ErrExhausted wrapping the last error", err)
	}
	var re *retry.Error
	if !errors.As(err, &re) || re.Attempts != 4 {
		t.Fatalf("err = %#v, want *retry.Error with 4 attempts", err)
	}
	if got, want := err.Error(), "retry: stopped after 4 attempts (retries exhausted): boom"; got != want {
		t.Fatalf("message = %q, want %q", got, want)
	}
}

func TestDoStopsAtOnceOnAPermanentError(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	fn, calls := failing(100, fmt.Errorf("wrapped: %w", retry.Permanent(errBoom)))
	err := retry.Do(context.Background(), retry.Policy{Clock: clock}, fn)
	if *calls != 1 || len(clock.sleeps) != 0 {
		t.Fatalf("calls = %d, sleeps = %v; want one call and no wait", *calls, clock.sleeps)
	}
	if !errors.Is(err, retry.ErrPermanent) || !errors.Is(err, errBoom) || errors.Is(err, retry.ErrExhausted) {
		t.Fatalf("err = %v, want ErrPermanent wrapping boom", err)
	}
	if got, want := err.Error(), "retry: stopped after 1 attempt (permanent error): wrapped: boom"; got != want {
		t.Fatalf("message = %q, want %q", got, want)
	}
}

func TestDoAsksTheRetryableHook(t *testing.T) {
	t.Parallel()
	errTransient := errors.New("transient")
	p := retry.Policy{
		MaxAttempts: 10, Clock: newFakeClock(), Rand: constRand(0),
		Retryable: func(err error) bool { return errors.Is(err, errTransient) },
	}
	calls := 0
	err := retry.Do(context.Background(), p, func(context.Context) error {
		calls++
		if calls < 3 {
			return fmt.Errorf("write: %w", errTransient)
		}
		return errBoom
	})
	if calls != 3 || !errors.Is(err, retry.ErrPermanent) || !errors.Is(err, errBoom) {
		t.Fatalf("calls = %d, err = %v; want 3 calls ending on the unclassified error as permanent", calls, err)
	}
}

func TestDoHonoursTheDeadline(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	// Rand 0.999.. draws almost the full bound: waits of ~1s, 2s, 4s, 8s.
	p := retry.Policy{
		Initial: time.Second, Max: time.Hour, MaxElapsed: 10 * time.Second,
		Clock: clock, Rand: constRand(0.999),
	}
	fn, calls := failing(100, errBoom)
	err := retry.Do(context.Background(), p, fn)
	// Waits 0.999s + 1.998s + 3.996s = 6.993s; the next (7.992s) would end past 10s.
	if *calls != 4 || len(clock.sleeps) != 3 {
		t.Fatalf("calls = %d, sleeps = %v; want 4 calls and 3 waits", *calls, clock.sleeps)
	}
	if !errors.Is(err, retry.ErrExhausted) {
		t.Fatalf("err = %v, want ErrExhausted", err)
	}
}

func TestDoWithOnlyADeadlineHasNoCountLimit(t *testing.T) {
	t.Parallel()
	p := retry.Policy{Initial: time.Millisecond, Max: time.Millisecond, MaxElapsed: time.Hour,
		Clock: newFakeClock(), Rand: constRand(0.5)}
	fn, calls := failing(50, errBoom)
	if err := retry.Do(context.Background(), p, fn); err != nil || *calls != 51 {
		t.Fatalf("Do = %v after %d calls, want success after 51", err, *calls)
	}
}

func TestDoUnlimitedRunsUntilTheContextEnds(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	p := retry.Policy{MaxAttempts: retry.Unlimited, Clock: newFakeClock(), Rand: constRand(0.5)}
	err := retry.Do(ctx, p, func(context.Context) error {
		calls++
		if calls == 30 {
			cancel()
		}
		return errBoom
	})
	var re *retry.Error
	if !errors.As(err, &re) || re.Attempts != 30 || !errors.Is(err, context.Canceled) || !errors.Is(err, errBoom) {
		t.Fatalf("err = %v, want context.Canceled after 30 attempts wrapping boom", err)
	}
}

func TestDoReturnsWhenTheContextEndsDuringAWait(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The real clock would wait an hour; the cancelled context ends the wait at once.
	p := retry.Policy{Initial: time.Hour, Max: time.Hour, Rand: constRand(0.5)}
	calls := 0
	start := time.Now()
	err := retry.Do(ctx, p, func(context.Context) error {
		calls++
		cancel()
		return errBoom
	})
	if time.Since(start) > 10*time.Second {
		t.Fatalf("Do waited %s after the context was cancelled", time.Since(start))
	}
	if calls != 1 || !errors.Is(err, context.Canceled) || !errors.Is(err, errBoom) {
		t.Fatalf("calls = %d, err = %v; want 1 call and context.Canceled wrapping boom", calls, err)
	}
}

func TestDoDoesNotCallFnWithADoneContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	fn, calls := failing(0, nil)
	err := retry.Do(ctx, retry.Policy{}, fn)
	var re *retry.Error
	if *calls != 0 || !errors.As(err, &re) || re.Attempts != 0 || re.Err != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("calls = %d, err = %#v; want no call and context.Canceled", *calls, err)
	}
	if got, want := err.Error(), "retry: stopped after 0 attempts: context canceled"; got != want {
		t.Fatalf("message = %q, want %q", got, want)
	}
}

func TestDoWaitsAtLeastARetryAfterHint(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	p := retry.Policy{Initial: time.Second, Max: 2 * time.Second, Clock: clock, Rand: constRand(0.5)}
	calls := 0
	err := retry.Do(context.Background(), p, func(context.Context) error {
		calls++
		switch calls {
		case 1:
			return retry.RetryAfter(errBoom, 30*time.Second) // above Max: still honoured
		case 2:
			return retry.RetryAfter(errBoom, time.Millisecond) // below the drawn delay: ignored
		}
		return nil
	})
	want := []time.Duration{30 * time.Second, time.Second}
	if err != nil || fmt.Sprint(clock.sleeps) != fmt.Sprint(want) {
		t.Fatalf("err = %v, sleeps = %v; want nil and %v", err, clock.sleeps, want)
	}
	if retry.RetryAfter(nil, time.Second) != nil || retry.Permanent(nil) != nil {
		t.Fatal("marking a nil error must stay nil")
	}
	if !errors.Is(retry.RetryAfter(errBoom, time.Second), errBoom) {
		t.Fatal("RetryAfter must keep the wrapped error visible to errors.Is")
	}
}

func TestDoRejectsInvalidPolicies(t *testing.T) {
	t.Parallel()
	for name, p := range map[string]retry.Policy{
		"negative initial":         {Initial: -time.Second},
		"max below initial":        {Initial: time.Second, Max: time.Millisecond},
		"multiplier below one":     {Multiplier: 0.5},
		"multiplier NaN":           {Multiplier: math.NaN()},
		"multiplier infinite":      {Multiplier: math.Inf(1)},
		"attempts below Unlimited": {MaxAttempts: -2},
		"negative deadline":        {MaxElapsed: -time.Second},
	} {
		fn, calls := failing(0, nil)
		err := retry.Do(context.Background(), p, fn)
		if !errors.Is(err, retry.ErrInvalidPolicy) || *calls != 0 {
			t.Errorf("%s: err = %v after %d calls, want ErrInvalidPolicy and no call", name, err, *calls)
		}
	}
}

func TestSystemClock(t *testing.T) {
	t.Parallel()
	var c retry.SystemClock
	if err := c.Sleep(context.Background(), time.Millisecond); err != nil {
		t.Fatalf("Sleep(1ms) = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep with a cancelled context = %v, want context.Canceled", err)
	}
	if err := c.Sleep(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep(0) with a cancelled context = %v, want context.Canceled", err)
	}
	if d := time.Since(c.Now()); d < 0 || d > time.Minute {
		t.Fatalf("Now is %s away from time.Now", d)
	}
}

func TestOnRetriesOnlyTheGivenErrors(t *testing.T) {
	t.Parallel()
	errA, errB := errors.New("a"), errors.New("b")
	retryable := retry.On(errA, errB)
	if !retryable(fmt.Errorf("wrapped: %w", errB)) || !retryable(errA) || retryable(errBoom) || retryable(nil) {
		t.Fatal("On must match exactly the target errors, wrapped or not")
	}
	if retry.On()(errA) {
		t.Fatal("On without targets retries nothing")
	}
}
