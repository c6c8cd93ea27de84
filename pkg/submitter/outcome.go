package submitter

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/oxypipe/oxypipe/pkg/redact"
	"github.com/oxypipe/oxypipe/pkg/runlog"
	"github.com/oxypipe/oxypipe/pkg/stage"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// accepted records a job the API created for the item: the job id goes
// under the claim first, then Submitted and the success event are
// published; the runtime acks once both are stored.
func (s *Submitter) accepted(ctx context.Context, it *item, jobID string) {
	at := time.Now().UTC()
	s.markSubmitted(ctx, it, jobID, at)
	s.met.count(outSubmitted)
	it.res = s.publishSubmitted(it, jobID, at)
}

// failed settles an item whose submission failed. warn says whether a
// retry after a possibly billed request should be logged here (a batch
// logs it once for all its payloads).
func (s *Submitter) failed(ctx context.Context, it *item, err error, warn bool) {
	info := errorInfo(err)
	text := redact.String(err.Error())
	switch wsa.Classify(err) {
	case wsa.Reject:
		s.release(ctx, it, "rejected: "+text)
		s.met.count(outRejected)
		it.res = stage.Hard(runlog.Rejected, fmt.Sprintf("Rejected %s: %s", it.what(), text), info)
	case wsa.Throttle:
		// The domain stays limited for minutes: never retried.
		s.release(ctx, it, "domain throttle: "+text)
		s.met.count(outUnsubmitted)
		it.res = stage.Hard(runlog.Unsubmitted, fmt.Sprintf("Not submitted, because the API throttles the domain: %s", text), info)
	case wsa.Stop:
		// The account or the request is refused: every further submission
		// of the run would be refused too.
		s.release(ctx, it, "stopped: "+text)
		reason := "Stopped submitting, because " + stopCause(err)
		s.runs.stop(ctx, it.env.Run, reason)
		s.met.count(outUnsubmitted)
		it.res = stage.Hard(runlog.Unsubmitted, reason, info)
	default: // Retry, and Canceled (our own SubmitTimeout: a timeout)
		may := wsa.MayHaveCreatedJob(err)
		// The origin retries after a 5xx or a read error although the API
		// may have created the job; so do we, saying so.
		s.release(ctx, it, "retry: "+text)
		if may && warn && s.willRetry(it) {
			s.log.Warn(fmt.Sprintf("Retrying a submission of %s after %s; the API may have created its job, and a duplicate bills",
				it.what(), text))
		}
		reason := fmt.Sprintf("submitting %s failed: %s", it.what(), text)
		if may {
			reason += "; " + runlog.MayHaveBilled
		}
		var delay time.Duration
		if errors.Is(err, wsa.ErrTooManyRequests) {
			delay = s.cfg.RateLimitedRetry
		}
		it.res = s.retry(it, delay, reason, info, err)
	}
}

// willRetry reports whether a retryable failure of the item is retried
// (rather than being its last delivery).
func (s *Submitter) willRetry(it *item) bool {
	limit := s.worker.Settings().MaxDeliver
	return limit <= 0 || it.m.NumDelivered() < limit
}

// stopCause says why submitting stopped, as the origin's log line does:
// "the API returned 403 Forbidden".
func stopCause(err error) string {
	var ae *wsa.APIError
	if errors.As(err, &ae) && ae.StatusCode > 0 {
		if t := http.StatusText(ae.StatusCode); t != "" {
			return fmt.Sprintf("the API returned %d %s", ae.StatusCode, t)
		}
		return "the API returned " + redact.String(ae.Error())
	}
	return redact.String(err.Error())
}

// errorInfo is the run log's error for a failed submission.
func errorInfo(err error) *runlog.ErrorInfo {
	var ae *wsa.APIError
	if !errors.As(err, &ae) {
		return &runlog.ErrorInfo{Message: redact.String(err.Error())}
	}
	info := &runlog.ErrorInfo{Message: ae.Message, TraceID: ae.TraceID}
	if ae.StatusCode > 0 {
		code := ae.StatusCode
		info.StatusCode = &code
	}
	return info
}
