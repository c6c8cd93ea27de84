package writer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/oxypipe/oxypipe/internal/jsonvalid"
	"github.com/oxypipe/oxypipe/internal/redact"
	"github.com/oxypipe/oxypipe/internal/stage"
	"github.com/oxypipe/oxypipe/pkg/destination"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// handle writes one done job. See the package documentation for the
// outcomes.
func (w *Writer) handle(ctx context.Context, m *stage.Msg) error {
	d, err := messages.DecodeDone(m.Subject(), m.Data())
	if err != nil {
		return err // recorded by the runtime as a hard failure, terminated
	}
	if !wsa.ValidJobID(d.APIJobID) {
		return stage.Hard(oxytype.Unfetched, fmt.Sprintf("api job id %q is not a job id", redact.String(d.APIJobID)),
			&oxytype.ErrorInfo{Message: "invalid api job id"})
	}

	start := time.Now()
	var (
		n    int64
		kind string
		skip bool
	)
	for attempt := 0; ; attempt++ {
		n, kind, skip, err = w.attempt(ctx, d)
		if err == nil || !outputFailure(kind, err) || destination.IsPermanent(err) || attempt >= max(w.cfg.OutputRetries, 0) || ctx.Err() != nil {
			break
		}
		// A destination that fails may pass (a reset connection, a
		// throttled store): a few quick tries before the run is stopped.
		w.met.failures.WithLabelValues(kind).Inc()
		select {
		case <-ctx.Done():
		case <-time.After(w.cfg.OutputRetryDelay):
		}
	}
	if skip {
		return nil // the run is complete at "done": nothing to write
	}
	if err != nil {
		if outputFailure(kind, err) && ctx.Err() == nil {
			w.stops.stop(ctx, d.Run, err)
		}
		info := &oxytype.ErrorInfo{Message: redact.String(err.Error())}
		if kind == kindFetch || kind == kindExpired {
			info = wsa.ErrorInfo(err)
		}
		return w.fail(ctx, m, d, kind, err, info)
	}
	now := w.written(n, start)
	if !d.FinishedAt.IsZero() {
		w.met.finishToWrite.Observe(max(now.Sub(d.FinishedAt), 0).Seconds())
	}
	return m.Record(&messages.StatusEvent{
		Run: d.Run, Doc: d.Doc, Attempt: d.Attempt,
		DataType: oxytype.DataWritten, Outcome: oxytype.Success,
		Facts: oxytype.Facts{APIJobID: d.APIJobID, Payload: d.Payload},
	})
}

// written counts a file in place: n bytes, from the results request at
// start until now, which it returns.
func (w *Writer) written(n int64, start time.Time) time.Time {
	now := time.Now()
	w.met.bytes.Add(float64(n))
	w.met.write.Observe(now.Sub(start).Seconds())
	return now
}

// attempt resolves the run's destination and writes the job into it once.
// skip reports a run that writes nothing.
func (w *Writer) attempt(ctx context.Context, d *messages.Done) (n int64, kind string, skip bool, err error) {
	dest, err := w.targets.forRun(ctx, d.Run)
	if err != nil {
		kind := kindRun
		if re, ok := errors.AsType[*resolveError](err); ok {
			kind = re.kind
		}
		return 0, kind, false, err
	}
	if dest == nil {
		return 0, "", true, nil
	}
	n, kind, err = w.write(ctx, dest, d.APIJobID)
	return n, kind, false, err
}

// write streams the job's results body into its result file and returns the
// bytes written, or the kind of failure. The body is checked to be JSON on
// its way (internal/jsonvalid): a body that is not (an HTML page from a
// proxy, a body cut short) fails the read that would end it, so the atomic
// Put aborts and no such file is ever recorded written.
func (w *Writer) write(ctx context.Context, dest destination.Destination, id string) (int64, string, error) {
	res, err := w.cfg.API.Results(ctx, id)
	if err != nil {
		if errors.Is(err, wsa.ErrNoContent) {
			return 0, kindExpired, err
		}
		return 0, kindFetch, fmt.Errorf("fetching the results of job %s: %w", id, err)
	}
	defer res.Body.Close()
	return put(ctx, dest, id, res.Body)
}

// put streams a results body, checked to be JSON, into the job's file, and
// returns the bytes read, or the kind of failure: the body's (kindFetch) or
// the destination's (kindWrite).
func put(ctx context.Context, dest destination.Destination, id string, r io.Reader) (int64, string, error) {
	body := &countingReader{r: jsonvalid.NewReader(r)}
	if err := dest.Put(ctx, destination.ResultName(id), body); err != nil {
		if body.err != nil {
			return body.n, kindFetch, fmt.Errorf("reading the results of job %s: %w", id, body.err)
		}
		return body.n, kindWrite, err
	}
	return body.n, "", nil
}

// outputFailure reports whether a failed attempt is the destination's
// (it cannot be probed or written, or the run names none) rather than the
// API's: such a failure stops the run's submissions.
func outputFailure(kind string, err error) bool {
	return kind == kindProbe || kind == kindWrite || errors.Is(err, errNoDestination)
}

// fail turns a failed attempt into a retry, or into a hard failure — on
// the last allowed delivery, for a failure no retry can cure, or once the
// run has ended (or its stop's deadline passed) and nobody waits for the
// file any more: the job is done at the API, so it is recorded unfetched
// and can be fetched by id later.
func (w *Writer) fail(ctx context.Context, m *stage.Msg, d *messages.Done, kind string, err error, info *oxytype.ErrorInfo) error {
	if errors.Is(ctx.Err(), context.Canceled) {
		// A drain cut the write short (a timeout would be DeadlineExceeded,
		// and counts): not a failure of the job, whatever the error says.
		return &stage.RetryError{Reason: "write interrupted: " + err.Error(), Cause: err}
	}
	w.met.failures.WithLabelValues(kind).Inc()
	reason := fmt.Sprintf("writing job %s: %v", d.APIJobID, err)
	md := w.worker.Settings().MaxDeliver
	if hopeless(err) || (md > 0 && m.NumDelivered() >= md) {
		return &stage.HardError{State: oxytype.Unfetched, Reason: reason, Info: info, Cause: err}
	}
	if ended := w.runEnded(ctx, d.Run); ended != "" {
		return &stage.HardError{State: oxytype.Unfetched, Reason: reason + "; " + ended, Info: info, Cause: err}
	}
	return &stage.RetryError{Reason: reason, Info: info, Cause: err}
}

// runEnded says why retrying a write of run is pointless (its run log is
// written, or about to be), or "" while it is worth retrying. A run whose
// record cannot be read is retried.
func (w *Writer) runEnded(ctx context.Context, run string) string {
	kctx, cancel := context.WithTimeout(ctx, runsTimeout)
	defer cancel()
	ref, err := w.cfg.Topology.Runs().Get(kctx, run)
	if err != nil {
		return ""
	}
	switch rec := ref.Record; {
	case rec.State == oxytype.RunStateCompleted:
		return "the run has ended; the job can be fetched by id at no cost"
	case rec.State == oxytype.RunStateStopping && !time.Now().Before(rec.Expires(messages.StopSettle)):
		// (With the default settle time: a statusworker set to a shorter
		// one ends the run sooner, and the check above then applies.)
		return "the run's stop deadline has passed; the job can be fetched by id at no cost"
	}
	return ""
}

// hopeless reports whether retrying the message can never succeed: the
// run names no destination, its destination cannot be a location, the
// file name is refused, or the API does not know the job (a 404; the
// poller treats it the same way). A destination that is full, denied or
// missing is not hopeless: someone may fix it while the run's stop waits.
func hopeless(err error) bool {
	return errors.Is(err, errNoDestination) || errors.Is(err, wsa.ErrNotFound) || destination.IsInvalid(err)
}

// countingReader counts the bytes read and keeps the first read error, so
// that a failed Put can be told apart: the API's body broke (or is not
// JSON), or the destination did.
type countingReader struct {
	r   io.Reader
	n   int64
	err error
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if err != nil && !errors.Is(err, io.EOF) && c.err == nil {
		c.err = err
	}
	return n, err
}
