// Package oxytype is the vocabulary every part of oxypipe shares: what
// became of a payload (State, ErrorInfo, Upload), the stages of the
// pipeline in their order (DataType), what a status event says happened
// (Outcome), who produced or failed a message (Party), where a run is in its
// life (RunState), the run-log facts a stage learns about a doc (Facts),
// and the errors of feeding a run that callers tell apart (InputError,
// RunFailedError, NoStatusWorkerError, StoppedError, ErrInputMismatch,
// ErrRunNotFound, …).
//
// It imports only the standard library, so the stages, the ledger, the run
// log, the wire messages and the CLI can all use the same types: there is
// one State, one Party, one DataType, never a twin converted by hand. A new
// run-log fact is added to Facts once, and every type that embeds it (the
// status event, the ledger's entry and record, the run log's record)
// carries it.
package oxytype
