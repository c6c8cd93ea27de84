// Package stage is the runtime every worker (submitter, poller, writer,
// statusworker) runs its handler in. A stage's own code decides what to do
// with one message; this package does everything that must be the same in
// every stage and is easy to get wrong: fetching from the stage's durable
// pull consumer, bounded concurrency, deadlines, heartbeats, publishing
// outputs before acking, retries, dead letters, draining on SIGTERM, the
// consumer watchdog, health and metrics.
//
// # A message's life
//
//  1. The runtime fetches only as many messages as it has free slots
//     (Config.MaxInFlight), so nothing waits in a client buffer while its
//     AckWait runs out. A BatchHandler's messages are gathered across
//     fetches into a group that goes to the handler when it holds
//     Config.BatchSize messages or Config.BatchLinger after its first
//     message, whichever comes first: under load the handler gets full
//     batches, and a lone message waits no longer than BatchLinger.
//
//  2. A message delivered more than MaxDeliver times is dead-lettered
//     without calling the handler: a hard-failure status event saying
//     "poison message: delivered N times", then Term. A handler that
//     implements DeadLetterer sees the event first and may keep the
//     message a while longer (Wait) when its fate is being decided
//     elsewhere, as the submitter does for a claim a live submitter holds.
//
//  3. The handler runs with a deadline (HandlerTimeout). While the runtime
//     holds a message (handler and publishing included) it sends InProgress
//     at least every 1.5 × Config.Heartbeat (AckWait/2 by default), so slow
//     work is never redelivered to another replica.
//
//  4. The handler publishes its outputs and status events with Msg.Publish
//     and Msg.Record. Outputs go out at once (async JetStream publishes);
//     status events wait up to Config.RecordLinger to go out with the other
//     events the worker records for the same run, in one batch message. The
//     runtime waits for every publish and every batch to be stored before it
//     settles the message, so an ack never runs ahead of the outputs it
//     promises.
//
//  5. The handler's returned error decides how the message is settled:
//
//     nil                      Ack
//     Wait(d)                  NakWithDelay(d), no status event (a poll)
//     RetryAfter(d, reason)    soft-failure event, NakWithDelay(d)
//     any other error          soft-failure event, NakWithDelay(RetryBackoff[n])
//     … on the MaxDeliver-th delivery: hard-failure event "poison message", Term
//     Hard(state, reason, …)   hard-failure event, Term
//     *messages.DecodeError    hard-failure event "malformed … message …", Term
//
//     If a publish fails, nothing is acked: the message is redelivered
//     after Config.PublishRetryDelay and the handler runs again (handlers
//     are idempotent). A failure event that would exceed the broker's
//     message size (a payload near the limit, echoed in a reason) goes
//     without its copy of the payload (the feeder's event recorded it) and
//     with its texts cut short, so that it never keeps its message from
//     being settled.
//
// A failure event is recorded at the consumer's InputDataType for the doc
// the message names. When the doc cannot be read (the message does not
// decode), it is recorded under messages.UnknownDocID(stream, sequence). Its
// state is messages.FailureState: unfetched when the message carries an API
// job id, else unsubmitted, unless the handler said otherwise with Hard.
//
// The statusworker consumes the stream its failure events go to, so for a
// consumer whose InputDataType is messages.DataStatus the runtime records no
// soft failures (during a ledger outage every failing event would beget
// another failing event) and no failure about a message that is itself about
// data type "status" (which could loop). Those are logged and counted only.
//
// # Stopping
//
// When Run's context is cancelled (SIGTERM), the runtime stops fetching
// (the pull request in flight ends within Config.FetchWait; what it still
// brings is handled like the rest) and waits up to Config.DrainTimeout for
// the handlers in flight. Then it cancels their contexts and releases
// (Nak) whatever is still unsettled, so another replica gets it at once
// rather than after AckWait. Run returns nil. Nothing it held is left
// unsettled: every message is acked, termed or released. (A released message
// counts in the consumer's NumAckPending until it is redelivered; after a
// drain that finished in time, NumAckPending is 0.)
//
// One exception: a message whose handler pinned it (Msg.Pin) holds
// something that exists only in this process — the submitter's job id that
// the claims bucket has not stored yet, during a broker outage. It is not
// released, and Run waits for its handler however long that takes (logging
// every 10s), since stopping would lose it; heartbeats go on meanwhile.
//
// # Watchdog
//
// Every Config.WatchdogInterval the runtime asks the server for its
// consumer. A connection that is up while the consumer (or its stream) is
// gone is "consumer_lost"; when that lasts longer than
// Config.ConsumerLostGrace, Run drains and returns a *ConsumerLostError so
// the orchestrator restarts the worker (which then ensures its topology
// again). Being disconnected ("reconnecting") never counts: the client
// reconnects on its own. Any other state resets the clock.
//
// # Health and metrics
//
// A *Worker is a health.Checker: Ready is OK while the last sample was
// "ready"; Live fails while a handler has run longer than twice
// HandlerTimeout, except while a message is pinned (a restart would lose
// what only this process holds). With Config.Registerer set, it exports (label stage):
//
//	oxy_stage_messages_total{outcome}   ack, wait, retry, hard_failure, malformed, dead_letter, released, publish_error
//	oxy_stage_handle_seconds            handler latency histogram
//	oxy_stage_in_flight                 messages held now
//	oxy_stage_redeliveries_total        messages received with NumDelivered > 1
//	oxy_stage_consumer_lost             1 while the consumer is lost
package stage
