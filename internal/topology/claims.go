package topology

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/oxypipe/oxypipe/pkg/messages"
)

// Claim errors, checked with errors.Is.
var (
	// ErrClaimHeld: the doc's claim is held or already submitted; the error
	// is a *ClaimHeldError carrying the claim.
	ErrClaimHeld = errors.New("topology: claim held")
	// ErrNoClaim: the doc has no claim.
	ErrNoClaim = errors.New("topology: no claim")
	// ErrConflict: the value changed since it was read (another worker
	// moved it); read it again and decide anew.
	ErrConflict = errors.New("topology: revision conflict")
)

// ClaimRef is a claim as read, with the revision a compare-and-set must
// match.
type ClaimRef struct {
	Claim    messages.Claim
	Revision uint64
	// Settled is set for a claim read from its run's settled record after
	// its key was removed (see Claims.Settle): it is submitted, carries
	// only its job id, and cannot be updated (Revision is 0).
	Settled bool
	// Recorded is set for a claim whose key still holds it as it was
	// before submission while its job id is in its run's settled record
	// (see Claims.Record): it reads as submitted with that job, keeps the
	// key's other fields and revision, and cannot be updated either.
	Recorded bool
}

// ClaimHeldError is returned by Claims.Acquire when the doc cannot be
// claimed. Held.Claim.State says why: ClaimSubmitted (the job exists; do not
// resubmit, publish Submitted from the claim), ClaimHeld (another
// submitter claimed it and never recorded the API's answer — the outcome is
// unknown unless ClaimedAt is recent enough that it may still be working) or
// ClaimUnknown (an answer left the outcome unknown).
type ClaimHeldError struct {
	Held ClaimRef
}

// Error implements error.
func (e *ClaimHeldError) Error() string {
	c := e.Held.Claim
	switch c.State {
	case messages.ClaimSubmitted:
		return fmt.Sprintf("doc %s of run %s was already submitted as job %s", c.Doc, c.Run, c.APIJobID)
	case messages.ClaimUnknown:
		return fmt.Sprintf("the outcome of submitting doc %s of run %s is unknown (%s)", c.Doc, c.Run, c.Reason)
	}
	return fmt.Sprintf("doc %s of run %s is claimed by %s since %s", c.Doc, c.Run, c.By, c.ClaimedAt.Format(time.RFC3339Nano))
}

// Is makes errors.Is(err, ErrClaimHeld) true.
func (e *ClaimHeldError) Is(target error) bool { return target == ErrClaimHeld }

// Claims is the claims bucket: one compare-and-set claim per doc that the
// submitter takes before it calls the API, so that no payload is billed
// twice.
type Claims struct {
	kv jetstream.KeyValue
	js jetstream.JetStream
	st claimStream
	// markerTTL: the bucket takes purge markers that expire (see removeKey).
	markerTTL bool
}

// Acquire claims a doc for submission. It succeeds when the doc has no
// claim, or a released one (whose MayHaveBilled mark and Retries the new
// claim keeps). Otherwise it returns a *ClaimHeldError with the claim as
// stored.
//
// A settled doc (see Settle) has no key, so Acquire creates a fresh claim
// for it: before anything is sent under claims it created, the caller
// looks the docs up with SettledJobs, once for all of them.
func (c *Claims) Acquire(ctx context.Context, run, doc string, attempt int, by string, now time.Time) (*ClaimRef, error) {
	claim := messages.Claim{Run: run, Doc: doc, Attempt: attempt, State: messages.ClaimHeld, By: by, ClaimedAt: now.UTC()}
	data, err := claim.MarshalJSON() // direct: json.Marshal would only check and copy its output again
	if err != nil {
		return nil, err
	}
	key := messages.ClaimKey(run, doc)
	for {
		rev, err := c.kv.Create(ctx, key, data)
		if err == nil {
			claim.V = messages.Version
			return &ClaimRef{Claim: claim, Revision: rev}, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return nil, fmt.Errorf("topology: claim %s: %w", key, err)
		}
		held, err := c.Get(ctx, run, doc)
		if errors.Is(err, ErrNoClaim) {
			continue // deleted between Create and Get: try again
		}
		if err != nil {
			return nil, err
		}
		if held.Claim.State != messages.ClaimReleased {
			return nil, &ClaimHeldError{Held: *held}
		}
		again := claim
		again.MayHaveBilled, again.Retries = held.Claim.MayHaveBilled, held.Claim.Retries
		if data, err = again.MarshalJSON(); err != nil {
			return nil, err
		}
		rev, err = c.kv.Update(ctx, key, data, held.Revision)
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			continue // another submitter moved it first: look again
		}
		if err != nil {
			return nil, fmt.Errorf("topology: claim %s: %w", key, err)
		}
		again.V = messages.Version
		return &ClaimRef{Claim: again, Revision: rev}, nil
	}
}

// Retake claims again a doc whose claim is stale "claimed" or "unknown"
// (ref, as read): for a deliberate re-drive, or for the one retry after an
// unknown outcome, which retry counts in Retries. The new claim carries the
// MayHaveBilled mark, since the earlier request may have created a job. On
// success it returns the new claim; ErrConflict means someone else moved it.
func (c *Claims) Retake(ctx context.Context, ref ClaimRef, attempt int, by string, now time.Time, retry bool) (*ClaimRef, error) {
	next := ref.Claim
	next.State, next.By, next.Attempt, next.ClaimedAt = messages.ClaimHeld, by, attempt, now.UTC()
	next.APIJobID, next.SubmittedAt, next.Reason = "", time.Time{}, ""
	next.MayHaveBilled = true
	if retry {
		next.Retries++
	}
	if err := c.update(ctx, &ref, next); err != nil {
		return nil, err
	}
	return &ref, nil
}

// Get returns a doc's claim, or ErrNoClaim. A doc whose job id is in its
// run's settled record reads as submitted with that job, whatever its key
// says or whether it has one (ClaimRef.Recorded, ClaimRef.Settled): the
// record is written at submission, the key only when it was taken.
func (c *Claims) Get(ctx context.Context, run, doc string) (*ClaimRef, error) {
	key := messages.ClaimKey(run, doc)
	e, err := c.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return c.settledClaim(ctx, run, doc)
	}
	if err != nil {
		return nil, fmt.Errorf("topology: claim %s: %w", key, err)
	}
	claim, err := messages.DecodeClaim(e.Value())
	if err != nil {
		return nil, fmt.Errorf("topology: claim %s: %w", key, err)
	}
	ref := &ClaimRef{Claim: *claim, Revision: e.Revision()}
	if claim.State == messages.ClaimSubmitted {
		return ref, nil
	}
	id, err := c.recordedJob(ctx, run, doc)
	if err != nil {
		return nil, err
	}
	if id != "" {
		ref.Claim.State, ref.Claim.APIJobID, ref.Claim.Reason, ref.Recorded = messages.ClaimSubmitted, id, "", true
	}
	return ref, nil
}

// MarkSubmitted records the API job id under a claim this worker holds:
// for a doc that Record cannot take (see Settleable), or when Record
// failed. On success ref is updated to the new revision. ErrConflict means the claim
// was changed by someone else since it was acquired.
func (c *Claims) MarkSubmitted(ctx context.Context, ref *ClaimRef, apiJobID string, at time.Time) error {
	if apiJobID == "" {
		return errors.New("topology: MarkSubmitted needs an API job id")
	}
	next := ref.Claim
	next.State = messages.ClaimSubmitted
	next.APIJobID = apiJobID
	next.SubmittedAt = at.UTC()
	next.Reason = ""
	return c.update(ctx, ref, next)
}

// MarkUnknown records under a claim this worker holds that the API's
// answer left the outcome unknown (reason says which answer): the doc is
// marked as possibly billed and is not claimed again, except by Retake.
func (c *Claims) MarkUnknown(ctx context.Context, ref *ClaimRef, reason string) error {
	next := ref.Claim
	next.State = messages.ClaimUnknown
	next.MayHaveBilled = true
	next.Reason = reason
	return c.update(ctx, ref, next)
}

// Release gives a claim back because the API created no job (refused or
// never reached), so a retry may claim the doc again. The claim keeps its
// MayHaveBilled mark.
func (c *Claims) Release(ctx context.Context, ref *ClaimRef, reason string) error {
	next := ref.Claim
	next.State = messages.ClaimReleased
	next.Reason = reason
	return c.update(ctx, ref, next)
}

func (c *Claims) update(ctx context.Context, ref *ClaimRef, next messages.Claim) error {
	if ref.Settled || ref.Recorded {
		return fmt.Errorf("%w: doc %s of run %s was submitted as job %s; its claim cannot change", ErrConflict, next.Doc, next.Run, ref.Claim.APIJobID)
	}
	data, err := next.MarshalJSON()
	if err != nil {
		return err
	}
	key := messages.ClaimKey(next.Run, next.Doc)
	rev, err := c.kv.Update(ctx, key, data, ref.Revision)
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return fmt.Errorf("%w on claim %s", ErrConflict, key)
	}
	if err != nil {
		return fmt.Errorf("topology: claim %s: %w", key, err)
	}
	next.V = messages.Version
	ref.Claim, ref.Revision = next, rev
	return nil
}
