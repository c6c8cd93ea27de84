package statusworker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/oxypipe/oxypipe/internal/natsserver"
	"github.com/oxypipe/oxypipe/internal/natsserver/natstest"
	"github.com/oxypipe/oxypipe/internal/stage"
	"github.com/oxypipe/oxypipe/internal/statusworker"
	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/destination"
	"github.com/oxypipe/oxypipe/pkg/jobresults"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/runlog"
)

var (
	feeder    = oxytype.Party{Type: "feeder", Name: "test"}
	submitter = oxytype.Party{Type: "submitter", Name: "sub-0"}
	poller    = oxytype.Party{Type: "poller", Name: "pol-0"}
	writer    = oxytype.Party{Type: "writer", Name: "wri-0"}
)

// env is one test's broker with the topology, and a place for run logs.
type env struct {
	t      testing.TB
	srv    *natsserver.Server
	nc     *nats.Conn
	js     jetstream.JetStream
	topo   *topology.Topology
	logDir string

	completions atomic.Int64 // RunCompleted messages seen on the wire
	completedMu sync.Mutex
	completed   []*messages.RunCompleted
}

func setup(t testing.TB) *env {
	t.Helper()
	srv, nc := natstest.Start(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	topo, err := topology.Ensure(t.Context(), js, topology.Config{})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, srv: srv, nc: nc, js: js, topo: topo, logDir: filepath.Join(t.TempDir(), "logs")}
	// Every RunCompleted published, duplicates included (a core
	// subscription sees what the stream would deduplicate).
	sub, err := nc.Subscribe(messages.AllRunCompleted, func(m *nats.Msg) {
		c, err := messages.DecodeRunCompleted(m.Subject, m.Data)
		if err != nil {
			t.Errorf("RunCompleted does not decode: %v", err)
			return
		}
		e.completions.Add(1)
		e.completedMu.Lock()
		e.completed = append(e.completed, c)
		e.completedMu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return e
}

// consumer is the statusworker's consumer with test-sized timings.
func consumer() topology.ConsumerSettings {
	s, err := topology.DefaultConsumer(topology.StatusWorker)
	if err != nil {
		panic(err)
	}
	s.AckWait = 2 * time.Second
	s.MaxDeliver = 0
	s.RetryBackoff = []time.Duration{50 * time.Millisecond}
	s.HandlerTimeout = 5 * time.Second
	return s
}

// config is a statusworker config with test-sized timings.
func (e *env) config(ledger jobresults.Ledger, nc *nats.Conn) statusworker.Config {
	if nc == nil {
		nc = e.nc
	}
	return statusworker.Config{
		Stage: stage.Config{
			Conn: nc, Consumer: consumer(), Instance: "sw-test", Registerer: prometheus.NewRegistry(),
			BatchLinger: 5 * time.Millisecond, FetchWait: 100 * time.Millisecond, WatchdogInterval: 50 * time.Millisecond,
			DrainTimeout: 5 * time.Second,
		},
		Topology: e.topo, Ledger: ledger,
		RecheckInterval: 100 * time.Millisecond, ConfirmInterval: 100 * time.Millisecond,
		CompletionLease: 10 * time.Second,
		Destination:     []destination.Option{destination.WithLocal(destination.LocalConfig{NoSync: true})},
	}
}

// running is a started statusworker.
type running struct {
	w    *statusworker.StatusWorker
	cfg  statusworker.Config
	stop func() error
	// killed: Run's error is expected (its connection was closed).
	killed atomic.Bool
}

// start runs a statusworker until the test ends or stop is called.
func (e *env) start(cfg statusworker.Config) *running {
	e.t.Helper()
	w, err := statusworker.New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var runErr error
	go func() {
		defer close(done)
		runErr = w.Run(ctx)
	}()
	var once sync.Once
	stop := func() error {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				e.t.Error("Run did not return within 20s of cancel")
			}
		})
		return runErr
	}
	r := &running{w: w, cfg: cfg, stop: stop}
	e.t.Cleanup(func() {
		if err := stop(); err != nil && !r.killed.Load() {
			e.t.Errorf("Run: %v", err)
		}
	})
	return r
}

// announce creates and announces a run and waits until the statusworker
// made it ready (or failed).
func (e *env) announce(total int, runLog string) (string, messages.RunRecord) {
	e.t.Helper()
	run, err := e.topo.AnnounceRun(e.t.Context(), messages.RunAnnounced{
		Total: total, FinalDataType: oxytype.FinalDataType, Destination: filepath.Join(e.t.TempDir(), "results"),
		RunLog: runLog, StartedAt: time.Now(),
	}, feeder)
	if err != nil {
		e.t.Fatal(err)
	}
	ref := e.waitRun(run, func(r *messages.RunRecord) bool { return r.State != oxytype.RunStateAnnounced })
	return run, ref
}

// waitRun waits for a run record to satisfy until.
func (e *env) waitRun(run string, until func(r *messages.RunRecord) bool) messages.RunRecord {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.t.Context(), 20*time.Second)
	defer cancel()
	ref, err := e.topo.Runs().Wait(ctx, run, until)
	if err != nil {
		got, _ := e.topo.Runs().Get(context.Background(), run)
		if got != nil {
			e.t.Fatalf("run %s: %v; record: state %s reason %q", run, err, got.Record.State, got.Record.Reason)
		}
		e.t.Fatalf("run %s: %v", run, err)
	}
	return ref.Record
}

func (e *env) waitCompleted(run string) messages.RunRecord {
	e.t.Helper()
	return e.waitRun(run, func(r *messages.RunRecord) bool { return r.State == oxytype.RunStateCompleted })
}

// stateAfterChecks waits until r has finished n more completion checks, or
// run left state ready, and returns the run's state.
func (e *env) stateAfterChecks(r *running, n int64, run string) oxytype.RunState {
	e.t.Helper()
	target := statusworker.Checks(r.w) + n
	var state oxytype.RunState
	testutil.Eventually(e.t, 10*time.Second, "completion checks", func() bool {
		ref, err := e.topo.Runs().Get(context.Background(), run)
		if err != nil {
			e.t.Fatal(err)
		}
		state = ref.Record.State
		return state != oxytype.RunStateReady || statusworker.Checks(r.w) >= target
	})
	return state
}

// publish sends status events as the stages would.
func (e *env) publish(evs ...*messages.StatusEvent) {
	e.t.Helper()
	for _, ev := range evs {
		if ev.Time.IsZero() {
			ev.Time = time.Now().UTC()
		}
		origin := ev.Origin
		if origin == (oxytype.Party{}) {
			origin = feeder
		}
		m, err := messages.NewMsg(ev, origin)
		if err != nil {
			e.t.Fatal(err)
		}
		e.publishRaw(m)
	}
}

func (e *env) publishRaw(m *nats.Msg) {
	e.t.Helper()
	if _, err := e.js.PublishMsg(e.t.Context(), m); err != nil {
		e.t.Fatal(err)
	}
}

// readLog returns the run log of run in the test's log folder.
func (e *env) readLog(run string) string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.logDir, runlog.FileName(run)))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

// logFiles lists the files in the log folder.
func (e *env) logFiles() []string {
	e.t.Helper()
	ents, err := os.ReadDir(e.logDir)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, d := range ents {
		out = append(out, d.Name())
	}
	return out
}

// completionsOf returns the RunCompleted messages seen for run.
func (e *env) completionsOf(run string) []*messages.RunCompleted {
	e.completedMu.Lock()
	defer e.completedMu.Unlock()
	var out []*messages.RunCompleted
	for _, c := range e.completed {
		if c.Run == run {
			out = append(out, c)
		}
	}
	return out
}

// counter reads a counter or gauge of the worker's registry.
func counter(t testing.TB, cfg statusworker.Config, name string, labels ...string) float64 {
	t.Helper()
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
	return testutil.Metric(t, cfg.Stage.Registerer.(*prometheus.Registry), name, want)
}

// payloadOf is the WSA body of doc n in the seed example (seedEvents).
func payloadOf(n int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"source":"universal","url":"https://sandbox.oxylabs.io/products/%d"}`, n+1))
}

func jobID(n int) string { return fmt.Sprintf("75000000000000%05d", n+1) }

func intp(n int) *int { return &n }

// fed is the feeder's success at payload for doc n.
func fed(run string, n int) *messages.StatusEvent {
	return &messages.StatusEvent{Run: run, Doc: messages.DocID(n), DataType: oxytype.DataPayload,
		Outcome: oxytype.Success, Origin: feeder, Facts: oxytype.Facts{Payload: payloadOf(n)}}
}

// submitted is the submitter's success at submitted for doc n.
func submitted(run string, n int) *messages.StatusEvent {
	return &messages.StatusEvent{Run: run, Doc: messages.DocID(n), DataType: oxytype.DataSubmitted,
		Outcome: oxytype.Success, Origin: submitter, Facts: oxytype.Facts{APIJobID: jobID(n), Payload: payloadOf(n)}}
}

// polled is the poller's success at done for doc n.
func polled(run string, n int) *messages.StatusEvent {
	return &messages.StatusEvent{Run: run, Doc: messages.DocID(n), DataType: oxytype.DataDone,
		Outcome: oxytype.Success, Origin: poller, Facts: oxytype.Facts{APIJobID: jobID(n)}}
}

// written is the writer's success at written for doc n.
func written(run string, n int) *messages.StatusEvent {
	return &messages.StatusEvent{Run: run, Doc: messages.DocID(n), DataType: oxytype.DataWritten,
		Outcome: oxytype.Success, Origin: writer, Facts: oxytype.Facts{APIJobID: jobID(n)}}
}

// doneDoc is every success event of a doc that goes all the way.
func doneDoc(run string, n int) []*messages.StatusEvent {
	return []*messages.StatusEvent{fed(run, n), submitted(run, n), polled(run, n), written(run, n)}
}

// unfetched404 is the poller giving up on doc n's job after a 404.
func unfetched404(run string, n int) *messages.StatusEvent {
	return &messages.StatusEvent{Run: run, Doc: messages.DocID(n), DataType: oxytype.DataSubmitted,
		Outcome: oxytype.HardFailure, Origin: submitter, Consumer: poller, RetryCount: 1,
		Reason: fmt.Sprintf("Stopped checking job %s, because the API returned 404 Not Found", jobID(n)),
		Facts:  oxytype.Facts{Error: &oxytype.ErrorInfo{StatusCode: intp(404), Message: "Not Found", TraceID: "00000001-000000000000000000000000"}, State: oxytype.Unfetched, APIJobID: jobID(n), Payload: payloadOf(n)}}
}

// faulted is the poller finding doc n's job faulted.
func faulted(run string, n int) *messages.StatusEvent {
	return &messages.StatusEvent{Run: run, Doc: messages.DocID(n), DataType: oxytype.DataSubmitted,
		Outcome: oxytype.HardFailure, Origin: submitter, Consumer: poller, RetryCount: 1,
		Reason: fmt.Sprintf("Job %s faulted", jobID(n)), Facts: oxytype.Facts{State: oxytype.Faulted, APIJobID: jobID(n), Payload: payloadOf(n)}}
}

// seedEvents are the events of the three-payload example of examples/sandbox-rules.json: doc 0's
// status check returns 404, doc 1 faults, doc 2 is written.
func seedEvents(run string) []*messages.StatusEvent {
	evs := []*messages.StatusEvent{fed(run, 0), fed(run, 1), fed(run, 2),
		submitted(run, 0), submitted(run, 1), submitted(run, 2),
		unfetched404(run, 0), faulted(run, 1), polled(run, 2), written(run, 2)}
	return evs
}

// seedLog is the run log of that example, byte for byte.
const seedLog = `{"state":"unfetched","id":"7500000000000000001","payload":{"source":"universal","url":"https://sandbox.oxylabs.io/products/1"},"error":{"status_code":404,"message":"Not Found","trace_id":"00000001-000000000000000000000000"},"upload":null}
{"state":"faulted","id":"7500000000000000002","payload":{"source":"universal","url":"https://sandbox.oxylabs.io/products/2"},"error":null,"upload":null}
{"state":"done","id":"7500000000000000003","payload":{"source":"universal","url":"https://sandbox.oxylabs.io/products/3"},"error":null,"upload":null}
`

// flakyLedger is fault injection around a real ledger: while down is set,
// Apply (and, with failCounts, the count queries) fail with a transient
// error.
type flakyLedger struct {
	jobresults.Ledger
	down       atomic.Bool
	failCounts atomic.Int64 // the next n count queries fail
	failures   atomic.Int64
	// failDoc, while non-empty, fails every batch holding an entry of that
	// doc at data type payload.
	failDoc atomic.Value
}

var errOutage = fmt.Errorf("injected outage: %w", jobresults.ErrTransient)

func (f *flakyLedger) Apply(ctx context.Context, entries []jobresults.Entry) (int, error) {
	if f.down.Load() {
		f.failures.Add(1)
		return 0, errOutage
	}
	if doc, _ := f.failDoc.Load().(string); doc != "" {
		for _, e := range entries {
			if e.DocID == doc && e.DataType == string(oxytype.DataPayload) {
				f.failures.Add(1)
				return 0, errOutage
			}
		}
	}
	return f.Ledger.Apply(ctx, entries)
}

func (f *flakyLedger) CountCompletedDocs(ctx context.Context, job, final string) (int, error) {
	if f.failCounts.Add(-1) >= 0 {
		f.failures.Add(1)
		return 0, errOutage
	}
	return f.Ledger.CountCompletedDocs(ctx, job, final)
}

// dump renders every ledger record of a run, for comparing two ledgers.
func dump(t testing.TB, l jobresults.Ledger, run string) []string {
	t.Helper()
	var out []string
	err := l.ForEachRecord(t.Context(), run, func(r jobresults.Record) error {
		out = append(out, fmt.Sprintf("%s/%s ok=%v hard=%q state=%s id=%s err=%v payload=%s",
			r.DocID, r.DataType, r.Success, r.HardFailure, r.State, r.APIJobID, r.Error, r.Payload))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
