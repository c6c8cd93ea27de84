package statusworker

import (
	"context"
	"fmt"
	"io"
	"time"

	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/internal/redact"
	"github.com/oxypipe/oxypipe/pkg/destination"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/retry"
	"github.com/oxypipe/oxypipe/pkg/runlog"
)

// reconcile does what a run needs next (see tracker).
func (w *StatusWorker) reconcile(ctx context.Context, run string, periodic bool) {
	e, ok := w.runs.snapshot(run)
	if !ok {
		return
	}
	var err error
	switch e.rec.State {
	case oxytype.RunStateAnnounced:
		err = w.prepare(ctx, e.rec)
	case oxytype.RunStateReady, oxytype.RunStateStopping:
		if periodic {
			w.updateGauges(ctx, run)
		}
		err = w.checkCompletion(ctx, e, periodic)
	case oxytype.RunStateCompleted:
		if periodic && !e.verified {
			err = w.verifyAnnounced(ctx, e.rec)
		}
	}
	if err != nil && ctx.Err() == nil {
		w.log.Warn("run not reconciled; the next re-check tries again", zap.String("run", run),
			zap.String("state", string(e.rec.State)), zap.String("error", redact.String(err.Error())))
	}
}

// prepare writes the empty run log of an announced run, then marks the run
// ready, or failed with the reason when the location cannot be written.
// The feeder publishes nothing before that, so an unwritable run-log
// location fails the run before anything bills. Several replicas may do
// this at once: the empty file is written twice and the compare-and-set
// lets one transition through.
func (w *StatusWorker) prepare(ctx context.Context, rec messages.RunRecord) error {
	run := rec.Announced.Run
	loc := rec.Announced.RunLog
	var reason string
	if loc != "" {
		_, err := w.saveRunLog(ctx, rec, nil)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			reason = fmt.Sprintf("the run log cannot be written to %s: %s", redact.String(loc), redact.String(err.Error()))
		}
	}
	applied, ref, err := w.cfg.Topology.Runs().Transition(ctx, run, func(r *messages.RunRecord) bool {
		if r.State != oxytype.RunStateAnnounced {
			return false
		}
		if reason != "" {
			r.State, r.Reason = oxytype.RunStateFailed, reason
		} else {
			r.State = oxytype.RunStateReady
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("mark run ready: %w", err)
	}
	if applied {
		w.runs.observe(ref.Record, ref.Revision) // read-your-writes, as in complete
	}
	switch {
	case !applied:
	case reason != "":
		w.met.runs.WithLabelValues("failed").Inc()
		w.log.Error("run failed before it started", zap.String("run", run), zap.String("reason", reason))
	default:
		w.log.Info("run ready: empty run log written", zap.String("run", run),
			zap.Int("total", rec.Announced.Total), zap.String("run_log", redact.String(loc)))
	}
	return nil
}

// saveRunLog writes the run log of rec's run (fill nil: the empty one) to
// its location, retrying errors that may pass, and returns where it is.
func (w *StatusWorker) saveRunLog(ctx context.Context, rec messages.RunRecord, fill func(io.Writer) error) (string, error) {
	var where string
	err := retry.Do(ctx, retry.Policy{
		Initial: 200 * time.Millisecond, Max: 2 * time.Second, MaxAttempts: 4,
		Retryable: func(err error) bool { return !destination.IsPermanent(err) },
	}, func(ctx context.Context) error {
		var err error
		where, err = saveRunLog(ctx, rec.Announced.RunLog, rec.Announced.Run, fill, w.cfg.Destination...)
		return err
	})
	return where, err
}

// saveRunLog opens location (a folder or an object-store URL, see
// pkg/destination), writes the run log of run there with runlog.Put, and
// returns where the file is (the location as the destination renders it,
// credentials redacted, joined with the file name).
func saveRunLog(ctx context.Context, location, run string, fill func(io.Writer) error, opts ...destination.Option) (string, error) {
	dst, err := destination.Open(ctx, location, opts...)
	if err != nil {
		return "", fmt.Errorf("runlog: run %s: %w", run, err)
	}
	defer func() { _ = dst.Close() }()
	if err := runlog.Put(ctx, dst, run, fill); err != nil {
		return "", err
	}
	return runlog.Location(dst.String(), run), nil
}
