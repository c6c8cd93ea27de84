package wsa

import (
	"context"
	"errors"
	"net/http"

	"github.com/oxypipe/oxypipe/internal/jsonscan"
	"github.com/oxypipe/oxypipe/pkg/payload"
)

// RealtimeResult is the Realtime integration's answer: the finished job's
// body, as /results would have it.
type RealtimeResult struct {
	// Body is the answer's body, unchanged: {"results":[…],"job":{…}}.
	Body []byte
	// Job is the body's job (done or faulted: Realtime answers 200 for a
	// faulted job too).
	Job Job
}

// Realtime runs one job with the Realtime integration: POST /v1/queries on
// the Realtime host (Config.RealtimeURL) with the payload's JSON, answered
// when the job finished, with its results. The call waits at least
// RealtimeTimeout (or Config.Timeout when longer).
//
// Failures are classified as for Submit (see Classify and
// MayHaveCreatedJob): a 408 ("Timed out.", for a job that runs 150 s or
// longer) and a 400 or 422 (a storage_url, an LLM source) are rejections; a
// 200 whose body cannot be read or names no valid job wraps ErrBadResponse
// and, like a 5xx or an answer lost after the request was sent, leaves the
// outcome unknown: the job may exist and bill, so the payload must not be
// sent again without the caller's consent. Realtime jobs are not visible to
// Status or Results.
func (c *Client) Realtime(ctx context.Context, p payload.Payload) (RealtimeResult, error) {
	timeout := c.timeout
	if timeout > 0 {
		timeout = max(timeout, RealtimeTimeout)
	}
	cl := startCallTimeout(ctx, timeout)
	r, err := c.exchangeAt(ctx, cl, c.realtime, http.MethodPost, "/v1/queries", p.JSON())
	if err != nil {
		return RealtimeResult{}, err
	}
	job, err := realtimeJob(r.Body)
	if err != nil {
		return RealtimeResult{}, newBadResponse(r.StatusCode, "decoding the Realtime answer", err)
	}
	return RealtimeResult{Body: r.Body, Job: job}, nil
}

// realtimeJob reads the job of a Realtime answer, {"results": …, "job": …}.
func realtimeJob(body []byte) (Job, error) {
	if err := validJSON(body); err != nil {
		return Job{}, err
	}
	var raw []byte
	if !jsonscan.Object(body, func(name, value []byte) {
		if string(name) == "job" {
			raw = value
		}
	}) {
		return Job{}, errors.New("the answer is not a JSON object")
	}
	if raw == nil {
		return Job{}, errors.New(`the answer has no "job"`)
	}
	job, err := decodeJob(raw)
	if err != nil {
		return Job{}, err
	}
	if !ValidJobID(job.ID) {
		return Job{}, errors.New("the job has no valid id")
	}
	return job, nil
}
