package submitter

import (
	"context"
	"fmt"
	"sync"

	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/internal/health"
	"github.com/oxypipe/oxypipe/internal/stage"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// Submitter is the submitter stage: it consumes payload messages and turns
// each into an API job, exactly once. Create it with New, serve its health
// (it is a health.Checker) and call Run once.
type Submitter struct {
	cfg    Config
	log    *zap.Logger
	client *wsa.Client
	pacer  *wsa.Pacer
	claims *topology.Claims
	runs   *runStates
	met    *metrics
	worker *stage.Worker
	// stopping is Run's context: once it is cancelled the worker drains,
	// and payloads still waiting for the rate budget are given back at once.
	stopping context.Context
	// noBatch holds the sources the API refused a batch for (source → true):
	// their payloads go singly for the rest of this process.
	noBatch sync.Map
	// unconfirmed holds the claims this process left "claimed" although it
	// sent no request under them: a create whose answer was lost, a release
	// that did not land. The payload's next delivery here takes such a
	// claim back (see acquire).
	unconfirmed unconfirmedClaims
	// settler settles the claims of docs whose payload messages are gone.
	settler settler
	// rec writes the job ids of accepted payloads into their runs'
	// settled records.
	rec recordWriter
}

var _ health.Checker = (*Submitter)(nil)

// New returns a Submitter for cfg, after filling in defaults and validating
// it. Nothing is contacted until Run.
func New(cfg Config) (*Submitter, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	pacer, err := wsa.NewPacer(cfg.Pacer)
	if err != nil {
		return nil, fmt.Errorf("submitter: %w", err)
	}
	met, err := newMetrics(cfg.Stage.Registerer)
	if err != nil {
		return nil, fmt.Errorf("submitter: metrics: %w", err)
	}
	s := &Submitter{
		cfg: cfg, log: cfg.Stage.Logger.With(zap.String("stage", string(topology.Submitter))),
		client: cfg.API, pacer: pacer, claims: cfg.Topology.Claims(), met: met,
	}
	s.settler.s = s
	s.rec = recordWriter{claims: s.claims, timeout: cfg.KVTimeout, segs: map[segmentKey]*segmentWrites{}}
	s.runs = newRunStates(cfg.Topology.Runs(), cfg.RunStateTTL, cfg.KVTimeout, s.log)
	w, err := stage.NewBatch(cfg.Stage, handler{s})
	if err != nil {
		return nil, fmt.Errorf("submitter: %w", err)
	}
	s.worker = w
	return s, nil
}

// Run ensures the submitter's consumer, then consumes payloads until ctx is
// cancelled; it then drains (requests in flight get their answers
// recorded) and returns nil. It returns an error when the consumer cannot
// be ensured, when the connection closes for good, or a
// *stage.ConsumerLostError when the watchdog gives up.
func (s *Submitter) Run(ctx context.Context) error {
	if _, err := s.cfg.Topology.EnsureConsumer(ctx, s.worker.Settings()); err != nil {
		return fmt.Errorf("submitter: ensure consumer: %w", err)
	}
	s.stopping = ctx
	s.log.Info("submitter started",
		zap.Int("rate_limit", s.cfg.Pacer.Limit), zap.Int("render_rate_limit", s.cfg.Pacer.RenderLimit),
		zap.Bool("batching", !s.cfg.DisableBatch), zap.Int("max_batch", s.cfg.MaxBatch),
		zap.Stringer("api", s.client))
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.settler.run(sctx)
	}()
	err := s.worker.Run(ctx)
	stop()
	<-done
	// The docs acked during the drain: their claims would otherwise stay
	// until their run is forgotten.
	s.settler.pass(context.WithoutCancel(ctx))
	return err
}

// Ready implements health.Checker: ready while the consumer is reachable.
func (s *Submitter) Ready() health.Status { return s.worker.Ready() }

// Live implements health.Checker: not live while a handler is stuck.
func (s *Submitter) Live() health.Status { return s.worker.Live() }

// Settings returns the consumer settings in force.
func (s *Submitter) Settings() topology.ConsumerSettings { return s.worker.Settings() }

// Pacer returns the submitter's pacer, for inspection (its limits follow
// the API's headers).
func (s *Submitter) Pacer() *wsa.Pacer { return s.pacer }
