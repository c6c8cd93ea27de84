package statusworker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/internal/redact"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/jobresults"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/retry"
	"github.com/oxypipe/oxypipe/pkg/runlog"
)

// finalDataType is the data type at which a doc of rec's run is done.
func finalDataType(rec messages.RunRecord) oxytype.DataType {
	if rec.Announced.FinalDataType == "" {
		return oxytype.FinalDataType
	}
	return rec.Announced.FinalDataType
}

// checkCompletion completes a ready or stopping run once every doc
// 0 … total-1 is resolved: done (success at the final data type) or
// hard-failed at some stage, each doc counted once.
//
// The exact count is one pass over the run's records (runlog.Walk), so it
// is taken only when the cheap counts allow it: CountCompletedDocs +
// CountHardFailedDocs is an upper bound (a doc both written and hard-failed
// counts twice there, and so do docs that are not positions of the run).
// After a pass that found the run incomplete, the difference between the
// bound and the exact count (the slack) is remembered, and the next pass
// waits until the bound has grown past total+slack — or, on a periodic
// re-check, until ConfirmInterval has passed, in case the slack shrank.
func (w *StatusWorker) checkCompletion(ctx context.Context, e runEntry, periodic bool) (err error) {
	defer func() {
		if err == nil {
			w.checks.Add(1)
		}
	}()
	rec := e.rec
	if rec.Feed != nil && rec.Feed.Open {
		// A standing feed's run, stopped or not: its total is known, and it
		// can end, once the feed cuts it.
		return nil
	}
	run, total := rec.Announced.Run, rec.Announced.Total
	if at := rec.Expires(w.cfg.StopSettle); !at.IsZero() {
		// A stopping run: checked as usual until its deadline, then ended
		// with what is recorded, whatever is still in flight.
		if now := w.cfg.Now(); now.Before(at) {
			w.runs.wakeAt(run, at, now)
		} else {
			resolved, err := w.expire(ctx, e, at)
			if err != nil || !resolved {
				return err
			}
			return w.complete(ctx, rec)
		}
	}
	final := finalDataType(rec)
	bound := 0
	if total > 0 {
		done, err := w.cfg.Ledger.CountCompletedDocs(ctx, run, string(final))
		if err != nil {
			return err
		}
		failed, err := w.cfg.Ledger.CountHardFailedDocs(ctx, run)
		if err != nil {
			return err
		}
		bound = done + failed
		if bound < total {
			return nil
		}
		stale := periodic && w.cfg.Now().Sub(e.lastConfirm) >= w.cfg.ConfirmInterval
		if bound-e.slack < total && !stale {
			return nil
		}
	}
	sum, err := runlog.Walk(ctx, runlog.Spec{Total: total, FinalDataType: final}, w.source(run), nil)
	if err != nil {
		return err
	}
	now := w.cfg.Now()
	w.runs.update(run, func(e *runEntry) {
		e.lastConfirm = now
		e.slack = max(bound-sum.Resolved, 0)
	})
	if sum.Resolved < total {
		w.log.Debug("run not complete yet", zap.String("run", run), zap.Int("resolved", sum.Resolved),
			zap.Int("total", total), zap.Int("upper_bound", bound))
		return nil
	}
	settled, err := w.settled(ctx, run)
	if err != nil {
		return err
	}
	if !settled {
		var since time.Time
		w.runs.update(run, func(e *runEntry) {
			if e.unsettledSince.IsZero() {
				e.unsettledSince = now
			}
			since = e.unsettledSince
		})
		if now.Sub(since) < w.cfg.SettleTimeout {
			w.runs.later(run, w.cfg.MinCheckInterval)
			return nil
		}
		w.log.Warn("completing a run although some of its earlier status events are not applied yet",
			zap.String("run", run), zap.Duration("waited", now.Sub(since)))
	}
	return w.complete(ctx, rec)
}

// settled reports whether every status event of run stored so far has been
// applied: the durable consumer's ack floor (shared by all replicas; an
// event is acked only once written) has passed the run's last event. A run
// found complete may still have earlier events in flight — in a batch
// written concurrently, held by another replica, waiting for redelivery —
// and its run log should include what they say.
func (w *StatusWorker) settled(ctx context.Context, run string) (bool, error) {
	last, err := w.statusStream.GetLastMsgForSubject(ctx, messages.StatusSubject(run))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("last status event of the run: %w", err)
	}
	info, err := w.consumer.Info(ctx)
	if err != nil {
		return false, fmt.Errorf("status consumer: %w", err)
	}
	return info.AckFloor.Stream >= last.Sequence, nil
}

// complete finishes a run whose docs are all resolved:
//
//  1. claim the completion in the run record (compare-and-set; a claim
//     lapses after CompletionLease), so one replica writes the log;
//  2. write the final run log, renewing the claim while it is written (a
//     run log of millions of lines may take longer than the lease), and
//     giving up at once should another replica have taken it over;
//  3. mark the run completed with the counts, conditional on still holding
//     the claim; only the replica whose change applies is the winner;
//  4. the winner publishes RunCompleted.
//
// So "completed" always means the run log is written. When the log cannot
// be written the claim is released and the completion is retried by the
// next check (a later batch of the run, or the periodic re-check); the
// error is logged and counted. A winner that dies between 3 and 4 leaves a
// completed run without its announcement; the periodic re-check of
// completed runs publishes it (verifyAnnounced).
func (w *StatusWorker) complete(ctx context.Context, rec messages.RunRecord) error {
	run := rec.Announced.Run
	runs := w.cfg.Topology.Runs()
	now := w.cfg.Now()
	claimed, ref, err := runs.Transition(ctx, run, func(r *messages.RunRecord) bool {
		if r.State != oxytype.RunStateReady && r.State != oxytype.RunStateStopping {
			return false
		}
		if c, ok := readClaim(r); ok && c.By != w.holder && c.Until.After(now) && !w.ownInstance(c) {
			return false // another replica is completing it
		}
		setClaim(r, completionClaim{By: w.holder, Until: now.Add(w.cfg.CompletionLease)})
		return true
	})
	if err != nil {
		return fmt.Errorf("claim completion: %w", err)
	}
	if !claimed {
		return nil
	}
	rec = ref.Record
	wctx, lost := w.holdLease(ctx, run)
	done, where, err := w.writeFinalLog(wctx, rec)
	if cause := lost(); cause != nil {
		w.log.Warn("completion lease lost while writing the run log; another replica completes the run",
			zap.String("run", run), zap.Error(cause))
		return nil
	}
	if err != nil {
		w.met.runLogError.Inc()
		w.log.Error("run complete but its run log could not be written; retrying at the next check",
			zap.String("run", run), zap.String("run_log", redact.String(rec.Announced.RunLog)),
			zap.String("error", redact.String(err.Error())))
		w.releaseClaim(ctx, run)
		return nil
	}
	if done.Resolved < done.Lines {
		// A doc became unresolved between the check and the log: a late
		// soft failure overwrote the hard failure a stopped run's expiry
		// recorded. The log just written is rewritten by the next check,
		// which records that doc again, rather than one calling it
		// unresolved.
		w.log.Info("a doc of the run changed while its run log was written; completing at the next check",
			zap.String("run", run), zap.Int("resolved", done.Resolved), zap.Int("total", done.Lines))
		w.releaseClaim(ctx, run)
		w.runs.later(run, w.cfg.MinCheckInterval)
		return nil
	}
	completed := &messages.RunCompleted{
		Run: run, Total: done.Lines,
		Done: done.Done, Faulted: done.Faulted, Rejected: done.Rejected,
		Unsubmitted: done.Unsubmitted, Unfetched: done.Unfetched,
		Unidentified: done.Unidentified,
		CompletedAt:  w.cfg.Now().UTC(),
		RunLog:       where,
	}
	won, ref, err := runs.Transition(ctx, run, func(r *messages.RunRecord) bool {
		if r.State != oxytype.RunStateReady && r.State != oxytype.RunStateStopping {
			return false
		}
		if c, ok := readClaim(r); !ok || c.By != w.holder {
			return false // the claim lapsed and another replica took over
		}
		clearClaim(r)
		r.State, r.Completed = oxytype.RunStateCompleted, completed
		return true
	})
	if err != nil {
		// The record may or may not have changed; the claim lapses, and
		// the next check (here or elsewhere) finishes the job.
		return fmt.Errorf("mark run completed: %w", err)
	}
	if !won {
		w.log.Info("run completed by another replica", zap.String("run", run))
		return nil
	}
	// Read-your-writes: the API answers from the tracker, which would
	// otherwise show the run ready until the watcher delivers this change.
	w.runs.observe(ref.Record, ref.Revision)
	w.met.runs.WithLabelValues("completed").Inc()
	w.log.Info(fmt.Sprintf("run %s completed: %d done, %d faulted, %d rejected, %d unsubmitted, %d unfetched",
		run, completed.Done, completed.Faulted, completed.Rejected, completed.Unsubmitted, completed.Unfetched),
		zap.String("run", run), zap.Int("total", completed.Total), zap.Int("unidentified", completed.Unidentified),
		zap.String("run_log", redact.String(where)))
	if err := w.publishCompleted(ctx, completed); err != nil {
		return fmt.Errorf("announce completion (retried by the re-check): %w", err)
	}
	w.runs.update(run, func(e *runEntry) { e.verified = true })
	return nil
}

// ownInstance reports whether c was taken by an earlier process of this
// replica's instance (killed while completing and restarted under the same
// name, as `oxy run --resume` is): it need not wait for the lease. Instance
// names are unique among live replicas; if two shared one, both would write
// the log and the last compare-and-set would still let one win.
func (w *StatusWorker) ownInstance(c completionClaim) bool {
	i := strings.LastIndexByte(c.By, '/')
	return i >= 0 && c.By[:i] == w.cfg.Stage.Instance
}

// writeFinalLog writes the run log from the ledger and returns its counts
// and location. A run without a run-log location only counts.
func (w *StatusWorker) writeFinalLog(ctx context.Context, rec messages.RunRecord) (runlog.Summary, string, error) {
	spec := runlog.Spec{Total: rec.Announced.Total, FinalDataType: finalDataType(rec)}
	src := w.source(rec.Announced.Run)
	if rec.Announced.RunLog == "" {
		sum, err := runlog.Walk(ctx, spec, src, nil)
		return sum, "", err
	}
	var sum runlog.Summary
	where, err := w.saveRunLog(ctx, rec, func(wr io.Writer) error {
		var err error
		sum, err = runlog.Build(ctx, wr, spec, src)
		return err
	})
	return sum, where, err
}

// releaseClaim gives up this replica's completion claim, so that the next
// check may retry at once instead of after the lease.
func (w *StatusWorker) releaseClaim(ctx context.Context, run string) {
	if ctx.Err() != nil { // stopping: release anyway, briefly
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
	}
	_, _, err := w.cfg.Topology.Runs().Transition(ctx, run, func(r *messages.RunRecord) bool {
		if c, ok := readClaim(r); !ok || c.By != w.holder {
			return false
		}
		clearClaim(r)
		return true
	})
	if err != nil {
		w.log.Warn("completion claim not released; it lapses by itself", zap.String("run", run), zap.Error(err))
	}
}

// publishCompleted announces a run's completion on RunCompletedSubject.
// Its message id makes a second publish within the duplicate window
// harmless.
func (w *StatusWorker) publishCompleted(ctx context.Context, c *messages.RunCompleted) error {
	msg, err := messages.NewMsg(c, w.actor)
	if err != nil {
		return err
	}
	return retry.Do(ctx, retry.Policy{Initial: 100 * time.Millisecond, Max: time.Second, MaxAttempts: 5}, func(ctx context.Context) error {
		_, err := w.cfg.Topology.JetStream().PublishMsg(ctx, msg)
		return err
	})
}

// verifyAnnounced makes sure a completed run's RunCompleted is in the runs
// stream, publishing it from the run record when the winner died before
// announcing it.
func (w *StatusWorker) verifyAnnounced(ctx context.Context, rec messages.RunRecord) error {
	run := rec.Announced.Run
	if rec.Completed == nil {
		w.runs.update(run, func(e *runEntry) { e.verified = true })
		return nil
	}
	st, err := w.cfg.Topology.JetStream().Stream(ctx, topology.StreamRuns)
	if err != nil {
		return err
	}
	_, err = st.GetLastMsgForSubject(ctx, messages.RunCompletedSubject(run))
	switch {
	case err == nil:
	case errors.Is(err, jetstream.ErrMsgNotFound):
		if err := w.publishCompleted(ctx, rec.Completed); err != nil {
			return fmt.Errorf("announce completion: %w", err)
		}
		w.log.Warn("completed run had not been announced; announced it now", zap.String("run", run))
	default:
		return err
	}
	w.runs.update(run, func(e *runEntry) { e.verified = true })
	return nil
}

// updateGauges refreshes the per-stage counts of an open run.
func (w *StatusWorker) updateGauges(ctx context.Context, run string) {
	counts, err := w.cfg.Ledger.GetStageCounts(ctx, run)
	if err != nil {
		return
	}
	for _, c := range counts {
		g := w.met.runDocs
		g.WithLabelValues(run, c.DataType, "total").Set(float64(c.Total))
		g.WithLabelValues(run, c.DataType, "succeeded").Set(float64(c.Succeeded))
		g.WithLabelValues(run, c.DataType, "soft_failed").Set(float64(c.SoftFailed))
		g.WithLabelValues(run, c.DataType, "hard_failed").Set(float64(c.HardFailed))
	}
}

// source streams a run's ledger records to the run log.
func (w *StatusWorker) source(run string) runlog.Source {
	return func(ctx context.Context, fn func(runlog.Record) error) error {
		return w.cfg.Ledger.ForEachRecord(ctx, run, func(r jobresults.Record) error {
			return fn(logRecord(r))
		})
	}
}

// logRecord is the run log's view of a ledger record.
func logRecord(r jobresults.Record) runlog.Record {
	return runlog.Record{
		Doc: r.DocID, DataType: oxytype.DataType(r.DataType), Success: r.Success, HardFailure: r.HardFailure,
		Facts: r.Facts,
		Time:  r.Time,
	}
}

// errLeaseLost ends a run-log write whose completion claim another replica
// took over.
var errLeaseLost = errors.New("the completion claim is held by another replica")

// holdLease renews this replica's completion claim on run every third of
// CompletionLease until the returned context's work is done, so that no
// other replica takes the run over while its log is being written. lost
// ends the renewal and returns why the claim was lost (nil while it was
// held); the context is cancelled when the claim is lost. A renewal that
// fails (the bucket unreachable) is retried at the next tick: the claim
// may then lapse, and a takeover only duplicates the work (the last
// compare-and-set decides).
func (w *StatusWorker) holdLease(ctx context.Context, run string) (context.Context, func() error) {
	wctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(w.cfg.CompletionLease / 3)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-wctx.Done():
				return
			case <-tick.C:
			}
			held := false
			_, _, err := w.cfg.Topology.Runs().Transition(wctx, run, func(r *messages.RunRecord) bool {
				c, ok := readClaim(r)
				if held = ok && c.By == w.holder; !held {
					return false
				}
				c.Until = w.cfg.Now().Add(w.cfg.CompletionLease)
				setClaim(r, c)
				return true
			})
			switch {
			case err != nil:
				if wctx.Err() != nil {
					return
				}
				w.met.renewals.WithLabelValues("error").Inc()
				w.log.Warn("completion lease not renewed; trying again", zap.String("run", run), zap.Error(err))
			case !held:
				w.met.renewals.WithLabelValues("lost").Inc()
				cancel(errLeaseLost)
				return
			default:
				w.met.renewals.WithLabelValues("ok").Inc()
			}
		}
	}()
	return wctx, func() error {
		close(done)
		<-finished
		err := context.Cause(wctx)
		cancel(nil)
		if errors.Is(err, errLeaseLost) {
			return err
		}
		return nil
	}
}
