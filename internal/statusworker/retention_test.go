package statusworker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/jobresults"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// statusEvents counts the status events of run in the status stream.
func (e *env) statusEvents(run string) uint64 {
	e.t.Helper()
	s, err := e.js.Stream(context.Background(), topology.StreamStatus)
	if err != nil {
		e.t.Fatal(err)
	}
	info, err := s.Info(context.Background(), jetstream.WithSubjectFilter(messages.StatusSubject(run)))
	if err != nil {
		e.t.Fatal(err)
	}
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	return n
}

// claims counts the claims of run's docs 0 … n-1.
func (e *env) claims(run string, n int) int {
	e.t.Helper()
	found := 0
	for i := range n {
		_, err := e.topo.Claims().Get(context.Background(), run, messages.DocID(i))
		switch {
		case err == nil:
			found++
		case !errors.Is(err, topology.ErrNoClaim):
			e.t.Fatal(err)
		}
	}
	return found
}

// forgotten reports whether run has no record any more.
func (e *env) forgotten(run string) bool {
	e.t.Helper()
	_, err := e.topo.Runs().Get(context.Background(), run)
	if err != nil && !errors.Is(err, oxytype.ErrRunNotFound) {
		e.t.Fatal(err)
	}
	return err != nil
}

func TestFaultAnOpenRunOutlivesTheRetentionAndStillCompletes(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	// A retention of one second stands for the week a finished run keeps
	// its state; the open run below stays open for several of them.
	const retention = time.Second
	cfg := e.config(jobresults.NewMemoryStore(), nil)
	cfg.Rebuild, cfg.RunRetention = true, retention
	r := e.start(cfg)

	open, _ := e.announce(2, e.logDir)
	for i := range 2 {
		ref, err := e.topo.Claims().Acquire(ctx, open, messages.DocID(i), 0, "sub-0", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := e.topo.Claims().MarkSubmitted(ctx, ref, jobID(i), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	e.publish(doneDoc(open, 0)...)
	openSince := time.Now()

	finished, _ := e.announce(1, e.logDir)
	e.publish(doneDoc(finished, 0)...)
	e.waitCompleted(finished)

	// The finished run is forgotten once its retention has passed; the open
	// one is then older than three retentions.
	testutil.Eventually(t, 15*time.Second, "the finished run forgotten, the open one three retentions old", func() bool {
		return e.forgotten(finished) && time.Since(openSince) > 3*retention
	})
	if n := e.statusEvents(finished); n != 0 {
		t.Errorf("the forgotten run still has %d status events", n)
	}
	if got := counter(t, r.cfg, "oxy_statusworker_runs_total", "result", "forgotten"); got != 1 {
		t.Errorf("runs_total{result=forgotten} = %v, want 1", got)
	}
	if !strings.Contains(e.readLog(finished), `"state":"done"`) {
		t.Error("the forgotten run's run log is gone")
	}

	t.Run("the open run keeps its record, claims and status events", func(t *testing.T) {
		ref, err := e.topo.Runs().Get(ctx, open)
		if err != nil || ref.Record.State != oxytype.RunStateReady {
			t.Fatalf("open run's record: %+v, %v", ref, err)
		}
		if n := e.claims(open, 2); n != 2 {
			t.Fatalf("%d of the open run's 2 claims are left", n)
		}
		if n := e.statusEvents(open); n != 4 {
			t.Fatalf("%d of the open run's 4 status events are left", n)
		}
	})

	t.Run("a restarted worker rebuilds its ledger, and the run completes with every doc", func(t *testing.T) {
		if err := r.stop(); err != nil {
			t.Fatal(err)
		}
		cfg := e.config(jobresults.NewMemoryStore(), nil)
		cfg.Rebuild, cfg.RunRetention = true, retention
		e.start(cfg)
		e.publish(doneDoc(open, 1)...)
		rec := e.waitCompleted(open)
		if rec.Completed == nil || rec.Completed.Done != 2 || rec.Completed.Total != 2 {
			t.Fatalf("completed: %+v", rec.Completed)
		}
		lines := strings.Split(strings.TrimSpace(e.readLog(open)), "\n")
		if len(lines) != 2 {
			t.Fatalf("run log has %d lines, want 2:\n%s", len(lines), e.readLog(open))
		}
		for i, l := range lines {
			if !strings.HasPrefix(l, `{"state":"`+string(oxytype.Done)+`","id":"`+jobID(i)+`"`) {
				t.Errorf("run log line %d = %s", i, l)
			}
		}
		// Finished now, it is forgotten in its turn.
		testutil.Eventually(t, 15*time.Second, "the completed run forgotten", func() bool { return e.forgotten(open) })
		if n := e.claims(open, 2); n != 0 {
			t.Errorf("%d claims of the forgotten run are left", n)
		}
	})
}

// finishStamps returns the distinct finish stamps of run's ledger records
// (a zero time for records without one).
func finishStamps(t *testing.T, l jobresults.Ledger, run string) map[time.Time]int {
	t.Helper()
	out := map[time.Time]int{}
	if err := l.ForEachRecord(context.Background(), run, func(r jobresults.Record) error {
		out[r.FinishedAt]++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// A ledger TTL (the MongoDB store's TTL index on the finish stamp) removes
// only records that carry a finish stamp; the statusworker stamps a run's
// records when the run finishes, with the time it finished, and never
// those of a run still open.
func TestFaultTheLedgerTTLCountsFromTheRunsEndNeverForAnOpenRun(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ledger := jobresults.NewMemoryStore()
	e.start(e.config(ledger, nil))

	open, _ := e.announce(2, e.logDir)
	e.publish(doneDoc(open, 0)...)
	finished, _ := e.announce(1, e.logDir)
	e.publish(doneDoc(finished, 0)...)
	rec := e.waitCompleted(finished)

	at := time.UnixMilli(rec.UpdatedAt.UnixMilli()).UTC()
	testutil.Eventually(t, 10*time.Second, "the finished run's records stamped", func() bool {
		s := finishStamps(t, ledger, finished)
		return len(s) == 1 && s[at] == 4
	})
	if s := finishStamps(t, ledger, open); len(s) != 1 || s[time.Time{}] != 4 {
		t.Fatalf("the open run's records carry finish stamps %v; want none on all 4", s)
	}
	// The open run finishes in its turn: its stamp is its own end.
	e.publish(doneDoc(open, 1)...)
	rec = e.waitCompleted(open)
	at = time.UnixMilli(rec.UpdatedAt.UnixMilli()).UTC()
	testutil.Eventually(t, 10*time.Second, "the open run's records stamped at its end", func() bool {
		s := finishStamps(t, ledger, open)
		return len(s) == 1 && s[at] == 8
	})
}
