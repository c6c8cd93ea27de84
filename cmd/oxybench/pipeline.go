package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/oxypipe/oxypipe/internal/natsserver"
	"github.com/oxypipe/oxypipe/internal/poller"
	"github.com/oxypipe/oxypipe/internal/stage"
	"github.com/oxypipe/oxypipe/internal/submitter"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/internal/writer"
	"github.com/oxypipe/oxypipe/pkg/destination"
	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// jobTime is how long the emulator keeps every job pending.
const jobTime = time.Millisecond

var feeder = oxytype.Party{Type: "feeder", Name: "oxybench"}

// env is the broker, the emulator and the three stages of one benchmark.
type env struct {
	srv   *natsserver.Server
	api   *emulator.Server
	conns []*nats.Conn
	js    jetstream.JetStream
	topo  *topology.Topology
	dest  string

	reg         *prometheus.Registry
	samples     *sampler
	stages      []interface{ Run(context.Context) error }
	stopRunning context.CancelFunc
	running     sync.WaitGroup
	errs        chan error
}

// start starts the broker (state in dir), the emulator and the stages.
func start(ctx context.Context, cfg Config, dir string) (_ *env, err error) {
	e := &env{dest: filepath.Join(dir, "results"), errs: make(chan error, 3), reg: prometheus.NewRegistry()}
	defer func() {
		if err != nil {
			e.close()
		}
	}()
	if e.srv, err = natsserver.Start(ctx, natsserver.Config{StoreDir: filepath.Join(dir, "nats"), SyncAlways: cfg.BrokerSync}); err != nil {
		return nil, err
	}
	connect := func() (*nats.Conn, error) {
		nc, err := e.srv.Connect()
		if err == nil {
			e.conns = append(e.conns, nc)
		}
		return nc, err
	}
	nc, err := connect()
	if err != nil {
		return nil, err
	}
	if e.js, err = jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096)); err != nil {
		return nil, err
	}
	if e.topo, err = topology.EnsureAll(ctx, e.js, topology.Config{}); err != nil {
		return nil, err
	}
	e.api, err = emulator.Start("127.0.0.1:0", emulator.Config{
		Seed: 1, JobTime: jobTime, RateLimit: emulator.Unlimited, RenderRateLimit: emulator.Unlimited,
	})
	if err != nil {
		return nil, err
	}
	client, err := wsa.New(wsa.Config{BaseURL: e.api.URL, Username: e.api.Username, Password: e.api.Password})
	if err != nil {
		return nil, err
	}

	// Each stage on its own connection, as separate workers would be.
	subConn, err := connect()
	if err != nil {
		return nil, err
	}
	sub, err := submitter.New(submitter.Config{
		Stage:    stage.Config{Conn: subConn, Instance: "oxybench", Registerer: e.reg, BatchSize: cfg.SubmitBatch},
		Topology: e.topo,
		API:      client,
		Pacer:    wsa.PacerConfig{Limit: -1, RenderLimit: -1},
	})
	if err != nil {
		return nil, err
	}
	pollConn, err := connect()
	if err != nil {
		return nil, err
	}
	pol, err := poller.New(poller.Config{
		Stage:    stage.Config{Conn: pollConn, Instance: "oxybench", Registerer: e.reg, MaxInFlight: cfg.PollerInFlight},
		Topology: e.topo,
		API:      client,
		Schedule: poller.Schedule{First: cfg.PollFirst, Step: cfg.PollFirst, Until: 10 * cfg.PollFirst},
	})
	if err != nil {
		return nil, err
	}
	writeConn, err := connect()
	if err != nil {
		return nil, err
	}
	wri, err := writer.New(writer.Config{
		Stage:        stage.Config{Conn: writeConn, Instance: "oxybench", Registerer: e.reg, MaxInFlight: cfg.WriterInFlight},
		Topology:     e.topo,
		API:          client,
		Destinations: destination.Config{Local: destination.LocalConfig{NoSync: cfg.NoSync}},
	})
	if err != nil {
		return nil, err
	}
	e.stages = append(e.stages, sub, pol, wri)
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	e.stopRunning = cancel
	for _, s := range e.stages {
		e.running.Go(func() {
			if err := s.Run(runCtx); err != nil {
				e.errs <- err
			}
		})
	}
	return e, nil
}

// stageStats drains the stages, so that every message they handled is
// counted, and returns where each spent the run.
func (e *env) stageStats(cfg Config) ([]stageStats, error) {
	e.stopStages()
	return e.samples.finish(inFlightLimits(cfg))
}

// stopStages drains the stages.
func (e *env) stopStages() {
	if e.stopRunning != nil {
		e.stopRunning()
		e.running.Wait()
		e.stopRunning = nil
	}
}

// close stops everything.
func (e *env) close() {
	e.stopStages()
	for _, nc := range e.conns {
		nc.Close()
	}
	if e.api != nil {
		_ = e.api.Close() // the run is over; nothing to report
	}
	if e.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = e.srv.Shutdown(ctx) // the state is scratch
	}
}

// docTimes is what the benchmark learns of one doc from its status events.
type docTimes struct {
	submitted, done, written time.Time
	final                    oxytype.State
}

// tracker reads the status events (standing in for the statusworker) and
// keeps each doc's times.
type tracker struct {
	mu     sync.Mutex
	docs   []docTimes
	finals int
	events int
	bytes  int64
	done   chan struct{}
}

func (e *env) track(ctx context.Context, n int) (*tracker, func(), error) {
	tr := &tracker{docs: make([]docTimes, n), done: make(chan struct{})}
	cons, err := e.js.OrderedConsumer(ctx, topology.StreamStatus, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{messages.SubjectPrefix + ".status.>"},
	})
	if err != nil {
		return nil, nil, err
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		elems, err := messages.SplitStatusEvents(m.Subject(), m.Data())
		if err != nil {
			return
		}
		for _, data := range elems {
			if ev, err := messages.DecodeStatusEvent(m.Subject(), data); err == nil {
				tr.add(ev, len(data))
			}
		}
	})
	if err != nil {
		return nil, nil, err
	}
	return tr, cc.Stop, nil
}

func (tr *tracker) add(ev *messages.StatusEvent, size int) {
	pos, err := messages.ParseDocID(ev.Doc)
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.events++
	tr.bytes += int64(size)
	if err != nil || pos >= len(tr.docs) {
		return
	}
	d := &tr.docs[pos]
	switch {
	case ev.Outcome == oxytype.Success && ev.DataType == oxytype.DataSubmitted:
		d.submitted = ev.Time
	case ev.Outcome == oxytype.Success && ev.DataType == oxytype.DataDone:
		d.done = ev.Time
	}
	final := ev.Outcome == oxytype.HardFailure || (ev.Outcome == oxytype.Success && ev.DataType == oxytype.FinalDataType)
	if !final || d.final != "" {
		return
	}
	if ev.Outcome == oxytype.Success {
		d.written, d.final = ev.Time, oxytype.Done
	} else {
		d.final = ev.State
	}
	if tr.finals++; tr.finals == len(tr.docs) {
		close(tr.done)
	}
}

// run feeds cfg.Payloads payloads and waits until each has a final outcome.
func (e *env) run(ctx context.Context, cfg Config) (*result, error) {
	n := cfg.Payloads
	run, err := e.topo.AnnounceRun(ctx, messages.RunAnnounced{
		Total: n, FinalDataType: oxytype.FinalDataType, Destination: e.dest, RunLog: e.dest, StartedAt: time.Now().UTC(),
	}, feeder)
	if err != nil {
		return nil, err
	}
	if applied, _, err := e.topo.Runs().Transition(ctx, run, func(rec *messages.RunRecord) bool {
		rec.State, rec.UpdatedAt = oxytype.RunStateReady, time.Now().UTC()
		return true
	}); err != nil || !applied {
		return nil, fmt.Errorf("marking the run ready: applied %v, %w", applied, err)
	}

	// Feed as the feeder does: each payload and its success at "payload".
	load := loadAverage()
	e.samples = startSampler(e.reg, 100*time.Millisecond)
	started, cpuStarted := time.Now(), processCPU()
	for i := range n {
		body := json.RawMessage(fmt.Sprintf(`{"source":"universal","url":"https://sandbox.oxylabs.io/products/%d","geo_location":"United States"}`, i))
		for _, env := range []messages.Envelope{
			&messages.Payload{Run: run, Doc: messages.DocID(i), Payload: body},
			&messages.StatusEvent{Run: run, Doc: messages.DocID(i), DataType: oxytype.DataPayload, Outcome: oxytype.Success,
				Origin: feeder, Facts: oxytype.Facts{Payload: body}, Time: time.Now().UTC()},
		} {
			m, err := messages.NewMsg(env, feeder)
			if err != nil {
				return nil, err
			}
			// A broker that fsyncs every write (--broker-sync) acks more
			// slowly: wait for room among the 4,096 pending publishes
			// rather than fail.
			if _, err := e.js.PublishMsgAsync(m, jetstream.WithStallWait(time.Minute)); err != nil {
				return nil, err
			}
		}
	}
	select {
	case <-e.js.PublishAsyncComplete():
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	fed := time.Now()

	// The end is read from the stages' own counters: watching the status
	// stream during the run would put a consumer that is no part of the
	// pipeline into the measured time (about 5% of the CPU).
	timeout := time.NewTimer(cfg.Timeout)
	defer timeout.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for settled := 0; settled < n; {
		select {
		case <-tick.C:
			if settled, err = e.settled(); err != nil {
				return nil, err
			}
		case err := <-e.errs:
			return nil, fmt.Errorf("a stage stopped: %w", err)
		case <-timeout.C:
			return nil, fmt.Errorf("%d of %d docs reached a final outcome within %v", settled, n, cfg.Timeout)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	cpuEnded, ended := processCPU(), time.Now()
	e.samples.stopSampling()
	stats := e.api.Emulator.Stats()

	// Each doc's times, from its status events, once they are all in.
	tr, stop, err := e.track(ctx, n)
	if err != nil {
		return nil, err
	}
	defer stop()
	select {
	case <-tr.done:
	case <-timeout.C:
		return nil, fmt.Errorf("%d of %d docs have their final status event", tr.count(), n)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	res := &result{payloads: n, noSync: cfg.NoSync, brokerSync: cfg.BrokerSync, pollFirst: cfg.PollFirst, started: started, fed: fed, requests: stats.Requests,
		loadBefore: load, loadAfter: loadAverage(), wall: ended.Sub(started), cpu: -1}
	if cpuStarted >= 0 && cpuEnded >= 0 {
		res.cpu = cpuEnded - cpuStarted
	}
	limits := inFlightLimits(cfg)
	res.limits = fmt.Sprintf("%d / %d / %d", limits["submitter"], limits["poller"], limits["writer"])
	res.fromDocs(tr.docs)
	if err := e.countMessages(ctx, res, tr); err != nil {
		return nil, err
	}
	return res, nil
}

// settled counts the messages the stages settled as a doc's end: a written
// result, or a hard failure, malformed message or dead letter at any stage.
// Redeliveries can make it count a doc twice; the tracker then waits for
// every doc's final status event.
func (e *env) settled() (int, error) {
	fams, err := e.reg.Gather()
	if err != nil {
		return 0, err
	}
	n := 0.0
	for _, f := range fams {
		if f.GetName() != "oxy_stage_messages_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			switch label(m, "outcome") {
			case "ack":
				if label(m, "stage") == "writer" {
					n += m.GetCounter().GetValue()
				}
			case "hard_failure", "malformed", "dead_letter":
				n += m.GetCounter().GetValue()
			}
		}
	}
	return int(n), nil
}

func (tr *tracker) count() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.finals
}

// countMessages works out how many JetStream messages the run published
// per doc (work messages and status events, then claim writes apart) and
// the average size of a status event.
func (e *env) countMessages(ctx context.Context, res *result, tr *tracker) error {
	last := func(name string) (uint64, error) {
		s, err := e.js.Stream(ctx, name)
		if err != nil {
			return 0, err
		}
		info, err := s.Info(ctx)
		if err != nil {
			return 0, err
		}
		return info.State.LastSeq, nil
	}
	var msgs uint64
	for _, name := range []string{topology.StreamPayloads, topology.StreamSubmitted, topology.StreamDone, topology.StreamStatus} {
		n, err := last(name)
		if err != nil {
			return err
		}
		msgs += n
	}
	if msgs == 0 {
		return errors.New("no message went through the broker")
	}
	claims, err := last("KV_" + topology.BucketClaims)
	if err != nil {
		return err
	}
	tr.mu.Lock()
	events, eventBytes := tr.events, tr.bytes
	tr.mu.Unlock()
	res.msgsPerDoc = float64(msgs) / float64(res.payloads)
	res.claimWritesPerDoc = float64(claims) / float64(res.payloads)
	res.avgMsgBytes = 256
	if events > 0 {
		res.avgMsgBytes = int(eventBytes / int64(events))
	}
	return nil
}

// inFlightLimits are the stages' MaxInFlight as the runtime computes them:
// 2 × BatchSize (default 100) for the submitter's batch handler, 64 by
// default for the others, never above the consumer's MaxAckPending.
func inFlightLimits(cfg Config) map[string]int {
	or := func(v, def int) int {
		if v > 0 {
			return v
		}
		return def
	}
	return map[string]int{
		"submitter": 2 * or(cfg.SubmitBatch, 100),
		"poller":    min(or(cfg.PollerInFlight, 64), 20000),
		"writer":    min(or(cfg.WriterInFlight, 64), 256),
	}
}
