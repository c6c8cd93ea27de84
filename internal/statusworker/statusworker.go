package statusworker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/internal/health"
	"github.com/oxypipe/oxypipe/internal/stage"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// StatusWorker applies status events to the ledger, completes runs and
// writes their run logs. Create it with New, serve Handler and use it as a
// health.Checker, and call Run once.
type StatusWorker struct {
	cfg    Config
	log    *zap.Logger
	met    *metrics
	stage  *stage.Worker
	runs   *tracker
	actor  oxytype.Party
	holder string // this process's identity in completion claims

	// consumer and statusStream are set by Run before the runs are looked
	// after (see settled).
	consumer     jetstream.Consumer
	statusStream jetstream.Stream

	started    atomic.Bool
	rebuilding atomic.Bool
	rebuildMsg atomic.Value // string: rebuild progress for Ready

	// observeLag, when set (benchmarks), sees the write lag of every
	// applied event.
	observeLag func(time.Duration)
	// checks counts completion checks that ran to the end (tests).
	checks atomic.Int64
}

// New checks cfg and returns a worker that is not running yet.
func New(cfg Config) (*StatusWorker, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	met, err := newMetrics(cfg.Stage.Registerer)
	if err != nil {
		return nil, fmt.Errorf("statusworker: metrics: %w", err)
	}
	w := &StatusWorker{
		cfg:    cfg,
		log:    cfg.Stage.Logger.With(zap.String("stage", string(topology.StatusWorker))),
		met:    met,
		actor:  oxytype.Party{Type: string(topology.StatusWorker), Name: cfg.Stage.Instance},
		holder: cfg.Stage.Instance + "/" + randomToken(),
	}
	w.rebuildMsg.Store("")
	w.runs = newTracker(w)
	sw, err := stage.NewBatch(cfg.Stage, stage.BatchHandlerFunc(w.handleBatch))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	w.stage = sw
	return w, nil
}

// Run ensures the consumer, rebuilds a memory ledger (Config.Rebuild),
// then applies status events and looks after the runs until ctx is
// cancelled; it then drains and returns nil. It returns an error when the
// start fails or the stage runtime gives up (see stage.Worker.Run). Run may
// be called once.
func (w *StatusWorker) Run(ctx context.Context) error {
	if !w.started.CompareAndSwap(false, true) {
		return errors.New("statusworker: Run called twice")
	}
	cons, err := w.cfg.Topology.EnsureConsumer(ctx, w.stage.Settings())
	if err != nil {
		return fmt.Errorf("statusworker: ensure consumer: %w", err)
	}
	st, err := w.cfg.Topology.JetStream().Stream(ctx, topology.StreamStatus)
	if err != nil {
		return fmt.Errorf("statusworker: status stream: %w", err)
	}
	w.consumer, w.statusStream = cons, st
	if w.cfg.Rebuild {
		err := w.rebuild(ctx)
		if ctx.Err() != nil {
			return nil //nolint:nilerr // stopped while rebuilding: a clean stop, not a failure
		}
		if err != nil {
			return err
		}
	}
	runsCtx, stopRuns := context.WithCancel(context.WithoutCancel(ctx))
	runsDone, feedsDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(runsDone)
		w.runs.run(runsCtx)
	}()
	go func() {
		defer close(feedsDone)
		w.runFeeds(runsCtx)
	}()
	err = w.stage.Run(ctx)
	stopRuns()
	<-runsDone
	<-feedsDone
	return err
}

// Ready implements health.Checker: not ready while the ledger is being
// rebuilt, then as the stage runtime (connected, consumer registered).
func (w *StatusWorker) Ready() health.Status {
	if w.rebuilding.Load() {
		return health.Status{OK: false, State: "rebuilding", Detail: w.rebuildMsg.Load().(string)}
	}
	return w.stage.Ready()
}

// Live implements health.Checker (see stage.Worker.Live).
func (w *StatusWorker) Live() health.Status { return w.stage.Live() }

// Actor is the identity the worker publishes as.
func (w *StatusWorker) Actor() oxytype.Party { return w.actor }

func randomToken() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
