package oxytype

// RunState is the lifecycle state of a run.
type RunState string

// The states of a run. Every change is a compare-and-set on the stored
// run record's revision.
const (
	// RunStateAnnounced: the feeder created the record; nothing bills yet.
	RunStateAnnounced RunState = "announced"
	// RunStateReady: the statusworker wrote the empty run log; the feeder may
	// publish payloads.
	RunStateReady RunState = "ready"
	// RunStateFailed: the run cannot start (for example the run log cannot be
	// written); the record's reason says why. Nothing was submitted.
	// Terminal.
	RunStateFailed RunState = "failed"
	// RunStateStopping: the user or a stage stopped the run; payloads still
	// queued are recorded unsubmitted without calling the API. Still open:
	// the run ends when every doc has an outcome or the stop's deadline
	// passes.
	RunStateStopping RunState = "stopping"
	// RunStateCompleted: every doc reached a final outcome and the run log is
	// written. Terminal.
	RunStateCompleted RunState = "completed"
)

// Valid reports whether s is one of the five run states.
func (s RunState) Valid() bool {
	switch s {
	case RunStateAnnounced, RunStateReady, RunStateFailed, RunStateStopping, RunStateCompleted:
		return true
	}
	return false
}

// Terminal reports whether a run in state s is over for good (completed or
// failed): nothing of it is pending, and its state may be removed after a
// retention.
func (s RunState) Terminal() bool { return s == RunStateCompleted || s == RunStateFailed }

// Open reports whether a run in state s may still change: every state that
// is not terminal, whatever its age (a stopping run is open until it ends).
func (s RunState) Open() bool { return !s.Terminal() }
