package wsa

import (
	"context"
	"errors"
	"net/http"
)

// Status reads a job: GET /v1/queries/{id}. The API answers 200 with the
// job object while it keeps the job (days after it finished), and 404
// "Query not found." for an unknown or purged id (ErrNotFound).
func (c *Client) Status(ctx context.Context, id string) (Job, error) {
	path, err := jobPath(id)
	if err != nil {
		return Job{}, err
	}
	r, err := c.exchange(ctx, http.MethodGet, path, nil)
	if err != nil {
		return Job{}, err
	}
	job, err := parseJob(r.Body)
	if err != nil {
		return Job{}, newBadResponse(r.StatusCode, "decoding the job", err)
	}
	if job.ID == "" {
		return Job{}, newBadResponse(r.StatusCode, "decoding the job", errors.New("the job has no id"))
	}
	return job, nil
}

// parseJob reads an answer that must be one job object.
func parseJob(body []byte) (Job, error) {
	if err := validJSON(body); err != nil {
		return Job{}, err
	}
	return decodeJob(body)
}
