package wsa

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/oxypipe/oxypipe/internal/jsonscan"
	"github.com/oxypipe/oxypipe/pkg/payload"
)

// Submit creates one job: POST /v1/queries with the payload's JSON, exactly
// as given (it is not validated here; see payload.Validate). The API answers
// 202 with the pending job. The RateLimit of the answer is returned with
// errors too (a 429 carries it); it is zero when the request got no answer.
func (c *Client) Submit(ctx context.Context, p payload.Payload) (Job, RateLimit, error) {
	r, err := c.exchange(ctx, http.MethodPost, "/v1/queries", p.JSON())
	rl := ParseRateLimit(r.Header)
	if err != nil {
		return Job{}, rl, err
	}
	job, err := parseJob(r.Body)
	if err != nil {
		return Job{}, rl, newBadResponse(r.StatusCode, "decoding the job", err)
	}
	if job.ID == "" {
		return Job{}, rl, newBadResponse(r.StatusCode, "decoding the job", errors.New("the job has no id"))
	}
	return job, rl, nil
}

// BatchItem is the outcome of one payload of a batch: a Job, or Err (an
// *APIError with StatusCode 202 for a value the API refused in its "errors"
// list, or for a value the answer did not mention).
type BatchItem struct {
	Job Job
	Err error
}

// BatchResult is the answer to a batch, matched back to its payloads.
type BatchResult struct {
	// Items has one entry per payload, in the order of the payloads given.
	Items []BatchItem
	// UnmatchedJobs are jobs of the answer that no payload could be matched
	// to. They exist and bill; a caller should record them.
	UnmatchedJobs []Job
	// UnmatchedErrors are "errors" entries no payload could be matched to.
	UnmatchedErrors []*APIError
}

// Accepted returns how many payloads got a job.
func (r BatchResult) Accepted() int {
	n := 0
	for _, it := range r.Items {
		if it.Err == nil {
			n++
		}
	}
	return n
}

// SubmitBatch creates one job per payload with a single POST
// /v1/queries/batch. The payloads must share a payload.BatchKey (they differ
// only in their url, query or prompt) and be at most payload.MaxBatch; the
// body is payload.BatchBody's. Otherwise it fails before any request with an
// error wrapping payload.ErrNotBatchable.
//
// The API accepts a batch in part: it answers 202 with the jobs it created
// and an "errors" entry per value it refused, so the result has an item per
// payload. A failure of the whole request (400 for the whole batch, 429
// when the batch exceeds the remaining budget, 5xx, network) is returned as
// the error, with no items.
func (c *Client) SubmitBatch(ctx context.Context, ps []payload.Payload) (BatchResult, RateLimit, error) {
	body, err := payload.BatchBody(ps)
	if err != nil {
		return BatchResult{}, RateLimit{}, err
	}
	r, err := c.exchange(ctx, http.MethodPost, "/v1/queries/batch", body)
	rl := ParseRateLimit(r.Header)
	if err != nil {
		return BatchResult{}, rl, err
	}
	jobs, errs, err := parseBatch(r.Body)
	if err != nil {
		return BatchResult{}, rl, newBadResponse(r.StatusCode, "decoding the batch", err)
	}
	inputKey, _ := ps[0].Input()
	return matchBatch(ps, inputKey, jobs, batchErrors(errs, r.StatusCode)), rl, nil
}

// parseBatch reads a batch answer, {"queries": [job…], "errors": …}: one
// validation of the whole body, then one scan per job.
func parseBatch(body []byte) (jobs []Job, errs json.RawMessage, err error) {
	if err := validJSON(body); err != nil {
		return nil, nil, err
	}
	var queries []byte
	isObject := jsonscan.Object(body, func(name, value []byte) {
		switch string(name) {
		case "queries":
			queries = value
		case "errors":
			errs = value
		}
	})
	if !isObject {
		return nil, nil, errors.New("the answer is not a JSON object")
	}
	if len(queries) == 0 || string(queries) == "null" {
		return nil, errs, nil
	}
	var jobErr error
	isArray := jsonscan.Array(queries, func(v []byte) {
		job, err := decodeJob(v)
		if err != nil && jobErr == nil {
			jobErr = fmt.Errorf("queries[%d]: %w", len(jobs), err)
		}
		jobs = append(jobs, job)
	})
	switch {
	case !isArray:
		return nil, nil, errors.New(`its "queries" is not a list`)
	case jobErr != nil:
		return nil, nil, jobErr
	}
	return jobs, errs, nil
}
