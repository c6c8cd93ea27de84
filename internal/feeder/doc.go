// Package feeder puts a run's payloads into the pipeline: it reads and checks
// them, announces the run, waits until the run may bill, publishes every
// payload in input order, stops a run, and resumes feeding a run whose feeder
// was killed.
//
// It is what `oxy run` and the Go API (pkg/oxy) do before and while the
// stages work, in the one-process shape and against an external cluster
// alike: it needs nothing but the JetStream topology.
//
// # Bad lines and rejections
//
// Nothing bills before every payload has been read. ReadJSONL reads the whole
// input first (spooling it to a file, so a million payloads cost disk, not
// memory) and stops at the first line that is not a payload at all, with an
// *oxytype.InputError naming the line and the reason; the CLI exits 2 and no request
// is sent. A bad line is:
//
//   - not JSON, or JSON that is not an object (payload.Parse's *LineError),
//   - an object without a "source" string,
//   - an object without any input key (query, url, product_id, …).
//
// A payload that is well formed but that the API would refuse (an IP
// address as host, a reserved TLD, 21 pages, two input keys, an empty
// input, …; see payload.Validate) is not an input error: it is fed like any
// other, and the submitter records it "rejected" in the run log at no cost,
// with the API's wording. One bad payload among a million then costs one
// run-log line instead of the whole run, and every payload keeps its place
// (doc id = position) so the run log lines up with the input.
//
// # Announcing
//
// Announce creates the run's record in the runs bucket and publishes its
// announcement (topology.AnnounceRun), then waits for a statusworker to write
// the empty run log and mark the run ready. A run marked failed (the run log
// cannot be written) returns a *oxytype.RunFailedError: nothing was fed, nothing
// billed. No answer within Config.ReadyTimeout returns a
// *oxytype.NoStatusWorkerError ("no statusworker answered within 30s; is one
// running?").
//
// # Feeding
//
// Each payload becomes a messages.Payload on oxy.payload.<run> (doc id = its
// position, message id from messages.MsgID, so a republished copy inside the
// broker's duplicate window is dropped), followed by a success status event
// at data type "payload" that carries the redacted payload: that event is how
// the ledger learns each doc's payload for the run log. Publishes are
// asynchronous with a bounded window (Config.Window). A doc's status event
// is published only after its payload message was stored, so "the ledger
// knows the doc was fed" always implies "the doc is in the pipeline". The
// events go out in status batch messages of up to 256 events, in input
// order, the last one when the feed ends or starts waiting for the run to
// catch up (Config.Resolved): a status message per doc would cost the
// broker as much as the payload itself.
//
// # Stopping
//
// Stop marks the run stopping in the runs bucket (the first Ctrl+C). The
// feeder still publishes the payloads it has not published yet: the
// submitter records each of them unsubmitted without calling the API, so the
// run completes and its run log lists every payload.
//
// # Resuming
//
// After the feeding process was killed outright, Resume feeds only what the
// pipeline does not have yet. It reads the run's status events (an ordered
// consumer from the start of the status subject) and its claims, then:
//
//   - a doc with a success event at "payload" was fed: skipped;
//   - a doc the submitter already handled (a claim, or any event of a later
//     stage) but without that event: only the event is published;
//   - any other doc is published again, with the same message id.
//
// The last case covers the docs whose payload may have been stored just
// before the kill without its event: at most Config.Window docs. Inside the
// broker's duplicate window (2 minutes by default) the copy is dropped;
// later, the submitter finds the doc's claim and never submits it twice, so a
// late resume costs at most a repeated poll and a repeated (identical) write
// for those few docs, never a second bill.
package feeder
