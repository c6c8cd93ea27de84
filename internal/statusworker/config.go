package statusworker

import (
	"errors"
	"fmt"
	"time"

	"github.com/oxypipe/oxypipe/internal/stage"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/destination"
	"github.com/oxypipe/oxypipe/pkg/jobresults"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/retry"
)

// Defaults of Config.
const (
	DefaultBatchSize        = 500
	DefaultRecheckInterval  = 10 * time.Second
	DefaultConfirmInterval  = time.Minute
	DefaultMinCheckInterval = 250 * time.Millisecond
	DefaultCompletionLease  = 5 * time.Minute
	DefaultRebuildBatch     = 2000
	DefaultSettleTimeout    = 30 * time.Second
	DefaultRunRetention     = 7 * 24 * time.Hour
)

// ErrInvalidConfig is wrapped by New's error for a Config that cannot work.
var ErrInvalidConfig = errors.New("statusworker: invalid configuration")

// Config configures a StatusWorker. Stage.Conn, Topology and Ledger are
// required; every other field has a default.
type Config struct {
	// Stage configures the runtime the worker runs in: the broker connection
	// (not closed by the worker), the consumer, the Instance named in logs,
	// in the events it records and in its completion claims, the Logger and
	// Registerer the worker uses too, and the runtime's tuning. Defaults:
	// Consumer is topology.DefaultConsumer(topology.StatusWorker) with
	// MaxDeliver 0 (a status event the worker decoded is never
	// dead-lettered, because the only reason it is not acked is a ledger
	// failure, which must delay the event, never lose it; a malformed event
	// is terminated at once, see the package documentation); BatchSize, the
	// most events written to the ledger in one batch, is DefaultBatchSize;
	// the rest are the runtime's (MaxInFlight two batches: one being written
	// while the next fills).
	Stage stage.Config
	// Topology is the ensured streams and buckets (topology.Ensure); the
	// worker ensures its own consumer and reads and changes runs through it.
	Topology *topology.Topology
	// Ledger is the job-results ledger the events are written to: a
	// *jobresults.MemoryStore (set Rebuild) or a *jobresults.MongoStore on
	// which Setup has run.
	Ledger jobresults.Ledger
	// Rebuild replays every status event still in the status stream into
	// the ledger before consuming, so a memory ledger survives a restart.
	// Set it for a memory ledger; it is harmless but slow on Mongo.
	//
	// A memory ledger supports ONE statusworker replica: each replica would
	// see only the events its consumer gives it, and its completion checks
	// would count only those. Several replicas need a shared ledger (Mongo).
	Rebuild bool

	// Observe, when set, sees every status event the worker decoded, before
	// the event is written to the ledger (so before any completion it counts
	// towards), and again on each redelivery. It is called from the
	// worker's batch handlers, concurrently, and must not block or change
	// the event. The one-process cluster hands events to its progress
	// watchers this way (progress.Hub).
	Observe func(*messages.StatusEvent)

	// WriteRetry is the retry policy of one batch's ledger write. Only
	// errors matching jobresults.ErrTransient are retried. When it gives up,
	// the batch's events are redelivered later (never acked, never lost).
	// Default: delays up to 2s, for at most half the consumer's
	// HandlerTimeout.
	WriteRetry retry.Policy
	// RecheckInterval is how often every open run is checked for completion
	// (and announced runs for readiness), so that no run strands when the
	// event that would have completed it was processed before its total was
	// known, or lost. Default DefaultRecheckInterval.
	RecheckInterval time.Duration
	// MinCheckInterval is the least time between two completion checks of
	// one run triggered by batches (each costs two counts on the ledger);
	// requests in between are folded into one. Default
	// DefaultMinCheckInterval.
	MinCheckInterval time.Duration
	// ConfirmInterval is the least time between two full passes over a
	// run's records (the exact completion check) while the cheap counts say
	// the run may be complete but the last pass said it was not (a doc
	// counted twice, unidentified docs). Default DefaultConfirmInterval.
	ConfirmInterval time.Duration
	// CompletionLease is how long a replica's claim to complete a run (write
	// its run log, mark it completed) holds before another replica may take
	// it over, should the claimant die; it should exceed the time to write
	// the largest run log (a takeover while the claimant is still writing
	// only duplicates the work: the last compare-and-set decides). A
	// restarted process of the same Instance takes its own claims over at
	// once. Default DefaultCompletionLease.
	CompletionLease time.Duration
	// SettleTimeout bounds how long a run found complete waits for the
	// status events of the run that were stored before it was found complete
	// but are not applied yet (in a batch being written concurrently, held by
	// another replica, or waiting for redelivery after a ledger error), so
	// that its run log reflects them (a payload, an upload entry). The wait
	// ends as soon as the consumer's ack floor passes the run's last event.
	// Default DefaultSettleTimeout.
	SettleTimeout time.Duration
	// StopSettle is the least time between a run's stop and its completion
	// from what is recorded, however early its deadline (a second Ctrl+C
	// asks for "now"). It must exceed every submitter's RunStateTTL +
	// KVTimeout: a submission started under a run state read just before
	// the stop has then claimed its doc, and the claim marks the doc "may
	// have billed" instead of plainly unsubmitted. Default
	// messages.StopSettle.
	StopSettle time.Duration
	// RebuildBatch is the number of events applied per batch while
	// rebuilding. Default DefaultRebuildBatch.
	RebuildBatch int
	// RunRetention is how long a finished run (completed or failed) keeps
	// its state on the broker after it finished: its record, claims, status
	// events (what a memory ledger is rebuilt from) and announcements. Past
	// it, the periodic re-check removes them (topology.Topology.ForgetRun);
	// the ledger and the run log are not touched. An open run keeps its
	// state however long it stays open: nothing on the broker expires by
	// age. Default DefaultRunRetention (7 days).
	RunRetention time.Duration

	// Destination configures how run-log locations are opened (object store
	// endpoints and credentials, local file modes). Default: the
	// environment's.
	Destination []destination.Option

	// Now is the clock of claims and record times. Default time.Now.
	Now func() time.Time
}

// WithDefaults returns a copy of c with every unset field set.
func (c Config) WithDefaults() Config {
	if c.Stage.Consumer.Stage == "" {
		s, err := topology.DefaultConsumer(topology.StatusWorker)
		if err == nil {
			s.MaxDeliver = 0
			c.Stage.Consumer = s
		}
	}
	if c.Stage.BatchSize == 0 {
		c.Stage.BatchSize = DefaultBatchSize
	}
	c.Stage = c.Stage.WithDefaults()
	if c.WriteRetry.Max == 0 && c.WriteRetry.Initial == 0 && c.WriteRetry.MaxElapsed == 0 && c.WriteRetry.MaxAttempts == 0 {
		c.WriteRetry.Initial = 50 * time.Millisecond
		c.WriteRetry.Max = 2 * time.Second
		c.WriteRetry.MaxElapsed = c.Stage.Consumer.HandlerTimeout / 2
		if c.WriteRetry.MaxElapsed <= 0 {
			c.WriteRetry.MaxElapsed = 10 * time.Second
		}
	}
	if c.WriteRetry.Retryable == nil {
		c.WriteRetry.Retryable = retry.On(jobresults.ErrTransient)
	}
	if c.RecheckInterval == 0 {
		c.RecheckInterval = DefaultRecheckInterval
	}
	if c.MinCheckInterval == 0 {
		c.MinCheckInterval = DefaultMinCheckInterval
	}
	if c.ConfirmInterval == 0 {
		c.ConfirmInterval = DefaultConfirmInterval
	}
	if c.CompletionLease == 0 {
		c.CompletionLease = DefaultCompletionLease
	}
	if c.SettleTimeout == 0 {
		c.SettleTimeout = DefaultSettleTimeout
	}
	if c.RebuildBatch == 0 {
		c.RebuildBatch = DefaultRebuildBatch
	}
	if c.StopSettle == 0 {
		c.StopSettle = messages.StopSettle
	}
	if c.RunRetention == 0 {
		c.RunRetention = DefaultRunRetention
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	if c.Stage.Conn == nil {
		errs = append(errs, errors.New("config: Stage.Conn is required"))
	}
	if c.Topology == nil {
		errs = append(errs, errors.New("config: Topology is required"))
	}
	if c.Ledger == nil {
		errs = append(errs, errors.New("config: Ledger is required"))
	}
	if c.Stage.Consumer.Stage != topology.StatusWorker {
		errs = append(errs, fmt.Errorf("config: Stage.Consumer is for stage %q, want %q", c.Stage.Consumer.Stage, topology.StatusWorker))
	} else if err := c.Stage.Consumer.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.Stage.BatchSize < 1 {
		errs = append(errs, fmt.Errorf("Stage.BatchSize %d is below 1", c.Stage.BatchSize))
	}
	for name, d := range map[string]time.Duration{
		"RecheckInterval": c.RecheckInterval,
		"ConfirmInterval": c.ConfirmInterval, "CompletionLease": c.CompletionLease,
		"MinCheckInterval": c.MinCheckInterval, "SettleTimeout": c.SettleTimeout, "StopSettle": c.StopSettle,
		"RunRetention": c.RunRetention,
	} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("%s %v is negative", name, d))
		}
	}
	if c.RebuildBatch < 1 {
		errs = append(errs, fmt.Errorf("RebuildBatch %d is below 1", c.RebuildBatch))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return nil
}
