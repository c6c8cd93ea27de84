// Package retry runs an operation again after failures, waiting an
// exponentially growing, fully jittered delay between attempts.
//
// Every remote call in oxypipe can fail for a moment (a MongoDB failover, a
// dropped connection, an API answering 503) and succeed a second later, while
// other failures will never succeed however often they are retried. This
// package keeps that decision in one place: a [Policy] says how long to wait
// and when to give up, a classification hook ([Policy.Retryable], [Permanent])
// says which errors are worth another attempt, and [Do] runs the loop.
//
// Delays use "full jitter": the delay before retry n is drawn uniformly from
// [0, min(Max, Initial·Multiplier^(n−1))). Spreading retries over the whole
// interval keeps many workers that failed at the same moment from retrying in
// lockstep against a recovering server.
//
// Waiting honours the context, and both the clock and the random source can
// be injected, so tests run the loop deterministically without sleeping.
package retry
