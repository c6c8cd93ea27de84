package topology

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// ErrRunOpen is returned by ForgetRun for a run that has not finished.
var ErrRunOpen = errors.New("topology: the run is not finished")

// ForgetRun removes a finished run (completed or failed) from the broker:
// the work messages of it still queued (strays: every doc of a finished run
// is resolved), its status events, its claims, its announcement and
// completion, and last its record — conditional on the revision ref was
// read at, so a record that changed meanwhile is left for the next look
// (the error wraps ErrConflict). The record goes last so that a ForgetRun
// cut short leaves the run to be forgotten again; every step is idempotent,
// and replicas may race.
//
// Nothing on the broker expires by age (see [Config]): this is how a
// finished run's state goes, a retention after it finished. The ledger
// (pkg/jobresults) and the run log are not touched.
func (t *Topology) ForgetRun(ctx context.Context, ref *RunRef) error {
	run := ref.Record.Announced.Run
	if !ref.Record.State.Terminal() {
		return fmt.Errorf("%w: run %s is %s", ErrRunOpen, run, ref.Record.State)
	}
	for _, p := range []struct{ stream, subject string }{
		{StreamPayloads, messages.PayloadSubject(run)},
		{StreamSubmitted, messages.SubmittedSubject(run)},
		{StreamDone, messages.DoneSubject(run)},
		{StreamStatus, messages.StatusSubject(run)},
		{kvStream(BucketClaims), kvSubject(BucketClaims, messages.RunToken(run)+".>")},
		{StreamRuns, messages.RunSubject(run)},
		{StreamRuns, messages.RunCompletedSubject(run)},
	} {
		if err := t.purge(ctx, p.stream, p.subject); err != nil {
			return fmt.Errorf("topology: forget run %s: %w", run, err)
		}
	}
	if err := t.runs.forget(ctx, ref); err != nil {
		return err
	}
	// The purge marker too, so that a forgotten run leaves nothing behind.
	// (A watcher sees the marker as a purge unless it is gone before the
	// watcher reads it; the statusworker's tracker forgets finished runs
	// past their retention by itself.)
	if err := t.purge(ctx, kvStream(BucketRuns), kvSubject(BucketRuns, messages.RunKey(run))); err != nil {
		return fmt.Errorf("topology: forget run %s: %w", run, err)
	}
	return nil
}

// purge removes every message of subject from stream.
func (t *Topology) purge(ctx context.Context, stream, subject string) error {
	s, err := t.js.Stream(ctx, stream)
	if err != nil {
		return fmt.Errorf("stream %s: %w", stream, err)
	}
	if err := s.Purge(ctx, jetstream.WithPurgeSubject(subject)); err != nil {
		return fmt.Errorf("purge %s from %s: %w", subject, stream, err)
	}
	return nil
}

// forget purges a run's record if it is still at ref's revision. A record
// already gone counts as forgotten.
func (r *Runs) forget(ctx context.Context, ref *RunRef) error {
	run := ref.Record.Announced.Run
	err := r.kv.Purge(ctx, messages.RunKey(run), jetstream.LastRevision(ref.Revision))
	switch {
	case errors.Is(err, jetstream.ErrKeyRevisionMismatch):
		if _, gerr := r.Get(ctx, run); !errors.Is(gerr, oxytype.ErrRunNotFound) {
			return fmt.Errorf("%w on run %s", ErrConflict, run)
		}
	case err != nil:
		return fmt.Errorf("topology: forget run %s: %w", run, err)
	}
	return nil
}

// kvStream is the stream behind a key-value bucket.
func kvStream(bucket string) string { return "KV_" + bucket }

// kvSubject is the subject of a key (or a wildcard of keys) of a bucket.
func kvSubject(bucket, key string) string { return "$KV." + bucket + "." + key }
