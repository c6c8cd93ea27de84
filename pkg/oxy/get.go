package oxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/oxypipe/oxypipe/pkg/destination"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// FetchStatus is what Lookup, Get or Save found for a job id. A failure to
// ask (the network, a refused credential, a 5xx) or to write is not a
// status but the error returned next to it.
type FetchStatus string

// The outcomes of Lookup, Get and Save.
const (
	// FetchDone: the job is done; from Get and Save, Fetched.Body holds its
	// results; from Lookup, which reads no results, it is done at the API
	// (its results may have expired since: Get tells).
	FetchDone FetchStatus = "done"
	// FetchPending: the job is not finished yet; ask again later.
	FetchPending FetchStatus = "pending"
	// FetchFaulted: the API faulted the job; there are no results (it was
	// not billed; resubmit its payload).
	FetchFaulted FetchStatus = "faulted"
	// FetchExpired: the job was done but its results are no longer kept.
	FetchExpired FetchStatus = "expired"
	// FetchUnknown: the API knows no job with this id (404).
	FetchUnknown FetchStatus = "unknown"
)

// Sentinels matched by a *JobError (Fetched.Err) with errors.Is.
var (
	ErrJobPending = errors.New("job pending")
	ErrJobFaulted = errors.New("job faulted")
	ErrJobExpired = errors.New("job results expired")
	ErrJobUnknown = errors.New("job not found")
)

// Fetched is a job as Get found it.
type Fetched struct {
	// ID is the job id asked for.
	ID string
	// Status is the outcome: done, pending, faulted, expired or unknown.
	Status FetchStatus
	// Job is the job object (zero for an unknown id).
	Job wsa.Job
	// Body is the /results body exactly as the API sent it, for a done job
	// (nil otherwise).
	Body []byte
	// File is where Save wrote the body ("" for Get, and when nothing was
	// written).
	File string
	// Message is the API's answer for an unknown id ("Query not found.").
	Message string

	cause error // the API's answer behind an unknown id
}

// Err returns nil for a done job, else a *JobError saying why there is no
// result (errors.Is with ErrJobPending, ErrJobFaulted, ErrJobExpired or
// ErrJobUnknown).
func (f *Fetched) Err() error {
	if f.Status == FetchDone {
		return nil
	}
	return &JobError{ID: f.ID, Status: f.Status, Message: f.Message, Err: f.cause}
}

// JobError says why Get has no result for a job.
type JobError struct {
	ID      string
	Status  FetchStatus
	Message string
	// Err is the API's answer behind an unknown id (a *wsa.APIError with
	// status 404), nil otherwise.
	Err error
}

// Unwrap returns the API's answer behind the outcome, if any.
func (e *JobError) Unwrap() error { return e.Err }

// Error implements error: "job 7500000000000000001 is pending".
func (e *JobError) Error() string {
	switch e.Status {
	case FetchPending:
		return fmt.Sprintf("job %s is pending", e.ID)
	case FetchFaulted:
		return fmt.Sprintf("job %s faulted", e.ID)
	case FetchExpired:
		return fmt.Sprintf("the results of job %s expired", e.ID)
	case FetchUnknown:
		if e.Message != "" {
			return fmt.Sprintf("job %s not found: %s", e.ID, e.Message)
		}
		return fmt.Sprintf("job %s not found", e.ID)
	}
	return fmt.Sprintf("job %s: %s", e.ID, e.Status)
}

// Is matches the sentinel of the status.
func (e *JobError) Is(target error) bool {
	switch e.Status {
	case FetchPending:
		return target == ErrJobPending
	case FetchFaulted:
		return target == ErrJobFaulted
	case FetchExpired:
		return target == ErrJobExpired
	case FetchUnknown:
		return target == ErrJobUnknown
	}
	return false
}

// Lookup reads a job's status by id, without its results: done (at the
// API), pending, faulted or unknown. One status request; it costs nothing.
// The error is for failures to ask (network, 401, 5xx).
func (c *Client) Lookup(ctx context.Context, id string) (*Fetched, error) {
	api, err := c.apiClient(ctx)
	if err != nil {
		return nil, err
	}
	f := &Fetched{ID: id}
	job, err := api.Status(ctx, id)
	switch {
	case errors.Is(err, wsa.ErrNotFound):
		return unknown(f, err), nil
	case err != nil:
		return nil, fmt.Errorf("oxy: look up job %s: %w", id, err)
	}
	f.Job = job
	switch job.Status {
	case wsa.JobPending:
		f.Status = FetchPending
	case wsa.JobFaulted:
		f.Status = FetchFaulted
	default:
		f.Status = FetchDone
	}
	return f, nil
}

// Get fetches a job by id from the API: its results when it is done, else
// its status. Pending, faulted, expired and unknown jobs are
// outcomes (Fetched.Status, Fetched.Err), not errors; the error is for
// failures to ask (network, 401, 5xx). Get writes nothing; see Save. Reading
// a job costs nothing.
func (c *Client) Get(ctx context.Context, id string) (*Fetched, error) {
	api, err := c.apiClient(ctx)
	if err != nil {
		return nil, err
	}
	f := &Fetched{ID: id}
	resp, err := api.Results(ctx, id)
	var noContent *wsa.NoContentError
	switch {
	case err == nil:
		body, rerr := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if rerr != nil {
			return nil, fmt.Errorf("oxy: get job %s: %w", id, rerr)
		}
		var res struct {
			Job wsa.Job `json:"job"`
		}
		status := resp.JobStatus
		if json.Unmarshal(body, &res) == nil && res.Job.Status != "" {
			f.Job, status = res.Job, res.Job.Status
		}
		if status == wsa.JobFaulted {
			f.Status = FetchFaulted
			return f, nil
		}
		f.Status, f.Body = FetchDone, body
		return f, nil
	case errors.As(err, &noContent):
		job, serr := api.Status(ctx, id)
		if errors.Is(serr, wsa.ErrNotFound) {
			return unknown(f, serr), nil
		}
		if serr != nil {
			return nil, fmt.Errorf("oxy: get job %s: %w", id, serr)
		}
		f.Job = job
		switch job.Status {
		case wsa.JobPending:
			f.Status = FetchPending
		case wsa.JobFaulted:
			f.Status = FetchFaulted
		default:
			f.Status = FetchExpired
		}
		return f, nil
	case errors.Is(err, wsa.ErrNotFound):
		return unknown(f, err), nil
	default:
		return nil, fmt.Errorf("oxy: get job %s: %w", id, err)
	}
}

func unknown(f *Fetched, err error) *Fetched {
	f.Status, f.cause = FetchUnknown, err
	var apiErr *wsa.APIError
	if errors.As(err, &apiErr) {
		f.Message = apiErr.Message
	}
	return f
}

// Save is Get that also writes a done job's body, unchanged, to dest as
// "<id>.json" (`oxy get -d`). Nothing is written for other outcomes.
func (c *Client) Save(ctx context.Context, id string, dest destination.Destination) (*Fetched, error) {
	f, err := c.Get(ctx, id)
	if err != nil || f.Status != FetchDone {
		return f, err
	}
	if err := dest.Put(ctx, destination.ResultName(id), bytes.NewReader(f.Body)); err != nil {
		return f, fmt.Errorf("oxy: save job %s: %w", id, err)
	}
	f.File = destination.ResultFile(dest.String(), id)
	return f, nil
}
