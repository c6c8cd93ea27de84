package feeder

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/internal/procenv"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// Defaults of Config.
const (
	DefaultReadyTimeout = 30 * time.Second
	DefaultWindow       = 512
	DefaultPublishRetry = 10 * time.Second
)

// ActorType is the Type of the Actor a feeder publishes as.
const ActorType = "feeder"

// Config configures a Feeder.
type Config struct {
	// Topology is the ensured streams and buckets (topology.Ensure).
	// Required.
	Topology *topology.Topology
	// Instance names this feeder in the origin of what it publishes.
	// Default: the host name.
	Instance string
	// ReadyTimeout is how long Announce waits for a statusworker to mark
	// the run ready (or failed). Default DefaultReadyTimeout (30s).
	ReadyTimeout time.Duration
	// Window is how many publishes may wait for the broker's
	// acknowledgement at once. Default DefaultWindow.
	Window int
	// PublishRetry is how long a publish the broker did not acknowledge is
	// retried before feeding fails. Default DefaultPublishRetry.
	PublishRetry time.Duration
	// Now tells the time (announcements, events). Default time.Now.
	Now func() time.Time
	// Logger receives the feeder's logs. Default: none.
	Logger *zap.Logger
}

// WithDefaults returns c with every unset field filled in.
func (c Config) WithDefaults() Config {
	if c.Instance == "" {
		c.Instance = procenv.Hostname()
	}
	if c.ReadyTimeout <= 0 {
		c.ReadyTimeout = DefaultReadyTimeout
	}
	if c.Window <= 0 {
		c.Window = DefaultWindow
	}
	if c.PublishRetry <= 0 {
		c.PublishRetry = DefaultPublishRetry
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	return c
}

func (c Config) validate() error {
	if c.Topology == nil {
		return errors.New("feeder: Config.Topology is required")
	}
	return nil
}

// Feeder announces runs and publishes their payloads. It is safe for
// concurrent use by several runs.
type Feeder struct {
	cfg    Config
	origin oxytype.Party
}

// New returns a Feeder for cfg.
func New(cfg Config) (*Feeder, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Feeder{cfg: cfg, origin: oxytype.Party{Type: ActorType, Name: cfg.Instance}}, nil
}

// Origin is the actor the feeder publishes as.
func (f *Feeder) Origin() oxytype.Party { return f.origin }

// Announcement is what Announce says about a run besides its payloads.
type Announcement struct {
	// Run is the run id to use; empty picks messages.NewRunID(StartedAt),
	// moved a millisecond forward while taken.
	Run string
	// Destination is where done jobs are written (folder, s3://, gs://,
	// az://). Required by the writer.
	Destination string
	// RunLog is where the run log goes (folder or object-store URL).
	RunLog string
	// StartedAt is the run's start. Default: now.
	StartedAt time.Time
	// Options are run options for the stages (a JSON object), if any.
	Options json.RawMessage
	// StopTimeout bounds a stop of the run, whoever stops it: how long jobs
	// already submitted are still checked and written before the run is
	// completed with what is recorded. Default messages.DefaultStopTimeout.
	StopTimeout time.Duration
}

// Announce announces a run of src's payloads and waits until a statusworker
// has written its empty run log and marked it ready. It returns the run id.
//
// It fails with an *oxytype.InputError when a payload is larger than the broker
// accepts (checked before the announcement), a *oxytype.RunFailedError when the
// statusworker marked the run failed, and a *oxytype.NoStatusWorkerError when no
// statusworker answered within Config.ReadyTimeout. In every case nothing was
// fed and nothing billed; a run that failed or timed out keeps its record
// (state announced or failed) for inspection.
func (f *Feeder) Announce(ctx context.Context, src Source, a Announcement) (string, error) {
	if err := f.checkSizes(src); err != nil {
		return "", err
	}
	if a.StartedAt.IsZero() {
		a.StartedAt = f.cfg.Now()
	}
	run, err := f.cfg.Topology.AnnounceRun(ctx, messages.RunAnnounced{
		Run:           a.Run,
		Total:         src.Len(),
		FinalDataType: oxytype.FinalDataType,
		Destination:   a.Destination,
		RunLog:        a.RunLog,
		StartedAt:     a.StartedAt.UTC(),
		Options:       a.Options,
		StopTimeout:   a.StopTimeout,
	}, f.origin)
	if err != nil {
		return "", fmt.Errorf("feeder: announce: %w", err)
	}
	f.cfg.Logger.Info("run announced", zap.String("run", run), zap.Int("payloads", src.Len()))
	if err := f.waitReady(ctx, run); err != nil {
		return run, err
	}
	return run, nil
}

// waitReady waits until the run leaves the announced state.
func (f *Feeder) waitReady(ctx context.Context, run string) error {
	wctx, cancel := context.WithTimeout(ctx, f.cfg.ReadyTimeout)
	defer cancel()
	ref, err := f.cfg.Topology.Runs().Wait(wctx, run, func(rec *messages.RunRecord) bool {
		return rec.State != oxytype.RunStateAnnounced
	})
	if err != nil {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return &oxytype.NoStatusWorkerError{Run: run, Wait: f.cfg.ReadyTimeout}
		}
		return fmt.Errorf("feeder: wait for run %s to be ready: %w", run, err)
	}
	if ref.Record.State == oxytype.RunStateFailed {
		return &oxytype.RunFailedError{Run: run, Reason: ref.Record.Reason}
	}
	return nil
}

// checkSizes refuses payloads the broker would refuse, before anything is
// announced.
func (f *Feeder) checkSizes(src Source) error {
	limit := int(f.cfg.Topology.JetStream().Conn().MaxPayload()) - 8<<10
	if limit <= 0 {
		return nil
	}
	if s, ok := src.(Slice); ok {
		return s.Check(limit)
	}
	if m, ok := src.(interface{ MaxBytes() int }); ok && m.MaxBytes() <= limit {
		return nil
	}
	i := 0
	for p, err := range src.All() {
		if err != nil {
			return err
		}
		if n := len(p.JSON()); n > limit {
			return &oxytype.InputError{Doc: i, Err: fmt.Errorf("%w (%d bytes, at most %d)", oxytype.ErrTooLarge, n, limit)}
		}
		i++
	}
	return nil
}

// Stop marks the run stopping (the first Ctrl+C): the submitter records every
// payload it receives from then on unsubmitted, without calling the API;
// jobs already submitted are still checked and written until the run's stop
// timeout (Announcement.StopTimeout) has passed, when the statusworker
// completes the run with what is recorded. It returns whether this call
// stopped the run (false when it was already stopping or over).
func (f *Feeder) Stop(ctx context.Context, run, reason string) (bool, error) {
	return f.cfg.Topology.Runs().Stop(ctx, run, topology.StopRequest{Cause: messages.StopByUser, Reason: reason})
}

// StopNow stops the run like Stop, but asks for it to be completed with what
// is recorded at once rather than after its stop timeout (the second
// Ctrl+C): the statusworker records every doc still in flight unfetched
// with its job id, or unsubmitted ("may have billed" where a request may be
// in flight), and writes the run log, as soon as messages.StopSettle after
// the first stop allows. It returns whether the record changed.
func (f *Feeder) StopNow(ctx context.Context, run, reason string) (bool, error) {
	return f.cfg.Topology.Runs().Stop(ctx, run, topology.StopRequest{Cause: messages.StopByUser, Reason: reason, Now: true})
}
