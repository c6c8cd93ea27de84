// Package submitter is the stage that turns payload messages into Web
// Scraper API jobs. It is the only stage that spends money, so its one
// promise is exactness: no payload is billed twice, and every payload ends
// with a record that says truly what became of it.
//
// # One payload
//
// For each message on oxy.payload.<run> (handled in batches, so that one
// fetch can become API batch requests):
//
//  1. Decode it. A message that does not decode is a hard failure with the
//     reason (the runtime records it); the worker goes on.
//  2. Read the run's state from the runs bucket (cached for RunStateTTL).
//     A stopping or failed run: the payload is recorded unsubmitted ("the
//     run was stopped before this payload was submitted") without a request
//     — unless its claim shows a job already exists, which then goes on.
//  3. Validate it locally (payload.Validate): a failure is rejected, with
//     no status code, at no cost.
//  4. A redelivery (or a re-drive) first looks at the doc's claim, so
//     that a doc whose job exists or whose claim another submitter holds
//     is settled (as in step 7) without queueing for the rate budget.
//  5. Plan the requests: payloads that differ only in url, query or prompt
//     go as one batch, sized for the rate limit; the rest singly. A source
//     the API says takes no batches is remembered and its payloads are
//     sent singly.
//  6. Wait for the request's rate budget (wsa.Pacer, shared by the
//     process). A payload waiting here holds no claim.
//  7. Once admitted, claim the docs of the request in the claims bucket (a
//     compare-and-set create). A claim that already holds a job id means
//     the job exists: its Submitted is published again (same message id,
//     so the broker drops a copy it already has) and the payload is not
//     sent. A claim without a job id younger than ClaimStaleAfter belongs
//     to a submitter that may be inside its request right now: the message
//     waits (NakWithDelay, no record), ClaimRecheck at a time, and keeps
//     waiting past the consumer's MaxDeliver if it must (a dead letter is
//     never what calls a young claim's outcome unknown; the settings are
//     validated so that MaxDeliver × ClaimRecheck covers ClaimStaleAfter
//     anyway). An older one was left by a
//     submitter that died inside its request: the payload is recorded
//     unsubmitted with an "outcome unknown, may have billed" error and is
//     never resubmitted automatically. A claim "unknown" (an earlier answer
//     proved nothing) is the same, except for the one retry of
//     RetryUnknownOnce. (A deliberate re-drive with a higher Attempt may
//     take either over.) A request left with no
//     payload gives its budget back to the pacer; a batch left with fewer
//     goes with those (one alone goes singly).
//  8. Send the request, and record the answer (see Answers below); the
//     answers of a batch's payloads are recorded under their claims
//     concurrently, so that no claim of a large batch waits for the others
//     long enough to look stale. The
//     payloads of a batch refused whole, or refused as not batchable, have
//     their claims released and go singly through steps 6 to 8 again (the
//     batch created no job for them).
//     Before the request goes, the docs whose claims were created afresh
//     are looked up in their run's settled record (one read per segment of
//     1,024 docs): a copy of a payload whose doc was settled finds its job
//     there, and its fresh claim is removed and its Submitted published
//     again instead.
//  9. A retryable failure on the message's last allowed delivery is recorded
//     unsubmitted with the last error — marked as possibly billed when the
//     doc's claim says a request may have created a job, or cannot be read
//     (a claim that may hold a job id is never plainly unsubmitted); a claim
//     holding a job id publishes that job instead.
//  10. Once the payload message of a doc acked with a job id is gone from
//     its stream (the stream's first sequence is past it, or a look finds
//     it deleted), its claim is settled (topology.Claims.Settle), every
//     Config.SettleInterval: no delivery of it can come again, and the
//     broker stops holding about 140 bytes for it.
//
// # Answers
//
//   - a job: its id goes under the claim first — tried with back-off for as
//     long as the process lives, the message pinned meanwhile so that
//     neither a redelivery nor a drain loses the id — then Submitted and
//     the success event at "submitted" are published, then the message is
//     acked. An unreadable 2xx that names its job in x-oxylabs-job-id is
//     that job.
//   - 400/422, or a batch "errors" entry: rejected with the status code
//     (202 for a batch entry), message and trace id; claim released.
//   - 429 of the rate limit, or a failure before the request was sent in
//     full: no job was created: claim released, soft failure, redelivered
//     later.
//   - any other failure — a 5xx, a timeout or dropped connection after the
//     request was sent, an unreadable 2xx without a job id, a batch job
//     whose id is not a job id — leaves the outcome unknown: the API may
//     have created (and billed) the job. The claim becomes "unknown" and
//     carries the sticky may-have-billed mark; the payload is not sent
//     again and ends unsubmitted with error.may_have_billed. With
//     RetryUnknownOnce it is sent exactly once more first, with a warning
//     that a duplicate bills. A 5xx on a batch does this
//     to every payload of it.
//   - every failure of a doc whose claim carries the mark (say, 429s on
//     its one retry) is marked too.
//   - domain throttle: unsubmitted, never retried.
//   - 401, 403, other 4xx: unsubmitted, and the run is marked stopping so
//     its remaining payloads are recorded unsubmitted without a request.
//   - a batch refused whole (400, throttle): its payloads are sent singly so
//     each gets its own answer.
//
// # Crash points
//
// A payload holds a claim only from the moment the pacer admits its request
// until the answer is recorded; while it waits for the rate budget it holds
// none. The submitter may die anywhere; the next delivery of the message
// (after AckWait) finds the state it left and does the right thing:
//
//   - before its request was admitted (still waiting for the rate budget,
//     however long): nothing happened; the payload is claimed and sent
//     when its turn comes. This is where a rate-limited run keeps most of
//     its payloads, so a kill costs them nothing.
//   - after the claim, before the request is sent (a few bucket round
//     trips): the claim is "claimed" without a job id. The redelivery
//     waits until the claim is ClaimStaleAfter old and then records
//     "outcome unknown" — no request was sent, but nothing can tell this
//     point from the next one, and a second bill is worse than a payload
//     to re-drive by hand.
//   - inside the request: the same state, and here the API may indeed have
//     created (and billed) the job: "outcome unknown, may have billed",
//     never resubmitted.
//   - after the answer, before the job id is stored: the same again; the job
//     exists and its id is lost, which is what the record says. (Only a
//     death loses it: a live submitter keeps trying to store it, through
//     broker outages and SIGTERM.)
//   - after the job id is stored, before Submitted is published: the claim
//     holds the id; the redelivery publishes Submitted and the success, with
//     no request.
//   - after publishing, before the ack: the same; the republished Submitted
//     has the same message id and the broker drops it, the repeated success
//     event is harmless (the ledger keeps the newest).
//   - after a refused batch released its claims, before a payload is sent
//     singly: as before admission; nothing was created.
//
// A live submitter whose claim create timed out (a slow broker) reads the
// claim back on a fresh context; if even that fails, or if a release does
// not land, it remembers the claim it left behind, and the payload's next
// delivery in this process takes that claim as its own and submits — no
// request was sent under it (or the API created nothing), so it is no
// unknown outcome.
//
// So a kill leaves "outcome unknown" only the docs of the requests admitted
// and not yet answered at that moment (the requests in flight), never
// those still waiting for the rate budget.
//
// A SIGTERM is not a crash: requests in flight are not cancelled (their
// answers are recorded), payloads still waiting for the rate budget are
// given back at once, unclaimed.
//
// # Metrics
//
//	oxy_submitter_payloads_total{outcome}     submitted, republished, rejected, unsubmitted, unknown_outcome, retry, wait
//	oxy_submitter_requests_total{endpoint,class}  submit|batch × accepted, retry, reject, stop, throttle, canceled
//	oxy_submitter_request_seconds{endpoint}   API latency
//	oxy_submitter_request_values              payloads per request (batch sizes)
//	oxy_submitter_pacer_wait_seconds          time spent waiting for the rate budget
//	oxy_submitter_job_ids_total{stored_in}    job ids stored: record (the run's settled record) or claim (the doc's own)
//	oxy_submitter_record_failures_total       ids stored under their claims because the record write failed; a steady
//	                                          rise with many replicas on one run means they contend for its segments
//	oxy_submitter_billed_twice_total          docs the API created a second job for; anything above 0 is worth an alert
//
// plus the runtime's oxy_stage_* series with stage="submitter".
package submitter
