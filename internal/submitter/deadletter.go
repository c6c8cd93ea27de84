package submitter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/internal/redact"
	"github.com/oxypipe/oxypipe/internal/stage"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// deadLetter adjusts the record of a payload the runtime gives up on
// without calling the handler: one delivered more than MaxDeliver times
// (its submitter kept dying on it, or kept finding its claim held). The
// claim says what is true:
//
//   - submitted: the job exists. The doc is not a failure: its Submitted
//     is published again and the event becomes the success at submitted
//     (or, when that cannot be published, unfetched with the job's id).
//   - claimed, not stale yet: a live submitter may still be inside its
//     request, so the outcome is not known to be unknown. The message is
//     kept (stage.Wait, ClaimRecheck at a time) until the claim holds a
//     job or is stale: a delivery count must never turn a submission in
//     progress into a hard failure.
//   - claimed, and stale (ClaimStaleAfter old): a submitter took the doc
//     and never recorded the API's answer: unsubmitted, outcome unknown,
//     may have billed.
//   - unknown, or released with the may-have-billed mark: unsubmitted, may
//     have billed.
//   - none, or released: nothing was created: unsubmitted, with the reason.
//   - unreadable: it may hold a job id, so never plainly unsubmitted:
//     unsubmitted, may have billed, saying the claim could not be read.
func (s *Submitter) deadLetter(ctx context.Context, m *stage.Msg, ev *messages.StatusEvent) error {
	k := m.Key()
	if k.Run == "" || k.Doc == "" {
		return nil // not a readable payload message: the runtime's record stands
	}
	kctx, cancel := s.kvContext(ctx)
	ref, err := s.claims.Get(kctx, k.Run, k.Doc)
	cancel()
	ev.State = oxytype.Unsubmitted
	if ev.Error == nil {
		ev.Error = &oxytype.ErrorInfo{Message: ev.Reason}
	}
	switch {
	case errors.Is(err, topology.ErrNoClaim):
	case err != nil:
		s.log.Warn("dead letter: could not read the payload's claim; it is recorded as possibly billed",
			zap.String("run", k.Run), zap.String("doc", k.Doc), zap.Error(err))
		s.met.count(outUnknown)
		ev.Reason += "; whether a job exists is unknown: the payload's claim could not be read (" + redact.String(err.Error()) + ")"
		ev.Error = markedInfo(ev.Error)
		return nil
	case ref.Claim.State == messages.ClaimSubmitted:
		if s.successFromClaim(m, ev, ref.Claim) {
			return nil
		}
		c := ref.Claim
		ev.State, ev.APIJobID = oxytype.Unfetched, c.APIJobID
		ev.Error = &oxytype.ErrorInfo{Message: fmt.Sprintf("job %s exists (the payload's claim holds its id), but it could not be passed on to be fetched; fetch it by id", c.APIJobID)}
		return nil
	case ref.Claim.State == messages.ClaimHeld && time.Since(ref.Claim.ClaimedAt) < s.cfg.ClaimStaleAfter:
		s.met.count(outWait)
		return stage.Wait(min(s.untilStale(ref.Claim), s.cfg.ClaimRecheck))
	case ref.Claim.State == messages.ClaimHeld:
		s.met.count(outUnknown)
		ev.Error = &oxytype.ErrorInfo{Message: unknownOutcomeError, MayHaveBilled: true}
		ev.Reason = fmt.Sprintf("%s; %s", ev.Reason, unknownOutcome(ref.Claim))
		return nil
	case ref.Claim.OutcomeUnknown():
		s.met.count(outUnknown)
		ev.Reason = fmt.Sprintf("%s; an earlier request's outcome is unknown (%s)", ev.Reason, ref.Claim.Reason)
		ev.Error = markedInfo(ev.Error)
		return nil
	}
	s.met.count(outUnsubmitted)
	ev.Error.Message += "; the payload was not submitted"
	return nil
}

// successFromClaim turns the dead letter of a submitted doc into its
// success: Submitted is published again from the claim.
func (s *Submitter) successFromClaim(m *stage.Msg, ev *messages.StatusEvent, c messages.Claim) bool {
	env, err := messages.DecodePayload(m.Subject(), m.Data())
	if err != nil {
		return false
	}
	sub := &messages.Submitted{Run: env.Run, Doc: env.Doc, Attempt: env.Attempt,
		APIJobID: c.APIJobID, Payload: env.Payload, SubmittedAt: c.SubmittedAt}
	if err := m.Publish(sub); err != nil {
		return false
	}
	s.met.count(outRepublished)
	*ev = messages.StatusEvent{
		Run: env.Run, Doc: env.Doc, Attempt: env.Attempt,
		DataType: oxytype.DataSubmitted, Outcome: oxytype.Success,
		Origin: ev.Consumer, Facts: oxytype.Facts{APIJobID: c.APIJobID, Payload: ev.Payload}, Time: ev.Time,
	}
	return true
}
