// Package statusworker turns the stages' status events into the
// job-results ledger, notices when a run is finished — exactly once, never
// stranded — writes the run's run log, and serves the counts operators
// watch.
//
// The same code runs as the statusworker binary (cmd/statusworker, with a
// MongoDB ledger, any number of replicas) and inside `oxy run` (a memory
// ledger, one replica, several stages on one embedded server).
//
// # Writes
//
// Events come in batches from the durable "statusworker" consumer of the
// status stream (internal/stage runs the consumer). Each event becomes a
// versioned ledger entry whose version is the event's stream sequence, so a
// duplicated or reordered event never overwrites a newer outcome. A success
// gets the lowest version instead: it is the producer's fact about its own
// message, causally before anything the message's consumer records at the
// same data type, yet it can reach the stream after the consumer failed the
// message; it must not undo that failure. A batch
// is one jobresults.BatchWriter.Apply (one bulk write on MongoDB). An event
// is acked only after the write succeeded. Transient ledger errors are
// retried (Config.WriteRetry); when the outage outlasts that, the events are
// given back for redelivery — never acked, never dead-lettered (the consumer
// runs with MaxDeliver 0) — so an outage delays the ledger and loses
// nothing. The stage runtime keeps heartbeating while a batch is retried.
//
// A malformed event (one messages.DecodeStatusEvent refuses, or one the
// ledger refuses as invalid) is logged, counted and terminated; the runtime
// records a hard failure about it at data type "status" under its doc (or
// an unknown-doc id), so an operator finds it among the run's failures.
// The runtime never records a failure about an event that is itself about
// "status", so the worker cannot loop on its own failures. Such a record
// does not resolve its doc (oxytype.DataStatus): it says a report about
// the doc was lost, not what became of the doc, whose work goes on. Letting
// it resolve the doc would let a garbled report (say, from a newer stage
// build during a rolling upgrade) complete a run early and call payloads
// that may yet be billed "unsubmitted". The price: if a doc's LAST event
// is the one that was garbled, its run waits (visible in GET /runs and
// among the run's failures at stage "status") until the doc is re-driven.
//
// # Memory ledger
//
// With Config.Rebuild (the memory ledger), Run first replays every event
// still in the status stream (every event of an open run, and those of
// runs finished within RunRetention) into the ledger,
// up to the stream's last sequence at start, before the durable consumer
// continues; the versioned writes make the overlap harmless. So a restarted
// worker (even after SIGKILL) has the same ledger. A memory ledger supports
// ONE replica: two replicas would each see only the events delivered to
// them. Several replicas need MongoDB.
//
// # Runs
//
// Runs live in the oxy_runs bucket (topology.Runs), which the worker
// watches:
//
//	announced ──(empty run log written)──▶ ready ──▶ stopping
//	    │                                    │          │
//	    └──(location unwritable)──▶ failed   └──────────┴──(every doc resolved)──▶ completed
//
// When a run is announced the worker writes the empty run log
// "<run id>.jsonl" to the run's run-log location and marks the run ready,
// or failed with the reason; the feeder publishes nothing before that, so an
// unwritable location fails before anything bills. Every change is a
// compare-and-set; when replicas race, one change applies.
//
// A run is complete when every doc 0 … total-1 is resolved — done at the
// final data type or hard-failed at some stage, each doc once (a doc both
// written and hard-failed is done: the write is proof). Docs recorded under
// an unknown-doc id never count; nor do failures at "status" (above).
// The check runs after every batch for the runs it touched (two cheap
// counts first, one pass over the run's records only when they allow
// completion) and for every open run each Config.RecheckInterval, so no run strands: not one whose last doc
// finished before its record was seen, not a zero-payload run (complete at
// once, with its empty run log and its announcement), not one whose
// completing event was processed by a replica that died.
//
// Before completing, the worker waits (at most Config.SettleTimeout) until
// every event of the run stored so far is applied — the durable consumer's
// ack floor, shared by all replicas, has passed the run's last event — so
// that an earlier event still in flight elsewhere (a payload, say) is in the
// run log.
//
// A stopping run (messages.RunRecord.Stop: stopped by the user, by the
// writer because its results cannot be written, or by the submitter after a
// 401/403) is checked the same way until its stop's deadline
// (RunStop.Expires: the deadline, never earlier than Config.StopSettle after
// the stop, so that a submission started just before the stop has claimed
// its doc). Then it ends with what is recorded, so that every stop ends: each
// doc still in flight is recorded as a hard failure by a status event from
// this worker — unfetched with its job id (from the ledger, or from its
// claim when the submitter stored the id but its event never came),
// unsubmitted and marked may-have-billed when its claim is held (a request
// that may have reached the API), unsubmitted with the stop's reason
// otherwise — and once those events are applied the run completes at once,
// without waiting for its other events to settle. A doc with no record at
// all (its payload still being fed) is waited for a few seconds more, so
// that its line carries its payload. A claim that cannot be read is never
// guessed at: the expiry is tried again at the next check.
//
// Completing is three steps on the run record: claim (a lease in the
// record's "completing" field, so one replica writes the log, renewed every
// third of the lease while the log is written), write the run log, then
// mark the run completed with the counts — conditional on still holding the
// claim. "completed" therefore always means the run log
// is written. Only the replica whose last step applies publishes
// messages.RunCompleted; if it dies before publishing, the re-check of
// completed runs publishes it (the message id deduplicates a double). A run
// log that cannot be written releases the claim, is logged and counted
// (oxy_statusworker_run_log_errors_total), and is retried by the next check.
// A replica that finds its claim taken over while it writes stops writing.
//
// Nothing of a run on the broker expires by age, so a run may stay open
// (long, or paused and resumed) for as long as it needs. A finished run
// (completed or failed) is forgotten by the periodic re-check once
// Config.RunRetention has passed since it finished: its record, claims,
// status events, announcements and any stray work message are removed
// from the broker (topology.Topology.ForgetRun); the ledger and the run log
// stay.
//
// # HTTP
//
// Handler serves the JSON API (runs, one run's stage counts, failures,
// unique errors, one doc's status); the process serves it next to /live,
// /ready and /metrics. See Handler for the routes and metrics.go for the
// Prometheus series.
package statusworker
