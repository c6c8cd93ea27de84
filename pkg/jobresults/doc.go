// Package jobresults is the job-results ledger: one record per (job, data
// type, document) saying what happened to that document at that stage.
//
// Every stage of the pipeline reports each document it handles as a success,
// a soft (retryable) failure or a hard (final) failure. The ledger keeps the
// latest outcome per stage and document so that a run can tell, at any time,
// how far it has got (GetStageCounts), whether it is finished
// (CountCompletedDocs + CountHardFailedDocs against the run's total), and why
// documents failed (GetFailures, GetUniqueErrors). Its API and semantics
// are those of the job-results ledger of the Python pipeline framework it
// replaces, so that existing collections and their queries carry over: a
// success clears every failure field; a soft failure appends its
// reason and replaces the retry count; a hard failure replaces the
// soft-failure fields; the current error of a record is its hard failure,
// else its last soft-failure reason.
//
// Two stores implement it and behave identically, as checked by the shared
// conformance suite in package storetest:
//
//   - [MemoryStore], for one-process runs and tests. Counts are kept
//     incrementally, so progress queries cost O(stages), not O(records).
//   - [MongoStore], for the distributed shape: upserts on a unique key index,
//     aggregation pipelines for the counts, TTL retention and scoping.
//
// Beyond that API ([Store]), both stores implement [BatchWriter] and
// [RecordReader] (together [Ledger]): versioned batch writes, so that a
// duplicated or reordered status event never overwrites a newer outcome, a
// streaming read of every record of a job in document order for the run log,
// and a count of resolved documents that never counts one twice.
//
// Errors: invalid arguments match [ErrInvalidInput]; backend failures that are
// worth retrying (network errors, timeouts, failovers) match [ErrTransient];
// everything else is permanent.
package jobresults
