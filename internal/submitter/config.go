package submitter

import (
	"errors"
	"fmt"
	"time"

	"github.com/oxypipe/oxypipe/internal/stage"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/payload"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// Defaults of Config.
const (
	DefaultConcurrency      = 32
	DefaultSubmitTimeout    = 20 * time.Second
	DefaultKVTimeout        = 5 * time.Second
	DefaultClaimMargin      = 30 * time.Second
	DefaultClaimRecheck     = 5 * time.Second // with unlimited deliveries; see Config.ClaimRecheck
	DefaultRunStateTTL      = 2 * time.Second
	DefaultRateLimitedRetry = time.Second
	DefaultSettleInterval   = time.Second
)

// Config configures a Submitter. Stage.Conn, Topology and API are
// required; every other field has a default.
type Config struct {
	// Stage configures the runtime the submitter runs in: the broker
	// connection (not closed by the submitter), the consumer (default
	// topology.DefaultConsumer(topology.Submitter), ensured by Run), the
	// Instance named in claims, status events and logs, the Logger and
	// Registerer the submitter uses too, and the runtime's tuning (fetching,
	// batching, heartbeats, draining). Stage.BatchSize is also the most
	// payloads one handler call can group into API batches.
	Stage stage.Config
	// Topology is the ensured topology: the claims and runs buckets, and the
	// handle the submitter's consumer is ensured with.
	Topology *topology.Topology
	// API calls the API. Its own Timeout should not be shorter than
	// SubmitTimeout.
	API *wsa.Client

	// Pacer is the rate budget submissions are paced with: Limit (default
	// 50 jobs per second) and RenderLimit (default 13) until the API's
	// headers say otherwise.
	Pacer wsa.PacerConfig
	// DisableBatch sends every payload on its own (POST /v1/queries), never
	// as a batch.
	DisableBatch bool
	// MaxBatch caps the values of one batch request, 2..payload.MaxBatch.
	// Default payload.MaxBatch (5,000); the rate limit usually caps it lower
	// (see payload.BatchSize).
	MaxBatch int
	// Concurrency bounds the API requests and the bucket operations one
	// handler call has in flight at once. Default 32.
	Concurrency int

	// SubmitTimeout bounds one submission request. A request in flight is
	// not cut short by a SIGTERM (its answer must reach the claim), so keep
	// it below the runtime's DrainTimeout. Default 20s.
	SubmitTimeout time.Duration
	// KVTimeout bounds one operation on the claims or runs bucket.
	// Default 5s. SubmitTimeout + 3×KVTimeout (claim, request, answer) must
	// stay below the consumer's HandlerTimeout: the rest of a handler call
	// is what a payload may wait for the rate budget.
	KVTimeout time.Duration
	// ClaimStaleAfter is the age after which a claim without a job id is
	// taken to belong to a submitter that died inside its request (outcome
	// unknown) rather than to one still working on it. A live submitter
	// holds a claim for at most one handler call, so the default is
	// max(AckWait, HandlerTimeout) + 30s.
	ClaimStaleAfter time.Duration
	// ClaimRecheck is the longest wait before a payload whose claim another
	// submitter holds (not yet stale) is looked at again. Every look is a
	// delivery of the payload, and deliveries are capped by the consumer's
	// MaxDeliver, so MaxDeliver × ClaimRecheck must cover ClaimStaleAfter
	// plus claimWaitMargin looks (validated): otherwise a payload waiting
	// for a live submitter would run out of deliveries before the claim it
	// waits for can be called stale. Default: ClaimStaleAfter spread over
	// the looks the consumer's MaxDeliver affords (MaxDeliver − 2), at least
	// 1s: 18.75s with the default consumer (150s over 8 looks); 5s when
	// MaxDeliver is unlimited.
	ClaimRecheck time.Duration
	// RunStateTTL is how long a run's state (ready, stopping, …) read from
	// the runs bucket is trusted before it is read again. Default 2s.
	// RunStateTTL + KVTimeout must stay below messages.StopSettle: a request
	// started under a state read before a stop must have taken its claim by
	// the time the statusworker completes the stopped run from the claims.
	RunStateTTL time.Duration
	// RetryUnknownOnce sends a payload once more after an answer that left
	// its outcome unknown: a 5xx, a timeout or dropped connection after the
	// request was sent, an unreadable 2xx without a job id. Off (the
	// default), such a payload is never sent again automatically: it ends
	// unsubmitted, marked as possibly billed (error.may_have_billed in the
	// run log), for the user to decide. On, it is sent exactly once more,
	// with a warning; if that answer is unknown too, or the retry is refused,
	// it ends marked as well. The cost: a second bill for each such payload
	// whose first request did create a job (the API can create a job and
	// still answer 5xx), so at most two jobs per payload.
	RetryUnknownOnce bool
	// RateLimitedRetry is the redelivery delay of a payload that got a 429
	// of the rate limit (the pacer pauses submissions meanwhile). Other
	// retryable failures follow the consumer's RetryBackoff. Default 1s.
	RateLimitedRetry time.Duration
	// SettleInterval is how often the claims of docs whose payload messages
	// are gone (acked with a job id) are settled: their job ids move into
	// their run's settled record and their keys leave the claims bucket,
	// which otherwise holds about 140 bytes of broker memory per doc until
	// the run is forgotten. Default 1s; negative: never settle.
	SettleInterval time.Duration
}

// WithDefaults returns c with every unset field filled in.
func (c Config) WithDefaults() Config {
	if c.Stage.Consumer.Stage == "" {
		c.Stage.Consumer, _ = topology.DefaultConsumer(topology.Submitter)
	}
	c.Stage = c.Stage.WithDefaults()
	if c.MaxBatch == 0 {
		c.MaxBatch = payload.MaxBatch
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.SubmitTimeout == 0 {
		c.SubmitTimeout = DefaultSubmitTimeout
	}
	if c.KVTimeout == 0 {
		c.KVTimeout = DefaultKVTimeout
	}
	if c.ClaimStaleAfter == 0 {
		c.ClaimStaleAfter = max(c.Stage.Consumer.AckWait, c.Stage.Consumer.HandlerTimeout) + DefaultClaimMargin
	}
	if c.ClaimRecheck == 0 {
		c.ClaimRecheck = DefaultClaimRecheck
		if least := leastClaimRecheck(c.ClaimStaleAfter, c.Stage.Consumer.MaxDeliver); least > 0 {
			c.ClaimRecheck = max(least, time.Second)
		}
	}
	if c.RunStateTTL == 0 {
		c.RunStateTTL = DefaultRunStateTTL
	}
	if c.RateLimitedRetry == 0 {
		c.RateLimitedRetry = DefaultRateLimitedRetry
	}
	if c.SettleInterval == 0 {
		c.SettleInterval = DefaultSettleInterval
	}
	c.Pacer = c.Pacer.WithDefaults()
	return c
}

// validate checks a configuration that went through WithDefaults.
func (c Config) validate() error {
	switch {
	case c.Stage.Conn == nil:
		return errors.New("submitter: Config.Stage.Conn is required")
	case c.Topology == nil:
		return errors.New("submitter: Config.Topology is required")
	case c.API == nil:
		return errors.New("submitter: Config.API is required")
	case c.Stage.Consumer.Stage != topology.Submitter:
		return fmt.Errorf("submitter: Config.Stage.Consumer is the %q consumer, want %q", c.Stage.Consumer.Stage, topology.Submitter)
	case c.MaxBatch < 2 || c.MaxBatch > payload.MaxBatch:
		return fmt.Errorf("submitter: MaxBatch %d is outside 2..%d (use DisableBatch to send payloads singly)", c.MaxBatch, payload.MaxBatch)
	case c.Concurrency < 1:
		return fmt.Errorf("submitter: Concurrency %d is below 1", c.Concurrency)
	case c.SubmitTimeout < 0 || c.KVTimeout < 0 || c.ClaimStaleAfter < 0 || c.ClaimRecheck < 0 ||
		c.RunStateTTL < 0 || c.RateLimitedRetry < 0:
		return errors.New("submitter: durations must not be negative")
	}
	if err := c.Stage.Consumer.Validate(); err != nil {
		return fmt.Errorf("submitter: %w", err)
	}
	// A handler call must have time to wait for the pacer, then claim the
	// docs, send one request and record its answer (mark or release the
	// claim) before its deadline.
	if need := afterAdmission(c.SubmitTimeout, c.KVTimeout); need >= c.Stage.Consumer.HandlerTimeout {
		return fmt.Errorf("submitter: SubmitTimeout %v + 3×KVTimeout %v leaves no time to pace within HandlerTimeout %v",
			c.SubmitTimeout, c.KVTimeout, c.Stage.Consumer.HandlerTimeout)
	}
	// A stopped run is completed from the claims StopSettle after its stop:
	// a request this submitter starts under a state read before the stop
	// must have claimed its doc by then.
	if c.RunStateTTL+c.KVTimeout >= messages.StopSettle {
		return fmt.Errorf("submitter: RunStateTTL %v + KVTimeout %v must stay below %v: a stopped run is completed that long after its stop, and a request this submitter starts under an older state must have claimed its doc by then",
			c.RunStateTTL, c.KVTimeout, messages.StopSettle)
	}
	// A claim younger than a live handler call may still be worked on; one
	// declared stale too early would turn a submission in progress into an
	// "outcome unknown".
	if c.ClaimStaleAfter < c.Stage.Consumer.HandlerTimeout {
		return fmt.Errorf("submitter: ClaimStaleAfter %v is shorter than HandlerTimeout %v", c.ClaimStaleAfter, c.Stage.Consumer.HandlerTimeout)
	}
	// A payload that waits for another submitter's claim spends a delivery
	// per look; it must be able to look until the claim is stale.
	if md := c.Stage.Consumer.MaxDeliver; md > 0 && md <= claimWaitMargin {
		return fmt.Errorf("submitter: the consumer's MaxDeliver %d leaves no delivery to wait for a claim another submitter holds; "+
			"it must be above %d (or 0: no limit)", md, claimWaitMargin)
	}
	if md := c.Stage.Consumer.MaxDeliver; md > 0 && time.Duration(md)*c.ClaimRecheck < c.ClaimStaleAfter+claimWaitMargin*c.ClaimRecheck {
		return fmt.Errorf("submitter: MaxDeliver %d × ClaimRecheck %v = %v does not outlast ClaimStaleAfter %v plus %d rechecks: "+
			"a payload waiting for a live submitter's claim would run out of deliveries before the claim is stale; "+
			"raise ClaimRecheck to at least %v or the consumer's MaxDeliver",
			md, c.ClaimRecheck, time.Duration(md)*c.ClaimRecheck, c.ClaimStaleAfter, claimWaitMargin, leastClaimRecheck(c.ClaimStaleAfter, md))
	}
	return nil
}

// claimWaitMargin is the deliveries of a payload that a wait for a held
// claim may not count on: the delivery that found the claim held, and one
// spent before (a retry, or the delivery whose handler holds the claim).
const claimWaitMargin = 2

// leastClaimRecheck is the shortest ClaimRecheck with which maxDeliver
// deliveries cover staleAfter plus claimWaitMargin looks (0 when deliveries
// are unlimited, or too few for any recheck to do it).
func leastClaimRecheck(staleAfter time.Duration, maxDeliver int) time.Duration {
	looks := time.Duration(maxDeliver - claimWaitMargin)
	if maxDeliver <= 0 || looks <= 0 {
		return 0
	}
	return (staleAfter + looks - 1) / looks
}
