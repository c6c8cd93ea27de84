package writer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/oxypipe/oxypipe/pkg/destination"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/redact"
	"github.com/oxypipe/oxypipe/pkg/runlog"
	"github.com/oxypipe/oxypipe/pkg/stage"
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
		return stage.Hard(runlog.Unfetched, fmt.Sprintf("api job id %q is not a job id", redact.String(d.APIJobID)),
			&runlog.ErrorInfo{Message: "invalid api job id"})
	}
	dest, err := w.targets.forRun(ctx, d.Run)
	if err != nil {
		kind := kindRun
		if re, ok := errors.AsType[*resolveError](err); ok {
			kind = re.kind
		}
		return w.fail(ctx, m, d, kind, err, &runlog.ErrorInfo{Message: redact.String(err.Error())})
	}
	if dest == nil {
		return nil // the run is complete at "done": nothing to write
	}

	start := time.Now()
	n, kind, err := w.write(ctx, dest, d.APIJobID)
	if err != nil {
		info := &runlog.ErrorInfo{Message: redact.String(err.Error())}
		if kind == kindFetch || kind == kindExpired {
			info = errorInfo(err)
		}
		return w.fail(ctx, m, d, kind, err, info)
	}
	now := time.Now()
	w.met.bytes.Add(float64(n))
	w.met.write.Observe(now.Sub(start).Seconds())
	if !d.FinishedAt.IsZero() {
		w.met.finishToWrite.Observe(max(now.Sub(d.FinishedAt), 0).Seconds())
	}
	return m.Record(&messages.StatusEvent{
		Run: d.Run, Doc: d.Doc, Attempt: d.Attempt,
		DataType: messages.DataWritten, Outcome: messages.Success,
		APIJobID: d.APIJobID, Payload: d.Payload,
	})
}

// write streams the job's results body into "<id>.json" and returns the
// bytes written, or the kind of failure.
func (w *Writer) write(ctx context.Context, dest destination.Destination, id string) (int64, string, error) {
	res, err := w.cfg.API.Results(ctx, id)
	if err != nil {
		if errors.Is(err, wsa.ErrNoContent) {
			return 0, kindExpired, err
		}
		return 0, kindFetch, fmt.Errorf("fetching the results of job %s: %w", id, err)
	}
	defer res.Body.Close()
	body := &countingReader{r: res.Body}
	if err := dest.Put(ctx, id+".json", body); err != nil {
		if body.err != nil {
			return body.n, kindFetch, fmt.Errorf("reading the results of job %s: %w", id, body.err)
		}
		return body.n, kindWrite, err
	}
	return body.n, "", nil
}

// fail turns a failed attempt into a retry, or on the last allowed delivery
// (or for a failure no retry can cure) into a hard failure: the job is done
// at the API, so it is recorded unfetched and can be fetched by id later.
func (w *Writer) fail(ctx context.Context, m *stage.Msg, d *messages.Done, kind string, err error, info *runlog.ErrorInfo) error {
	if errors.Is(ctx.Err(), context.Canceled) {
		// A drain cut the write short (a timeout would be DeadlineExceeded,
		// and counts): not a failure of the job, whatever the error says.
		return &stage.RetryError{Reason: "write interrupted: " + err.Error(), Cause: err}
	}
	w.met.failures.WithLabelValues(kind).Inc()
	reason := fmt.Sprintf("writing job %s: %v", d.APIJobID, err)
	md := w.worker.Settings().MaxDeliver
	if permanent(err) || (md > 0 && m.NumDelivered() >= md) {
		return &stage.HardError{State: runlog.Unfetched, Reason: reason, Info: info, Cause: err}
	}
	return &stage.RetryError{Reason: reason, Info: info, Cause: err}
}

// permanent reports whether a failure cannot be cured by retrying: the
// run's destination is missing or cannot be a location, or the file name is
// refused.
func permanent(err error) bool {
	// A 404 means the API does not know the job: retrying cannot help (the
	// poller treats it the same way).
	return errors.Is(err, errNoDestination) || errors.Is(err, wsa.ErrNotFound) || errors.Is(err, destination.ErrInvalidName) ||
		errors.Is(err, destination.ErrInvalidLocation) || errors.Is(err, destination.ErrUnknownScheme)
}

// errorInfo is the run log's error for a failed fetch: the API's status code
// (204 when the results expired), message and trace id.
func errorInfo(err error) *runlog.ErrorInfo {
	if ae, ok := errors.AsType[*wsa.APIError](err); ok {
		info := &runlog.ErrorInfo{Message: ae.Message, TraceID: ae.TraceID}
		if ae.StatusCode != 0 {
			code := ae.StatusCode
			info.StatusCode = &code
		}
		return info
	}
	if nc, ok := errors.AsType[*wsa.NoContentError](err); ok {
		code := http.StatusNoContent
		return &runlog.ErrorInfo{StatusCode: &code, Message: redact.String(nc.Error())}
	}
	return &runlog.ErrorInfo{Message: redact.String(err.Error())}
}

// countingReader counts the bytes read and keeps the first read error, so
// that a failed Put can be told apart: the API's body broke, or the
// destination did.
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
