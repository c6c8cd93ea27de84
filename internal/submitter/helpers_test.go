package submitter_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/oxypipe/oxypipe/internal/natsserver/natstest"
	"github.com/oxypipe/oxypipe/internal/stage"
	"github.com/oxypipe/oxypipe/internal/submitter"
	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

const run = "20260929T170412.345Z"

var feeder = oxytype.Party{Type: "feeder", Name: "test"}

// options change one test's setup.
type options struct {
	emulator   emulator.Config
	password   string // the client's password; default the emulator's
	maxDeliver int
	// ackWait replaces the consumer's test-sized AckWait of 1 s.
	ackWait   time.Duration
	configure func(*submitter.Config)
	// proxy, when set, stands between the client and the emulator (to
	// change an answer the emulator cannot give).
	proxy func(api http.Handler) http.Handler
}

// env is one test's broker, API emulator and submitter.
type env struct {
	t    testing.TB
	nc   *nats.Conn
	js   jetstream.JetStream
	topo *topology.Topology
	api  *emulator.Server
	sub  *submitter.Submitter
	logs *observer.ObservedLogs
	reg  *prometheus.Registry
	cfg  submitter.Config
}

// consumer is the submitter's consumer with test-sized timings.
func consumer(maxDeliver int) topology.ConsumerSettings {
	s, err := topology.DefaultConsumer(topology.Submitter)
	if err != nil {
		panic(err)
	}
	s.AckWait = time.Second
	s.MaxDeliver = maxDeliver
	s.RetryBackoff = []time.Duration{20 * time.Millisecond}
	s.HandlerTimeout = 8 * time.Second
	return s
}

// setup starts a broker with the full topology and an emulator, and builds
// (but does not start) a submitter for them.
func setup(t testing.TB, o options) *env {
	t.Helper()
	_, nc := natstest.Start(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if o.maxDeliver == 0 {
		o.maxDeliver = 5
	}
	cs := consumer(o.maxDeliver)
	if o.ackWait > 0 {
		cs.AckWait = o.ackWait
	}
	topo, err := topology.EnsureAll(context.Background(), js, topology.Config{}, cs)
	if err != nil {
		t.Fatal(err)
	}
	if o.emulator.RateWindow == 0 {
		o.emulator.RateWindow = 100 * time.Millisecond
	}
	if o.emulator.JobTime == 0 {
		o.emulator.JobTime = time.Hour // nothing here polls
	}
	api := emulator.NewServer(t, o.emulator)
	password := api.Password
	if o.password != "" {
		password = o.password
	}
	base := api.URL
	if o.proxy != nil {
		front := httptest.NewServer(o.proxy(api.Emulator))
		t.Cleanup(front.Close)
		base = front.URL
	}
	client, err := wsa.New(wsa.Config{BaseURL: base, Username: api.Username, Password: password, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.DebugLevel)
	reg := prometheus.NewRegistry()
	cfg := submitter.Config{
		Topology: topo, API: client,
		Stage: stage.Config{
			Conn: nc, Consumer: cs, Instance: "test-pod", Logger: zap.New(core), Registerer: reg,
			FetchWait: 100 * time.Millisecond, WatchdogInterval: 50 * time.Millisecond,
			DrainTimeout: 5 * time.Second, BatchLinger: 50 * time.Millisecond,
		},
		Pacer:         wsa.PacerConfig{Window: 100 * time.Millisecond, MaxBackoff: 400 * time.Millisecond},
		SubmitTimeout: 3 * time.Second, KVTimeout: time.Second,
		ClaimStaleAfter: cs.HandlerTimeout, RateLimitedRetry: 50 * time.Millisecond,
	}
	if o.configure != nil {
		o.configure(&cfg)
	}
	sub, err := submitter.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, nc: nc, js: js, topo: topo, api: api, sub: sub, logs: logs, reg: reg, cfg: cfg}
}

// start runs the submitter until the test ends; the returned function
// stops it and returns Run's error.
func (e *env) start() func() error {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.sub.Run(ctx) }()
	var once sync.Once
	var runErr error
	stop := func() error {
		once.Do(func() {
			cancel()
			select {
			case runErr = <-done:
			case <-time.After(15 * time.Second):
				e.t.Error("Run did not return within 15s of cancel")
			}
		})
		return runErr
	}
	e.t.Cleanup(func() { _ = stop() })
	return stop
}

// url is the input of doc i in the default payloads.
func url(i int) string { return fmt.Sprintf("https://example.com/item/%d", i) }

// universal is a batchable payload for doc i.
func universal(i int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"source":"universal","url":%q,"geo_location":"United States"}`, url(i)))
}

// feed publishes one payload message as a feeder would (with its message
// id, so that the broker drops a republished copy).
func (e *env) feed(doc int, body json.RawMessage) {
	e.t.Helper()
	e.publish(&messages.Payload{Run: run, Doc: messages.DocID(doc), Payload: body}, true)
}

// feedUniversal feeds docs from..to-1 with universal payloads.
func (e *env) feedUniversal(from, to int) {
	e.t.Helper()
	for i := from; i < to; i++ {
		e.feed(i, universal(i))
	}
}

// publish sends an envelope; without a message id it is a new stream
// message even when an identical one was published (what a redelivery or a
// duplicate publish looks like to the submitter).
func (e *env) publish(env messages.Envelope, withID bool) {
	e.t.Helper()
	m, err := messages.NewMsg(env, feeder)
	if err != nil {
		e.t.Fatal(err)
	}
	if !withID {
		m.Header.Del(messages.HeaderMsgID)
	}
	if _, err := e.js.PublishMsg(context.Background(), m); err != nil {
		e.t.Fatal(err)
	}
}

// createRun stores the run's record in the given state.
func (e *env) createRun(state oxytype.RunState, reason string) {
	e.t.Helper()
	rec := messages.RunRecord{
		Announced: messages.RunAnnounced{Run: run, Total: 10, FinalDataType: oxytype.FinalDataType,
			Destination: "out", RunLog: "logs", StartedAt: time.Now().UTC()},
		State: state, Reason: reason, UpdatedAt: time.Now().UTC(),
	}
	if _, err := e.topo.Runs().Create(context.Background(), rec); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) runRecord() messages.RunRecord {
	e.t.Helper()
	ref, err := e.topo.Runs().Get(context.Background(), run)
	if err != nil {
		e.t.Fatal(err)
	}
	return ref.Record
}

// claim returns doc's claim, or nil when it has none.
func (e *env) claim(doc int) *messages.Claim {
	e.t.Helper()
	ref, err := e.topo.Claims().Get(context.Background(), run, messages.DocID(doc))
	if errors.Is(err, topology.ErrNoClaim) {
		return nil
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return &ref.Claim
}

// events returns the status events stored so far, in stream order.
func (e *env) events() []messages.StatusEvent {
	e.t.Helper()
	return testutil.StreamDecodedEach(e.t, e.js, topology.StreamStatus, messages.StatusEvents)
}

// eventsOf returns the events of one doc with the given outcome.
func (e *env) eventsOf(doc string, outcome oxytype.Outcome) []messages.StatusEvent {
	e.t.Helper()
	var out []messages.StatusEvent
	for _, ev := range e.events() {
		if ev.Doc == doc && ev.Outcome == outcome {
			out = append(out, ev)
		}
	}
	return out
}

// count counts the events with the given outcome (any doc).
func (e *env) count(outcome oxytype.Outcome) int {
	e.t.Helper()
	n := 0
	for _, ev := range e.events() {
		if ev.Outcome == outcome {
			n++
		}
	}
	return n
}

// submitted returns the Submitted messages stored so far.
func (e *env) submitted() []messages.Submitted {
	e.t.Helper()
	return testutil.StreamDecoded(e.t, e.js, topology.StreamSubmitted, messages.DecodeSubmitted)
}

// pending is how many payload messages are not settled yet. The payload
// stream is a work queue: a message leaves it when it is acked or
// terminated, after the runtime stored its outputs and status events.
// (The consumer's own counts lag behind publishes under load.)
func (e *env) pending() int {
	e.t.Helper()
	s, err := e.js.Stream(context.Background(), topology.StreamPayloads)
	if err != nil {
		e.t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return int(info.State.Msgs)
}

// requests is how many requests the emulator got on an endpoint.
func (e *env) requests(ep emulator.Endpoint) int64 { return e.api.Emulator.Stats().Requests[ep] }

// jobs is how many jobs the emulator created (what would bill).
func (e *env) jobs() int64 { return e.api.Emulator.Stats().JobsCreated }

// logged counts the log lines whose message contains s.
func (e *env) logged(s string) int {
	n := 0
	for _, l := range e.logs.All() {
		if strings.Contains(l.Message, s) {
			n++
		}
	}
	return n
}

// settled waits until the consumer holds nothing and returns the events.
func (e *env) settled() []messages.StatusEvent {
	e.t.Helper()
	testutil.Eventually(e.t, 10*time.Second, "every payload is settled", func() bool { return e.pending() == 0 })
	return e.events()
}

// metric reads a counter of the submitter's registry: the series whose
// label has value, or with label "" the series without labels.
func (e *env) metric(name, label, value string) float64 {
	e.t.Helper()
	families, err := e.reg.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if label == "" && len(m.GetLabel()) == 0 {
				return m.GetCounter().GetValue()
			}
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
