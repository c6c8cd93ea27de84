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
//  4. Claim the doc in the claims bucket (a compare-and-set create) before
//     any request. A claim that already holds a job id means the job exists:
//     its Submitted is published again (same message id, so the broker drops
//     a copy it already has) and nothing is sent. A claim without a job id
//     younger than ClaimStaleAfter belongs to a submitter that may be inside
//     its request right now: the message waits (NakWithDelay, no record).
//     An older one was left by a submitter that died inside its request: the
//     payload is recorded unsubmitted with an "outcome unknown, may have
//     billed" error and is never resubmitted automatically. (A deliberate
//     re-drive with a higher Attempt may take such a claim over.)
//  5. Submit: payloads that differ only in url, query or prompt go as one
//     batch, sized for the rate limit; the rest singly. A source the API
//     says takes no batches is remembered and its payloads are sent singly
//     (their claims are kept: the batch created no job for them). Every
//     request waits for the rate budget (wsa.Pacer, shared by the process).
//  6. Record the answer (see Answers below).
//  7. A retryable failure on the message's last allowed delivery is recorded
//     unsubmitted with the last error, and its claim is released.
//
// # Answers
//
//   - a job: its id goes under the claim first, then Submitted and the
//     success event at "submitted" are published, then the message is acked.
//   - 400/422, or a batch "errors" entry: rejected with the status code
//     (202 for a batch entry), message and trace id; claim released.
//   - 429 of the rate limit, 5xx, network: claim released, soft failure,
//     redelivered later. After a 5xx or a read error the API may have
//     created the job; like the origin client the payload is retried with a
//     warning that a duplicate bills.
//   - domain throttle: unsubmitted, never retried.
//   - 401, 403, other 4xx: unsubmitted, and the run is marked stopping so
//     its remaining payloads are recorded unsubmitted without a request.
//   - a batch refused whole (400, throttle): its payloads are sent singly so
//     each gets its own answer.
//
// # Crash points
//
// The submitter may die anywhere; the next delivery of the message (after
// AckWait) finds the state it left and does the right thing:
//
//   - before the claim: nothing happened; the payload is claimed and sent.
//   - after the claim, before the request: the claim is "claimed" without a
//     job id. The redelivery waits until the claim is ClaimStaleAfter old and
//     then records "outcome unknown" — no request was sent, but nothing can
//     tell this point from the next one, and a second bill is worse than a
//     payload to re-drive by hand.
//   - inside the request: the same state, and here the API may indeed have
//     created (and billed) the job: "outcome unknown, may have billed",
//     never resubmitted.
//   - after the answer, before the job id is stored: the same again; the job
//     exists and its id is lost, which is what the record says.
//   - after the job id is stored, before Submitted is published: the claim
//     holds the id; the redelivery publishes Submitted and the success, with
//     no request.
//   - after publishing, before the ack: the same; the republished Submitted
//     has the same message id and the broker drops it, the repeated success
//     event is harmless (the ledger keeps the newest).
//
// A SIGTERM is not a crash: requests in flight are not cancelled (their
// answers are recorded), payloads not yet sent are given back with their
// claims released.
//
// # Metrics
//
//	oxy_submitter_payloads_total{outcome}     submitted, republished, rejected, unsubmitted, unknown_outcome, retry, wait
//	oxy_submitter_requests_total{endpoint,class}  submit|batch × accepted, retry, reject, stop, throttle, canceled
//	oxy_submitter_request_seconds{endpoint}   API latency
//	oxy_submitter_request_values              payloads per request (batch sizes)
//	oxy_submitter_pacer_wait_seconds          time spent waiting for the rate budget
//
// plus the runtime's oxy_stage_* series with stage="submitter".
package submitter
