package submitter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/topology"
)

// kvAttempts is how often a claim update whose answer was lost is tried.
const kvAttempts = 3

// kvContext is a context for one bucket operation. It is detached from the
// handler's cancellation: a claim operation cut off half-way leaves the
// claim in a state nobody knows, which costs a payload an "outcome unknown".
func (s *Submitter) kvContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), s.cfg.KVTimeout)
}

// acquire claims the item's doc. When the answer of the create is lost (a
// timeout, a reconnect), the claim is read back, on a context of its own
// (the create's has run out): if it is the one this call wrote, it is ours.
// When it cannot be read back either, the time this call wrote is
// remembered (unconfirmed), and a later delivery that finds exactly that
// claim takes it as its own: no request was sent under it. (Without this,
// the claim would look like a submission in flight, be waited for until
// stale and end as a false "outcome unknown" that nothing ever billed: a
// broker slow enough to time out one bucket operation made whole batches
// of docs end that way.)
func (s *Submitter) acquire(ctx context.Context, it *item) (*topology.ClaimRef, error) {
	now := time.Now().UTC()
	kctx, cancel := s.kvContext(ctx)
	ref, err := s.claims.Acquire(kctx, it.env.Run, it.env.Doc, it.env.Attempt, s.cfg.Instance, now)
	cancel()
	var held *topology.ClaimHeldError
	switch {
	case err == nil:
		return ref, nil
	case errors.As(err, &held):
		if s.adopt(it, held.Held) {
			return &held.Held, nil
		}
		return nil, err
	}
	key := messages.ClaimKey(it.env.Run, it.env.Doc)
	for range kvAttempts {
		kctx, cancel := s.kvContext(ctx)
		got, gerr := s.claims.Get(kctx, it.env.Run, it.env.Doc)
		cancel()
		switch {
		case gerr == nil && got.Claim.State == messages.ClaimHeld && got.Claim.By == s.cfg.Instance &&
			got.Claim.ClaimedAt.Equal(now) && got.Claim.Attempt == it.env.Attempt:
			return got, nil
		case gerr == nil, errors.Is(gerr, topology.ErrNoClaim):
			return nil, err // not written, or someone else's: the caller retries
		}
	}
	s.unconfirmed.Store(key, now)
	return nil, err
}

// isUnconfirmed reports whether c is a claim this process wrote for the
// item without learning it (see acquire).
func (s *Submitter) isUnconfirmed(it *item, c messages.Claim) bool {
	at, ok := s.unconfirmed.Load(messages.ClaimKey(it.env.Run, it.env.Doc))
	return ok && c.State == messages.ClaimHeld && c.By == s.cfg.Instance && c.Attempt == it.env.Attempt && c.ClaimedAt.Equal(at.(time.Time))
}

// adopt reports whether ref is a claim this process wrote for the item
// without learning it (see acquire), which the item may take as its own.
// Of two deliveries of the doc that try at once, one adopts it.
func (s *Submitter) adopt(it *item, ref topology.ClaimRef) bool {
	key := messages.ClaimKey(it.env.Run, it.env.Doc)
	at, ok := s.unconfirmed.Load(key)
	return ok && s.isUnconfirmed(it, ref.Claim) && s.unconfirmed.CompareAndDelete(key, at)
}

// release gives the claim back because the API created no job (or, after a
// 5xx, because the origin's behaviour is to try again). A lost answer is
// checked by reading the claim back.
func (s *Submitter) release(ctx context.Context, it *item, reason string) {
	ref := it.claim
	if ref == nil {
		return
	}
	it.claim = nil
	var err error
	for range kvAttempts {
		kctx, cancel := s.kvContext(ctx)
		err = s.claims.Release(kctx, ref, reason)
		if err == nil {
			cancel()
			return
		}
		got, gerr := s.claims.Get(kctx, ref.Claim.Run, ref.Claim.Doc)
		cancel()
		switch {
		case gerr != nil:
			continue
		case got.Claim.State == messages.ClaimReleased:
			return // our release landed, or someone else's did
		case got.Revision == ref.Revision:
			continue // unchanged: try again
		default:
			s.log.Error("could not release a claim: another submitter changed it",
				zap.String("run", ref.Claim.Run), zap.String("doc", ref.Claim.Doc),
				zap.String("state", string(got.Claim.State)), zap.String("by", got.Claim.By))
			return
		}
	}
	// The claim stays "claimed". This process knows that the API created
	// nothing under it, so it remembers the claim, and the payload's next
	// delivery here takes it back as if it had been released (see
	// acquire). Elsewhere (after a restart) the claim looks like a request
	// in flight and ends, once stale, as an unknown outcome rather than
	// risk a second bill.
	s.unconfirmed.Store(messages.ClaimKey(ref.Claim.Run, ref.Claim.Doc), ref.Claim.ClaimedAt.UTC())
	s.log.Error("could not release a claim; this process takes it back at the payload's next delivery",
		zap.String("run", ref.Claim.Run), zap.String("doc", ref.Claim.Doc), zap.Error(err))
}

// markSubmitted stores the API job id under the claim. It must not give up
// lightly: until it lands, a redelivery would take the doc for an unknown
// outcome. When it cannot land, the job is still published (its results
// are wanted and it bills either way) and the failure is logged.
func (s *Submitter) markSubmitted(ctx context.Context, it *item, jobID string, at time.Time) {
	ref := it.claim
	if ref == nil {
		return
	}
	var err error
retry:
	for attempt := range kvAttempts {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt) * 100 * time.Millisecond)
		}
		kctx, cancel := s.kvContext(ctx)
		err = s.claims.MarkSubmitted(kctx, ref, jobID, at)
		if err == nil {
			cancel()
			return
		}
		got, gerr := s.claims.Get(kctx, ref.Claim.Run, ref.Claim.Doc)
		cancel()
		switch {
		case gerr != nil, got.Revision == ref.Revision:
			continue // unknown or unchanged: try again
		case got.Claim.State == messages.ClaimSubmitted && got.Claim.APIJobID == jobID:
			*ref = *got // our update landed; its answer was lost
			return
		case got.Claim.State == messages.ClaimSubmitted:
			err = fmt.Errorf("the claim holds job %s: the doc was billed twice", got.Claim.APIJobID)
		default:
			err = fmt.Errorf("the claim was changed to %q by %s", got.Claim.State, got.Claim.By)
		}
		break retry
	}
	s.log.Error("a job was created but its id could not be stored under the claim; publishing it anyway",
		zap.String("run", ref.Claim.Run), zap.String("doc", ref.Claim.Doc), zap.String("api_job_id", jobID), zap.Error(err))
}
