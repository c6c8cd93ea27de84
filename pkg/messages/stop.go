package messages

import (
	"fmt"
	"strings"
	"time"

	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// StopCause says what stopped a run.
type StopCause string

// The causes of a stop.
const (
	// StopByUser: the user stopped the run (Ctrl+C, SIGTERM, oxy.Run.Stop).
	StopByUser StopCause = "user"
	// StopByOutput: a result of the run could not be written to its
	// destination (a full disk, a denied write, a missing bucket, or
	// failures that outlasted quick retries). Submitting more would pay for
	// results that have nowhere to go.
	StopByOutput StopCause = "output"
	// StopBySubmission: the API refused the run's submissions in a way that
	// every further one would share (401, 403).
	StopBySubmission StopCause = "submission"
)

// DefaultStopTimeout is how long a stopped run's jobs already submitted are
// still checked and written when its announcement sets no StopTimeout.
const DefaultStopTimeout = time.Minute

// StopSettle is the default least time between a run's stop and its
// completion from what is recorded (the statusworker's Config.StopSettle).
// A submitter that read the run's state just before the stop may still
// claim a doc and send it: it trusts a state it read for a short while (its
// RunStateTTL) and takes the claim within one bucket operation (its
// KVTimeout), and their sum must stay below the settle time. Once it has
// passed, every such claim is in the claims bucket, where the statusworker
// finds it: a doc whose POST may be in flight is then marked "may have
// billed", never plainly unsubmitted.
const StopSettle = 10 * time.Second

// StoppedSubmitting starts the error of a payload left unsubmitted because a
// stage stopped its run: "Stopped submitting, because a write to the
// destination failed: …". Reports that say "Stopped submitting, because X"
// themselves use Because to avoid saying it twice.
const StoppedSubmitting = "Stopped submitting, because "

// Because returns what follows "because" in a stop's message: msg without
// a leading StoppedSubmitting.
func Because(msg string) string { return strings.TrimPrefix(msg, StoppedSubmitting) }

// RunStop is what stopped a run and when the run ends regardless. Payloads
// not yet submitted are recorded unsubmitted without calling the API; jobs
// already submitted are still checked and written until Deadline. Then the
// statusworker completes the run with what is recorded: each doc still in
// flight becomes unfetched with its job id (free to fetch later), or
// unsubmitted (marked "may have billed" when its claim shows a request that
// may have reached the API).
type RunStop struct {
	Cause StopCause `json:"cause"`
	// At is when the run was stopped.
	At time.Time `json:"at"`
	// Deadline is when the run is completed with what is recorded. It can
	// only move earlier (a second Ctrl+C sets it to now), and it never takes
	// effect before the settle time after At (see Expires).
	Deadline time.Time `json:"deadline"`
}

// Expires returns when the run's stop takes effect: Deadline, but not
// before settle (StopSettle by default) after At.
func (s RunStop) Expires(settle time.Duration) time.Time {
	if earliest := s.At.Add(settle); s.Deadline.Before(earliest) {
		return earliest
	}
	return s.Deadline
}

// StopTimeoutOrDefault returns how long a stop of the run may take: the
// announcement's StopTimeout, or DefaultStopTimeout.
func (r RunAnnounced) StopTimeoutOrDefault() time.Duration {
	if r.StopTimeout > 0 {
		return r.StopTimeout
	}
	return DefaultStopTimeout
}

// Expires returns when a stopping run is completed with what is recorded:
// its Stop's (with the settle time, see RunStop.Expires), or for a record
// stopped without one (by an older build), its stop timeout after its last
// change. It is zero for a run that is not stopping.
func (r RunRecord) Expires(settle time.Duration) time.Time {
	if r.State != oxytype.RunStateStopping {
		return time.Time{}
	}
	if r.Stop != nil {
		return r.Stop.Expires(settle)
	}
	return r.UpdatedAt.Add(max(r.Announced.StopTimeoutOrDefault(), settle))
}

// NotSubmitted is the run-log error of a payload that was not submitted
// because of the run's state: stopped by a stage (the stage's reason, which
// is a StoppedSubmitting sentence), stopped by the user, failed, or already
// completed (a payload delivered after its run ended).
func (r RunRecord) NotSubmitted() string {
	switch {
	case r.State == oxytype.RunStateCompleted:
		return "the run had ended before this payload was submitted"
	case r.State == oxytype.RunStateStopping && r.Stop != nil && r.Stop.Cause != StopByUser && r.Reason != "":
		return r.Reason
	}
	msg := "the run was stopped before this payload was submitted"
	if r.State == oxytype.RunStateFailed {
		msg = "the run failed before this payload was submitted"
	}
	if r.Reason != "" {
		msg = fmt.Sprintf("%s (%s)", msg, r.Reason)
	}
	return msg
}
