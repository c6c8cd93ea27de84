// Package runlog defines the run log: one JSONL file per run, named by the
// run's UTC start, with one line per payload in input order that says what
// became of it (done, faulted, rejected, unsubmitted, unfetched).
//
// The run log is the user's recovery record. Its line format is a contract
// with the origin client (see the seed "Destinations and run logs"): every line
// has exactly the keys state, id, payload, error and upload, so a recovery tool
// written against one works against the other.
package runlog
