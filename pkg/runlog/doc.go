// Package runlog defines the run log: one JSONL file per run, named by the
// run's UTC start, with one line per payload in input order that says what
// became of it (done, faulted, rejected, unsubmitted, unfetched).
//
// The run log is the user's recovery record. Its line format is a contract
// with the user's tools: every line has exactly the keys state, id, payload,
// error and upload, the same five keys a Python WSA client writes in its run
// logs, so a recovery tool written against one works against the other.
//
// The package has three parts:
//
//   - the line type (Line), made of the shared vocabulary of pkg/oxytype
//     (State, ErrorInfo, Upload);
//   - derivation: Derive turns the ledger records of one doc into its line
//     (a success at the final data type is done; otherwise the hard failure's
//     state hint; a doc with no outcome is never dropped), and Walk/Build go
//     over a whole run in input order;
//   - input and output: Writer and Put stream lines to a destination (a
//     folder or an object-store URL, opened by the caller) without holding
//     the run in memory and without HTML-escaping payload bytes; Reader parses a run log back, naming the
//     line of any error, for `oxy recover`.
//
// runlog imports neither the ledger nor the destinations: a Record shares
// its run-log facts (oxytype.Facts) with the ledger's record, so the
// statusworker converts one into the other with a few assignments, and only
// the programs that open a destination link the object-store SDKs.
package runlog
