package submitter

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/messages"
)

// kvAttempts is how often a claim update whose answer was lost is tried
// (markSubmitted excepted: it tries until the id is stored).
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
// Otherwise the time this call wrote is remembered (unconfirmed): a write
// whose answer timed out may still land after the read-back, and a later
// delivery that finds exactly that claim (through its own create or its
// read-back) takes it as its own, since no request was sent under it.
// Without this, the claim would look like a submission in flight, be waited
// for until stale and end as a false "outcome unknown" that nothing ever
// billed: a broker slow enough to time out one bucket operation made whole
// batches of docs end that way.
func (s *Submitter) acquire(ctx context.Context, it *item) (*topology.ClaimRef, error) {
	now := time.Now().UTC()
	kctx, cancel := s.kvContext(ctx)
	ref, err := s.claims.Acquire(kctx, it.env.Run, it.env.Doc, it.env.Attempt, s.cfg.Stage.Instance, now)
	cancel()
	var held *topology.ClaimHeldError
	switch {
	case err == nil:
		s.unconfirmed.forget(messages.ClaimKey(it.env.Run, it.env.Doc))
		return ref, nil
	case errors.As(err, &held):
		if s.adopt(it, held.Held) {
			return &held.Held, nil
		}
		return nil, err
	}
	// Whatever the read-back shows, this call's write may still land later
	// (the broker may hold it while the answer timed out), so its time is
	// remembered unless the claim read back is this call's or an earlier
	// lost one's.
	s.unconfirmed.remember(messages.ClaimKey(it.env.Run, it.env.Doc), now)
readBack:
	for range kvAttempts {
		kctx, cancel := s.kvContext(ctx)
		got, gerr := s.claims.Get(kctx, it.env.Run, it.env.Doc)
		cancel()
		switch {
		case gerr == nil && s.adopt(it, *got):
			return got, nil // this call's claim, or an earlier lost create's
		case gerr == nil, errors.Is(gerr, topology.ErrNoClaim):
			break readBack // not written (yet), or someone else's: the caller retries
		}
	}
	return nil, err
}

// ownClaim reports whether c is the claim this process wrote for the item
// at the time at.
func (s *Submitter) ownClaim(it *item, c messages.Claim, at time.Time) bool {
	return c.State == messages.ClaimHeld && c.By == s.cfg.Stage.Instance && c.Attempt == it.env.Attempt && c.ClaimedAt.Equal(at)
}

// isUnconfirmed reports whether c is a claim this process wrote for the
// item without learning it (see acquire).
func (s *Submitter) isUnconfirmed(it *item, c messages.Claim) bool {
	return s.ownClaim(it, c, c.ClaimedAt) && s.unconfirmed.has(messages.ClaimKey(it.env.Run, it.env.Doc), c.ClaimedAt)
}

// adopt reports whether ref is a claim this process wrote for the item
// without learning it (see acquire), which the item may take as its own.
// Of two deliveries of the doc that try at once, one adopts it.
func (s *Submitter) adopt(it *item, ref topology.ClaimRef) bool {
	return s.ownClaim(it, ref.Claim, ref.Claim.ClaimedAt) &&
		s.unconfirmed.take(messages.ClaimKey(it.env.Run, it.env.Doc), ref.Claim.ClaimedAt)
}

// release gives the claim back because the API created no job. A lost
// answer is checked by reading the claim back. The claim keeps its
// may-have-billed mark.
func (s *Submitter) release(ctx context.Context, it *item, reason string) {
	s.moveClaim(ctx, it, messages.ClaimReleased, func(kctx context.Context, ref *topology.ClaimRef) error {
		return s.claims.Release(kctx, ref, reason)
	})
}

// markUnknown records under the claim that the API's answer left the
// outcome unknown (reason is the answer). When it cannot, the claim stays
// "claimed", which a redelivery takes for an unknown outcome once it is
// stale: the doc is marked either way.
func (s *Submitter) markUnknown(ctx context.Context, it *item, reason string) {
	s.moveClaim(ctx, it, messages.ClaimUnknown, func(kctx context.Context, ref *topology.ClaimRef) error {
		return s.claims.MarkUnknown(kctx, ref, reason)
	})
}

// moveClaim moves the item's claim to state with move, trying again when
// the answer was lost, and gives the claim up (it.claim becomes nil).
func (s *Submitter) moveClaim(ctx context.Context, it *item, state messages.ClaimState,
	move func(context.Context, *topology.ClaimRef) error) {
	ref := it.claim
	if ref == nil {
		return
	}
	it.claim = nil
	var err error
	for range kvAttempts {
		kctx, cancel := s.kvContext(ctx)
		err = move(kctx, ref)
		if err == nil {
			cancel()
			return
		}
		got, gerr := s.claims.Get(kctx, ref.Claim.Run, ref.Claim.Doc)
		cancel()
		switch {
		case gerr != nil:
			continue
		case got.Claim.State == state:
			return // our update landed, or someone else's did
		case got.Revision == ref.Revision:
			continue // unchanged: try again
		default:
			s.log.Error("could not update a claim: another submitter changed it",
				zap.String("run", ref.Claim.Run), zap.String("doc", ref.Claim.Doc), zap.String("to", string(state)),
				zap.String("state", string(got.Claim.State)), zap.String("by", got.Claim.By))
			return
		}
	}
	if state == messages.ClaimReleased {
		// The claim stays "claimed". This process knows that the API
		// created nothing under it, so it remembers the claim, and the
		// payload's next delivery here takes it back as if it had been
		// released (see acquire). Elsewhere (after a restart) the claim
		// looks like a request in flight and ends, once stale, as an
		// unknown outcome rather than risk a second bill.
		s.unconfirmed.remember(messages.ClaimKey(ref.Claim.Run, ref.Claim.Doc), ref.Claim.ClaimedAt)
		s.log.Error("could not release a claim; this process takes it back at the payload's next delivery",
			zap.String("run", ref.Claim.Run), zap.String("doc", ref.Claim.Doc), zap.Error(err))
		return
	}
	// The claim stays "claimed": a redelivery will wait for it to go stale
	// and then record the doc as an unknown outcome, marked, rather than
	// risk a second bill.
	s.log.Error("could not update a claim; its payload will end as an unknown outcome",
		zap.String("run", ref.Claim.Run), zap.String("doc", ref.Claim.Doc), zap.String("to", string(state)), zap.Error(err))
}

// Back-off of markSubmitted while the claims bucket does not answer.
const (
	storeFirstWait = 100 * time.Millisecond
	storeMaxWait   = 5 * time.Second
	storeLogEvery  = time.Minute
)

// markSubmitted stores the API job id under the claim. It does not give up
// while the process lives: the id exists nowhere else, and until it is
// stored a redelivery would take the doc for an unknown outcome. So it
// tries again with back-off (the caller pinned the message: heartbeats keep
// it, and a drain waits for it), and logs the id every minute while it
// cannot, so that the job can be found whatever happens to the process. It
// returns without storing only when the connection is closed for good, or
// the claim holds another job (the doc was billed twice); the job is then
// published all the same (its results are wanted and it bills either way).
func (s *Submitter) markSubmitted(ctx context.Context, it *item, jobID string, at time.Time) {
	ref := it.claim
	if ref == nil {
		return
	}
	fields := func(extra ...zap.Field) []zap.Field {
		return append([]zap.Field{zap.String("run", ref.Claim.Run), zap.String("doc", ref.Claim.Doc), zap.String("api_job_id", jobID)}, extra...)
	}
	start := time.Now()
	wait, logAt, logged := storeFirstWait, start, false
	for {
		kctx, cancel := s.kvContext(ctx)
		err := s.claims.MarkSubmitted(kctx, ref, jobID, at)
		if err == nil {
			cancel()
			if logged {
				s.log.Info("the job's id is stored under its claim at last", fields(zap.Duration("waited", time.Since(start).Round(time.Millisecond)))...)
			}
			return
		}
		got, gerr := s.claims.Get(kctx, ref.Claim.Run, ref.Claim.Doc)
		cancel()
		switch {
		case errors.Is(gerr, topology.ErrNoClaim):
			// The claim vanished (its bucket was lost and made again): the
			// id is written as a new claim.
			ref.Revision = 0
		case gerr != nil, got.Revision == ref.Revision:
			// unknown or unchanged: try again
		case got.Claim.State == messages.ClaimSubmitted && got.Claim.APIJobID == jobID:
			*ref = *got // our update landed; its answer was lost
			return
		case got.Claim.State == messages.ClaimSubmitted:
			s.met.billedTwice.Inc()
			s.log.Error("a job was created but the claim holds another one: the doc was billed twice; publishing this job too",
				fields(zap.String("claim_job_id", got.Claim.APIJobID))...)
			return
		default:
			// The claim moved without us (it went stale during an outage
			// and was taken over): the job exists all the same, and its id
			// goes on top of whatever the claim says now.
			*ref = *got
			continue
		}
		if s.cfg.Stage.Conn.IsClosed() {
			s.log.Error("a job was created but its id cannot be stored under the claim: the broker connection is closed",
				fields(zap.Error(err))...)
			return
		}
		if now := time.Now(); !now.Before(logAt) {
			s.log.Error("a job was created but its id could not be stored under the claim yet; trying until it is",
				fields(zap.Duration("waited", now.Sub(start).Round(time.Second)), zap.Error(err))...)
			logAt, logged = now.Add(storeLogEvery), true
		}
		time.Sleep(wait)
		wait = min(2*wait, storeMaxWait)
	}
}
