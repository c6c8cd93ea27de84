package stage_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/oxypipe/oxypipe/internal/natsserver"
	"github.com/oxypipe/oxypipe/internal/natsserver/natstest"
	"github.com/oxypipe/oxypipe/internal/stage"
	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

const run = "20260929T170412.345Z"

var feeder = oxytype.Party{Type: "feeder", Name: "test"}

// env is one test's broker with the full topology.
type env struct {
	t    *testing.T
	srv  *natsserver.Server
	nc   *nats.Conn
	js   jetstream.JetStream
	topo *topology.Topology
	reg  *prometheus.Registry
}

// fastSubmitter is the submitter's consumer with test-sized timings.
func fastSubmitter() topology.ConsumerSettings {
	s, err := topology.DefaultConsumer(topology.Submitter)
	if err != nil {
		panic(err)
	}
	s.AckWait = 2 * time.Second
	s.MaxDeliver = 5
	s.RetryBackoff = []time.Duration{20 * time.Millisecond}
	s.HandlerTimeout = 5 * time.Second
	return s
}

func setup(t *testing.T, s topology.ConsumerSettings) *env {
	t.Helper()
	srv, nc := natstest.Start(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	topo, err := topology.EnsureAll(context.Background(), js, topology.Config{}, s)
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, srv: srv, nc: nc, js: js, topo: topo, reg: prometheus.NewRegistry()}
}

// config is a stage config with test-sized timings.
func (e *env) config(s topology.ConsumerSettings) stage.Config {
	return stage.Config{
		Conn: e.nc, Consumer: s, Instance: "test-pod",
		FetchWait: 100 * time.Millisecond, WatchdogInterval: 50 * time.Millisecond,
		DrainTimeout: 5 * time.Second, Registerer: e.reg,
	}
}

// feed publishes payloads for docs from..to-1 as a feeder would.
func (e *env) feed(from, to int) {
	e.t.Helper()
	for i := from; i < to; i++ {
		p := &messages.Payload{Run: run, Doc: messages.DocID(i),
			Payload: json.RawMessage(`{"source":"universal","url":"https://example.com/` + messages.DocID(i) + `"}`)}
		e.publish(p)
	}
}

func (e *env) publish(env messages.Envelope) {
	e.t.Helper()
	m, err := messages.NewMsg(env, feeder)
	if err != nil {
		e.t.Fatal(err)
	}
	e.publishRaw(m)
}

func (e *env) publishRaw(m *nats.Msg) {
	e.t.Helper()
	if _, err := e.js.PublishMsg(context.Background(), m); err != nil {
		e.t.Fatal(err)
	}
}

// start runs w until the test cancels it. stop cancels and returns Run's
// error; result yields Run's error once it returned by itself.
func (e *env) start(w *stage.Worker) (stop func() error, result <-chan error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	res := make(chan error, 1)
	var runErr error
	go func() {
		runErr = w.Run(ctx)
		close(done)
		res <- runErr
	}()
	stop = func() error {
		cancel()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			e.t.Fatal("Run did not return within 15s of cancel")
		}
		return runErr
	}
	e.t.Cleanup(func() { _ = stop() })
	return stop, res
}

// events returns every status event stored so far, in stream order.
func (e *env) events() []messages.StatusEvent {
	e.t.Helper()
	return e.streamEvents(topology.StreamStatus)
}

func (e *env) streamEvents(name string) []messages.StatusEvent {
	e.t.Helper()
	return testutil.StreamDecodedEach(e.t, e.js, name, messages.StatusEvents)
}

// streamMsgs returns the messages still stored in a stream.
func (e *env) streamMsgs(name string) []*jetstream.RawStreamMsg {
	return testutil.StreamMsgs(e.t, e.js, name)
}

func (e *env) consumerInfo(s topology.ConsumerSettings) *jetstream.ConsumerInfo {
	e.t.Helper()
	c, err := e.js.Consumer(context.Background(), s.Stream, string(s.Stage))
	if err != nil {
		e.t.Fatal(err)
	}
	info, err := c.Info(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return info
}

// counter reads oxy_stage_messages_total for an outcome.
func (e *env) counter(stageName, outcome string) float64 {
	return testutil.Metric(e.t, e.reg, "oxy_stage_messages_total", map[string]string{"stage": stageName, "outcome": outcome})
}

// submitted returns the handler-side Submitted output for a payload.
func submitted(p *messages.Payload) *messages.Submitted {
	return &messages.Submitted{Run: p.Run, Doc: p.Doc, APIJobID: "70000000000000000" + p.Doc, Payload: p.Payload, SubmittedAt: time.Now().UTC()}
}
