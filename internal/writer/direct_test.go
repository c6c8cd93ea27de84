package writer_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/internal/poller"
	"github.com/oxypipe/oxypipe/internal/stage"
	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/retry"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

var submitterActor = oxytype.Party{Type: "submitter", Name: "test"}

// startDirect runs the writer of f.cfg and a poller that writes done jobs
// through it, as oxy run wires them; a handlerTimeout above 0 bounds the
// poller's handler calls instead of its default.
func (f *fixture) startDirect(handlerTimeout time.Duration) {
	f.t.Helper()
	w := f.start()
	settings, err := topology.DefaultConsumer(topology.Poller)
	if err != nil {
		f.t.Fatal(err)
	}
	settings.AckWait = 5 * time.Second
	if handlerTimeout > 0 {
		settings.HandlerTimeout = handlerTimeout
	}
	p, err := poller.New(poller.Config{
		Stage: stage.Config{
			Conn: f.cfg.Stage.Conn, Consumer: settings, Instance: "poller-test",
			FetchWait: 100 * time.Millisecond, WatchdogInterval: 100 * time.Millisecond,
			DrainTimeout: 5 * time.Second, Registerer: f.reg,
		},
		Topology:     f.topo,
		API:          f.client,
		Schedule:     poller.Schedule{First: 10 * time.Millisecond, Step: 10 * time.Millisecond, Until: 100 * time.Millisecond, Interval: 50 * time.Millisecond},
		PendingLimit: 10 * time.Second,
		Retry:        retry.Policy{Initial: 20 * time.Millisecond, Max: 100 * time.Millisecond},
		Sink:         w,
	})
	if err != nil {
		f.t.Fatal(err)
	}
	testutil.RunUntilCleanup(f.t, "the poller", p.Run)
}

// submitted creates a job for url, waits until it finished and publishes
// its Submitted as the submitter would. It waits on the results endpoint,
// so that the emulator's count of status requests is the poller's alone.
func (f *fixture) submitted(run string, doc int, url string) string {
	f.t.Helper()
	id, body := f.submitJob(url)
	testutil.Eventuallyf(f.t, 5*time.Second, func() bool {
		res, err := f.client.Results(f.t.Context(), id)
		if err == nil {
			_ = res.Body.Close()
		}
		return !errors.Is(err, wsa.ErrPending)
	}, "job %s finishes", id)
	m, err := messages.NewMsg(&messages.Submitted{
		Run: run, Doc: messages.DocID(doc), APIJobID: id, Payload: body, SubmittedAt: time.Now().UTC(),
	}, submitterActor)
	if err != nil {
		f.t.Fatal(err)
	}
	f.publishMsg(m)
	return id
}

// settled waits until the doc has a success at written or a hard failure,
// and returns its events in the order of the pipeline (see rank).
func (f *fixture) settled(run, doc string) []messages.StatusEvent {
	f.t.Helper()
	var evs []messages.StatusEvent
	done := func() bool {
		evs = f.events(run, doc)
		// Stages store their events in batches of their own, so the
		// writer's success may precede the poller's "done" in the stream.
		sort.SliceStable(evs, func(i, j int) bool { return rank(evs[i]) < rank(evs[j]) })
		if len(evs) == 0 {
			return false
		}
		last := evs[len(evs)-1]
		return last.Outcome == oxytype.HardFailure || (last.Outcome == oxytype.Success && last.DataType == oxytype.DataWritten)
	}
	testutil.EventuallyExplain(f.t, testutil.Patient(15*time.Second), done, func() string {
		return fmt.Sprintf("doc %s of run %s is written or fails; its events: %+v", doc, run, evs)
	})
	return evs
}

// rank orders a doc's events as the pipeline made them: a failure before
// the successes after it, done before written.
func rank(ev messages.StatusEvent) int {
	switch {
	case ev.Outcome == oxytype.SoftFailure:
		return 0
	case ev.Outcome == oxytype.Success && ev.DataType == oxytype.DataDone:
		return 1
	case ev.Outcome == oxytype.Success:
		return 2
	}
	return 3
}

// statusChecks is how many status requests the emulator answered.
func (f *fixture) statusChecks() int64 {
	return f.api.Emulator.Stats().Requests[emulator.EndpointStatus]
}

// firstDocGoesTheUsualWay submits doc 0 of run and checks that it took the
// four-stage path: the poller has no resolved destination to write to
// until the writer wrote the run's first file.
func (f *fixture) firstDocGoesTheUsualWay(run string) {
	f.t.Helper()
	id := f.submitted(run, 0, "https://sandbox.oxylabs.io/products/0")
	evs := f.settled(run, "0")
	if len(evs) != 2 || evs[0].DataType != oxytype.DataDone || evs[0].Origin.Type != "poller" ||
		evs[1].DataType != oxytype.DataWritten || evs[1].Origin.Type != "writer" || evs[1].APIJobID != id {
		f.t.Fatalf("doc 0 events = %+v, want done by the poller, then written by the writer", evs)
	}
}

func TestThePollerWritesDoneJobsThroughTheWriter(t *testing.T) {
	t.Parallel()
	f := setup(t, emulator.Config{})
	f.startDirect(0)
	dir := t.TempDir()
	run := f.announce(dir, oxytype.FinalDataType)
	f.firstDocGoesTheUsualWay(run)
	if got := f.statusChecks(); got != 1 {
		t.Fatalf("status requests after doc 0 = %d, want 1", got)
	}

	ids := map[int]string{}
	for i := 1; i <= 3; i++ {
		ids[i] = f.submitted(run, i, "https://sandbox.oxylabs.io/products/"+messages.DocID(i))
	}
	for i, id := range ids {
		evs := f.settled(run, messages.DocID(i))
		if len(evs) != 1 {
			t.Fatalf("doc %d events = %+v, want one success at written", i, evs)
		}
		ev := evs[0]
		if ev.Outcome != oxytype.Success || ev.DataType != oxytype.DataWritten || ev.Origin.Type != "poller" ||
			ev.APIJobID != id || ev.Error != nil || len(ev.Payload) == 0 {
			t.Fatalf("doc %d event = %+v, want a success at written by the poller for job %s", i, ev, id)
		}
	}
	// Done jobs were asked for their results only: no status check, no
	// Done message.
	if got := f.statusChecks(); got != 1 {
		t.Fatalf("status requests = %d, want 1 (doc 0's)", got)
	}
	stream, err := f.js.Stream(t.Context(), topology.StreamDone)
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.LastSeq != 1 { // the stream drops what the writer acked
		t.Fatalf("Done messages published = %d, want 1 (doc 0's)", info.State.LastSeq)
	}
	var size int
	for _, id := range ids {
		got, err := os.ReadFile(filepath.Join(dir, id+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if want := f.results(id); !bytes.Equal(got, want) {
			t.Fatalf("%s.json differs from the API's body (%d vs %d bytes)", id, len(got), len(want))
		}
		size += len(got)
	}
	if got := f.counter("oxy_poller_direct_total", map[string]string{"result": "written"}); got != 3 {
		t.Fatalf("direct writes = %v, want 3", got)
	}
	first, err := os.ReadFile(filepath.Join(dir, f.events(run, "0")[1].APIJobID+".json"))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.counter("oxy_writer_bytes_total", nil); got != float64(size+len(first)) {
		t.Fatalf("bytes written = %v, want %d", got, size+len(first))
	}
}

// TestAFailedDirectWriteIsHandedToTheWriter covers the poller's writes
// that do not land: the writer owns them, with its own retries and its own
// deadline (minutes, where the poller's is short, so that a slow
// destination holds none of its checks for long).
func TestAFailedDirectWriteIsHandedToTheWriter(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name           string
		handlerTimeout time.Duration // the poller's; 0: its default
		arm            func(s3 *fakeS3)
	}{
		// The poller's upload fails; the writer's passes.
		{name: "refused", arm: func(s3 *fakeS3) { s3.failPuts.Store(1) }},
		// The poller's upload hangs until its deadline.
		{name: "too slow", handlerTimeout: time.Second, arm: func(s3 *fakeS3) { s3.stallPuts.Store(1) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s3 := startFakeS3(t)
			f := setup(t, emulator.Config{})
			f.cfg.Destinations.S3 = s3.config()
			f.startDirect(c.handlerTimeout)
			run := f.announce("s3://"+bucket+"/handoff", oxytype.FinalDataType)
			f.firstDocGoesTheUsualWay(run)

			c.arm(s3)
			id := f.submitted(run, 1, "https://sandbox.oxylabs.io/products/1")
			evs := f.settled(run, "1")
			if len(evs) != 2 || evs[0].DataType != oxytype.DataDone || evs[0].Origin.Type != "poller" ||
				evs[1].DataType != oxytype.DataWritten || evs[1].Origin.Type != "writer" || evs[1].Outcome != oxytype.Success {
				t.Fatalf("doc 1 events = %+v, want done by the poller (handed on), then written by the writer", evs)
			}
			if failed, stalled := s3.failPuts.Load(), s3.stallPuts.Load(); failed != 0 || stalled != 0 {
				t.Fatalf("injected failures left: %d refusals, %d stalls; want the poller's upload to have taken it", failed, stalled)
			}
			if got, want := s3.object(t, "handoff/"+id+".json"), f.results(id); !bytes.Equal(got, want) {
				t.Fatalf("the object differs from the API's body (%d vs %d bytes)", len(got), len(want))
			}
			if got := f.counter("oxy_poller_direct_total", map[string]string{"result": "handed_off"}); got != 1 {
				t.Fatalf("hand-offs = %v, want 1", got)
			}
			if got := f.counter("oxy_writer_run_stops_total", map[string]string{"result": "stopped"}); got != 0 {
				t.Fatalf("run stops = %v, want 0: the writer's own write passed", got)
			}
		})
	}
}

// TestDirectOutcomes covers the direct path's other
// outcomes: each case's doc 1 is a job the results request alone decides,
// or one it leaves to the status check in the same delivery.
func TestDirectOutcomes(t *testing.T) {
	t.Parallel()
	notFound := &emulator.Failure{Status: 404, Message: "Query not found."}
	cases := []struct {
		name    string
		outcome emulator.Outcome
		// statusChecks is the emulator's count at the end, doc 0's included.
		statusChecks int64
		checked      float64 // oxy_poller_direct_total{result="checked"}
		check        func(t *testing.T, last messages.StatusEvent)
	}{
		{name: "faulted", outcome: emulator.Outcome{Fault: true}, statusChecks: 1,
			check: func(t *testing.T, last messages.StatusEvent) {
				if last.Outcome != oxytype.HardFailure || last.State != oxytype.Faulted || last.Consumer.Type != "poller" ||
					last.DataType != oxytype.DataSubmitted || last.Error != nil {
					t.Fatalf("last event = %+v, want the poller's faulted hard failure with a null error", last)
				}
			}},
		{name: "lost", outcome: emulator.Outcome{ResultsFailure: notFound}, statusChecks: 1,
			check: func(t *testing.T, last messages.StatusEvent) {
				if last.Outcome != oxytype.HardFailure || last.State != oxytype.Unfetched || last.Consumer.Type != "poller" ||
					last.Error == nil || last.Error.StatusCode == nil || *last.Error.StatusCode != 404 {
					t.Fatalf("last event = %+v, error %+v; want the poller's unfetched hard failure with 404", last, last.Error)
				}
			}},
		{name: "expired", outcome: emulator.Outcome{ResultsTTL: 1}, statusChecks: 2, checked: 1,
			check: func(t *testing.T, last messages.StatusEvent) {
				// A finished job with no results: the status check says done,
				// and the writer owns expired results.
				if last.Outcome != oxytype.HardFailure || last.State != oxytype.Unfetched || last.Consumer.Type != "writer" ||
					last.Error == nil || last.Error.StatusCode == nil || *last.Error.StatusCode != 204 {
					t.Fatalf("last event = %+v, error %+v; want the writer's unfetched hard failure with 204", last, last.Error)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, emulator.Config{Rules: []emulator.Rule{{Pattern: regexp.MustCompile(`/odd$`), Outcome: c.outcome}}})
			f.startDirect(0)
			dir := t.TempDir()
			run := f.announce(dir, oxytype.FinalDataType)
			f.firstDocGoesTheUsualWay(run)

			id := f.submitted(run, 1, "https://sandbox.oxylabs.io/odd")
			evs := f.settled(run, "1")
			last := evs[len(evs)-1]
			if last.APIJobID != id {
				t.Fatalf("last event = %+v, want job %s", last, id)
			}
			c.check(t, last)
			if _, err := os.Stat(filepath.Join(dir, id+".json")); !os.IsNotExist(err) {
				t.Fatalf("%s.json: %v, want no file", id, err)
			}
			if got := f.statusChecks(); got != c.statusChecks {
				t.Fatalf("status requests = %d, want %d", got, c.statusChecks)
			}
			if got := f.counter("oxy_poller_direct_total", map[string]string{"result": "checked"}); got != c.checked {
				t.Fatalf("answers left to the status check = %v, want %v", got, c.checked)
			}
			if got := f.counter("oxy_poller_direct_total", map[string]string{"result": "written"}); got != 0 {
				t.Fatalf("direct writes = %v, want 0", got)
			}
		})
	}
}
