package submitter

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/internal/redact"
	"github.com/oxypipe/oxypipe/internal/stage"
	"github.com/oxypipe/oxypipe/pkg/payload"
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

// notBatchable matches the error a batch answer gives for a source that
// takes no batches.
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

// send makes one request and settles its payloads. The order is what
// keeps a crash cheap: wait for the rate budget, then claim the docs, then
// send. A payload waiting for the budget holds no claim, so a submitter
// killed while its payloads wait leaves nothing behind for them; only the
// docs of a request admitted and claimed can be left claimed without a job
// id.
func (s *Submitter) send(ctx context.Context, r *request) {
	t, items, ok := s.admit(ctx, r.items)
	if !ok {
		return
	}
	s.warnRetries(r, items)
	if !r.batch || len(items) == 1 {
		// (A batch whose other payloads turned out to be taken goes alone.)
		s.submitSingle(ctx, t, items[0])
		return
	}
	s.submitBatch(ctx, t, items)
}

// warnRetries logs a warning for the payloads of a request that
// are sent again after an unknown outcome (the one retry of
// RetryUnknownOnce): their first request may have created a job, and this
// one may bill a second.
func (s *Submitter) warnRetries(r *request, items []*item) {
	var again []*item
	for _, it := range items {
		if it.retryOf != "" {
			again = append(again, it)
		}
	}
	if len(again) > 1 && r.batch && len(items) > 1 {
		s.log.Warn(fmt.Sprintf("Retrying a batch of %d %s payloads after %s; the API may have created their jobs, and a duplicate bills",
			len(again), again[0].src, again[0].retryOf))
		return
	}
	for _, it := range again {
		s.log.Warn(fmt.Sprintf("Retrying a submission of %s after %s; the API may have created its job, and a duplicate bills",
			it.what(), it.retryOf))
	}
}

// sendSingles sends each payload of a batch refused (wholly or for these
// payloads) on its own. The batch created no job for them; their claims
// are released first, so that each waits for its own turn of the rate
// budget without a claim, like any payload, and is claimed again when
// admitted.
func (s *Submitter) sendSingles(ctx context.Context, items []*item, reason string) {
	forEach(len(items), s.cfg.Concurrency, func(i int) {
		it := items[i]
		s.release(ctx, it, reason)
		s.send(ctx, &request{items: []*item{it}})
	})
}

// submitSingle submits one admitted and claimed payload.
func (s *Submitter) submitSingle(ctx context.Context, t wsa.Ticket, it *item) {
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.SubmitTimeout)
	start := time.Now()
	job, rl, err := s.client.Submit(pctx, it.p)
	cancel()
	s.pacer.Done(t, rl, err)
	s.observe(endpointSubmit, 1, start, err)
	if err != nil {
		s.failed(ctx, it, err)
		return
	}
	s.accepted(ctx, []*item{it}, []string{job.ID})
}

// submitBatch submits admitted and claimed payloads as one batch.
func (s *Submitter) submitBatch(ctx context.Context, t wsa.Ticket, items []*item) {
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
			s.sendSingles(ctx, items, "batch refused whole: to be sent singly")
			return
		}
		// A 5xx or a lost answer leaves the outcome of every payload of
		// the batch unknown; a 429 created none of their jobs. Each answer
		// is recorded under its claim at once, all of them together (see
		// recordAll).
		s.recordAll(len(items), func(i int) { s.failed(ctx, items[i], err) })
		return
	}
	for _, j := range res.UnmatchedJobs {
		s.log.Error("the API created a job that matches no payload of its batch; it bills and is not followed",
			zap.String("source", src), zap.String("api_job_id", j.ID))
	}
	// The ids exist nowhere else until they are stored: they are stored
	// first, all of them together (see accepted), then the other answers.
	var ok []*item
	var ids []string
	for i, bi := range res.Items {
		if bi.Err == nil {
			ok, ids = append(ok, items[i]), append(ids, bi.Job.ID)
		}
	}
	if len(ok) > 0 {
		s.accepted(ctx, ok, ids)
	}
	sendAlone := make([]bool, len(res.Items))
	s.recordAll(len(res.Items), func(i int) {
		it, bi := items[i], res.Items[i]
		var ae *wsa.APIError
		switch {
		case bi.Err == nil:
		case errors.As(bi.Err, &ae) && notBatchable.MatchString(ae.Message):
			// No job was created for it: send it alone.
			if _, known := s.noBatch.LoadOrStore(it.src, true); !known {
				s.log.Info("source takes no batches; submitting its payloads one by one from now on", zap.String("source", it.src))
			}
			sendAlone[i] = true
		default:
			s.failed(ctx, it, bi.Err)
		}
	})
	var alone []*item
	for i, a := range sendAlone {
		if a {
			alone = append(alone, items[i])
		}
	}
	if len(alone) > 0 {
		s.sendSingles(ctx, alone, "source takes no batches: to be sent singly")
	}
}

// recordAll records the answers of a batch's n payloads under their claims
// (record(i) for each), Concurrency at a time. One after the other, the
// last claim of a large batch would wait n bucket round trips for its job
// id: on a loaded machine longer than ClaimStaleAfter, so that a duplicate
// of its payload took the live submission for one that died inside its
// request and recorded a false "outcome unknown".
func (s *Submitter) recordAll(n int, record func(i int)) {
	forEach(n, s.cfg.Concurrency, record)
}

// admit checks that the payloads may still be submitted, waits for the
// rate budget, then claims their docs. It returns the ticket and the
// payloads claimed (in their order), or false when none is to be sent; it
// has then settled every item and handed the ticket back. Payloads whose
// claim shows another delivery (a job, a holder, a lost answer) are
// settled and left out; the ticket's cost stays what it was for the whole
// request, which only errs on the slow side.
func (s *Submitter) admit(ctx context.Context, items []*item) (wsa.Ticket, []*item, bool) {
	if !s.mayStart(ctx, items) {
		return wsa.Ticket{}, nil, false
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
		// give the payloads back untouched; they hold no claim yet.
		delay := s.cfg.RateLimitedRetry
		if s.stopping != nil && s.stopping.Err() != nil {
			delay = 0 // draining: let another replica have it now
		}
		for _, it := range items {
			s.met.count(outWait)
			it.res = stage.Wait(delay)
		}
		return wsa.Ticket{}, nil, false
	}
	if !s.mayStart(ctx, items) { // stopped while waiting
		s.pacer.Done(t, wsa.RateLimit{}, errNotSent)
		return wsa.Ticket{}, nil, false
	}
	ok := make([]bool, len(items))
	forEach(len(items), s.cfg.Concurrency, func(i int) { ok[i] = s.claim(ctx, items[i]) })
	var claimed []*item
	for i, it := range items {
		if ok[i] {
			claimed = append(claimed, it)
		}
	}
	claimed = s.dropSettled(ctx, claimed)
	if len(claimed) == 0 {
		s.pacer.Done(t, wsa.RateLimit{}, errNotSent)
		return wsa.Ticket{}, nil, false
	}
	return t, claimed, true
}

// mayStart settles the items and returns false when their run was stopped
// (by this process after a 401/403, or in the runs bucket by anyone, as
// read at most RunStateTTL ago), or the worker is draining. The items hold
// no claim yet; a claim an earlier delivery left (a job, an unknown outcome)
// decides how a payload of a stopped run ends (see runStopped). It is asked
// again after the wait for the rate budget, which can be long: a stop during
// the wait must keep the request from being sent.
func (s *Submitter) mayStart(ctx context.Context, items []*item) bool {
	if st, _ := s.worker.State(); st == stage.StateDraining || st == stage.StateStopped {
		for _, it := range items {
			it.res = stage.Wait(0)
		}
		return false
	}
	run, err := s.runs.view(ctx, items[0].env.Run)
	if err != nil {
		for _, it := range items {
			it.res = s.retry(ctx, it, 0, "could not read the run's state: "+err.Error(), nil, err)
		}
		return false
	}
	if !run.stopped() {
		return true
	}
	forEach(len(items), s.cfg.Concurrency, func(i int) { s.runStopped(ctx, items[i], run) })
	return false
}

// waitContext bounds a wait for the rate budget so that the claim, the
// request and the recording of its answer still fit in the handler call's
// deadline. The caller also ends it when the submitter starts draining.
func (s *Submitter) waitContext(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, deadline.Add(-afterAdmission(s.cfg.SubmitTimeout, s.cfg.KVTimeout)))
}

// afterAdmission is the time a request needs once the pacer admitted it:
// claim its docs, send it, and record the answer under the claims.
func afterAdmission(submit, kv time.Duration) time.Duration { return submit + 3*kv }

func (s *Submitter) observe(endpoint string, values int, start time.Time, err error) {
	s.met.latency.WithLabelValues(endpoint).Observe(time.Since(start).Seconds())
	s.met.batchSize.Observe(float64(values))
	class := "accepted"
	if err != nil {
		class = wsa.Classify(err).String()
	}
	s.met.requests.WithLabelValues(endpoint, class).Inc()
}
