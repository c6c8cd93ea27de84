package poller

import (
	"context"
	"errors"
	"io"
	"time"

	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/internal/redact"
	"github.com/oxypipe/oxypipe/internal/stage"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// Sink writes results bodies the poller fetched itself: the direct path of
// a process that runs the poller and the writer together. *writer.Writer
// implements it; the writer's rules (the run's destination, the JSON check,
// the atomic Put) stay the writer's.
type Sink interface {
	// Writes reports whether a results body of run can be written now: the
	// run writes files and its destination was already opened and probed.
	// It never blocks, opens or probes anything.
	Writes(run string) bool
	// WriteResults streams a job's results body, requested at requested,
	// into run's destination as the job's file. A nil error means the file
	// is in place; any error leaves no file of a broken body.
	WriteResults(ctx context.Context, run, apiJobID string, body io.Reader, requested time.Time) error
}

// Results counted by oxy_poller_direct_total.
const (
	directWritten   = "written"
	directHandedOff = "handed_off"
	directChecked   = "checked"
)

// direct checks a job by asking for its results and, once it is done,
// writes them through the sink. handled false: the answer is one the status
// check owns (a 204 of a finished job, a missing or unknown job-status
// header), and the caller checks the status instead, in the same delivery.
func (p *Poller) direct(ctx context.Context, m *stage.Msg, s *messages.Submitted, elapsed time.Duration) (handled bool, err error) {
	requested := time.Now()
	res, err := p.cfg.API.Results(ctx, s.APIJobID)
	if err != nil {
		if nc, isNC := errors.AsType[*wsa.NoContentError](err); isNC {
			if nc.JobStatus == wsa.JobPending {
				p.failures.clear(m.StreamSequence())
				p.met.checks.WithLabelValues(checkPending).Inc()
				return true, p.pending(m, s, elapsed)
			}
			p.met.direct.WithLabelValues(directChecked).Inc()
			return false, nil
		}
		return true, p.checkFailed(ctx, m, s, elapsed, err)
	}
	defer func() { _ = res.Body.Close() }()
	switch res.JobStatus {
	case wsa.JobFaulted:
		p.failures.clear(m.StreamSequence())
		p.met.checks.WithLabelValues(checkFaulted).Inc()
		return true, p.faulted(nil)
	case wsa.JobDone:
	default:
		p.met.direct.WithLabelValues(directChecked).Inc()
		return false, nil
	}
	p.failures.clear(m.StreamSequence())
	p.met.checks.WithLabelValues(checkDone).Inc()
	werr := p.cfg.Sink.WriteResults(ctx, s.Run, s.APIJobID, res.Body, requested)
	if werr == nil {
		p.met.direct.WithLabelValues(directWritten).Inc()
		return true, m.Record(&messages.StatusEvent{
			Run: s.Run, Doc: s.Doc, Attempt: s.Attempt,
			DataType: oxytype.DataWritten, Outcome: oxytype.Success,
			Facts: oxytype.Facts{APIJobID: s.APIJobID, Payload: s.Payload},
		})
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		// A drain cut the write short: not the job's failure; check again
		// on the next delivery.
		return true, &stage.RetryError{Reason: "writing job " + s.APIJobID + " was cut short: " + werr.Error(), Cause: werr}
	}
	// The writer owns failed writes (its retries, stopping the run,
	// unfetched), and writes that outlast this handler's deadline (a slow
	// destination must not hold the poller's checks; the writer's calls may
	// take minutes): hand the job on as the status path does. Its
	// updated_at was not read, so the hand-off is stamped now.
	p.met.direct.WithLabelValues(directHandedOff).Inc()
	p.log.Debug("writing directly failed; handing the job to the writer",
		zap.String("api_job_id", s.APIJobID), zap.String("error", redact.String(werr.Error())))
	return true, p.done(m, s, wsa.Job{}, nil)
}
