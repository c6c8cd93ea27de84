package submitter

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/oxypipe/oxypipe/internal/redact"
	"github.com/oxypipe/oxypipe/internal/stage"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/payload"
)

// item is one payload message on its way through a handler call.
type item struct {
	m     *stage.Msg
	env   *messages.Payload
	p     payload.Payload
	src   string // source, for log lines and reasons
	input string // input value, redacted
	// claim is the doc's claim while this call holds it.
	claim *topology.ClaimRef
	// retryOf is the answer that left the doc's outcome unknown, when this
	// call sends it again (the one retry of RetryUnknownOnce).
	retryOf string
	// res is how the message is settled (nil: ack).
	res error
	// jobID is the job id the doc's own claim holds, once known: with an
	// ack, the claim is settled after the message is gone (see settler).
	jobID string
}

// what names the payload in log lines and errors as "<src> <input>", the
// two things a user recognises a payload by.
func (it *item) what() string { return it.src + " " + it.input }

// maxInput bounds the input a reason or a log line names: a payload near
// the broker's message size, named in full in its failure event beside its
// own copy, would make the event too large to publish.
const maxInput = 256

// handler is the stage.BatchHandler (and stage.DeadLetterer) of a Submitter.
type handler struct{ s *Submitter }

// HandleBatch implements stage.BatchHandler.
func (h handler) HandleBatch(ctx context.Context, batch []*stage.Msg) []error {
	errs := make([]error, len(batch))
	items := make([]*item, 0, len(batch))
	pos := make([]int, 0, len(batch))
	for i, m := range batch {
		it, err := decode(m)
		if err != nil {
			errs[i] = err
			continue
		}
		items = append(items, it)
		pos = append(pos, i)
	}
	// Two messages of one doc (a duplicate publish) never go in the same
	// round: the second one sees the first one's claim as it was left.
	for pending := items; len(pending) > 0; {
		var round []*item
		round, pending = uniqueDocs(pending)
		h.s.round(ctx, round)
	}
	for k, it := range items {
		errs[pos[k]] = it.res
	}
	h.s.settler.add(items)
	return errs
}

// DeadLetter implements stage.DeadLetterer; see deadletter.go.
func (h handler) DeadLetter(ctx context.Context, m *stage.Msg, ev *messages.StatusEvent) error {
	return h.s.deadLetter(ctx, m, ev)
}

// decode reads a payload message. Its errors are *messages.DecodeError,
// which the runtime records as hard failures.
func decode(m *stage.Msg) (*item, error) {
	env, err := messages.DecodePayload(m.Subject(), m.Data())
	if err != nil {
		return nil, err
	}
	p, err := payload.Parse(env.Payload, 0)
	if err != nil {
		return nil, &messages.DecodeError{Subject: m.Subject(), Kind: messages.KindPayload, Run: env.Run, Doc: env.Doc,
			Reason: fmt.Sprintf(`"payload" is not a WSA request body: %v`, errors.Unwrap(err))}
	}
	_, input := p.Input()
	return &item{m: m, env: env, p: p, src: p.Source(), input: shorten(redact.String(input), maxInput)}, nil
}

// shorten cuts s to at most n bytes on a rune boundary, marking the cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// uniqueDocs splits items into the first message of each doc and the rest,
// keeping their order.
func uniqueDocs(items []*item) (round, rest []*item) {
	seen := make(map[string]bool, len(items))
	for _, it := range items {
		k := messages.ClaimKey(it.env.Run, it.env.Doc)
		if seen[k] {
			rest = append(rest, it)
			continue
		}
		seen[k] = true
		round = append(round, it)
	}
	return round, rest
}

// round handles payloads of distinct docs: run state and validation for
// each, then the API requests for those that may be submitted. A doc is
// claimed only inside its request's turn, once the pacer has admitted it
// (see send), so that a payload waiting for the rate budget holds no claim.
func (s *Submitter) round(ctx context.Context, items []*item) {
	views := make(map[string]runView)
	viewErrs := make(map[string]error)
	for _, it := range items {
		run := it.env.Run
		if _, ok := views[run]; ok {
			continue
		}
		if _, ok := viewErrs[run]; ok {
			continue
		}
		v, err := s.runs.view(ctx, run)
		if err != nil {
			viewErrs[run] = err
			continue
		}
		views[run] = v
	}

	ok := make([]bool, len(items))
	forEach(len(items), s.cfg.Concurrency, func(i int) {
		it := items[i]
		if err, found := viewErrs[it.env.Run]; found {
			it.res = s.retry(ctx, it, 0, "could not read the run's state: "+err.Error(), nil, err)
			return
		}
		ok[i] = s.prepare(ctx, it, views[it.env.Run])
	})
	var ready []*item
	for i, submit := range ok {
		if submit {
			ready = append(ready, items[i])
		}
	}
	reqs := s.plan(ready)
	forEach(len(reqs), s.cfg.Concurrency, func(i int) { s.send(ctx, reqs[i]) })
}

// prepare decides what to do with one payload before any request: it
// returns true when the payload should be submitted (its doc is claimed
// later, once its request is admitted), and otherwise settles the item.
func (s *Submitter) prepare(ctx context.Context, it *item, run runView) bool {
	if run.stopped() {
		s.runStopped(ctx, it, run)
		return false
	}
	if err := it.p.Validate(); err != nil {
		var ve *payload.ValidationError
		msg := err.Error()
		if errors.As(err, &ve) {
			msg = ve.Message
		}
		s.met.count(outRejected)
		it.res = stage.Hard(oxytype.Rejected, fmt.Sprintf("Rejected %s: %s", it.what(), msg), &oxytype.ErrorInfo{Message: msg})
		return false
	}
	return s.precheck(ctx, it)
}

// precheck looks at the claim of a payload that may have one (a
// redelivery, or a re-drive with a higher Attempt) before it queues for the
// rate budget: a doc whose job exists, whose claim another submitter holds
// or whose outcome is unknown is settled at once rather than after a wait
// for budget it does not need. It returns true when the payload should go
// on to be submitted. The claim taken after admission decides in the end;
// this look only saves waits, so a failed read lets the payload go on.
func (s *Submitter) precheck(ctx context.Context, it *item) bool {
	if it.m.NumDelivered() <= 1 && it.env.Attempt == 0 {
		return true // a first delivery: a claim is rare (a duplicate publish), and the claim decides
	}
	kctx, cancel := s.kvContext(ctx)
	ref, err := s.claims.Get(kctx, it.env.Run, it.env.Doc)
	cancel()
	if err != nil || ref.Claim.State == messages.ClaimReleased || s.isUnconfirmed(it, ref.Claim) {
		return true // the claim taken after admission decides (and adopts an unconfirmed one)
	}
	return s.claimHeld(ctx, it, *ref, true)
}

// claim claims the doc of an admitted payload. It returns false when the
// payload is not to be sent after all, having settled it: its claim shows a
// job, another submitter holds it, or the claim could not be taken.
func (s *Submitter) claim(ctx context.Context, it *item) bool {
	ref, err := s.acquire(ctx, it)
	var held *topology.ClaimHeldError
	switch {
	case err == nil:
		it.claim = ref
		return true
	case errors.As(err, &held):
		if s.claimHeld(ctx, it, held.Held, true) {
			return s.takeOver(ctx, it, held.Held)
		}
		return false
	default:
		it.res = s.retry(ctx, it, 0, "could not claim the payload: "+err.Error(), nil, err)
		return false
	}
}

// runStopped settles a payload of a stopped or failed run without calling
// the API — unless its claim shows it was submitted already, in which case
// its job goes on to be polled and written like any other. A claim that
// could not be read is read again on a later delivery (and at the last one
// the payload ends marked, see giveUp): it may hold a job id.
func (s *Submitter) runStopped(ctx context.Context, it *item, run runView) {
	kctx, cancel := s.kvContext(ctx)
	ref, err := s.claims.Get(kctx, it.env.Run, it.env.Doc)
	cancel()
	msg := run.why()
	info := &oxytype.ErrorInfo{Message: msg}
	switch {
	case errors.Is(err, topology.ErrNoClaim):
	case err != nil:
		it.res = s.retry(ctx, it, 0, "could not read the payload's claim: "+err.Error(), nil, err)
		return
	case ref.Claim.State != messages.ClaimReleased:
		s.claimHeld(ctx, it, *ref, false)
		return
	case ref.Claim.MayHaveBilled:
		info = markedInfo(info)
	}
	s.met.count(outUnsubmitted)
	it.res = stage.Hard(oxytype.Unsubmitted, msg, info)
}

// claimHeld decides about a doc whose claim another delivery holds or left,
// and settles the item — except for a deliberate re-drive (a higher
// Attempt over a stale claim without a job id, or an unknown one) and for
// the one retry of RetryUnknownOnce, for which it returns true: the caller
// may take the claim over (maySubmit false forbids that).
func (s *Submitter) claimHeld(ctx context.Context, it *item, ref topology.ClaimRef, maySubmit bool) bool {
	c := ref.Claim
	switch c.State {
	case messages.ClaimSubmitted:
		// The job exists (this doc was submitted, and the worker died
		// before acking, or this is a duplicate): never resubmit, publish
		// its Submitted again; the same message id makes the broker drop
		// the copy if the first one was stored.
		s.met.count(outRepublished)
		it.res = s.publishSubmitted(it, c.APIJobID, c.SubmittedAt)
		if !ref.Settled {
			it.jobID = c.APIJobID
		}
		return false
	case messages.ClaimHeld:
		age := time.Since(c.ClaimedAt)
		if age < s.cfg.ClaimStaleAfter {
			// Another submitter may be inside its request right now.
			s.met.count(outWait)
			it.res = stage.Wait(min(s.untilStale(c), s.cfg.ClaimRecheck))
			return false
		}
		if maySubmit && c.Attempt < it.env.Attempt {
			return true
		}
		s.met.count(outUnknown)
		it.res = stage.Hard(oxytype.Unsubmitted, unknownOutcome(c), &oxytype.ErrorInfo{Message: unknownOutcomeError, MayHaveBilled: true})
		return false
	case messages.ClaimUnknown:
		// An earlier answer left the outcome unknown. It is sent again only
		// once, when so configured, or for a deliberate re-drive.
		if maySubmit && (s.mayRetryUnknown(c) || c.Attempt < it.env.Attempt) {
			return true
		}
		s.met.count(outUnknown)
		reason := fmt.Sprintf("the outcome of submitting %s is unknown: %s; %s, so it is not submitted again automatically",
			it.what(), c.Reason, oxytype.MayHaveBilledText)
		it.res = stage.Hard(oxytype.Unsubmitted, reason, markedInfo(&oxytype.ErrorInfo{Message: c.Reason}))
		return false
	default:
		// Released between our look and now: claim it on the next delivery.
		it.res = s.retry(ctx, it, 0, fmt.Sprintf("the payload's claim is %q; trying again", c.State), nil, nil)
		return false
	}
}

// untilStale is how long the claim c has left before it is stale (at
// least 10ms, so that a wait is never a busy loop).
func (s *Submitter) untilStale(c messages.Claim) time.Duration {
	return max(s.cfg.ClaimStaleAfter-time.Since(c.ClaimedAt), 10*time.Millisecond)
}

// mayRetryUnknown reports whether a doc whose claim is unknown may be sent
// once more: RetryUnknownOnce is set and it was not sent again yet.
func (s *Submitter) mayRetryUnknown(c messages.Claim) bool {
	return s.cfg.RetryUnknownOnce && c.Retries == 0
}

// takeOver claims a doc again whose earlier request left an unknown
// outcome: for a deliberate re-drive (a higher Attempt), or for the one
// retry of RetryUnknownOnce, which the claim counts. The new claim keeps
// the may-have-billed mark.
func (s *Submitter) takeOver(ctx context.Context, it *item, ref topology.ClaimRef) bool {
	retry := ref.Claim.State == messages.ClaimUnknown && ref.Claim.Attempt >= it.env.Attempt
	kctx, cancel := s.kvContext(ctx)
	claim, err := s.claims.Retake(kctx, ref, it.env.Attempt, s.cfg.Stage.Instance, time.Now().UTC(), retry)
	cancel()
	if err != nil {
		it.res = s.retry(ctx, it, 0, "could not claim the payload again: "+err.Error(), nil, err)
		return false
	}
	it.claim = claim
	if retry {
		it.retryOf = ref.Claim.Reason
	}
	return true
}

// unknownOutcomeError is the run-log error of a doc whose claim was left
// without a job id by a submitter that never recorded the API's answer. It
// is the same for every such doc, so that a report of a run whose
// submitter died with many requests in flight says it once with their
// count; the claimant and the time are in the failure's reason
// (unknownOutcome), in the ledger and the logs.
const unknownOutcomeError = "the outcome of this payload's submission is unknown: a submitter claimed it and never recorded the API's answer " +
	"(it most likely stopped inside the request); " + oxytype.MayHaveBilledText + ", so it is not resubmitted automatically"

// unknownOutcome is the reason of a doc whose claim was left without a job
// id by a submitter that never recorded the API's answer.
func unknownOutcome(c messages.Claim) string {
	return fmt.Sprintf("the outcome of this payload's submission is unknown: %s claimed it at %s and never recorded the API's answer "+
		"(it most likely stopped inside the request); %s, so it is not resubmitted automatically",
		c.By, c.ClaimedAt.UTC().Format(time.RFC3339Nano), oxytype.MayHaveBilledText)
}

// publishSubmitted publishes the doc's Submitted and records its success
// at data type submitted.
func (s *Submitter) publishSubmitted(it *item, jobID string, at time.Time) error {
	sub := &messages.Submitted{Run: it.env.Run, Doc: it.env.Doc, Attempt: it.env.Attempt,
		APIJobID: jobID, Payload: it.env.Payload, SubmittedAt: at}
	if err := it.m.Publish(sub); err != nil {
		return err
	}
	return it.m.Record(&messages.StatusEvent{
		Run: it.env.Run, Doc: it.env.Doc, Attempt: it.env.Attempt,
		DataType: oxytype.DataSubmitted, Outcome: oxytype.Success,
		Facts: oxytype.Facts{APIJobID: jobID, Payload: it.p.Redacted()},
	})
}

// retry is a soft failure, or on the message's last allowed delivery what
// giveUp decides (rather than the runtime's generic "poison message").
func (s *Submitter) retry(ctx context.Context, it *item, delay time.Duration, reason string, info *oxytype.ErrorInfo, cause error) error {
	if !s.willRetry(it) {
		return s.giveUp(ctx, it, reason, info, cause)
	}
	s.met.count(outRetry)
	return &stage.RetryError{Delay: delay, Reason: reason, Info: info, Cause: cause}
}

// giveUp settles a payload on its last allowed delivery, after a failure
// that would otherwise be retried, by what its claim says: a job id means
// the job exists (its Submitted is published again); a claim that may hide
// a job, or one that cannot be read, makes the payload unsubmitted with the
// may-have-billed mark (a claim that may hold a job id is never plainly
// unsubmitted); else it is unsubmitted with the last error.
func (s *Submitter) giveUp(ctx context.Context, it *item, reason string, info *oxytype.ErrorInfo, cause error) error {
	msg := fmt.Sprintf("gave up after %d deliveries: %s", it.m.NumDelivered(), reason)
	if info == nil {
		info = &oxytype.ErrorInfo{Message: reason}
	}
	kctx, cancel := s.kvContext(ctx)
	ref, err := s.claims.Get(kctx, it.env.Run, it.env.Doc)
	cancel()
	marked := false
	switch {
	case errors.Is(err, topology.ErrNoClaim):
	case err != nil:
		marked = true
		msg += "; whether a job exists is unknown: the payload's claim could not be read (" + redact.String(err.Error()) + ")"
	case ref.Claim.State == messages.ClaimSubmitted:
		s.met.count(outRepublished)
		return s.publishSubmitted(it, ref.Claim.APIJobID, ref.Claim.SubmittedAt)
	default:
		marked = ref.Claim.OutcomeUnknown()
	}
	if marked {
		s.met.count(outUnknown)
		info = markedInfo(info)
	} else {
		s.met.count(outUnsubmitted)
	}
	return &stage.HardError{State: oxytype.Unsubmitted, Reason: msg, Info: info, Cause: cause}
}

// forEach calls fn(0..n-1) with at most limit calls running at once, and
// returns when all have returned.
func forEach(n, limit int, fn func(i int)) {
	if n == 1 || limit <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			fn(i)
		}()
	}
	wg.Wait()
}
