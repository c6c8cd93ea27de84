package writer

import (
	"context"
	"errors"
	"io"
	"time"
)

// errNotResolved: WriteResults for a run whose destination is not (or no
// longer) resolved here.
var errNotResolved = errors.New("the run's destination is not resolved in this writer")

// Writes implements poller.Sink: a run whose destination this writer has
// already resolved and probed (for its first done job, which came the
// usual way) and which writes files. It never waits for a resolution, so
// the poller's check is never held up by a slow probe, and a run whose
// destination failed is left to the writer's own retries.
func (w *Writer) Writes(run string) bool {
	return w.targets.resolved(run) != nil
}

// WriteResults implements poller.Sink: it streams a body another stage
// fetched into the job's file in the run's destination, with the same JSON
// check, atomic Put and metrics as a write of the writer's own. It does not
// retry, count failures or stop the run: the caller hands a failed job to
// the writer, whose rules then apply.
func (w *Writer) WriteResults(ctx context.Context, run, apiJobID string, body io.Reader, requested time.Time) error {
	dest := w.targets.resolved(run)
	if dest == nil {
		return errNotResolved
	}
	n, _, err := put(ctx, dest, apiJobID, body)
	if err != nil {
		return err
	}
	w.written(n, requested)
	return nil
}
