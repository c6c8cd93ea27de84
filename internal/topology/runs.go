package topology

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// Run record errors, checked with errors.Is.
var (
	// ErrRunExists: a run with this id was already created.
	ErrRunExists = errors.New("topology: run exists")
)

// RunRef is a run record as read, with the revision a compare-and-set must
// match.
type RunRef struct {
	Record   messages.RunRecord
	Revision uint64
}

// Runs is the runs bucket: one record per run, changed only by
// compare-and-set.
type Runs struct {
	kv jetstream.KeyValue
}

// Create stores a new run record. ErrRunExists when the id is taken.
func (r *Runs) Create(ctx context.Context, rec messages.RunRecord) (*RunRef, error) {
	data, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	key := messages.RunKey(rec.Announced.Run)
	rev, err := r.kv.Create(ctx, key, data)
	if errors.Is(err, jetstream.ErrKeyExists) {
		return nil, fmt.Errorf("%w: %s", ErrRunExists, rec.Announced.Run)
	}
	if err != nil {
		return nil, fmt.Errorf("topology: run %s: %w", rec.Announced.Run, err)
	}
	rec.V = messages.Version
	return &RunRef{Record: rec, Revision: rev}, nil
}

// Get returns a run's record, or oxytype.ErrRunNotFound.
func (r *Runs) Get(ctx context.Context, run string) (*RunRef, error) {
	e, err := r.kv.Get(ctx, messages.RunKey(run))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, fmt.Errorf("topology: %w: %s", oxytype.ErrRunNotFound, run)
	}
	if err != nil {
		return nil, fmt.Errorf("topology: run %s: %w", run, err)
	}
	rec, err := messages.DecodeRunRecord(e.Value())
	if err != nil {
		return nil, fmt.Errorf("topology: run %s: %w", run, err)
	}
	return &RunRef{Record: *rec, Revision: e.Revision()}, nil
}

// Update replaces the record read as ref with next if nobody changed it
// since; ErrConflict otherwise. On success ref holds next and its revision.
func (r *Runs) Update(ctx context.Context, ref *RunRef, next messages.RunRecord) error {
	data, err := json.Marshal(next)
	if err != nil {
		return err
	}
	run := ref.Record.Announced.Run
	rev, err := r.kv.Update(ctx, messages.RunKey(run), data, ref.Revision)
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return fmt.Errorf("%w on run %s", ErrConflict, run)
	}
	if err != nil {
		return fmt.Errorf("topology: run %s: %w", run, err)
	}
	next.V = messages.Version
	ref.Record, ref.Revision = next, rev
	return nil
}

// Transition reads a run's record and applies change to a copy; when change
// returns true the copy is stored by compare-and-set, re-reading and
// re-deciding on a conflict. It returns whether this call's change was
// stored, and the record as it stands. Use it for every state change, for
// example completion: only the caller that gets applied == true is the
// winner that writes the run log and publishes RunCompleted.
func (r *Runs) Transition(ctx context.Context, run string, change func(rec *messages.RunRecord) bool) (applied bool, ref *RunRef, err error) {
	for {
		ref, err := r.Get(ctx, run)
		if err != nil {
			return false, nil, err
		}
		next := ref.Record
		if !change(&next) {
			return false, ref, nil
		}
		next.UpdatedAt = time.Now().UTC()
		err = r.Update(ctx, ref, next)
		if errors.Is(err, ErrConflict) {
			continue
		}
		if err != nil {
			return false, nil, err
		}
		return true, ref, nil
	}
}

// Wait blocks until the run's record satisfies until (checked on the
// current record and on every change), and returns that record.
func (r *Runs) Wait(ctx context.Context, run string, until func(rec *messages.RunRecord) bool) (*RunRef, error) {
	w, err := r.kv.Watch(ctx, messages.RunKey(run))
	if err != nil {
		return nil, fmt.Errorf("topology: watch run %s: %w", run, err)
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return nil, fmt.Errorf("topology: watch run %s: closed", run)
			}
			if e == nil || e.Operation() != jetstream.KeyValuePut {
				continue // end of the initial values, or a delete
			}
			rec, err := messages.DecodeRunRecord(e.Value())
			if err != nil {
				return nil, fmt.Errorf("topology: run %s: %w", run, err)
			}
			if until(rec) {
				return &RunRef{Record: *rec, Revision: e.Revision()}, nil
			}
		}
	}
}

// StopRequest asks for a run to stop (see Runs.Stop).
type StopRequest struct {
	// Cause is what stops the run.
	Cause messages.StopCause
	// Reason becomes the record's Reason. A stage that stops a run gives a
	// sentence starting with messages.StoppedSubmitting ("Stopped
	// submitting, because a write to the destination failed: …"): the
	// run's payloads not yet submitted carry it as their error.
	Reason string
	// Now brings the stop's deadline forward to now (a second Ctrl+C): the
	// run is completed with what is recorded as soon as messages.StopSettle
	// allows.
	Now bool
}

// Stop marks a ready (or announced) run stopping, with a deadline of now +
// the run's stop timeout (RunAnnounced.StopTimeoutOrDefault), or now with
// req.Now. A run that is stopping already keeps its cause, reason and time;
// req.Now still brings its deadline forward. Completed and failed runs are
// left as they are. It returns whether the record changed.
//
// Every stop goes through here, whoever asks (the user, the writer, the
// submitter), so that every stopping run carries the deadline the
// statusworker enforces.
func (r *Runs) Stop(ctx context.Context, run string, req StopRequest) (bool, error) {
	applied, _, err := r.Transition(ctx, run, func(rec *messages.RunRecord) bool {
		now := time.Now().UTC()
		switch rec.State {
		case oxytype.RunStateAnnounced, oxytype.RunStateReady:
			deadline := now.Add(rec.Announced.StopTimeoutOrDefault())
			if req.Now {
				deadline = now
			}
			rec.State, rec.Reason = oxytype.RunStateStopping, req.Reason
			rec.Stop = &messages.RunStop{Cause: req.Cause, At: now, Deadline: deadline}
			return true
		case oxytype.RunStateStopping:
			if !req.Now {
				return false
			}
			stop := messages.RunStop{Cause: req.Cause, At: now, Deadline: now}
			if rec.Stop != nil {
				stop = *rec.Stop
			} else if !rec.UpdatedAt.IsZero() {
				stop.At = rec.UpdatedAt // stopped by an older build
			}
			if !stop.Deadline.After(now) {
				return false
			}
			stop.Deadline = now
			rec.Stop = &stop
			return true
		}
		return false
	})
	if err != nil {
		return false, fmt.Errorf("topology: stop run %s: %w", run, err)
	}
	return applied, nil
}
