package statusworker

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/internal/redact"
	"github.com/oxypipe/oxypipe/pkg/jobresults"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/retry"
)

// sweepLocked has the finished runs given forgotten (forgetRun), in the
// background and one sweep at a time; the next tick hands over whatever
// this one left. The caller holds t.mu.
func (t *tracker) sweepLocked(runs []string) {
	if len(runs) == 0 || t.sweeping || t.ctx == nil {
		return
	}
	t.sweeping = true
	ctx := t.ctx
	t.wg.Go(func() {
		defer func() {
			t.mu.Lock()
			t.sweeping = false
			t.mu.Unlock()
		}()
		for _, run := range runs {
			if ctx.Err() != nil {
				return
			}
			t.w.forgetRun(ctx, run)
		}
	})
}

// forgetRun removes a finished run whose retention has passed from the
// broker (topology.Topology.ForgetRun: its record, claims, status events,
// announcements and stray work messages) and from the tracker. The record
// is read again first: only a run still finished, and finished longer ago
// than Config.RunRetention, is forgotten. An open run never is, however
// old. The ledger and the run log are left as they are.
func (w *StatusWorker) forgetRun(ctx context.Context, run string) {
	ref, err := w.cfg.Topology.Runs().Get(ctx, run)
	switch {
	case errors.Is(err, oxytype.ErrRunNotFound):
		w.runs.forget(run) // another replica forgot it
		return
	case err != nil:
		w.log.Warn("finished run not forgotten; the next sweep tries again", zap.String("run", run), zap.String("error", redact.String(err.Error())))
		return
	}
	rec := ref.Record
	if !rec.State.Terminal() || w.cfg.Now().Sub(rec.UpdatedAt) <= w.cfg.RunRetention {
		return
	}
	// Stamp the ledger again first: records written after the run
	// finished (late events) get their stamp before the status events
	// that wrote them are gone.
	if err := w.finishLedger(ctx, rec); err != nil {
		if ctx.Err() == nil {
			w.log.Warn("finished run not forgotten: its ledger records could not be stamped; the next sweep tries again",
				zap.String("run", run), zap.String("error", redact.String(err.Error())))
		}
		return
	}
	if err := w.cfg.Topology.ForgetRun(ctx, ref); err != nil {
		if ctx.Err() == nil {
			w.log.Warn("finished run not forgotten; the next sweep tries again", zap.String("run", run), zap.String("error", redact.String(err.Error())))
		}
		return
	}
	w.runs.forget(run)
	w.met.runs.WithLabelValues("forgotten").Inc()
	w.log.Info("finished run forgotten: its record, claims and status events are removed from the broker (the ledger and the run log stay)",
		zap.String("run", run), zap.String("state", string(rec.State)), zap.Time("finished_at", rec.UpdatedAt),
		zap.Duration("retention", w.cfg.RunRetention))
}

// finishLedger stamps the ledger records of a finished run with the time it
// finished (jobresults.Finisher): a ledger TTL counts from that stamp, so
// the records of a run still open are never removed by age, however long
// it stays open. Transient ledger errors are retried for a minute.
func (w *StatusWorker) finishLedger(ctx context.Context, rec messages.RunRecord) error {
	return retry.Do(ctx, retry.Policy{Initial: 200 * time.Millisecond, Max: 5 * time.Second, MaxElapsed: time.Minute,
		Retryable: retry.On(jobresults.ErrTransient)}, func(ctx context.Context) error {
		return w.cfg.Ledger.FinishJob(ctx, rec.Announced.Run, rec.UpdatedAt)
	})
}

// finished has the ledger records of a run that just finished stamped
// (finishLedger), in the background. A stamp that fails is logged; the
// sweep that forgets the run a RunRetention later stamps them again, so a
// ledger TTL then still counts from the run's end.
func (t *tracker) finishedLocked(rec messages.RunRecord) {
	if t.ctx == nil {
		return
	}
	ctx := t.ctx
	t.wg.Go(func() {
		if err := t.w.finishLedger(ctx, rec); err != nil && ctx.Err() == nil {
			t.w.log.Warn("the ledger records of a finished run could not be stamped; the run's sweep tries again",
				zap.String("run", rec.Announced.Run), zap.String("error", redact.String(err.Error())))
		}
	})
}
