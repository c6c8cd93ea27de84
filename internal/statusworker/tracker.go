package statusworker

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// tracker follows every run record of the runs bucket through a KV watcher
// and reconciles each run with what it needs next:
//
//	announced         write the empty run log, then CAS to ready (or failed)
//	ready, stopping   check completion; complete (claim, run log, CAS, announce)
//	completed         make sure its RunCompleted was published
//	failed            nothing
//
// Reconciliations of one run never overlap: a request that arrives while
// one runs is folded into a single follow-up. They are requested by the
// watcher (the record changed), by the batch handler (events of the run were
// applied) and by a ticker every RecheckInterval (the "periodic" re-check
// that keeps runs from stranding).
type tracker struct {
	w *StatusWorker

	mu       sync.Mutex
	runs     map[string]*runEntry
	ctx      context.Context // nil until run starts: requests before are dropped
	wg       sync.WaitGroup
	sweeping bool // a sweep of expired runs is in flight (retention.go)
}

// runEntry is what the tracker knows of one run.
type runEntry struct {
	rec messages.RunRecord
	rev uint64

	busy, pending, pendingPeriodic bool

	// Completion heuristics (see checkCompletion).
	slack       int
	lastConfirm time.Time
	// unsettledSince is when the run was first found complete while earlier
	// events of it were still unapplied (see StatusWorker.settled).
	unsettledSince time.Time
	// verified: the run's RunCompleted is known to be in the runs stream.
	verified bool
	// wakeAt is when a check is armed for (a stopping run's deadline).
	wakeAt time.Time
	// expirySeq is the stream sequence of the last event expire published
	// for the run, which must be applied before it looks again.
	expirySeq uint64
}

func newTracker(w *StatusWorker) *tracker {
	return &tracker{w: w, runs: map[string]*runEntry{}}
}

// run watches the runs bucket and ticks until ctx is cancelled, then waits
// for the reconciliations in flight.
func (t *tracker) run(ctx context.Context) {
	t.mu.Lock()
	t.ctx = ctx
	t.mu.Unlock()
	var loops sync.WaitGroup
	loops.Go(func() { t.watchLoop(ctx) })
	loops.Go(func() { t.tickLoop(ctx) })
	loops.Wait()
	t.mu.Lock()
	t.ctx = nil
	t.mu.Unlock()
	t.wg.Wait()
}

func (t *tracker) tickLoop(ctx context.Context) {
	tick := time.NewTicker(t.w.cfg.RecheckInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			t.tick()
		}
	}
}

// verifyWindow bounds which completed runs have their announcement
// verified: a winner that died between marking a run completed and
// announcing it is replaced within minutes, and nobody waits for an
// announcement of a run completed long ago.
const verifyWindow = time.Hour

// tick requests a periodic reconciliation of every open run, and of every
// recently completed run whose announcement has not been verified yet. It
// has the finished runs past their retention forgotten (see sweepLocked).
func (t *tracker) tick() {
	now := t.w.cfg.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	var expired []string
	for run, e := range t.runs {
		age := now.Sub(e.rec.UpdatedAt)
		switch {
		case e.rec.State.Open():
			t.scheduleLocked(run, e, true)
		case age > t.w.cfg.RunRetention && !e.busy:
			expired = append(expired, run)
		case e.rec.State == oxytype.RunStateCompleted && !e.verified:
			if age > verifyWindow {
				e.verified = true
			} else if age >= t.w.cfg.RecheckInterval {
				t.scheduleLocked(run, e, true)
			}
		}
	}
	t.sweepLocked(expired)
}

func (t *tracker) watchLoop(ctx context.Context) {
	for {
		err := t.watch(ctx)
		if ctx.Err() != nil {
			return
		}
		t.w.log.Warn("watching the runs bucket failed; watching again", zap.Error(err))
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// watch follows the runs bucket: the current records first, then every
// change.
func (t *tracker) watch(ctx context.Context) error {
	kv, err := t.w.cfg.Topology.JetStream().KeyValue(ctx, topology.BucketRuns)
	if err != nil {
		return fmt.Errorf("runs bucket: %w", err)
	}
	wt, err := kv.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("watch runs bucket: %w", err)
	}
	defer func() { _ = wt.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-wt.Updates():
			if !ok {
				return errors.New("watcher closed")
			}
			if e == nil {
				continue // the end of the current records
			}
			run := messages.RunFromToken(e.Key())
			if e.Operation() != jetstream.KeyValuePut {
				t.forget(run)
				continue
			}
			rec, err := messages.DecodeRunRecord(e.Value())
			if err != nil {
				t.w.log.Error("unreadable run record; ignored", zap.String("key", e.Key()), zap.Error(err))
				continue
			}
			t.observe(*rec, e.Revision())
		}
	}
}

// observe records a run record as read from the bucket and requests what
// the run needs.
func (t *tracker) observe(rec messages.RunRecord, rev uint64) {
	run := rec.Announced.Run
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.runs[run]
	if e == nil {
		e = &runEntry{}
		t.runs[run] = e
	} else if rev <= e.rev {
		return
	}
	wasOpen := e.rev != 0 && e.rec.State.Open()
	e.rec, e.rev = rec, rev
	if wasOpen && !rec.State.Open() {
		t.w.met.runDocs.DeletePartialMatch(prometheus.Labels{"run": run})
		t.finishedLocked(rec)
	}
	t.updateOpenGaugeLocked()
	if rec.State.Open() {
		t.scheduleLocked(run, e, false)
	}
}

func (t *tracker) forget(run string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.runs, run)
	t.w.met.runDocs.DeletePartialMatch(prometheus.Labels{"run": run})
	t.updateOpenGaugeLocked()
}

func (t *tracker) updateOpenGaugeLocked() {
	n := 0
	for _, e := range t.runs {
		if e.rec.State.Open() {
			n++
		}
	}
	t.w.met.openRuns.Set(float64(n))
}

// touch requests a completion check of a run whose events were just
// applied. Runs the tracker has not seen yet are left to the watcher.
func (t *tracker) touch(run string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.runs[run]; e != nil && e.rec.State.Open() {
		t.scheduleLocked(run, e, false)
	}
}

// later requests a completion check of run after d.
func (t *tracker) later(run string, d time.Duration) {
	time.AfterFunc(d, func() { t.touch(run) })
}

// wakeAt requests a completion check of run when the clock reads at (a
// stopping run's deadline), once per distinct time.
func (t *tracker) wakeAt(run string, at, now time.Time) {
	t.mu.Lock()
	e := t.runs[run]
	armed := e == nil || e.wakeAt.Equal(at)
	if !armed {
		e.wakeAt = at
	}
	t.mu.Unlock()
	if !armed {
		t.later(run, at.Sub(now))
	}
}

// scheduleLocked starts a reconciliation of run, or folds the request into
// the follow-up of the one in flight.
func (t *tracker) scheduleLocked(run string, e *runEntry, periodic bool) {
	if t.ctx == nil {
		return
	}
	if e.busy {
		e.pending = true
		e.pendingPeriodic = e.pendingPeriodic || periodic
		return
	}
	e.busy = true
	ctx := t.ctx
	t.wg.Go(func() {
		for {
			started := time.Now()
			t.w.reconcile(ctx, run, periodic)
			// A follow-up waits out MinCheckInterval from this start, so a
			// busy run costs the ledger at most one check per interval
			// however many batches touch it; requests meanwhile fold in.
			if wait := t.w.cfg.MinCheckInterval - time.Since(started); wait > 0 {
				t.mu.Lock()
				pending := e.pending
				t.mu.Unlock()
				if pending {
					select {
					case <-ctx.Done():
					case <-time.After(wait):
					}
				}
			}
			t.mu.Lock()
			if !e.pending || ctx.Err() != nil {
				e.busy, e.pending, e.pendingPeriodic = false, false, false
				t.mu.Unlock()
				return
			}
			periodic = e.pendingPeriodic
			e.pending, e.pendingPeriodic = false, false
			t.mu.Unlock()
		}
	})
}

// snapshot returns a copy of what the tracker knows of run.
func (t *tracker) snapshot(run string) (runEntry, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.runs[run]
	if e == nil {
		return runEntry{}, false
	}
	return *e, true
}

// update changes a run's entry under the lock (completion heuristics).
func (t *tracker) update(run string, fn func(e *runEntry)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.runs[run]; e != nil {
		fn(e)
	}
}

// list returns the records of every run the tracker knows, newest first.
func (t *tracker) list() []messages.RunRecord {
	t.mu.Lock()
	out := make([]messages.RunRecord, 0, len(t.runs))
	for _, e := range t.runs {
		out = append(out, e.rec)
	}
	t.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Announced.Run > out[j].Announced.Run })
	return out
}
