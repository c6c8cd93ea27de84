package statusworker_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/jobresults"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/runlog"
)

// A stopped run whose jobs cannot all finish (its destination keeps
// failing, a job stays pending, a submission hangs) ends at its deadline:
// the statusworker records each doc still in flight from the ledger and the
// claims — unfetched with its job id, unsubmitted "may have billed" when a
// request may be in flight, unsubmitted with the stop's reason otherwise —
// and writes the run log.
func TestFaultAStoppedRunEndsAtItsDeadline(t *testing.T) {
	t.Parallel()
	e := setup(t)
	cfg := e.config(jobresults.NewMemoryStore(), nil)
	cfg.StopSettle = 500 * time.Millisecond
	e.start(cfg)
	run, _ := e.announce(6, e.logDir)
	claims := e.topo.Claims()
	// Doc 0 is written; doc 1 was submitted (its job is pending); doc 2's
	// job id is only in its claim (the submitter died before publishing
	// it); doc 3's claim is held (a POST in flight); doc 4 was fed and
	// never sent; doc 5 is not fed yet when the deadline passes.
	e.publish(doneDoc(run, 0)...)
	e.publish(fed(run, 1), submitted(run, 1), fed(run, 2), fed(run, 3), fed(run, 4))
	ref, err := claims.Acquire(t.Context(), run, "2", 0, "sub-0/a", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := claims.MarkSubmitted(t.Context(), ref, jobID(2), time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := claims.Acquire(t.Context(), run, "3", 0, "sub-0/a", time.Now()); err != nil {
		t.Fatal(err)
	}

	const reason = "Stopped submitting, because a write to the destination failed: destination /x: put 1.json: no space left on device"
	began := time.Now()
	if _, err := e.topo.Runs().Stop(t.Context(), run, topology.StopRequest{Cause: messages.StopByOutput, Reason: reason, Now: true}); err != nil {
		t.Fatal(err)
	}
	// Doc 5's payload is still being fed: it is waited for a while past the
	// deadline, so that its line carries its payload (for oxy recover).
	testutil.Eventually(t, 10*time.Second, "the docs in flight recorded", func() bool {
		return counter(t, cfg, "oxy_statusworker_expired_docs_total") == 4
	})
	e.publish(fed(run, 5))
	rec := e.waitCompleted(run)
	took := time.Since(began)
	if took < cfg.StopSettle || took > 5*time.Second {
		t.Errorf("the run completed %v after its stop, want between the settle time %v and 5s", took, cfg.StopSettle)
	}
	if c := rec.Completed; c.Done != 1 || c.Unfetched != 2 || c.Unsubmitted != 3 {
		t.Fatalf("completion %+v, want 1 done, 2 unfetched, 3 unsubmitted", c)
	}
	lines, err := runlog.ReadAll(strings.NewReader(e.readLog(run)))
	if err != nil || len(lines) != 6 {
		t.Fatalf("run log: %d lines, %v", len(lines), err)
	}
	want := []struct {
		state oxytype.State
		id    string
		may   bool
		says  string
	}{
		{oxytype.Done, jobID(0), false, ""},
		{oxytype.Unfetched, jobID(1), false, "the run was stopped before this job's result was written; it can be fetched by id at no cost"},
		{oxytype.Unfetched, jobID(2), false, "before this job's result was written"},
		{oxytype.Unsubmitted, "", true, "while this payload's submission was in flight: its outcome is unknown; " + oxytype.MayHaveBilledText},
		{oxytype.Unsubmitted, "", false, reason},
		{oxytype.Unsubmitted, "", false, reason},
	}
	for i, w := range want {
		l := lines[i]
		id := ""
		if l.ID != nil {
			id = *l.ID
		}
		if l.State != w.state || id != w.id {
			t.Errorf("line %d: %s %q, want %s %q", i, l.State, id, w.state, w.id)
			continue
		}
		if w.says == "" {
			continue
		}
		if l.Error == nil || !strings.Contains(l.Error.Message, w.says) || l.Error.MayHaveBilled != w.may {
			t.Errorf("line %d: error %+v, want %q with may_have_billed %v", i, l.Error, w.says, w.may)
		}
	}
	for _, i := range []int{3, 4, 5} {
		if len(lines[i].Payload) == 0 {
			t.Errorf("doc %d's line has no payload: oxy recover could not resubmit it", i)
		}
	}
	if got := counter(t, cfg, "oxy_statusworker_expired_docs_total"); got != 5 {
		t.Errorf("expired docs = %v, want 5", got)
	}
}

// A stopping run whose docs all finish before the deadline completes as
// soon as they do, not at the deadline.
func TestAStoppedRunThatFinishesCompletesBeforeItsDeadline(t *testing.T) {
	t.Parallel()
	e := setup(t)
	cfg := e.config(jobresults.NewMemoryStore(), nil)
	e.start(cfg)
	run, _ := e.announce(2, e.logDir)
	e.publish(doneDoc(run, 0)...)
	if _, err := e.topo.Runs().Stop(t.Context(), run, topology.StopRequest{Cause: messages.StopByUser}); err != nil {
		t.Fatal(err)
	}
	stopped, err := e.topo.Runs().Get(t.Context(), run)
	if err != nil {
		t.Fatal(err)
	}
	if s := stopped.Record.Stop; s == nil || s.Deadline.Sub(s.At) != messages.DefaultStopTimeout {
		t.Fatalf("stop %+v, want a deadline of the default stop timeout", s)
	}
	e.publish(doneDoc(run, 1)...)
	rec := e.waitCompleted(run)
	if c := rec.Completed; c.Done != 2 || time.Now().After(stopped.Record.Stop.Deadline) {
		t.Fatalf("completion %+v at %v, want 2 done well before the deadline %v", c, time.Now(), stopped.Record.Stop.Deadline)
	}
}

// slowLedger makes every pass over a run's records (run-log writes among
// them) take at least delay.
type slowLedger struct {
	jobresults.Ledger
	delay atomic.Int64
}

func (s *slowLedger) ForEachRecord(ctx context.Context, job string, fn func(jobresults.Record) error) error {
	if d := time.Duration(s.delay.Load()); d > 0 {
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return s.Ledger.ForEachRecord(ctx, job, fn)
}

// The completion lease is renewed while its holder writes the run log, so
// a log that takes longer than the lease is not taken over half-way by
// another replica.
func TestFaultTheCompletionLeaseIsRenewedWhileTheRunLogIsWritten(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ledger := &slowLedger{Ledger: jobresults.NewMemoryStore()}
	cfg := e.config(ledger, nil)
	cfg.CompletionLease = 300 * time.Millisecond
	e.start(cfg)
	run, _ := e.announce(3, e.logDir)
	ledger.delay.Store(int64(1500 * time.Millisecond)) // five leases per pass
	e.publish(seedEvents(run)...)

	// Watch the claim as another replica would: it must never lapse.
	var lapsed atomic.Value
	var seen atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			ref, err := e.topo.Runs().Get(context.Background(), run)
			if err != nil || ref.Record.State == oxytype.RunStateCompleted {
				return
			}
			if raw, ok := ref.Record.Extra["completing"]; ok {
				var c struct {
					Until time.Time `json:"until"`
				}
				if err := json.Unmarshal(raw, &c); err == nil {
					seen.Add(1)
					if time.Now().After(c.Until) {
						lapsed.Store(c.Until)
					}
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	e.waitCompleted(run)
	<-done
	if until := lapsed.Load(); until != nil {
		t.Fatalf("the completion claim lapsed (until %v) while its holder was still writing", until)
	}
	if seen.Load() == 0 {
		t.Fatal("the completion claim was never seen: the test proves nothing")
	}
	if got := counter(t, cfg, "oxy_statusworker_lease_renewals_total", "result", "ok"); got < 3 {
		t.Fatalf("%v lease renewals, want at least 3 over a write of five leases", got)
	}
	if got := e.readLog(run); got != seedLog {
		t.Fatalf("run log:\n%s", got)
	}
	testutil.Eventually(t, 5*time.Second, "one completion announced", func() bool { return len(e.completionsOf(run)) == 1 })
}

// A doc whose payload never comes (its feeder died) does not hold a stopped
// run for ever: it is waited for a few seconds past the deadline, then
// recorded unsubmitted without its payload.
func TestFaultAStoppedRunWhosePayloadsNeverCameEnds(t *testing.T) {
	t.Parallel()
	e := setup(t)
	cfg := e.config(jobresults.NewMemoryStore(), nil)
	cfg.StopSettle = 200 * time.Millisecond
	e.start(cfg)
	run, _ := e.announce(2, e.logDir)
	e.publish(fed(run, 0))
	if _, err := e.topo.Runs().Stop(t.Context(), run, topology.StopRequest{Cause: messages.StopByUser, Now: true}); err != nil {
		t.Fatal(err)
	}
	rec := e.waitCompleted(run)
	if c := rec.Completed; c.Unsubmitted != 2 {
		t.Fatalf("completion %+v, want 2 unsubmitted", c)
	}
	lines, err := runlog.ReadAll(strings.NewReader(e.readLog(run)))
	if err != nil || len(lines) != 2 || len(lines[0].Payload) == 0 || len(lines[1].Payload) != 0 ||
		lines[1].Error == nil || lines[1].Error.Message != "the run was stopped before this payload was submitted" {
		t.Fatalf("run log %+v, %v; want both unsubmitted, the fed one with its payload", lines, err)
	}
}
