package poller

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/internal/health"
	"github.com/oxypipe/oxypipe/internal/stage"
)

// Poller is the poller stage: it consumes Submitted messages and publishes
// Done ones. Create it with New, serve its health (it is a health.Checker)
// and call Run once.
type Poller struct {
	cfg      Config
	worker   *stage.Worker
	met      *metrics
	failures *failures
	log      *zap.Logger
	now      func() time.Time
}

var _ health.Checker = (*Poller)(nil)

// New returns a poller for cfg, after filling in defaults and validating it.
func New(cfg Config) (*Poller, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	met, err := newMetrics(cfg.Stage.Registerer)
	if err != nil {
		return nil, fmt.Errorf("poller: metrics: %w", err)
	}
	log := cfg.Stage.Logger
	p := &Poller{
		cfg:      cfg,
		met:      met,
		failures: newFailures(cfg.Retry.MaxElapsed + cfg.Retry.Max + time.Minute),
		log:      log.With(zap.String("stage", "poller")),
		now:      time.Now,
	}
	p.worker, err = stage.New(cfg.Stage, stage.HandlerFunc(p.handle))
	if err != nil {
		return nil, fmt.Errorf("poller: %w", err)
	}
	return p, nil
}

// Run ensures the poller's consumer, then consumes until ctx is cancelled,
// drains and returns nil (see stage.Worker.Run for the other ways it can
// end). Run may be called once.
func (p *Poller) Run(ctx context.Context) error {
	if _, err := p.cfg.Topology.EnsureConsumer(ctx, p.worker.Settings()); err != nil {
		return fmt.Errorf("poller: ensure consumer: %w", err)
	}
	return p.worker.Run(ctx)
}

// Ready implements health.Checker: ready while its consumer is.
func (p *Poller) Ready() health.Status { return p.worker.Ready() }

// Live implements health.Checker: not live while a check is stuck.
func (p *Poller) Live() health.Status { return p.worker.Live() }

// Config returns the configuration in force, defaults filled in.
func (p *Poller) Config() Config { return p.cfg }
