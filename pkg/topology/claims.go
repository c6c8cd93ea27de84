package topology

import (
	"context"
	"encoding/json"
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
}

// ClaimHeldError is returned by Claims.Acquire when the doc cannot be
// claimed. Held.Claim.State says why: ClaimSubmitted (the job exists; do not
// resubmit, publish Submitted from the claim) or ClaimHeld (another
// submitter claimed it and never recorded the API's answer — the outcome is
// unknown unless ClaimedAt is recent enough that it may still be working).
type ClaimHeldError struct {
	Held ClaimRef
}

// Error implements error.
func (e *ClaimHeldError) Error() string {
	c := e.Held.Claim
	if c.State == messages.ClaimSubmitted {
		return fmt.Sprintf("doc %s of run %s was already submitted as job %s", c.Doc, c.Run, c.APIJobID)
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
}

// Acquire claims a doc for submission. It succeeds when the doc has no
// claim, or a released one. Otherwise it returns a *ClaimHeldError with the
// claim as stored.
func (c *Claims) Acquire(ctx context.Context, run, doc string, attempt int, by string, now time.Time) (*ClaimRef, error) {
	claim := messages.Claim{Run: run, Doc: doc, Attempt: attempt, State: messages.ClaimHeld, By: by, ClaimedAt: now.UTC()}
	data, err := json.Marshal(claim)
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
		rev, err = c.kv.Update(ctx, key, data, held.Revision)
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			continue // another submitter moved it first: look again
		}
		if err != nil {
			return nil, fmt.Errorf("topology: claim %s: %w", key, err)
		}
		claim.V = messages.Version
		return &ClaimRef{Claim: claim, Revision: rev}, nil
	}
}

// Get returns a doc's claim, or ErrNoClaim.
func (c *Claims) Get(ctx context.Context, run, doc string) (*ClaimRef, error) {
	key := messages.ClaimKey(run, doc)
	e, err := c.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, fmt.Errorf("%w for %s", ErrNoClaim, key)
	}
	if err != nil {
		return nil, fmt.Errorf("topology: claim %s: %w", key, err)
	}
	claim, err := messages.DecodeClaim(e.Value())
	if err != nil {
		return nil, fmt.Errorf("topology: claim %s: %w", key, err)
	}
	return &ClaimRef{Claim: *claim, Revision: e.Revision()}, nil
}

// MarkSubmitted records the API job id under a claim this worker holds. On
// success ref is updated to the new revision. ErrConflict means the claim
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

// Release gives a claim back because the API created no job (refused or
// never reached), so a retry may claim the doc again.
func (c *Claims) Release(ctx context.Context, ref *ClaimRef, reason string) error {
	next := ref.Claim
	next.State = messages.ClaimReleased
	next.Reason = reason
	return c.update(ctx, ref, next)
}

func (c *Claims) update(ctx context.Context, ref *ClaimRef, next messages.Claim) error {
	data, err := json.Marshal(next)
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
