package retry

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Defaults filled in by [Policy.WithDefaults].
const (
	// DefaultInitial is the upper bound of the first delay.
	DefaultInitial = 100 * time.Millisecond
	// DefaultMax caps every single delay.
	DefaultMax = 10 * time.Second
	// DefaultMultiplier is the growth factor of the delay bound per attempt.
	DefaultMultiplier = 2.0
	// DefaultMaxAttempts is the attempt limit used when a policy sets neither
	// MaxAttempts nor MaxElapsed.
	DefaultMaxAttempts = 5
)

// Unlimited, as [Policy.MaxAttempts], removes the limit on the number of
// attempts: only MaxElapsed (when set) and the context end the loop.
const Unlimited = -1

// ErrInvalidPolicy is wrapped by the error [Do] returns for a policy that
// fails validation.
var ErrInvalidPolicy = errors.New("retry: invalid policy")

// Policy says how long to wait between attempts and when to give up. The zero
// value is usable: [Policy.WithDefaults] fills every unset field.
type Policy struct {
	// Initial is the upper bound of the delay after the first failed attempt.
	// Default DefaultInitial. Must be positive after defaults.
	Initial time.Duration
	// Max caps the bound of every delay (a RetryAfter hint may exceed it).
	// Default DefaultMax. Must be at least Initial.
	Max time.Duration
	// Multiplier is the factor by which the bound grows after each failed
	// attempt. Default DefaultMultiplier. Must be at least 1.
	Multiplier float64
	// MaxAttempts is the number of attempts in total, the first included.
	// Zero means DefaultMaxAttempts when MaxElapsed is also zero, and no count
	// limit when MaxElapsed is set. Unlimited means no count limit.
	MaxAttempts int
	// MaxElapsed is the deadline, measured from the start of Do: a retry whose
	// delay would end after it is not attempted. Zero means no deadline.
	MaxElapsed time.Duration
	// Retryable classifies an error that is not marked Permanent: true means
	// try again. Nil means every such error is retried.
	Retryable func(err error) bool
	// OnRetry, when set, is called after a failed attempt that will be
	// retried, with the attempt number (1-based), its error and the delay
	// about to be waited. Use it to log or count retries.
	OnRetry func(attempt int, err error, delay time.Duration)
	// Clock tells time and waits. Default SystemClock.
	Clock Clock
	// Rand returns a uniformly distributed number in [0, 1); it draws the
	// jitter. Default math/rand/v2's Float64. It must be safe for concurrent
	// use if the policy is shared between goroutines.
	Rand func() float64
}

// WithDefaults returns a copy of p with every unset field filled in.
func (p Policy) WithDefaults() Policy {
	if p.Initial == 0 {
		p.Initial = DefaultInitial
	}
	if p.Max == 0 {
		p.Max = max(DefaultMax, p.Initial)
	}
	if p.Multiplier == 0 {
		p.Multiplier = DefaultMultiplier
	}
	if p.MaxAttempts == 0 && p.MaxElapsed == 0 {
		p.MaxAttempts = DefaultMaxAttempts
	}
	if p.Clock == nil {
		p.Clock = SystemClock{}
	}
	if p.Rand == nil {
		p.Rand = rand.Float64
	}
	return p
}

// validate checks a policy after defaults have been applied.
func (p Policy) validate() error {
	switch {
	case p.Initial <= 0:
		return fmt.Errorf("%w: Initial must be positive, got %s", ErrInvalidPolicy, p.Initial)
	case p.Max < p.Initial:
		return fmt.Errorf("%w: Max (%s) must be at least Initial (%s)", ErrInvalidPolicy, p.Max, p.Initial)
	case !(p.Multiplier >= 1) || math.IsInf(p.Multiplier, 0):
		return fmt.Errorf("%w: Multiplier must be a finite number >= 1, got %v", ErrInvalidPolicy, p.Multiplier)
	case p.MaxAttempts < Unlimited:
		return fmt.Errorf("%w: MaxAttempts must be positive, zero or Unlimited, got %d", ErrInvalidPolicy, p.MaxAttempts)
	case p.MaxElapsed < 0:
		return fmt.Errorf("%w: MaxElapsed must not be negative, got %s", ErrInvalidPolicy, p.MaxElapsed)
	}
	return nil
}

// Bound returns the upper bound of the delay after failed attempt number
// attempt (1-based): min(Max, Initial·Multiplier^(attempt−1)). Attempts below
// 1 count as 1. Unset fields take their defaults.
func (p Policy) Bound(attempt int) time.Duration {
	p = p.WithDefaults()
	if attempt < 1 {
		attempt = 1
	}
	b := float64(p.Initial) * math.Pow(p.Multiplier, float64(attempt-1))
	if math.IsNaN(b) || b >= float64(p.Max) {
		return p.Max
	}
	return time.Duration(b)
}

// Delay returns the jittered delay to wait after failed attempt number
// attempt (1-based): uniform in [0, Bound(attempt)).
func (p Policy) Delay(attempt int) time.Duration {
	p = p.WithDefaults()
	return time.Duration(p.Rand() * float64(p.Bound(attempt)))
}
