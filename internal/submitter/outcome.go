package submitter

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/oxypipe/oxypipe/internal/redact"
	"github.com/oxypipe/oxypipe/internal/stage"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// accepted records the jobs the API created for items (ids[i] for
// items[i]): the ids are stored first (recordJobs), then each item's
// Submitted and success event are published; the runtime acks once both
// are stored. Until the ids are stored the messages are pinned: the ids
// exist nowhere else.
func (s *Submitter) accepted(ctx context.Context, items []*item, ids []string) {
	at := time.Now().UTC()
	unpins := make([]func(), len(items))
	for i, it := range items {
		unpins[i] = it.m.Pin()
	}
	s.recordJobs(ctx, items, ids, at)
	for i, it := range items {
		unpins[i]()
		s.met.count(outSubmitted)
		it.res = s.publishSubmitted(it, ids[i], at)
	}
}

// failed settles an item whose submission failed. A payload is sent again
// only after an answer that proves the API created no job (a 429 of the
// rate limit, a failure before the request was sent in full); any other
// failed answer leaves the outcome unknown (see unknown).
func (s *Submitter) failed(ctx context.Context, it *item, err error) {
	if wsa.MayHaveCreatedJob(err) {
		s.unknown(ctx, it, err)
		return
	}
	info := wsa.ErrorInfo(err)
	if it.claim != nil && it.claim.Claim.MayHaveBilled {
		// An earlier request of this doc left its outcome unknown: whatever
		// this answer says, that one may have billed.
		info = markedInfo(info)
	}
	text := redact.String(err.Error())
	switch wsa.Classify(err) {
	case wsa.Reject:
		s.release(ctx, it, "rejected: "+text)
		s.met.count(outRejected)
		it.res = stage.Hard(oxytype.Rejected, fmt.Sprintf("Rejected %s: %s", it.what(), text), info)
	case wsa.Throttle:
		// The domain stays limited for minutes: never retried.
		s.release(ctx, it, "domain throttle: "+text)
		s.met.count(outUnsubmitted)
		it.res = stage.Hard(oxytype.Unsubmitted, fmt.Sprintf("Not submitted, because the API throttles the domain: %s", text), info)
	case wsa.Stop:
		// The account or the request is refused: every further submission
		// of the run would be refused too.
		s.release(ctx, it, "stopped: "+text)
		reason := "Stopped submitting, because " + stopCause(err)
		s.runs.stop(ctx, it.env.Run, reason)
		s.met.count(outUnsubmitted)
		it.res = stage.Hard(oxytype.Unsubmitted, reason, info)
	default: // Retry, Canceled: a 429 of the rate limit, or nothing was sent
		s.release(ctx, it, "retry: "+text)
		var delay time.Duration
		if errors.Is(err, wsa.ErrTooManyRequests) {
			delay = s.cfg.RateLimitedRetry
		}
		it.res = s.retry(ctx, it, delay, fmt.Sprintf("submitting %s failed: %s", it.what(), text), info, err)
	}
}

// unknown settles an item whose request got an answer that does not prove
// the API created no job: a 5xx, a timeout or dropped connection after the
// request was sent, an unreadable 2xx without a job id. The API may have
// created (and billed) the job, so the claim is marked unknown — a sticky
// mark every later state keeps — and the payload is not sent again: it ends
// unsubmitted, marked as possibly billed. With RetryUnknownOnce it is
// redelivered and sent exactly once more (see takeOver), unless this was
// already that retry.
func (s *Submitter) unknown(ctx context.Context, it *item, err error) {
	text := redact.String(err.Error())
	retries := 0
	if it.claim != nil {
		retries = it.claim.Claim.Retries
	}
	s.markUnknown(ctx, it, text)
	info := markedInfo(wsa.ErrorInfo(err))
	reason := fmt.Sprintf("submitting %s failed: %s; %s", it.what(), text, oxytype.MayHaveBilledText)
	if s.cfg.RetryUnknownOnce && retries == 0 && s.willRetry(it) {
		s.met.count(outRetry)
		it.res = &stage.RetryError{Reason: reason + "; it will be sent once more, as configured", Info: info, Cause: err}
		return
	}
	s.met.count(outUnknown)
	it.res = &stage.HardError{State: oxytype.Unsubmitted, Reason: reason + ", so it is not submitted again automatically", Info: info, Cause: err}
}

// willRetry reports whether a retryable failure of the item is retried
// (rather than being its last delivery).
func (s *Submitter) willRetry(it *item) bool {
	limit := s.worker.Settings().MaxDeliver
	return limit <= 0 || it.m.NumDelivered() < limit
}

// stopCause says why submitting stopped, in the words the run log and the
// stop's reason use: "the API returned 403 Forbidden".
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

// markedInfo returns info with the may-have-billed mark (see
// oxytype.Marked).
func markedInfo(info *oxytype.ErrorInfo) *oxytype.ErrorInfo { return oxytype.Marked(info) }
