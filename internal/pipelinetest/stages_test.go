package pipelinetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/internal/natsserver/natstest"
	"github.com/oxypipe/oxypipe/internal/poller"
	"github.com/oxypipe/oxypipe/internal/stage"
	"github.com/oxypipe/oxypipe/internal/submitter"
	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/internal/writer"
	"github.com/oxypipe/oxypipe/pkg/destination"
	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/retry"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// Test-sized timings shared by the in-process stages and the child worker
// processes. In the processes a killed worker's messages come back after
// processAckWait, and a claim left inside a request is "outcome unknown"
// after processClaimStaleAfter. In-process nothing is killed: a longer
// AckWait keeps a heartbeat made late by a loaded machine from
// redelivering, and a longer staleness limit keeps a submission that a
// loaded machine (the race detector, other builds) slowed past 8 s from
// being taken for one that died: a claim is stale only once no live
// submitter can still hold it, which in production is 150 s.
const (
	processAckWait           = 2 * time.Second
	inProcessAckWait         = 10 * time.Second
	processClaimStaleAfter   = 8 * time.Second
	inProcessClaimStaleAfter = 30 * time.Second
	drainTimeout             = 5 * time.Second
	// rateWindow is the emulator's rate-limit window and the pacer's.
	rateWindow = 100 * time.Millisecond
)

// consumer returns a stage's consumer with test-sized timings.
func consumer(s topology.Stage, o stageOptions) topology.ConsumerSettings {
	c, err := topology.DefaultConsumer(s)
	if err != nil {
		panic(err) // the stages are constants
	}
	c.AckWait = o.ackWait
	switch s {
	case topology.Submitter:
		c.RetryBackoff = []time.Duration{20 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond}
		c.HandlerTimeout = 7 * time.Second
		// A payload that waits for the rate budget longer than one handler
		// call allows (7 s less the 6 s a request and its answer need) is
		// given back and spends a delivery. Under the race detector, with a
		// request held in the API, that happens often enough that the
		// production 10 deliveries ran out; give the waits room.
		c.MaxDeliver = 30
	case topology.Writer:
		c.RetryBackoff = []time.Duration{20 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond}
		c.HandlerTimeout = 10 * time.Second
	}
	return c
}

// runtime is the stage runtime's test-sized configuration.
func runtime(nc *nats.Conn, s topology.Stage, instance string, log *zap.Logger, o stageOptions) stage.Config {
	return stage.Config{
		Conn: nc, Consumer: consumer(s, o), Instance: instance, Logger: log,
		FetchWait: 100 * time.Millisecond, WatchdogInterval: 200 * time.Millisecond,
		DrainTimeout: drainTimeout, BatchLinger: 20 * time.Millisecond, PublishRetryDelay: 200 * time.Millisecond,
	}
}

// stageOptions are the knobs the tests turn.
type stageOptions struct {
	// rateLimit is the pacer's budget per rateWindow until the API's
	// headers say otherwise; 0 unlimited.
	rateLimit int
	// ackWait is the consumers' AckWait: processAckWait or
	// inProcessAckWait.
	ackWait time.Duration
	// claimStaleAfter is the submitter's ClaimStaleAfter:
	// processClaimStaleAfter or inProcessClaimStaleAfter.
	claimStaleAfter time.Duration
}

// newSubmitter returns a submitter with test timings.
func newSubmitter(nc *nats.Conn, topo *topology.Topology, api *wsa.Client, instance string, log *zap.Logger, o stageOptions) (*submitter.Submitter, error) {
	limit := o.rateLimit
	if limit == 0 {
		limit = -1
	}
	rt := runtime(nc, topology.Submitter, instance, log, o)
	return submitter.New(submitter.Config{
		Conn: nc, Topology: topo, Client: api, Consumer: rt.Consumer, Runtime: rt,
		Pacer:         wsa.PacerConfig{Limit: limit, RenderLimit: limit, Window: rateWindow, MaxBackoff: 400 * time.Millisecond},
		SubmitTimeout: 3 * time.Second, KVTimeout: time.Second, ClaimStaleAfter: o.claimStaleAfter,
		RunStateTTL: 500 * time.Millisecond, RateLimitedRetry: 50 * time.Millisecond,
		Instance: instance, Logger: log,
	})
}

// newPoller returns a poller that checks at 100 ms steps up to 1 s, then
// every 500 ms, and gives a job 30 s (2 minutes under the race detector: a
// loaded machine's poller may not reach a done job's check in 30 s).
func newPoller(nc *nats.Conn, api *wsa.Client, instance string, log *zap.Logger, o stageOptions) (*poller.Poller, error) {
	return poller.New(poller.Config{
		Stage:        runtime(nc, topology.Poller, instance, log, o),
		API:          api,
		Schedule:     poller.Schedule{First: 100 * time.Millisecond, Step: 100 * time.Millisecond, Until: time.Second, Interval: 500 * time.Millisecond},
		PendingLimit: testutil.Patient(30 * time.Second),
		Retry:        retry.Policy{Initial: 20 * time.Millisecond, Max: 200 * time.Millisecond},
	})
}

// newWriter returns a writer with test timings. Local files are not
// fsynced (the tests never lose power).
func newWriter(nc *nats.Conn, topo *topology.Topology, api *wsa.Client, instance string, log *zap.Logger, o stageOptions) (*writer.Writer, error) {
	return writer.New(writer.Config{
		Stage:        runtime(nc, topology.Writer, instance, log, o),
		API:          api,
		Runs:         topo.Runs(),
		Destinations: destination.Config{Local: destination.LocalConfig{NoSync: true}},
	})
}

// runner is the part of a stage the tests start and stop.
type runner interface {
	Run(ctx context.Context) error
}

// runStages runs the stages in this process until the test ends, and fails
// the test when one returns an error.
func runStages(t testing.TB, stages ...runner) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, s := range stages {
		wg.Go(func() {
			if err := s.Run(ctx); err != nil {
				t.Errorf("stage stopped: %v", err)
			}
		})
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// inProcess starts a broker, an emulator for cfg and the three stages in
// this process, and announces a run of n docs.
func inProcess(t *testing.T, cfg emulator.Config, n int, o stageOptions) *broker {
	t.Helper()
	_, nc := natstest.Start(t)
	api := startAPI(t, cfg, nil)
	b := newBroker(t, nc, api, n)
	log := zap.NewNop()
	o.ackWait, o.claimStaleAfter = inProcessAckWait, inProcessClaimStaleAfter
	sub, err := newSubmitter(nc, b.topo, b.client, "submitter-0", log, o)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := newPoller(nc, b.client, "poller-0", log, o)
	if err != nil {
		t.Fatal(err)
	}
	wri, err := newWriter(nc, b.topo, b.client, "writer-0", log, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []topology.Stage{topology.Submitter, topology.Poller, topology.Writer} {
		if _, err := b.topo.EnsureConsumer(t.Context(), consumer(st, o)); err != nil {
			t.Fatal(err)
		}
	}
	runStages(t, sub, pol, wri)
	return b
}
