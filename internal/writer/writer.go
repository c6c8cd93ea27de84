package writer

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/internal/health"
	"github.com/oxypipe/oxypipe/internal/stage"
	"github.com/oxypipe/oxypipe/pkg/destination"
	"github.com/oxypipe/oxypipe/pkg/messages"
)

// Writer is the writer stage: it consumes Done messages and writes each
// job's results body to its run's destination. Create it with New, serve
// its health (it is a health.Checker) and call Run once.
type Writer struct {
	cfg     Config
	worker  *stage.Worker
	met     *metrics
	targets *targets
	stops   *stopper
	log     *zap.Logger
}

var _ health.Checker = (*Writer)(nil)

// New returns a writer for cfg, after filling in defaults and validating it.
// It opens nothing: destinations are opened and probed as runs arrive.
func New(cfg Config) (*Writer, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	met, err := newMetrics(cfg.Stage.Registerer)
	if err != nil {
		return nil, fmt.Errorf("writer: metrics: %w", err)
	}
	log := cfg.Stage.Logger
	w := &Writer{cfg: cfg, met: met, log: log.With(zap.String("stage", "writer"))}
	w.targets = &targets{
		open: func(ctx context.Context, location string) (destination.Destination, error) {
			return destination.Open(ctx, location, destination.WithConfig(cfg.Destinations))
		},
		get: func(ctx context.Context, run string) (*messages.RunRecord, error) {
			ref, err := cfg.Topology.Runs().Get(ctx, run)
			if err != nil {
				return nil, err
			}
			return &ref.Record, nil
		},
		max: cfg.MaxRuns,
		probed: func(ok bool) {
			if ok {
				met.probes.WithLabelValues("ok").Inc()
			} else {
				met.probes.WithLabelValues("error").Inc()
			}
		},
		runs:      make(map[string]*runTarget),
		locations: make(map[string]destination.Destination),
	}
	w.stops = &stopper{
		runs: cfg.Topology.Runs(), max: cfg.MaxRuns, log: w.log, done: map[string]bool{},
		stopped: func(applied bool) {
			if applied {
				met.runStops.WithLabelValues("stopped").Inc()
			} else {
				met.runStops.WithLabelValues("already").Inc()
			}
		},
	}
	w.worker, err = stage.New(cfg.Stage, stage.HandlerFunc(w.handle))
	if err != nil {
		return nil, fmt.Errorf("writer: %w", err)
	}
	return w, nil
}

// Run ensures the writer's consumer, then consumes until ctx is cancelled,
// drains, closes the destinations
// it opened and returns nil (see stage.Worker.Run for the other ways it can
// end). Run may be called once.
func (w *Writer) Run(ctx context.Context) error {
	if _, err := w.cfg.Topology.EnsureConsumer(ctx, w.worker.Settings()); err != nil {
		return fmt.Errorf("writer: ensure consumer: %w", err)
	}
	err := w.worker.Run(ctx)
	if cerr := w.targets.close(); cerr != nil {
		w.log.Warn("closing destinations", zap.Error(cerr))
	}
	return err
}

// Ready implements health.Checker: ready while its consumer is.
func (w *Writer) Ready() health.Status { return w.worker.Ready() }

// Live implements health.Checker: not live while a write is stuck.
func (w *Writer) Live() health.Status { return w.worker.Live() }

// Config returns the configuration in force, defaults filled in.
func (w *Writer) Config() Config { return w.cfg }
