package pipelinetest

import (
	"context"
	"testing"
	"time"

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

// runtime gives a stage's runtime configuration (its connection, instance,
// logger and registry, as the process or the test set them) the
// test-sized consumer and timings.
func runtime(rc stage.Config, s topology.Stage, o stageOptions) stage.Config {
	rc.Consumer = consumer(s, o)
	rc.FetchWait, rc.WatchdogInterval = 100*time.Millisecond, 200*time.Millisecond
	rc.DrainTimeout, rc.BatchLinger, rc.PublishRetryDelay = drainTimeout, 20*time.Millisecond, 200*time.Millisecond
	return rc
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
	// direct has the in-process poller write done jobs through the writer,
	// as oxy run does (poller.Config.Sink).
	direct bool
}

// tuneSubmitter gives a submitter configured as cmd/submitter configures it
// the test timings.
func tuneSubmitter(o stageOptions) func(*submitter.Config) {
	return func(c *submitter.Config) {
		limit := o.rateLimit
		if limit == 0 {
			limit = -1
		}
		c.Stage = runtime(c.Stage, topology.Submitter, o)
		c.Pacer = wsa.PacerConfig{Limit: limit, RenderLimit: limit, Window: rateWindow, MaxBackoff: 400 * time.Millisecond}
		c.SubmitTimeout, c.KVTimeout, c.ClaimStaleAfter = 3*time.Second, time.Second, o.claimStaleAfter
		c.RunStateTTL, c.RateLimitedRetry = 500*time.Millisecond, 50*time.Millisecond
	}
}

// tunePoller gives a poller configured as cmd/poller configures it the test
// timings: it checks at 100 ms steps up to 1 s, then every 500 ms, and gives
// a job 30 s (2 minutes under the race detector: a loaded machine's poller
// may not reach a done job's check in 30 s).
func tunePoller(o stageOptions) func(*poller.Config) {
	return func(c *poller.Config) {
		c.Stage = runtime(c.Stage, topology.Poller, o)
		c.Schedule = poller.Schedule{First: 100 * time.Millisecond, Step: 100 * time.Millisecond, Until: time.Second, Interval: 500 * time.Millisecond}
		c.PendingLimit = testutil.Patient(30 * time.Second)
		c.Retry = retry.Policy{Initial: 20 * time.Millisecond, Max: 200 * time.Millisecond}
	}
}

// tuneWriter gives a writer configured as cmd/writer configures it the test
// timings. Local files are not fsynced (the tests never lose power).
func tuneWriter(o stageOptions) func(*writer.Config) {
	return func(c *writer.Config) {
		c.Stage = runtime(c.Stage, topology.Writer, o)
		c.Destinations = destination.Config{Local: destination.LocalConfig{NoSync: true}}
	}
}

// runner is the part of a stage the tests start and stop.
type runner interface {
	Run(ctx context.Context) error
}

// runStages runs the stages in this process until the test ends, and fails
// the test when one returns an error.
func runStages(t testing.TB, stages ...runner) {
	t.Helper()
	runs := make([]func(context.Context) error, len(stages))
	for i, s := range stages {
		runs[i] = s.Run
	}
	testutil.RunUntilCleanup(t, "a stage", runs...)
}

// inProcess starts a broker, an emulator for cfg and the three stages in
// this process (the poller writing through the writer with o.direct), and
// announces a run of n docs.
func inProcess(t *testing.T, cfg emulator.Config, n int, o stageOptions) *broker {
	t.Helper()
	_, nc := natstest.Start(t)
	api := startAPI(t, cfg, nil)
	b := newBroker(t, nc, api, n)
	log := zap.NewNop()
	o.ackWait, o.claimStaleAfter = inProcessAckWait, inProcessClaimStaleAfter
	rc := func(instance string) stage.Config { return stage.Config{Conn: nc, Instance: instance, Logger: log} }
	sc := submitter.Config{Stage: rc("submitter-0"), Topology: b.topo, API: b.client}
	tuneSubmitter(o)(&sc)
	sub, err := submitter.New(sc)
	if err != nil {
		t.Fatal(err)
	}
	wc := writer.Config{Stage: rc("writer-0"), Topology: b.topo, API: b.client}
	tuneWriter(o)(&wc)
	wri, err := writer.New(wc)
	if err != nil {
		t.Fatal(err)
	}
	pc := poller.Config{Stage: rc("poller-0"), Topology: b.topo, API: b.client}
	tunePoller(o)(&pc)
	if o.direct {
		pc.Sink = wri
	}
	pol, err := poller.New(pc)
	if err != nil {
		t.Fatal(err)
	}
	runStages(t, sub, pol, wri)
	return b
}
