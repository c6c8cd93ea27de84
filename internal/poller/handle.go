package poller

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/internal/redact"
	"github.com/oxypipe/oxypipe/internal/stage"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/payload"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// minWait is the shortest delay asked of the broker: below it a redelivery
// would cost more than it saves.
const minWait = 10 * time.Millisecond

// handle checks one submitted job. See the package documentation for the
// outcomes.
func (p *Poller) handle(ctx context.Context, m *stage.Msg) error {
	s, err := messages.DecodeSubmitted(m.Subject(), m.Data())
	if err != nil {
		return err // recorded by the runtime as a hard failure, terminated
	}
	if !wsa.ValidJobID(s.APIJobID) {
		return stage.Hard(oxytype.Unfetched, fmt.Sprintf("api job id %q is not a job id", redact.String(s.APIJobID)),
			&oxytype.ErrorInfo{Message: "invalid api job id"})
	}
	now := p.now()
	submitted := s.SubmittedAt
	if submitted.IsZero() {
		submitted = m.Timestamp()
	}
	elapsed := max(now.Sub(submitted), 0)
	if elapsed < p.cfg.Schedule.First {
		// Just submitted: it cannot be done yet, so do not ask.
		return stage.Wait(p.cfg.Schedule.First - elapsed)
	}

	if p.cfg.Sink != nil && p.cfg.Sink.Writes(s.Run) && !hasStorageURL(s.Payload) {
		if handled, err := p.direct(ctx, m, s, elapsed); handled {
			return err
		}
	}
	job, err := p.cfg.API.Status(ctx, s.APIJobID)
	if err != nil {
		return p.checkFailed(ctx, m, s, elapsed, err)
	}
	switch job.Status {
	case wsa.JobPending, wsa.JobDone, wsa.JobFaulted:
		p.failures.clear(m.StreamSequence())
	}
	switch job.Status {
	case wsa.JobPending:
		p.met.checks.WithLabelValues(checkPending).Inc()
		return p.pending(m, s, elapsed)
	case wsa.JobDone, wsa.JobFaulted:
		upload, wait := p.upload(s, job, elapsed)
		if wait > 0 {
			return stage.Wait(wait)
		}
		if job.Status == wsa.JobFaulted {
			p.met.checks.WithLabelValues(checkFaulted).Inc()
			return p.faulted(upload)
		}
		p.met.checks.WithLabelValues(checkDone).Inc()
		return p.done(m, s, job, upload)
	}
	// Not a status the API has: an odd answer, retried like one.
	p.met.checks.WithLabelValues(checkError).Inc()
	err = fmt.Errorf("the API answered an unknown job status %q", redact.String(string(job.Status)))
	return p.retry(m, s, elapsed, err, wsa.ErrorInfo(err))
}

// pending waits for the next scheduled check, or gives up past the pending
// limit (or on the consumer's last allowed delivery).
func (p *Poller) pending(m *stage.Msg, s *messages.Submitted, elapsed time.Duration) error {
	limit := p.cfg.PendingLimit
	if limit > 0 && elapsed >= limit {
		msg := fmt.Sprintf("still pending after %s; stopped checking", formatDuration(limit))
		return stage.Hard(oxytype.Unfetched, fmt.Sprintf("job %s %s", s.APIJobID, msg), &oxytype.ErrorInfo{Message: msg})
	}
	if md := p.worker.Settings().MaxDeliver; md > 0 && m.NumDelivered() >= md {
		msg := fmt.Sprintf("still pending after %s; stopped checking after %d deliveries", formatDuration(elapsed.Round(time.Second)), m.NumDelivered())
		return stage.Hard(oxytype.Unfetched, fmt.Sprintf("job %s %s", s.APIJobID, msg), &oxytype.ErrorInfo{Message: msg})
	}
	wait := p.cfg.Schedule.Next(elapsed) - elapsed
	if limit > 0 {
		wait = min(wait, limit-elapsed) // one last check right at the limit
	}
	return stage.Wait(max(wait, minWait))
}

// upload returns the job's upload entry, or how long to wait for it: a job
// whose payload names a storage_url and whose object has a "statuses" key
// reports its upload shortly after it finished. No entry within the upload
// wait (or the pending limit) is a failed upload.
func (p *Poller) upload(s *messages.Submitted, job wsa.Job, elapsed time.Duration) (*oxytype.Upload, time.Duration) {
	if u, ok := job.Upload(); ok {
		return &oxytype.Upload{Code: u.Code, Message: u.Message}, 0
	}
	if p.cfg.UploadWait < 0 || !job.HasStatuses || job.UpdatedAt.IsZero() || !hasStorageURL(s.Payload) {
		return nil, 0
	}
	left := job.UpdatedAt.Add(p.cfg.UploadWait).Sub(p.now())
	if p.cfg.PendingLimit > 0 {
		left = min(left, p.cfg.PendingLimit-elapsed)
	}
	if left <= 0 {
		// An upload not reported in time is not known to have happened: it
		// counts as failed (code 0: the API gave none).
		p.log.Warn("no upload entry; recording the upload failed",
			zap.String("api_job_id", s.APIJobID), zap.Duration("waited", p.cfg.UploadWait))
		return &oxytype.Upload{Message: fmt.Sprintf("no upload entry within %s after the job finished", formatDuration(p.cfg.UploadWait))}, 0
	}
	return nil, max(min(p.cfg.Schedule.Next(elapsed)-elapsed, left), minWait)
}

// done publishes the job for the writer and records it done.
func (p *Poller) done(m *stage.Msg, s *messages.Submitted, job wsa.Job, upload *oxytype.Upload) error {
	now := p.now()
	finished := job.UpdatedAt
	if finished.IsZero() {
		finished = now.UTC()
	} else {
		p.met.doneLag.Observe(max(now.Sub(finished), 0).Seconds())
	}
	out := &messages.Done{Run: s.Run, Doc: s.Doc, Attempt: s.Attempt, APIJobID: s.APIJobID, Payload: s.Payload, FinishedAt: finished}
	if err := m.Publish(out); err != nil {
		return err
	}
	return m.Record(&messages.StatusEvent{
		Run: s.Run, Doc: s.Doc, Attempt: s.Attempt,
		DataType: oxytype.DataDone, Outcome: oxytype.Success,
		Facts: oxytype.Facts{APIJobID: s.APIJobID, Payload: s.Payload, Upload: upload},
	})
}

// faulted records the job faulted, with its upload entry if it has one. The
// run log's error is null for a faulted job; it is never resubmitted here.
func (p *Poller) faulted(upload *oxytype.Upload) error {
	return &stage.HardError{State: oxytype.Faulted, Reason: "faulted", Upload: upload}
}

// checkFailed decides what a failed status check means for the job.
func (p *Poller) checkFailed(ctx context.Context, m *stage.Msg, s *messages.Submitted, elapsed time.Duration, err error) error {
	info := wsa.ErrorInfo(err)
	class := wsa.Classify(err)
	switch {
	case errors.Is(err, wsa.ErrNotFound):
		p.met.checks.WithLabelValues(checkNotFound).Inc()
		p.failures.clear(m.StreamSequence())
		return &stage.HardError{State: oxytype.Unfetched, Info: info, Cause: err,
			Reason: fmt.Sprintf("stopped checking job %s, because the API returned %v", s.APIJobID, err)}
	case class == wsa.Canceled && ctx.Err() != nil:
		// Our own deadline or a drain, not the API's answer: try again
		// later without counting it against the job.
		return &stage.RetryError{Reason: fmt.Sprintf("checking job %s was cut short: %v", s.APIJobID, err), Cause: err}
	case class == wsa.Retry || class == wsa.Throttle || class == wsa.Canceled:
		p.met.checks.WithLabelValues(checkError).Inc()
		return p.retry(m, s, elapsed, err, info)
	}
	// 401, 403 and other refusals: asking again will not help.
	p.met.checks.WithLabelValues(checkError).Inc()
	p.failures.clear(m.StreamSequence())
	return &stage.HardError{State: oxytype.Unfetched, Info: info, Cause: err,
		Reason: fmt.Sprintf("stopped checking job %s, because the API returned %v", s.APIJobID, err)}
}

// retry schedules another check after a transient failure, or gives up when
// the retries are exhausted.
func (p *Poller) retry(m *stage.Msg, s *messages.Submitted, elapsed time.Duration, err error, info *oxytype.ErrorInfo) error {
	now := p.now()
	seq := m.StreamSequence()
	first, count := p.failures.add(seq, now)
	var exhausted string
	switch r := p.cfg.Retry; {
	case p.cfg.PendingLimit > 0 && elapsed >= p.cfg.PendingLimit:
		exhausted = fmt.Sprintf("the pending limit of %s passed", formatDuration(p.cfg.PendingLimit))
	case r.MaxElapsed > 0 && now.Sub(first) >= r.MaxElapsed:
		exhausted = fmt.Sprintf("failing for %s", formatDuration(now.Sub(first).Round(time.Second)))
	case r.MaxAttempts > 0 && count >= r.MaxAttempts:
		exhausted = fmt.Sprintf("%d failed checks", count)
	case p.worker.Settings().MaxDeliver > 0 && m.NumDelivered() >= p.worker.Settings().MaxDeliver:
		exhausted = fmt.Sprintf("the last allowed delivery (%d)", m.NumDelivered())
	}
	if exhausted != "" {
		p.failures.clear(seq)
		return &stage.HardError{State: oxytype.Unfetched, Info: info, Cause: err,
			Reason: fmt.Sprintf("stopped checking job %s after %s: %v", s.APIJobID, exhausted, err)}
	}
	delay := max(p.cfg.Retry.Delay(count), minWait)
	return &stage.RetryError{Delay: delay, Info: info, Cause: err,
		Reason: fmt.Sprintf("checking job %s failed (%d in a row): %v", s.APIJobID, count, err)}
}

// hasStorageURL reports whether a payload asks the API to upload its result
// to cloud storage. A payload without the key's name, and without an escape
// that could spell it, is answered without parsing: this runs on every
// check.
func hasStorageURL(raw json.RawMessage) bool {
	if !bytes.Contains(raw, []byte("storage_url")) && !bytes.Contains(raw, []byte(`\u`)) {
		return false
	}
	p, err := payload.Parse(raw, 0)
	if err != nil {
		return false
	}
	_, ok := p.StorageURL()
	return ok
}

// formatDuration prints a duration without trailing zero units: "1h",
// "10m", "1m30s", "1.5s".
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
