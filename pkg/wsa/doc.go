// Package wsa is a client for the Push-Pull endpoints of the Oxylabs Web
// Scraper API (WSA): submit a job or a batch, read a job's status, and read
// its results.
//
// The client is thin on purpose. It neither retries nor sleeps: the stages
// of the pipeline decide when to try again (a pending job is a delayed
// redelivery, not a sleeping goroutine) and must know, after every failure,
// whether a job may have been created and billed. So every call makes
// exactly one request and returns what happened as values:
//
//   - one *APIError for every failure, with the status code (0 for a network
//     failure), the API's message and trace id; errors.Is works on status
//     codes (ErrNotFound, ErrTooManyRequests, …) and on ErrDomainThrottle;
//   - Classify, which sorts a failure into Retry, Reject, Stop, Throttle or
//     Canceled, and MayHaveCreatedJob, which tells a
//     retried submission from one whose first attempt may already have billed;
//   - RateLimit, parsed from the x-ratelimit-* headers in both spellings the
//     API uses, and Pacer, which paces submissions on them (the API sends no
//     Retry-After);
//   - *NoContentError for a 204 from /results, telling a pending job
//     (ErrPending) from one whose results are gone (ErrExpired).
//
// Results streams the body of /results unchanged, so that a writer can copy
// it to a file without decoding it; ResultsDecoded decodes it for callers
// that want the entries. Credentials are sent as HTTP Basic auth and never
// appear in an error or in the printed form of a Client or a Config.
package wsa
