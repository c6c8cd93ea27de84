// Package payload holds one Web Scraper API (WSA) request body as the user
// wrote it, and the local checks that run before anything is billed.
//
// A Payload keeps the JSON object exactly as given: its keys in their order,
// unknown keys included, and every value as the bytes that were sent (a
// number stays 1.0 or 1e2, a string keeps its escapes). The API accepts about
// a hundred sources, each with its own parameters, and drops or rejects keys
// per source; a client that modelled every field would lose what it did not
// know, and a run log would not show the body that was actually sent. So the
// model is an ordered list of raw fields with typed accessors for the few
// keys the pipeline acts on: source, the input key, pages and the
// batch-relevant inputs.
//
// Parse reads one JSON line and Reader reads a JSONL stream; a bad line is a
// *LineError naming the line and the reason. Validate rejects locally what
// the API would reject or bill for nothing (see validate.go for the list and
// what the API does in each case). BatchKey, BatchBody and BatchSize group payloads
// that differ only in url, query or prompt so that they can go to
// /v1/queries/batch together. Redacted returns the body with credentials in
// any URL replaced by "redacted:redacted", for logs and run logs.
package payload
