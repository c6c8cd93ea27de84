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
//
// A 2xx answer whose body cannot be read, or holds no valid job id, is an
// error wrapping ErrBadResponse (the job may exist) — unless the answer names
// its job in the x-oxylabs-job-id header, which the API sends on a single
// submission: then the job exists, and Submit returns it with that id and
// status pending (its other fields unknown).
func (c *Client) Submit(ctx context.Context, p payload.Payload) (Job, RateLimit, error) {
	r, err := c.exchange(ctx, http.MethodPost, "/v1/queries", p.JSON())
	rl := ParseRateLimit(r.Header)
	if err == nil {
		var job Job
		if job, err = parseJob(r.Body); err == nil && !ValidJobID(job.ID) {
			err = errors.New("the job has no valid id")
		}
		if err == nil {
			return job, rl, nil
		}
		err = newBadResponse(r.StatusCode, "decoding the job", err)
	}
	if job, ok := jobFromHeader(r, err); ok {
		return job, rl, nil
	}
	return Job{}, rl, err
}

// jobFromHeader returns the job an unreadable 2xx answer names in its
// x-oxylabs-job-id header: the API created it, so its id is known even
// though its body is not.
func jobFromHeader(r reply, err error) (Job, bool) {
	if r.StatusCode < 200 || r.StatusCode > 299 || !errors.Is(err, ErrBadResponse) {
		return Job{}, false
	}
	id := r.Header.Get(HeaderJobID)
	if !ValidJobID(id) {
		return Job{}, false
	}
	return Job{ID: id, Status: JobPending}, true
}

// BatchItem is the outcome of one payload of a batch: a Job, or Err (an
// *APIError with StatusCode 202 for a value the API refused in its "errors"
// list, or for a value the answer did not mention; one wrapping
// ErrBadResponse for a value whose job has no valid id, which may exist).
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
	res := matchBatch(ps, inputKey, jobs, batchErrors(errs, r.StatusCode))
	for i := range res.Items {
		// A job without a valid id is never passed on: the payload it was
		// matched to may have a job nobody can name.
		if it := &res.Items[i]; it.Err == nil && !ValidJobID(it.Job.ID) {
			it.Job, it.Err = Job{}, newBadResponse(r.StatusCode, "decoding the batch", errors.New("the job matched to this payload has no valid id"))
		}
	}
	return res, rl, nil
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
