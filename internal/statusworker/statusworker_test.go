package statusworker_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/oxypipe/oxypipe/internal/natsserver/natstest"
	"github.com/oxypipe/oxypipe/internal/statusworker"
	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/pkg/jobresults"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/runlog"
)

func TestSeedExample(t *testing.T) {
	t.Parallel()
	e := setup(t)
	store := jobresults.NewMemoryStore()
	sw := e.start(e.config(store, nil))

	run, rec := e.announce(3, e.logDir)
	if rec.State != oxytype.RunStateReady {
		t.Fatalf("state %s (%s), want ready", rec.State, rec.Reason)
	}
	if got := e.readLog(run); got != "" {
		t.Fatalf("the run log at ready is %q, want empty", got)
	}
	e.publish(seedEvents(run)...)
	done := e.waitCompleted(run)

	if got := e.readLog(run); got != seedLog {
		t.Fatalf("run log:\n%s\nwant:\n%s", got, seedLog)
	}
	c := done.Completed
	if c == nil || c.Total != 3 || c.Done != 1 || c.Faulted != 1 || c.Unfetched != 1 || c.Rejected+c.Unsubmitted+c.Unidentified != 0 {
		t.Fatalf("completion counts %+v", c)
	}
	if want := filepath.Join(e.logDir, runlog.FileName(run)); c.RunLog != want {
		t.Fatalf("completion run log %q, want %q", c.RunLog, want)
	}
	testutil.Eventually(t, 5*time.Second, "RunCompleted on the wire", func() bool { return len(e.completionsOf(run)) == 1 })

	counts, err := store.GetStageCounts(t.Context(), run)
	if err != nil {
		t.Fatal(err)
	}
	want := []jobresults.StageCount{
		{DataType: "done", Total: 1, Succeeded: 1},
		{DataType: "payload", Total: 3, Succeeded: 3},
		{DataType: "submitted", Total: 3, Succeeded: 1, HardFailed: 2},
		{DataType: "written", Total: 1, Succeeded: 1},
	}
	if !slices.Equal(counts, want) {
		t.Fatalf("stage counts %+v\nwant %+v", counts, want)
	}

	if err := sw.stop(); err != nil {
		t.Fatal(err)
	}
	if n := len(e.completionsOf(run)); n != 1 {
		t.Fatalf("%d RunCompleted messages, want 1", n)
	}
	if files := e.logFiles(); !slices.Equal(files, []string{runlog.FileName(run)}) {
		t.Fatalf("log folder holds %v", files)
	}
	if n := counter(t, sw.cfg, "oxy_statusworker_events_total", "result", "applied"); n != 10 {
		t.Fatalf("applied events %v, want 10", n)
	}
}

func TestDuplicatedAndReorderedEvents(t *testing.T) {
	t.Parallel()
	e := setup(t)
	store := jobresults.NewMemoryStore()
	first := e.start(e.config(store, nil))
	run, _ := e.announce(3, e.logDir)

	// Later stages' events before earlier ones (the events of one record
	// keep their order: the later one of a record wins), every event twice.
	evs := []*messages.StatusEvent{written(run, 2), polled(run, 2), submitted(run, 0), unfetched404(run, 0),
		submitted(run, 2), submitted(run, 1), faulted(run, 1), fed(run, 2), fed(run, 1), fed(run, 0)}
	for _, ev := range evs {
		e.publish(ev)
		cp := *ev
		e.publish(&cp)
	}
	e.waitCompleted(run)
	if got := e.readLog(run); got != seedLog {
		t.Fatalf("run log:\n%s\nwant:\n%s", got, seedLog)
	}
	before := dump(t, store, run)
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}

	// A second worker on the same ledger replays the whole stream (as a
	// redelivery would): every event is older than what is stored.
	cfg := e.config(store, nil)
	cfg.Rebuild = true
	second := e.start(cfg)
	testutil.Eventually(t, 10*time.Second, "the rebuild", func() bool { return second.w.Ready().OK })
	if n := counter(t, cfg, "oxy_statusworker_events_total", "result", "stale"); n != 20 {
		t.Fatalf("stale events on replay %v, want 20", n)
	}
	if after := dump(t, store, run); !slices.Equal(before, after) {
		t.Fatalf("ledger changed by the replay:\n%v\n%v", before, after)
	}
	if err := second.stop(); err != nil {
		t.Fatal(err)
	}
	if n := len(e.completionsOf(run)); n != 1 {
		t.Fatalf("%d RunCompleted messages, want 1", n)
	}
}

// A stage can fail a message before the message's producer has published
// its success event, which then comes later in the stream: the submitter
// failing a payload (here: a stopped run) before the feeder's fed event,
// the poller failing a job (a 404) before the submitter's submitted event.
// The failures must stand: the run completes and its log says what they
// say.
func TestAConsumersFailureOutlivesALateSuccess(t *testing.T) {
	t.Parallel()
	e := setup(t)
	store := jobresults.NewMemoryStore()
	r := e.start(e.config(store, nil))
	run, _ := e.announce(3, e.logDir)

	stopped := &messages.StatusEvent{Run: run, Doc: messages.DocID(0), DataType: oxytype.DataPayload,
		Outcome: oxytype.HardFailure, Origin: feeder, Consumer: submitter, RetryCount: 1,
		Reason: "Stopped submitting, because the run was stopped", Facts: oxytype.Facts{State: oxytype.Unsubmitted, Error: &oxytype.ErrorInfo{Message: "the run was stopped before this payload was submitted"}, Payload: payloadOf(0)}}
	e.publish(stopped, fed(run, 0))
	e.publish(fed(run, 1), unfetched404(run, 1), submitted(run, 1))
	e.publish(doneDoc(run, 2)...)
	e.waitCompleted(run)

	lines := strings.Split(strings.TrimSpace(e.readLog(run)), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], `{"state":"unsubmitted","id":null,"payload":`+string(payloadOf(0))) ||
		!strings.Contains(lines[0], "the run was stopped before this payload was submitted") ||
		!strings.HasPrefix(lines[1], `{"state":"unfetched","id":"`+jobID(1)+`"`) || !strings.HasPrefix(lines[2], `{"state":"done"`) {
		t.Fatalf("run log:\n%s", strings.Join(lines, "\n"))
	}
	counts, err := store.GetStageCounts(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]jobresults.StageCount{
		"payload":   {DataType: "payload", Total: 3, Succeeded: 2, HardFailed: 1},
		"submitted": {DataType: "submitted", Total: 2, Succeeded: 1, HardFailed: 1},
	}
	for _, c := range counts {
		if w, ok := want[c.DataType]; ok && c != w {
			t.Errorf("stage counts %+v, want %+v", c, w)
		}
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
}

func TestTwoReplicasOneCompletion(t *testing.T) {
	t.Parallel()
	e := setup(t)
	// One store shared by both replicas models MongoDB (a memory ledger per
	// replica would each see half of the events).
	store := jobresults.NewMemoryStore()
	cfgA, cfgB := e.config(store, natstest.Connect(t, e.srv)), e.config(store, natstest.Connect(t, e.srv))
	cfgA.Stage.Instance, cfgB.Stage.Instance = "sw-a", "sw-b"
	cfgA.Stage.BatchSize, cfgB.Stage.BatchSize = 20, 20
	a, b := e.start(cfgA), e.start(cfgB)

	const total = 300
	run, _ := e.announce(total, e.logDir)
	for n := range total {
		e.publish(doneDoc(run, n)...)
	}
	done := e.waitCompleted(run)
	if done.Completed.Done != total {
		t.Fatalf("completion %+v", done.Completed)
	}
	testutil.Eventually(t, 5*time.Second, "both replicas applied events", func() bool {
		return counter(t, cfgA, "oxy_statusworker_events_total", "result", "applied") > 0 &&
			counter(t, cfgB, "oxy_statusworker_events_total", "result", "applied") > 0
	})
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}
	won := counter(t, cfgA, "oxy_statusworker_runs_total", "result", "completed") + counter(t, cfgB, "oxy_statusworker_runs_total", "result", "completed")
	if won != 1 {
		t.Fatalf("%v replicas completed the run, want 1", won)
	}
	if n := len(e.completionsOf(run)); n != 1 {
		t.Fatalf("%d RunCompleted messages, want 1", n)
	}
	lines, err := runlog.ReadAll(strings.NewReader(e.readLog(run)))
	if err != nil || len(lines) != total {
		t.Fatalf("%d lines, %v", len(lines), err)
	}
	for i, l := range lines {
		if l.State != oxytype.Done || *l.ID != jobID(i) {
			t.Fatalf("line %d: %s %v", i+1, l.State, *l.ID)
		}
	}
}

func TestTransientLedgerOutage(t *testing.T) {
	t.Parallel()
	e := setup(t)
	flaky := &flakyLedger{Ledger: jobresults.NewMemoryStore()}
	cfg := e.config(flaky, nil)
	cfg.WriteRetry.Initial, cfg.WriteRetry.Max, cfg.WriteRetry.MaxElapsed = 10*time.Millisecond, 50*time.Millisecond, 200*time.Millisecond
	sw := e.start(cfg)
	run, _ := e.announce(3, e.logDir)

	flaky.down.Store(true)
	e.publish(seedEvents(run)...)
	// The outage outlasts the worker's retry budget: events are given back
	// and redelivered, more than once.
	testutil.Eventually(t, 10*time.Second, "redeliveries during the outage", func() bool {
		return counter(t, cfg, "oxy_stage_redeliveries_total") >= 3 && counter(t, cfg, "oxy_statusworker_store_retries_total") >= 3
	})
	if n, _ := flaky.Ledger.CountCompletedDocs(t.Context(), run, "written"); n != 0 {
		t.Fatal("something was written during the outage")
	}
	rec, err := e.topo.Runs().Get(t.Context(), run)
	if err != nil || rec.Record.State != oxytype.RunStateReady {
		t.Fatalf("run during the outage: %v %v", rec, err)
	}
	flaky.down.Store(false)

	e.waitCompleted(run)
	if got := e.readLog(run); got != seedLog {
		t.Fatalf("run log after the outage:\n%s", got)
	}
	if err := sw.stop(); err != nil {
		t.Fatal(err)
	}
	if n := len(e.completionsOf(run)); n != 1 {
		t.Fatalf("%d RunCompleted messages, want 1", n)
	}
	if fails, _ := flaky.GetFailures(t.Context(), run, string(oxytype.DataStatus)); len(fails) != 0 {
		t.Fatalf("events were dead-lettered: %+v", fails)
	}
}

func TestRestartRebuildsTheMemoryLedger(t *testing.T) {
	t.Parallel()
	e := setup(t)
	// The first worker has its own connection; closing it abruptly is the
	// in-process stand-in for SIGKILL: nothing is drained or acked, and its
	// memory ledger is gone.
	nc1 := natstest.Connect(t, e.srv)
	cfg1 := e.config(jobresults.NewMemoryStore(), nc1)
	cfg1.Rebuild = true
	first := e.start(cfg1)
	run, _ := e.announce(3, e.logDir)
	evs := seedEvents(run)
	e.publish(evs[:6]...)
	testutil.Eventually(t, 10*time.Second, "the first half applied", func() bool {
		return counter(t, cfg1, "oxy_statusworker_events_total", "result", "applied") == 6
	})
	first.killed.Store(true)
	nc1.Close()
	_ = first.stop()

	store := jobresults.NewMemoryStore()
	cfg2 := e.config(store, natstest.Connect(t, e.srv))
	cfg2.Rebuild = true
	second := e.start(cfg2)
	e.publish(evs[6:]...)
	e.waitCompleted(run)
	if got := e.readLog(run); got != seedLog {
		t.Fatalf("run log after the restart:\n%s", got)
	}

	// Compare with a run whose events this worker saw once, in order.
	refRun, _ := e.announce(3, e.logDir)
	e.publish(seedEvents(refRun)...)
	e.waitCompleted(refRun)
	if got, want := dump(t, store, run), dump(t, store, refRun); !slices.Equal(got, want) {
		t.Fatalf("ledger after the restart:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// Yet another restart after completion completes nothing again.
	if err := second.stop(); err != nil {
		t.Fatal(err)
	}
	cfg3 := e.config(jobresults.NewMemoryStore(), natstest.Connect(t, e.srv))
	cfg3.Rebuild = true
	third := e.start(cfg3)
	testutil.Eventually(t, 10*time.Second, "the third worker's rebuild", func() bool { return third.w.Ready().OK })
	if err := third.stop(); err != nil {
		t.Fatal(err)
	}
	if n := len(e.completionsOf(run)); n != 1 {
		t.Fatalf("%d RunCompleted messages, want 1", n)
	}
	if files := e.logFiles(); !slices.Equal(files, []string{runlog.FileName(run), runlog.FileName(refRun)}) {
		t.Fatalf("log folder holds %v", files)
	}
}

// The ways a run can be left open for good although all its docs are
// resolved (events before the run's record, a total that changed, no
// payloads, a doc counted twice, a lost check, a completer that died),
// each a test.
func TestNoRunStrands(t *testing.T) {
	t.Parallel()

	t.Run("every doc finished before the run's record was seen", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		store := jobresults.NewMemoryStore()
		sw := e.start(e.config(store, nil))
		const run = "20260929T170412.345Z"
		e.publish(seedEvents(run)...)
		testutil.Eventually(t, 10*time.Second, "events applied", func() bool {
			return counter(t, sw.cfg, "oxy_statusworker_events_total", "result", "applied") == 10
		})
		if _, err := e.topo.AnnounceRun(t.Context(), messages.RunAnnounced{Run: run, Total: 3, FinalDataType: oxytype.FinalDataType,
			RunLog: e.logDir, StartedAt: time.Now()}, feeder); err != nil {
			t.Fatal(err)
		}
		e.waitCompleted(run)
		if got := e.readLog(run); got != seedLog {
			t.Fatalf("run log:\n%s", got)
		}
	})

	t.Run("the total grew past the docs, then shrank to them", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		e.start(e.config(jobresults.NewMemoryStore(), nil))
		run, _ := e.announce(4, e.logDir)
		e.publish(seedEvents(run)...)
		// Three of four docs resolved: nothing to complete yet.
		applied, _, err := e.topo.Runs().Transition(t.Context(), run, func(r *messages.RunRecord) bool {
			r.Announced.Total = 3
			return true
		})
		if err != nil || !applied {
			t.Fatal(applied, err)
		}
		e.waitCompleted(run)
		if got := e.readLog(run); got != seedLog {
			t.Fatalf("run log:\n%s", got)
		}
	})

	t.Run("a zero-payload run completes at once and announces it", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		e.start(e.config(jobresults.NewMemoryStore(), nil))
		run, err := e.topo.AnnounceRun(t.Context(), messages.RunAnnounced{Total: 0, FinalDataType: oxytype.FinalDataType,
			RunLog: e.logDir, StartedAt: time.Now()}, feeder)
		if err != nil {
			t.Fatal(err)
		}
		rec := e.waitCompleted(run)
		if c := rec.Completed; c == nil || c.Total != 0 || c.Done != 0 {
			t.Fatalf("completion %+v", c)
		}
		if got := e.readLog(run); got != "" {
			t.Fatalf("run log %q, want empty", got)
		}
		testutil.Eventually(t, 5*time.Second, "RunCompleted", func() bool { return len(e.completionsOf(run)) == 1 })
	})

	t.Run("a doc both written and hard-failed counts once, as done", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		sw := e.start(e.config(jobresults.NewMemoryStore(), nil))
		run, _ := e.announce(2, e.logDir)
		writeFailed := &messages.StatusEvent{Run: run, Doc: "0", DataType: oxytype.DataDone, Outcome: oxytype.HardFailure,
			Origin: poller, Consumer: writer, Reason: "write failed", Facts: oxytype.Facts{State: oxytype.Unfetched, APIJobID: jobID(0)}}
		// Doc 0 is written and hard-failed; doc 1 is only fed. The cheap
		// counts reach the total (2) while one doc is still open.
		e.publish(append(doneDoc(run, 0), writeFailed, fed(run, 1))...)
		testutil.Eventually(t, 10*time.Second, "events applied", func() bool {
			return counter(t, sw.cfg, "oxy_statusworker_events_total", "result", "applied") == 6
		})
		// Several full checks (the periodic re-check runs every 100ms) must
		// not complete it.
		if state := e.stateAfterChecks(sw, 3, run); state != oxytype.RunStateReady {
			t.Fatalf("run %s with an open doc", state)
		}
		e.publish(submitted(run, 1), faulted(run, 1))
		rec := e.waitCompleted(run)
		if c := rec.Completed; c.Done != 1 || c.Faulted != 1 || c.Total != 2 {
			t.Fatalf("completion %+v", c)
		}
	})

	t.Run("a completion check lost to a ledger error is redone by the re-check", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		flaky := &flakyLedger{Ledger: jobresults.NewMemoryStore()}
		cfg := e.config(flaky, nil)
		cfg.RecheckInterval = 200 * time.Millisecond
		sw := e.start(cfg)
		run, _ := e.announce(3, e.logDir)
		flaky.failCounts.Store(1 << 20) // every check fails …
		e.publish(seedEvents(run)...)
		testutil.Eventually(t, 10*time.Second, "every event applied and checks failed", func() bool {
			return counter(t, sw.cfg, "oxy_statusworker_events_total", "result", "applied") == 10 && flaky.failures.Load() >= 1
		})
		// After the last batch at most two batch-triggered checks remain
		// (one running, one folded); later failures are periodic re-checks.
		f0 := flaky.failures.Load()
		testutil.Eventually(t, 10*time.Second, "periodic checks failing too", func() bool { return flaky.failures.Load() >= f0+3 })
		// … until the ledger answers again. No event will come: only the
		// periodic re-check can complete the run.
		flaky.failCounts.Store(0)
		e.waitCompleted(run)
	})

	t.Run("a replica that died while completing: its claim is taken over", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		e.start(e.config(jobresults.NewMemoryStore(), nil))
		runs := map[string]string{
			"sw-test/0123456789ab":   "an earlier process of this instance: taken over at once",
			"other-pod/ba9876543210": "another replica: taken over when its lease lapses",
		}
		for by := range runs {
			run, _ := e.announce(3, e.logDir)
			until := time.Now().Add(time.Hour)
			if !strings.HasPrefix(by, "sw-test/") {
				until = time.Now().Add(time.Second)
			}
			if _, _, err := e.topo.Runs().Transition(t.Context(), run, func(r *messages.RunRecord) bool {
				raw, _ := json.Marshal(map[string]any{"by": by, "until": until})
				r.Extra = messages.Extra{"completing": raw}
				return true
			}); err != nil {
				t.Fatal(err)
			}
			e.publish(seedEvents(run)...)
			rec := e.waitCompleted(run)
			if _, held := rec.Extra["completing"]; held {
				t.Fatalf("%s: the claim is still in the completed record", runs[by])
			}
			if got := e.readLog(run); got != seedLog {
				t.Fatalf("%s: run log:\n%s", runs[by], got)
			}
		}
	})

	t.Run("a run completed by a winner that died before announcing it is announced", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		e.start(e.config(jobresults.NewMemoryStore(), nil))
		const run = "20260929T170412.345Z"
		now := time.Now().UTC()
		if _, err := e.topo.Runs().Create(t.Context(), messages.RunRecord{
			Announced: messages.RunAnnounced{Run: run, Total: 1, FinalDataType: oxytype.FinalDataType, StartedAt: now},
			State:     oxytype.RunStateCompleted, UpdatedAt: now,
			Completed: &messages.RunCompleted{Run: run, Total: 1, Done: 1, CompletedAt: now},
		}); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 10*time.Second, "the completion announced", func() bool { return len(e.completionsOf(run)) == 1 })
		if c := e.completionsOf(run)[0]; c.Done != 1 || c.Total != 1 {
			t.Fatalf("%+v", c)
		}
	})

	t.Run("a complete run waits for its earlier events that are not applied yet", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		flaky := &flakyLedger{Ledger: jobresults.NewMemoryStore()}
		cfg := e.config(flaky, nil)
		cfg.WriteRetry.MaxElapsed = 50 * time.Millisecond
		cfg.Stage.BatchSize = 1 // the failing event holds up no other
		sw := e.start(cfg)
		run, _ := e.announce(3, e.logDir)
		// Doc 2's payload event (the only one carrying its payload) is
		// stored first but its write keeps failing: it waits for
		// redelivery while every later event is applied.
		flaky.failDoc.Store("2")
		sub2 := submitted(run, 2)
		sub2.Payload = nil
		e.publish(fed(run, 2), fed(run, 0), fed(run, 1), submitted(run, 0), submitted(run, 1), sub2,
			unfetched404(run, 0), faulted(run, 1), polled(run, 2), written(run, 2))
		testutil.Eventually(t, 10*time.Second, "the later events applied", func() bool {
			n, _ := flaky.Ledger.CountCompletedDocs(t.Context(), run, "written")
			return n == 1
		})
		if state := e.stateAfterChecks(sw, 3, run); state != oxytype.RunStateReady {
			t.Fatalf("run %s while an earlier event is unapplied", state)
		}
		flaky.failDoc.Store("")
		e.waitCompleted(run)
		if got := e.readLog(run); got != seedLog {
			t.Fatalf("run log:\n%s", got)
		}
	})

	t.Run("a stopping run completes the same way", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		e.start(e.config(jobresults.NewMemoryStore(), nil))
		run, _ := e.announce(2, e.logDir)
		e.publish(doneDoc(run, 0)...)
		if _, _, err := e.topo.Runs().Transition(t.Context(), run, func(r *messages.RunRecord) bool {
			r.State, r.Reason = oxytype.RunStateStopping, "stopped by the user"
			return true
		}); err != nil {
			t.Fatal(err)
		}
		e.publish(fed(run, 1), &messages.StatusEvent{Run: run, Doc: "1", DataType: oxytype.DataPayload, Outcome: oxytype.HardFailure,
			Origin: feeder, Consumer: submitter, Reason: "the run was stopped", Facts: oxytype.Facts{State: oxytype.Unsubmitted}})
		rec := e.waitCompleted(run)
		if c := rec.Completed; c.Done != 1 || c.Unsubmitted != 1 {
			t.Fatalf("completion %+v", c)
		}
		lines, err := runlog.ReadAll(strings.NewReader(e.readLog(run)))
		if err != nil || len(lines) != 2 || lines[1].Error.Message != "the run was stopped" {
			t.Fatalf("%+v %v", lines, err)
		}
	})
}

func TestRunLogLocation(t *testing.T) {
	t.Parallel()

	t.Run("an unwritable location fails the run at announce", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		e.start(e.config(jobresults.NewMemoryStore(), nil))
		file := filepath.Join(t.TempDir(), "a-file")
		if err := os.WriteFile(file, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		run, rec := e.announce(3, filepath.Join(file, "logs"))
		if rec.State != oxytype.RunStateFailed || !strings.Contains(rec.Reason, "the run log cannot be written to") {
			t.Fatalf("run %s: state %s, reason %q", run, rec.State, rec.Reason)
		}
	})

	t.Run("a run log that cannot be written at completion is retried, not lost", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		sw := e.start(e.config(jobresults.NewMemoryStore(), nil))
		run, _ := e.announce(3, e.logDir)
		// The folder disappears and a file takes its place.
		if err := os.RemoveAll(e.logDir); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(e.logDir, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		e.publish(seedEvents(run)...)
		testutil.Eventually(t, 10*time.Second, "a failed run-log write", func() bool {
			return counter(t, sw.cfg, "oxy_statusworker_run_log_errors_total") >= 1
		})
		if rec, _ := e.topo.Runs().Get(t.Context(), run); rec.Record.State != oxytype.RunStateReady {
			t.Fatalf("state %s without a run log", rec.Record.State)
		}
		if err := os.Remove(e.logDir); err != nil {
			t.Fatal(err)
		}
		e.waitCompleted(run)
		if got := e.readLog(run); got != seedLog {
			t.Fatalf("run log:\n%s", got)
		}
		testutil.Eventually(t, 5*time.Second, "RunCompleted", func() bool { return len(e.completionsOf(run)) == 1 })
	})

	t.Run("a run without a run-log location completes without one", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		e.start(e.config(jobresults.NewMemoryStore(), nil))
		run, _ := e.announce(3, "")
		e.publish(seedEvents(run)...)
		rec := e.waitCompleted(run)
		if c := rec.Completed; c.RunLog != "" || c.Done != 1 || c.Unfetched != 1 || c.Faulted != 1 {
			t.Fatalf("completion %+v", c)
		}
	})
}

func TestMalformedEvents(t *testing.T) {
	t.Parallel()
	e := setup(t)
	store := jobresults.NewMemoryStore()
	sw := e.start(e.config(store, nil))
	run, _ := e.announce(3, e.logDir)
	subject := messages.StatusSubject(run)
	raw := func(body string) { e.publishRaw(&nats.Msg{Subject: subject, Data: []byte(body)}) }

	raw(`not json at all`)
	raw(`{"v":1,"run":"` + run + `","doc":"1","data_type":"written","outcome":"exploded","time":"2026-09-29T17:04:12Z"}`)
	raw(`{"run":"` + run + `","doc":"2","data_type":"done","outcome":"success","time":"2026-09-29T17:04:12Z"}`)
	// Malformed and about "status" itself: logged and counted, not recorded
	// (recording it could loop).
	raw(`{"v":1,"run":"` + run + `","doc":"0","data_type":"status","outcome":"exploded","time":"2026-09-29T17:04:12Z"}`)

	testutil.Eventually(t, 10*time.Second, "4 malformed events counted", func() bool {
		return counter(t, sw.cfg, "oxy_statusworker_events_total", "result", "malformed") == 4
	})
	// The worker keeps running: the run completes, and the broken events
	// are among its failures with their reasons. Doc 1 is written after all
	// (its broken event said so); doc 2 too.
	e.publish(polled(run, 1), written(run, 1))
	e.publish(seedEvents(run)...)
	rec := e.waitCompleted(run)
	if c := rec.Completed; c.Done != 2 || c.Unfetched != 1 || c.Unidentified != 1 {
		t.Fatalf("completion %+v", c)
	}
	fails, err := store.GetFailures(t.Context(), run, string(oxytype.DataStatus))
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]string{}
	var unknownDoc string
	for _, f := range fails {
		reasons[f.DocID] = f.HardFailure
		if messages.IsUnknownDocID(f.DocID) {
			unknownDoc = f.DocID
		}
	}
	if len(fails) != 3 || !strings.Contains(reasons["1"], `outcome "exploded"`) || !strings.Contains(reasons["2"], `"v"`) ||
		!strings.HasPrefix(unknownDoc, "?OXY_STATUS:") || reasons[unknownDoc] == "" {
		t.Fatalf("status failures: %q", reasons)
	}
}

func TestConfig(t *testing.T) {
	t.Parallel()
	_, err := statusworker.New(statusworker.Config{})
	if err == nil || !strings.Contains(err.Error(), "Conn is required") || !strings.Contains(err.Error(), "Ledger is required") {
		t.Fatalf("err = %v", err)
	}
	d := statusworker.Config{}.WithDefaults()
	if d.Stage.Consumer.MaxDeliver != 0 || d.Stage.BatchSize != statusworker.DefaultBatchSize || d.RecheckInterval != 10*time.Second || d.Stage.Instance == "" {
		t.Fatalf("defaults %+v", d)
	}
}
