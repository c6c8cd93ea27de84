package progress_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/oxypipe/oxypipe/internal/natsserver/natstest"
	"github.com/oxypipe/oxypipe/internal/progress"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

const hubRun = "20261207T040000.000Z"

// hubEnv is a real broker with the topology and one announced run, whose
// status events a test stores and hands to a hub, as the statusworker of a
// one-process cluster does.
type hubEnv struct {
	t    *testing.T
	ctx  context.Context
	js   jetstream.JetStream
	topo *topology.Topology
	hub  *progress.Hub
	docs int
}

func newHubEnv(t *testing.T, docs int) *hubEnv {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	_, nc := natstest.Start(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	topo, err := topology.Ensure(ctx, js, topology.Config{})
	if err != nil {
		t.Fatal(err)
	}
	rec := messages.RunRecord{
		Announced: messages.RunAnnounced{Run: hubRun, Total: docs, FinalDataType: oxytype.FinalDataType,
			Destination: "out", StartedAt: time.Now().UTC()},
		State: oxytype.RunStateReady, UpdatedAt: time.Now().UTC(),
	}
	if _, err := topo.Runs().Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	return &hubEnv{t: t, ctx: ctx, js: js, topo: topo, hub: progress.NewHub(), docs: docs}
}

// event stores ev on the status stream and, when observe, hands it to the
// hub.
func (e *hubEnv) event(ev *messages.StatusEvent, observe bool) {
	e.t.Helper()
	ev.Run, ev.Origin, ev.Time = hubRun, oxytype.Party{Type: "writer", Name: "w-1"}, time.Now().UTC()
	data, err := ev.MarshalJSON()
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.js.Publish(e.ctx, messages.StatusSubject(hubRun), data); err != nil {
		e.t.Fatal(err)
	}
	if observe {
		e.hub.Observe(ev)
	}
}

// finishAll stores, for every doc, a retry and its written file.
func (e *hubEnv) finishAll(observe bool) {
	for d := range e.docs {
		e.event(&messages.StatusEvent{Doc: messages.DocID(d), DataType: oxytype.DataDone, Outcome: oxytype.SoftFailure,
			Consumer: oxytype.Party{Type: "writer", Name: "w-1"}, RetryCount: 1, Reason: "slow disk"}, observe)
		e.event(&messages.StatusEvent{Doc: messages.DocID(d), DataType: oxytype.DataWritten, Outcome: oxytype.Success,
			Facts: oxytype.Facts{APIJobID: "73395245353818" + messages.DocID(10000+d)}}, observe)
	}
}

// complete marks the run completed with every doc done, as the statusworker
// does once its run log is written.
func (e *hubEnv) complete() {
	e.t.Helper()
	ref, err := e.topo.Runs().Get(e.ctx, hubRun)
	if err != nil {
		e.t.Fatal(err)
	}
	next := ref.Record
	next.State, next.UpdatedAt = oxytype.RunStateCompleted, time.Now().UTC()
	next.Completed = &messages.RunCompleted{Run: hubRun, Total: e.docs, Done: e.docs, CompletedAt: time.Now().UTC()}
	if err := e.topo.Runs().Update(e.ctx, ref, next); err != nil {
		e.t.Fatal(err)
	}
}

// consumers counts the consumers of the status stream.
func (e *hubEnv) consumers() int {
	e.t.Helper()
	s, err := e.js.Stream(e.ctx, topology.StreamStatus)
	if err != nil {
		e.t.Fatal(err)
	}
	info, err := s.Info(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	return info.State.Consumers
}

// jobs reads every job of the watch to its end and returns the docs in
// the order reported.
func (e *hubEnv) jobs(w *progress.Watcher) []int {
	e.t.Helper()
	var docs []int
	for {
		j, err := w.Next(e.ctx)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			e.t.Fatalf("Next after %d jobs: %v", len(docs), err)
		}
		if j.Status != oxytype.Done {
			e.t.Errorf("doc %d: status %s, want done", j.Doc, j.Status)
		}
		docs = append(docs, j.Doc)
	}
}

// checkEachOnce fails unless docs holds each of the run's docs exactly once.
func (e *hubEnv) checkEachOnce(docs []int) {
	e.t.Helper()
	seen := make([]int, e.docs)
	for _, d := range docs {
		seen[d]++
	}
	for d, n := range seen {
		if n != 1 {
			e.t.Errorf("doc %d reported %d times, want once", d, n)
		}
	}
}

func TestWatcherTakesItsEventsFromTheHub(t *testing.T) {
	t.Parallel()
	e := newHubEnv(t, 20)
	w, err := progress.Watch(e.ctx, progress.Config{Topology: e.topo, Run: hubRun, Hub: e.hub})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if n := e.consumers(); n != 0 {
		t.Fatalf("the status stream has %d consumers, want 0: the watcher must not read it", n)
	}
	e.finishAll(true)
	e.complete()
	docs := e.jobs(w)
	e.checkEachOnce(docs)
	if err := w.Err(); err != nil {
		t.Errorf("Err = %v", err)
	}
	if p := w.Progress(); p.Done != 20 || p.Written != 20 || p.Retries != 20 {
		t.Errorf("progress %s, want 20 done, 20 written, 20 retries", p)
	}
}

func TestWatcherReadsTheStreamWhenTheRunHasEvents(t *testing.T) {
	t.Parallel()
	e := newHubEnv(t, 3)
	// Stored before the watch and never observed: only the stream has it.
	e.event(&messages.StatusEvent{Doc: "0", DataType: oxytype.DataWritten, Outcome: oxytype.Success,
		Facts: oxytype.Facts{APIJobID: "7339524535381539841"}}, false)
	w, err := progress.Watch(e.ctx, progress.Config{Topology: e.topo, Run: hubRun, Hub: e.hub})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if n := e.consumers(); n != 1 {
		t.Errorf("the status stream has %d consumers, want the watcher's", n)
	}
	for d := 1; d < 3; d++ {
		e.event(&messages.StatusEvent{Doc: messages.DocID(d), DataType: oxytype.DataWritten, Outcome: oxytype.Success,
			Facts: oxytype.Facts{APIJobID: "733952453538184000" + messages.DocID(d)}}, true)
	}
	e.complete()
	e.checkEachOnce(e.jobs(w))
	if err := w.Err(); err != nil {
		t.Errorf("Err = %v", err)
	}
}

// A caller that does not read its jobs makes the watcher fall behind the
// hub, which then gives up on it rather than hold events without bound or
// block the statusworker: the watcher reads the stream from the first event
// and still reports each doc once, with each retry counted once.
func TestWatcherFallenBehindTheHubReadsTheStream(t *testing.T) {
	t.Parallel()
	e := newHubEnv(t, 300)
	w, err := progress.Watch(e.ctx, progress.Config{Topology: e.topo, Run: hubRun, Hub: e.hub, Buffer: 1, HubLimit: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	e.finishAll(true) // nobody reads yet: the watcher stalls after its buffer
	e.complete()
	var docs []int
	sawStream := false
	for {
		j, err := w.Next(e.ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("Next after %d jobs: %v", len(docs), err)
		}
		docs = append(docs, j.Doc)
		sawStream = sawStream || e.consumers() == 1
	}
	e.checkEachOnce(docs)
	if !sawStream {
		t.Error("the watcher never read the stream after falling behind the hub")
	}
	if err := w.Err(); err != nil {
		t.Errorf("Err = %v", err)
	}
	if p := w.Progress(); p.Done != 300 || p.Written != 300 || p.Retries != 300 {
		t.Errorf("progress %s, want 300 done, 300 written, 300 retries", p)
	}
}
