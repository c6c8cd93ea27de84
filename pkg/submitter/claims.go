package submitter

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/topology"
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
// timeout, a reconnect), the claim is read back: if it is the one this call
// wrote, it is ours.
func (s *Submitter) acquire(ctx context.Context, it *item) (*topology.ClaimRef, error) {
	now := time.Now().UTC()
	kctx, cancel := s.kvContext(ctx)
	defer cancel()
	ref, err := s.claims.Acquire(kctx, it.env.Run, it.env.Doc, it.env.Attempt, s.cfg.Instance, now)
	if err == nil || errors.Is(err, topology.ErrClaimHeld) {
		return ref, err
	}
	got, gerr := s.claims.Get(kctx, it.env.Run, it.env.Doc)
	if gerr == nil && got.Claim.State == messages.ClaimHeld && got.Claim.By == s.cfg.Instance &&
		got.Claim.ClaimedAt.Equal(now) && got.Claim.Attempt == it.env.Attempt {
		return got, nil
	}
	return nil, err
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
	// The claim stays "claimed": a redelivery will wait for it to go stale
	// and then record the doc as an unknown outcome rather than risk a
	// second bill.
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
		if s.cfg.Conn.IsClosed() {
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
