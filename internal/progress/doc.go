// Package progress follows a run from its status events and says how far it
// has got, in the words scripts and users read: the progress line
// ("412/8,600 done, 3 faulted, 1,250 pending, 45.21s"), each finished job once,
// and at the end the incomplete-run report and its error.
//
// # Why it reads the status stream
//
// Every stage records what it did to each doc as a status event on
// oxy.status.<run>, and that stream keeps the events after the statusworker
// has applied them to the ledger. Reading it from the start with an ordered
// consumer gives a watcher the same facts the ledger has, in the same order,
// whether the stages run inside this process or in a cluster far away, and
// whether the watcher started with the run or after a restart (oxy run
// --resume). The ledger itself is not needed: it may be a memory store in
// another process.
//
// When the statusworker runs in the same process (oxy run's one-process
// cluster), a new run is watched through a Hub instead: the statusworker
// hands each event it decoded to the watcher, so the process reads each event
// once. The stream stays the fallback (see Hub for when each is used).
//
// # A doc's life as the watcher sees it
//
//	(not fed) ─payload─▶ unsubmitted ─submitted─▶ pending ─done─▶ done ─written─▶ done, written   finished
//	     │                   │                       │             │
//	     └───────────────────┴───────────────────────┴─────────────┴─ hard failure ─▶ faulted | rejected | unsubmitted | unfetched   finished
//
// A success moves a doc forward only (an event that arrives late never moves
// it back); a hard failure finishes it with the run-log state the stage chose;
// a soft failure counts one retry. Each finished doc is reported once, when
// its first final event arrives. Which final event decides the doc is the run
// log's own rule (runlog.DocOutcome): a later done beats a hard failure (the
// written file is proof), a hard failure at a later stage beats one at an
// earlier stage, and a hard failure at the status data type (a lost report)
// finishes nothing. A later event that decides the doc changes the counts and
// Problems, so both agree with the run log line by line.
//
// When the statusworker marks the run completed (after writing the run log),
// the watcher reads the status stream up to its last event and stops. The
// final progress takes its outcome counts from the run's completion record,
// so the last progress line always agrees with the run log.
//
// # Texts
//
// Progress.String, ReportLines and IncompleteRunError.Error produce these
// texts in one place; the CLI prints them and the Go API returns them.
package progress
