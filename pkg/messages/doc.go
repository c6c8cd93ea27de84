// Package messages defines what travels between the stages of a run: the
// versioned JSON envelopes, the subjects they are published on, the message
// ids that let JetStream drop duplicates, and the values kept in the claims
// and runs key-value buckets.
//
// # Why a package of its own
//
// Every worker (submitter, poller, writer, statusworker) and every feeder
// (oxy run, the Go API, any other publisher) must agree byte for byte on these
// formats, and a worker must survive any message it is given. So the formats
// live here with their codecs, and nothing here talks to a server.
//
// # Envelopes
//
// Each envelope is a JSON object with a version field "v" (currently 1). The
// version changes only on an incompatible change; new optional fields do not
// bump it. A decoder refuses a missing "v" and a "v" newer than [Version].
// Fields this build does not know are kept in the envelope's Extra map and
// written back when the envelope is encoded again, so an older worker that
// forwards a newer message loses nothing.
//
// Encoding does no HTML escaping: a payload travels byte for byte as it was
// given (as compact JSON), '<', '>' and '&' included. Encode an envelope with
// [NewMsg] or its MarshalJSON method; json.Marshal of an envelope would
// escape them again (\u003c…), which decodes to the same value but changes
// the bytes.
//
//	RunAnnounced  oxy.run.<run>            the feeder, once, before the first payload
//	Payload       oxy.payload.<run>        the feeder, one per doc          → submitter
//	Submitted     oxy.submitted.<run>      the submitter, with the job id   → poller
//	Done          oxy.done.<run>           the poller, when the job is done → writer
//	StatusEvent   oxy.status.<run>         every stage, per doc and outcome, alone or batched → statusworker
//	RunCompleted  oxy.run.<run>.completed  the statusworker, once per run
//	FeedControl   oxy.feedctl.<feed>       a producer: open, pause, resume, close a standing feed
//	FeedPayload   oxy.feed.<feed>          any producer, at any time        → statusworker
//
// docs/wire-contract.md states all of this for producers in other languages,
// with a JSON Schema per message under docs/schemas/ that
// TestSchemasMatchEncoders checks against the encoders here.
//
// Decoding is done with [DecodePayload], [DecodeSubmitted], [DecodeDone],
// [DecodeStatusEvent], [DecodeRunAnnounced] and [DecodeRunCompleted]. They
// validate what a stage relies on and return a *[DecodeError] for anything
// else, so a stage records the message as a hard failure with the reason and
// terminates it: never a crash, never an endless redelivery.
//
// # Identities
//
// A run id is the run's UTC start, "20260929T170412.345Z" ([NewRunID]); the
// run log is named "<run id>.jsonl". Run ids contain a dot, which NATS uses
// to separate subject tokens, so subjects and bucket keys carry the run's
// token ([RunToken]: the dot becomes an underscore). Always build subjects
// and keys with the functions here, never by concatenation.
//
// A doc id is the payload's position in the input as a decimal string,
// starting at "0" ([DocID]). A message whose doc cannot be read is recorded
// under [UnknownDocID], "?<stream>:<sequence>", which is unique per broken
// message and never a position: the statusworker lists such records among the
// failures but does not count them toward the run's total (see
// [IsUnknownDocID]).
//
// # Data types and who records what
//
// The ledger's stages are the data types payload → submitted → done →
// written (the final data type). The feeder records success at payload; the
// submitter at submitted; the poller at done; the writer at written. A
// failure is recorded at the data type of the message that failed (the
// submitter fails "payload" messages, the poller "submitted" ones, the
// writer "done" ones), with the consumer that failed it in
// StatusEvent.Consumer and the message's producer in StatusEvent.Origin.
//
// # Message ids and duplicates
//
// Publishes that must not be repeated carry a Nats-Msg-Id ([MsgID]) that is
// deterministic per (run, doc, kind, attempt): a feeder restarted mid-feed, or
// a stage that published its output but died before acking its input, sends
// the same id again and JetStream drops the copy within the stream's
// duplicate window.
//
// A retry is never a republish in this design: a stage retries by
// NakWithDelay, so the broker redelivers the original message and no dedupe
// window is involved. The only legitimate republish of the same (run, doc,
// kind) is a deliberate re-drive (an operator or tool sending a dead-lettered
// doc through again); it must raise Attempt, which changes every message id
// downstream, so the dedupe window cannot swallow it. Status events carry no
// message id at all: a duplicate event is harmless because the ledger applies
// an event only if it is newer (by stream sequence) than what it holds,
// while a dropped one could lose a doc's true outcome.
package messages
