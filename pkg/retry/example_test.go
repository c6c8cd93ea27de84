package retry_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/oxypipe/oxypipe/pkg/retry"
)

// instantClock prints each wait instead of sleeping, so the example is
// deterministic and fast.
type instantClock struct{ now time.Time }

func (c *instantClock) Now() time.Time { return c.now }

func (c *instantClock) Sleep(_ context.Context, d time.Duration) error {
	fmt.Println("waiting", d)
	c.now = c.now.Add(d)
	return nil
}

func ExampleDo() {
	errUnavailable := errors.New("503 service unavailable")
	policy := retry.Policy{
		Initial:     time.Second,
		Max:         time.Minute,
		MaxAttempts: 5,
		Retryable:   func(err error) bool { return errors.Is(err, errUnavailable) },
		Clock:       &instantClock{},
		Rand:        func() float64 { return 0.5 }, // a fixed draw for a stable output
	}
	attempt := 0
	err := retry.Do(context.Background(), policy, func(context.Context) error {
		attempt++
		if attempt < 3 {
			return errUnavailable
		}
		return nil
	})
	fmt.Println("attempts:", attempt, "err:", err)
	// Output:
	// waiting 500ms
	// waiting 1s
	// attempts: 3 err: <nil>
}

func ExamplePermanent() {
	errBadRequest := errors.New("400 bad request")
	err := retry.Do(context.Background(), retry.Policy{}, func(context.Context) error {
		return retry.Permanent(errBadRequest)
	})
	fmt.Println(err)
	fmt.Println(errors.Is(err, retry.ErrPermanent), errors.Is(err, errBadRequest))
	// Output:
	// retry: stopped after 1 attempt (permanent error): 400 bad request
	// true true
}
