// Package emulator is a local stand-in for the Oxylabs Web Scraper API
// (Push-Pull): an http.Handler that answers the way the live API was observed
// to answer, so that the client, every pipeline stage, the end-to-end tests and
// `oxy sandbox` run without credentials and without spending money.
//
// What it reproduces of the API:
//
//   - Basic auth failures with the live bodies; the nginx 404 for non-numeric ids.
//   - POST /v1/queries: 202 with the job object in the full (34-field) shape for
//     universal, Amazon, Google, Bing and three YouTube sources, or the short
//     shape (the payload's keys, sorted) for the others; `_links` with http://
//     hrefs; 19-digit ids rising from 7500000000000000001; UTC timestamps;
//     validation errors with the live messages; strict sources answer with an
//     `errors` list.
//   - POST /v1/queries/batch: partial acceptance, whole-batch 429, the
//     one-array rule, per-value errors for sources that cannot batch.
//   - Per-second submission limits (total and rendered) over a window opened by
//     the first submission, with both header spellings; GETs are never limited.
//   - pending → done | faulted after a per-job delay; results per page and per
//     output type; 613 for faulted jobs; 204 with x-oxylabs-job-status while
//     pending, for faulted content and after results expire.
//   - Callbacks to callback_url, cloud-upload `statuses` entries, the domain
//     throttle, injected 5xx/524/connection drops, GET /v1/info/callbacker_ips.
//
// Why it is built this way:
//
//   - Time is read from an injectable Clock. A job's final status is computed
//     from the clock when it is asked for, so no goroutine or timer exists per
//     job; tests advance a FakeClock instead of sleeping, and 100k pending jobs
//     cost only memory. TimeScale shrinks every job duration for real-clock runs.
//   - Every random choice (job duration, fault, injected error) is drawn from a
//     generator seeded by Config.Seed and the job's own input, so the same
//     inputs under the same seed give the same ids and the same outcomes.
//   - Behaviour per payload is scripted with Rules (always fault, stay pending,
//     status check answers 404, submission fails N times, throttle, reject …)
//     and per endpoint with Faults. A rules file, the JSON form of both
//     (Config.LoadRules, documented for users in RulesHelp), scripts them
//     from outside a Go program.
//   - It counts what would be billed (GET /_sandbox/stats and Stats), so a test
//     can prove that no payload was submitted twice.
//   - It must never be the bottleneck of a pipeline benchmark: job objects are
//     rendered from templates shared by every job with the same options, and
//     large result bodies are written from one precomputed buffer.
//   - Its memory follows the jobs it must still answer for, compactly: a job is
//     a 32-byte record in a chunk of 4096 found by its id, plus its input's
//     bytes and a 16-byte count (about 100 bytes at a URL of 40); bodies are
//     generated when asked for; a chunk is released once all its jobs finished
//     JobTTL ago.
//
// The emulator is the server side: it does its own validation with the live
// messages and imports nothing from the client packages.
package emulator
