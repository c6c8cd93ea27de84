// Package topology declares and creates what oxypipe needs on the broker:
// the JetStream streams, one durable pull consumer per stage, and the claims
// and runs key-value buckets.
//
// Every worker calls [Ensure] and then [Topology.EnsureConsumer] for its own
// stage at start-up. Both create what is missing and update what differs,
// and are safe to run from many replicas at once: there is no "setup" job
// to run first, and a configuration change rolls out with the workers.
//
// A client of a deployed pipeline (oxy run with an external NATS) sets
// [Config.CreateOnly] instead: it creates what is missing and uses what
// exists as it is, so that its default one-replica settings never rewrite
// a cluster's three-replica streams, nor max ages an operator set.
//
// # Streams
//
//	stream         subjects             retention   max age (default)
//	OXY_RUNS       oxy.run.>            limits      none, 1 message per subject
//	OXY_PAYLOADS   oxy.payload.*        work queue  WorkMaxAge (none)
//	OXY_SUBMITTED  oxy.submitted.*      work queue  WorkMaxAge (none)
//	OXY_DONE       oxy.done.*           work queue  WorkMaxAge (none)
//	OXY_STATUS     oxy.status.*         limits      none
//	OXY_FEEDS      oxy.feed.*           limits      none
//	               oxy.feedctl.*
//
// The three work streams use work-queue retention: a message is removed once
// its stage acks it, so storage follows the work in flight, not the history,
// and a consumer that is deleted and recreated (by an operator, or by a
// worker after the watchdog fired) resumes from what is still unacknowledged
// instead of replaying everything. They have no max age by default because
// an expired work message would be a silently lost doc. Work-queue streams
// accept one consumer per subject: inspect them with stream reads, not with
// extra consumers.
//
// The status stream keeps events (limits retention) after the statusworker
// acks them, because a statusworker with a memory ledger (the one-process
// shape) rebuilds it on restart by reading the stream from the start. The
// runs stream keeps each run's announcement and completion for watchers
// (oxy run waits on oxy.run.<run>.completed). The feeds stream holds the
// standing feeds' payloads and control messages, without an age limit, so
// what a producer publishes while no statusworker runs waits there; its
// consumers ([FeedControlConsumer], one [FeedConsumer] per feed) are the
// statusworker's own and let one message be pending at a time.
//
// # Retention
//
// Nothing that belongs to a run expires by age: not its record, its
// claims, its status events nor its announcements. An age limit on any of
// them strands a run that stays open longer (a long run, or one paused and
// resumed a week later): a record gone means the run can no longer
// complete, resume, or tell writers its destination; claims gone mean a
// resumed feed bills its submitted docs again; status events gone mean a
// memory ledger rebuilt without them never completes the run. So an open
// run keeps all of it for as long as it stays open. A finished run
// (completed or failed) is removed as a whole a retention after it
// finished — by the statusworker's periodic re-check
// (statusworker.Config.RunRetention, 7 days by default) with
// [Topology.ForgetRun] — which also drops any stray work message of it
// still queued. Streams and buckets created by an earlier version with max
// ages lose them when a worker ensures the topology again.
//
// After a SIGKILL, oxy run --resume starts the embedded server on the same
// state directory: the streams still hold every unacknowledged message and
// the durable consumers their ack floors, so each stage resumes where it
// stopped; anything in flight at the kill is redelivered after AckWait.
//
// # Consumers
//
// One durable pull consumer per stage, named after the stage and shared by
// all its replicas (scaling is more pods, nothing else). Explicit acks; the
// server's MaxDeliver is unlimited and no server BackOff is set, because a
// server that stops redelivering a message drops it silently. Instead the
// stage runtime (internal/stage) enforces MaxDeliver itself and turns a message
// delivered more often into a hard failure ("poison message: delivered N
// times"), and retries with NakWithDelay on the RetryBackoff schedule.
//
//	stage         stream         AckWait  MaxAckPending  MaxDeliver  RetryBackoff              HandlerTimeout
//	submitter     OXY_PAYLOADS   60s      5000           10          1s 5s 15s 30s 60s         2m
//	poller        OXY_SUBMITTED  30s      20000          2000        1s 2s 5s 10s 30s          30s
//	writer        OXY_DONE       60s      256            10          1s 5s 15s 30s 60s         5m
//	statusworker  OXY_STATUS     30s      10000          20          1s 2s 5s 10s 30s          30s
//
// Why these numbers:
//   - AckWait is only how soon a dead worker's messages come back: a live
//     handler sends InProgress every AckWait/3, so AckWait never limits how
//     long work may take (HandlerTimeout does).
//   - MaxAckPending bounds what a stage holds. A delayed redelivery
//     (NakWithDelay) stays pending, so the poller's must cover every job it
//     waits on at once; the writer's is small because each write holds a
//     results body; the submitter's covers a full API batch (up to 5,000).
//   - MaxDeliver is a safety net against a message that crashes its worker.
//     The poller's is high because a pending job is redelivered on purpose
//     many times (its own limit is the pending-limit duration); the others
//     allow a few retries on top of their own retry policies. A submitter
//     payload waiting for a claim another submitter holds spends a delivery
//     per look, so the submitter validates MaxDeliver × ClaimRecheck
//     against its claim staleness limit and derives ClaimRecheck from them.
//   - RetryBackoff is the NakWithDelay schedule for errors a handler did not
//     classify, indexed by delivery count (the last entry repeats), with
//     ±20% jitter.
//
// # Key-value buckets
//
//	bucket       key                         value
//	oxy_claims   <run token>.<doc>           messages.Claim (JSON): claimed → submitted | released
//	oxy_claims   <run token>.settled.<n>     job ids of settled docs n×1024 … n×1024+1023, 8 bytes each
//	oxy_runs     <run token>                 messages.RunRecord (JSON): announced → ready | failed → stopping → completed
//	oxy_feeds    <feed>                      messages.FeedRecord (JSON): open ⇄ paused → closing → closed → open
//	oxy_feed_ids <feed>.<hash of the id>     messages.FeedAssignment (JSON): the run and doc of a producer's id, kept
//
// [Claims], [Runs] and [Feeds] wrap them with compare-and-set operations; every
// transition is conditional on the revision that was read. A submitted
// claim whose payload message is gone is settled ([Claims.Settle]): its job
// id moves into its run's settled record and its own key goes, so that the
// broker holds a key per doc in flight, not per doc of every open run; it
// still reads as submitted.
package topology
