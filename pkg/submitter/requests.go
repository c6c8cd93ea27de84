package submitter

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/pkg/payload"
	"github.com/oxypipe/oxypipe/pkg/redact"
	"github.com/oxypipe/oxypipe/pkg/runlog"
	"github.com/oxypipe/oxypipe/pkg/stage"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// request is one API request to make: one payload, or a batch of payloads
// that share a payload.BatchKey.
type request struct {
	items []*item
	batch bool
}

// errNotSent is handed to the pacer for a ticket whose request was not
// sent after all, so that its cost is given back.
var errNotSent = errors.New("submitter: the request was not sent")

// notBatchable matches a batch answer's error for a source that takes no
// batches (wsa-api §2).
var notBatchable = regexp.MustCompile("^Source `[^`]*` is not available with a batch request\\.?$")

// plan turns the claimed payloads of a round into requests: payloads that
// differ only in their url, query or prompt go together as batches (sized
// for the rate limit), the others alone.
func (s *Submitter) plan(items []*item) []*request {
	if s.cfg.DisableBatch {
		return singleRequests(nil, items)
	}
	// Batches never mix runs: a run can be stopped on its own.
	var reqs []*request
	var runs []string
	byRun := map[string][]*item{}
	for _, it := range items {
		if _, ok := byRun[it.env.Run]; !ok {
			runs = append(runs, it.env.Run)
		}
		byRun[it.env.Run] = append(byRun[it.env.Run], it)
	}
	for _, run := range runs {
		reqs = append(reqs, s.planRun(byRun[run])...)
	}
	return reqs
}

// planRun plans the requests of one run's payloads.
func (s *Submitter) planRun(items []*item) []*request {
	var reqs []*request
	ps := make([]payload.Payload, len(items))
	for i, it := range items {
		ps[i] = it.p
	}
	for _, g := range payload.GroupBatches(ps) {
		group := make([]*item, len(g))
		gps := make([]payload.Payload, len(g))
		for i, k := range g {
			group[i], gps[i] = items[k], ps[k]
		}
		if len(group) < 2 || s.singleOnly(group[0].src) {
			reqs = singleRequests(reqs, group)
			continue
		}
		size := min(payload.BatchSize(s.batchLimit(gps[0]), gps), s.cfg.MaxBatch)
		for start := 0; start < len(group); start += size {
			chunk := group[start:min(start+size, len(group))]
			if len(chunk) == 1 {
				reqs = singleRequests(reqs, chunk)
				continue
			}
			reqs = append(reqs, &request{items: chunk, batch: true})
		}
	}
	return reqs
}

// singleRequests appends one request per item to reqs.
func singleRequests(reqs []*request, items []*item) []*request {
	for _, it := range items {
		reqs = append(reqs, &request{items: []*item{it}})
	}
	return reqs
}

// batchLimit is the per-window limit that sizes batches of payloads like p.
func (s *Submitter) batchLimit(p payload.Payload) int {
	l := s.pacer.Limits()
	if p.Rendered() && l.Render > 0 && (l.Total <= 0 || l.Render < l.Total) {
		return l.Render
	}
	return l.Total
}

func (s *Submitter) singleOnly(source string) bool {
	_, ok := s.noBatch.Load(source)
	return ok
}

// send makes one request and settles its payloads.
func (s *Submitter) send(ctx context.Context, r *request) {
	if r.batch {
		s.sendBatch(ctx, r.items)
		return
	}
	s.sendSingle(ctx, r.items[0])
}

// sendSingles sends each payload on its own.
func (s *Submitter) sendSingles(ctx context.Context, items []*item) {
	forEach(len(items), s.cfg.Concurrency, func(i int) { s.sendSingle(ctx, items[i]) })
}

func (s *Submitter) sendSingle(ctx context.Context, it *item) {
	t, ok := s.admit(ctx, []*item{it})
	if !ok {
		return
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.SubmitTimeout)
	start := time.Now()
	job, rl, err := s.client.Submit(pctx, it.p)
	cancel()
	s.pacer.Done(t, rl, err)
	s.observe(endpointSubmit, 1, start, err)
	if err != nil {
		s.failed(ctx, it, err, true)
		return
	}
	s.accepted(ctx, it, job.ID)
}

func (s *Submitter) sendBatch(ctx context.Context, items []*item) {
	t, ok := s.admit(ctx, items)
	if !ok {
		return
	}
	ps := make([]payload.Payload, len(items))
	for i, it := range items {
		ps[i] = it.p
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.SubmitTimeout)
	start := time.Now()
	res, rl, err := s.client.SubmitBatch(pctx, ps)
	cancel()
	s.pacer.Done(t, rl, err)
	s.observe(endpointBatch, len(items), start, err)
	src := items[0].src
	if err != nil {
		switch wsa.Classify(err) {
		case wsa.Reject, wsa.Throttle:
			// Refused whole: by one value (a throttled domain), by its form,
			// or locally as not batchable. No job was created and the
			// refusal cost nothing, so each payload gets its own verdict.
			s.log.Info("batch refused whole; submitting its payloads one by one",
				zap.String("source", src), zap.Int("payloads", len(items)), zap.String("error", redact.String(err.Error())))
			s.sendSingles(ctx, items)
			return
		case wsa.Retry, wsa.Canceled:
			if wsa.MayHaveCreatedJob(err) && s.willRetry(items[0]) {
				s.log.Warn(fmt.Sprintf("Retrying a batch of %d %s payloads after %s; the API may have created their jobs, and a duplicate bills",
					len(items), src, redact.String(err.Error())))
			}
		}
		for _, it := range items {
			s.failed(ctx, it, err, false)
		}
		return
	}
	for _, j := range res.UnmatchedJobs {
		s.log.Error("the API created a job that matches no payload of its batch; it bills and is not followed",
			zap.String("source", src), zap.String("api_job_id", j.ID))
	}
	var alone []*item
	for i, bi := range res.Items {
		it := items[i]
		var ae *wsa.APIError
		switch {
		case bi.Err == nil:
			s.accepted(ctx, it, bi.Job.ID)
		case errors.As(bi.Err, &ae) && notBatchable.MatchString(ae.Message):
			// No job was created for it: keep the claim and send it alone.
			if _, known := s.noBatch.LoadOrStore(it.src, true); !known {
				s.log.Info("source takes no batches; submitting its payloads one by one from now on", zap.String("source", it.src))
			}
			alone = append(alone, it)
		default:
			s.failed(ctx, it, bi.Err, false)
		}
	}
	if len(alone) > 0 {
		s.sendSingles(ctx, alone)
	}
}

// admit checks that the payloads may still be submitted, then waits for the
// rate budget. When it returns false it has settled every item.
func (s *Submitter) admit(ctx context.Context, items []*item) (wsa.Ticket, bool) {
	if !s.mayStart(ctx, items) {
		return wsa.Ticket{}, false
	}
	ps := make([]payload.Payload, len(items))
	for i, it := range items {
		ps[i] = it.p
	}
	wctx, cancel := s.waitContext(ctx)
	if s.stopping != nil {
		stop := context.AfterFunc(s.stopping, cancel)
		defer stop()
	}
	start := time.Now()
	t, err := s.pacer.Wait(wctx, wsa.CostOf(ps...))
	cancel()
	s.met.pacerWait.Observe(time.Since(start).Seconds())
	if err != nil {
		// Out of time for this handler call (a long 429 pause) or stopping:
		// give the payloads back untouched.
		delay := s.cfg.RateLimitedRetry
		if s.stopping != nil && s.stopping.Err() != nil {
			delay = 0 // draining: let another replica have it now
		}
		for _, it := range items {
			s.release(ctx, it, "not sent: "+err.Error())
			s.met.count(outWait)
			it.res = stage.Wait(delay)
		}
		return wsa.Ticket{}, false
	}
	if !s.mayStart(ctx, items) { // stopped while waiting
		s.pacer.Done(t, wsa.RateLimit{}, errNotSent)
		return wsa.Ticket{}, false
	}
	return t, true
}

// mayStart settles the items and returns false when their run was stopped
// by this process (an earlier 401/403) or the worker is draining.
func (s *Submitter) mayStart(ctx context.Context, items []*item) bool {
	if st, _ := s.worker.State(); st == stage.StateDraining || st == stage.StateStopped {
		for _, it := range items {
			s.release(ctx, it, "not sent: the submitter is stopping")
			it.res = stage.Wait(0)
		}
		return false
	}
	run, stopped := s.runs.stopped(items[0].env.Run)
	if !stopped {
		return true
	}
	for _, it := range items {
		s.release(ctx, it, "not sent: the run was stopped")
		s.met.count(outUnsubmitted)
		msg := run.why()
		it.res = stage.Hard(runlog.Unsubmitted, msg, &runlog.ErrorInfo{Message: msg})
	}
	return false
}

// waitContext bounds a wait for the rate budget so that the request and the
// recording of its answer still fit in the handler call's deadline. The
// caller also ends it when the submitter starts draining.
func (s *Submitter) waitContext(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, deadline.Add(-s.cfg.SubmitTimeout-2*s.cfg.KVTimeout))
}

func (s *Submitter) observe(endpoint string, values int, start time.Time, err error) {
	s.met.latency.WithLabelValues(endpoint).Observe(time.Since(start).Seconds())
	s.met.batchSize.Observe(float64(values))
	class := "accepted"
	if err != nil {
		class = wsa.Classify(err).String()
	}
	s.met.requests.WithLabelValues(endpoint, class).Inc()
}
