package poller

import (
	"errors"
	"fmt"
	"time"

	"github.com/oxypipe/oxypipe/internal/stage"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/retry"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// Defaults of Config.
const (
	// DefaultPendingLimit is how long a job may stay pending. The slowest
	// jobs observed live took minutes; an hour leaves room for a slow API
	// day and still ends a run whose jobs never finish.
	DefaultPendingLimit = time.Hour
	// DefaultRetryLimit is how long failing checks of one job are retried
	// from the first failure: long enough to outlast an API incident of
	// minutes, short enough that a job that cannot be checked ends unfetched
	// (and recoverable by its id) within the run.
	DefaultRetryLimit = 10 * time.Minute
	// DefaultRetryInitial and DefaultRetryMax bound the back-off between
	// retries of a failing check: its ceiling doubles from 1 s to 30 s.
	DefaultRetryInitial = time.Second
	DefaultRetryMax     = 30 * time.Second
	// DefaultUploadWait is how long after a storage job finished the poller
	// waits for its upload entry.
	DefaultUploadWait = time.Minute
)

// NoPendingLimit as Config.PendingLimit checks a pending job for as long as
// the consumer's MaxDeliver allows.
const NoPendingLimit time.Duration = -1

// deliveryMargin is how many deliveries beyond the scheduled checks the
// consumer's MaxDeliver must leave for retries and redeliveries.
const deliveryMargin = 20

// Config configures a Poller.
type Config struct {
	// Stage configures the runtime the poller runs in. Conn is required.
	// Consumer defaults to topology.DefaultConsumer(topology.Poller); Run
	// ensures it. Instance, Logger and Registerer are used by the poller too.
	Stage stage.Config

	// Topology is the ensured topology; the poller's consumer is ensured
	// with it. Required.
	Topology *topology.Topology

	// API checks the jobs. Required.
	API *wsa.Client

	// Schedule says when a job is checked, from its submission. Zero fields
	// take DefaultSchedule's.
	Schedule Schedule

	// PendingLimit is how long after its submission a job may stay pending;
	// then it is recorded unfetched ("still pending after <d>; stopped
	// checking"). Default DefaultPendingLimit; NoPendingLimit for none (the
	// consumer's MaxDeliver then ends the checks). The schedule's checks
	// within the limit must fit in the consumer's MaxDeliver.
	PendingLimit time.Duration

	// Retry shapes the retries of a failing check (429, 5xx, network): the
	// delay before retry n is drawn from [0, min(Max, Initial·Multiplier^(n−1)))
	// (defaults DefaultRetryInitial, DefaultRetryMax, doubling); MaxElapsed
	// is the retry limit, measured from the job's first failure (default
	// DefaultRetryLimit); MaxAttempts, when positive, also caps the number
	// of failures. Retryable, OnRetry, Clock and Rand are ignored.
	Retry retry.Policy

	// UploadWait is how long after a job with a storage_url finished the
	// poller keeps checking it for its upload entry (see the package
	// documentation). Default DefaultUploadWait; negative: do not wait.
	UploadWait time.Duration

	// Sink, when set, lets the poller write done jobs itself: a check of a
	// job whose run the sink already writes asks for the job's results
	// instead of its status, and a done job's body goes straight into the
	// sink, saving the Done message, the writer's delivery and one request
	// per job (see the package documentation). For a process that runs the
	// writer too (oxy run); nil for a poller on its own, which has no
	// destinations.
	Sink Sink
}

// WithDefaults returns c with every unset field filled in.
func (c Config) WithDefaults() Config {
	if c.Stage.Consumer.Stage == "" {
		c.Stage.Consumer, _ = topology.DefaultConsumer(topology.Poller)
	}
	c.Stage = c.Stage.WithDefaults()
	c.Schedule = c.Schedule.WithDefaults()
	if c.PendingLimit == 0 {
		c.PendingLimit = DefaultPendingLimit
	}
	if c.Retry.Initial == 0 {
		c.Retry.Initial = DefaultRetryInitial
	}
	if c.Retry.Max == 0 {
		c.Retry.Max = max(DefaultRetryMax, c.Retry.Initial)
	}
	if c.Retry.MaxElapsed == 0 {
		c.Retry.MaxElapsed = DefaultRetryLimit
	}
	if c.Retry.MaxAttempts == 0 {
		c.Retry.MaxAttempts = retry.Unlimited
	}
	c.Retry = c.Retry.WithDefaults()
	if c.UploadWait == 0 {
		c.UploadWait = DefaultUploadWait
	}
	return c
}

// validate checks a configuration that WithDefaults has filled in.
func (c Config) validate() error {
	if c.Stage.Conn == nil {
		return errors.New("poller: Config.Stage.Conn is required")
	}
	if c.API == nil {
		return errors.New("poller: Config.API is required")
	}
	if c.Topology == nil {
		return errors.New("poller: Config.Topology is required")
	}
	if c.Stage.Consumer.Stage != topology.Poller {
		return fmt.Errorf("poller: Config.Stage.Consumer is the %q consumer, want %q", c.Stage.Consumer.Stage, topology.Poller)
	}
	if err := c.Schedule.Validate(); err != nil {
		return fmt.Errorf("poller: %w", err)
	}
	if c.PendingLimit < 0 && c.PendingLimit != NoPendingLimit {
		return fmt.Errorf("poller: PendingLimit %v is negative (use NoPendingLimit for none)", c.PendingLimit)
	}
	if c.Retry.Initial < 0 || c.Retry.Max < c.Retry.Initial || c.Retry.MaxElapsed < 0 {
		return fmt.Errorf("poller: invalid Retry: Initial %v, Max %v, MaxElapsed %v", c.Retry.Initial, c.Retry.Max, c.Retry.MaxElapsed)
	}
	if md := c.Stage.Consumer.MaxDeliver; md > 0 && c.PendingLimit > 0 {
		if n := c.Schedule.Checks(c.PendingLimit); n+deliveryMargin > md {
			return fmt.Errorf("poller: the schedule checks a job %d times within the pending limit of %v, "+
				"which the consumer's MaxDeliver of %d does not allow with a margin of %d: raise MaxDeliver or shorten the limit",
				n, c.PendingLimit, md, deliveryMargin)
		}
	}
	return nil
}
