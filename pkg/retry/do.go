package retry

import (
	"context"
)

// Do calls fn until it succeeds, fails permanently, runs out of attempts or
// time, or ctx is done, waiting p's jittered delay between attempts. It
// returns nil on success and otherwise an *Error that carries the attempt
// count, the reason (ErrExhausted, ErrPermanent or the context's error) and
// the last error of fn. An invalid policy is reported (wrapping
// ErrInvalidPolicy) without calling fn.
//
// fn receives ctx unchanged: per-attempt timeouts are fn's business.
func Do(ctx context.Context, p Policy, fn func(ctx context.Context) error) error {
	p = p.WithDefaults()
	if err := p.validate(); err != nil {
		return err
	}
	start := p.Clock.Now()
	var last error
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return &Error{Attempts: attempt - 1, Err: last, Reason: err}
		}
		last = fn(ctx)
		if last == nil {
			return nil
		}
		if IsPermanent(last) || (p.Retryable != nil && !p.Retryable(last)) {
			return &Error{Attempts: attempt, Err: last, Reason: ErrPermanent}
		}
		if p.MaxAttempts > 0 && attempt >= p.MaxAttempts {
			return &Error{Attempts: attempt, Err: last, Reason: ErrExhausted}
		}
		delay := max(p.Delay(attempt), retryAfterOf(last))
		if p.MaxElapsed > 0 && p.Clock.Now().Add(delay).Sub(start) > p.MaxElapsed {
			return &Error{Attempts: attempt, Err: last, Reason: ErrExhausted}
		}
		if p.OnRetry != nil {
			p.OnRetry(attempt, last, delay)
		}
		if err := p.Clock.Sleep(ctx, delay); err != nil {
			return &Error{Attempts: attempt, Err: last, Reason: err}
		}
	}
}
