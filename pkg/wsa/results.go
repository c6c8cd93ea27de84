package wsa

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Header names the API sets on job answers.
const (
	HeaderJobStatus = "X-Oxylabs-Job-Status"
	HeaderJobID     = "X-Oxylabs-Job-Id"
)

// Outcomes of a 204 from /results, matched with errors.Is on a
// *NoContentError.
var (
	// ErrNoContent matches every 204 from /results.
	ErrNoContent = errors.New("no results")
	// ErrPending: the job is still pending; ask again later.
	ErrPending = errors.New("job pending")
	// ErrExpired: the job finished (x-oxylabs-job-status done or faulted)
	// but /results has nothing: its results expired, or a faulted job kept
	// none. Read the status endpoint for the final status; the results
	// cannot be had any more.
	ErrExpired = errors.New("job finished without results")
)

// NoContentError is a 204 from /results: there are no results to give.
// JobStatus, from the x-oxylabs-job-status header, tells a pending job
// (errors.Is ErrPending) from a finished one whose results are gone
// (ErrExpired); when the header is missing only ErrNoContent matches.
type NoContentError struct {
	JobID     string
	JobStatus JobStatus
}

// Error says which case it is.
func (e *NoContentError) Error() string {
	switch {
	case e.JobStatus == JobPending:
		return fmt.Sprintf("job %s: no results yet: the job is pending", e.JobID)
	case e.JobStatus.Final():
		return fmt.Sprintf("job %s: no results: the job is %s and its results are gone", e.JobID, e.JobStatus)
	case e.JobStatus == "":
		return fmt.Sprintf("job %s: no results, and no job status", e.JobID)
	}
	return fmt.Sprintf("job %s: no results: unknown job status %q", e.JobID, string(e.JobStatus))
}

// Is matches ErrNoContent, and ErrPending or ErrExpired by JobStatus.
func (e *NoContentError) Is(target error) bool {
	switch target {
	case ErrNoContent:
		return true
	case ErrPending:
		return e.JobStatus == JobPending
	case ErrExpired:
		return e.JobStatus.Final()
	}
	return false
}

// ResultsResponse is a 2xx answer of /results whose body has not been read.
// The caller must close Body.
type ResultsResponse struct {
	// Body is the answer's body, unchanged: {"results":[…],"job":{…}}.
	// Copying it to a file writes the API's body byte for byte. Reading it
	// is bounded by the caller's context only, not by Config.Timeout.
	Body io.ReadCloser
	// StatusCode is the HTTP status (200).
	StatusCode int
	// JobStatus and JobID are the x-oxylabs-job-status and
	// x-oxylabs-job-id headers ("" when absent).
	JobStatus JobStatus
	JobID     string
	// ContentLength is the body's length, or -1 when unknown.
	ContentLength int64
	// Header is the answer's header.
	Header http.Header
}

// Results opens a job's results: GET /v1/queries/{id}/results, with
// ?type=a,b when types are given (raw, parsed, png, markdown, xhr). The body
// is returned unread, to be streamed; see ResultsDecoded for the entries.
//
// A 204 returns a *NoContentError (ErrPending while the job is pending,
// ErrExpired once it finished without results); any other failure an
// *APIError.
func (c *Client) Results(ctx context.Context, id string, types ...string) (*ResultsResponse, error) {
	rr, _, err := c.results(ctx, id, types, false)
	return rr, err
}

// results opens /results. When wholeCall is false the timeout stops at the
// headers; when true it runs until the body is closed.
func (c *Client) results(ctx context.Context, id string, types []string, wholeCall bool) (*ResultsResponse, *call, error) {
	path, err := jobPath(id)
	if err != nil {
		return nil, nil, err
	}
	cl := c.startCall(ctx)
	resp, err := c.send(cl, http.MethodGet, path+"/results", typeQuery(types), nil) //nolint:bodyclose // closed below, or handed to the caller as ResultsResponse.Body
	if err != nil {
		cl.finish()
		return nil, nil, err
	}
	switch {
	case resp.StatusCode == http.StatusNoContent:
		closeBody(resp.Body)
		cl.finish()
		return nil, nil, &NoContentError{JobID: id, JobStatus: JobStatus(resp.Header.Get(HeaderJobStatus))}
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		err := readError(cl, resp)
		closeBody(resp.Body)
		cl.finish()
		return nil, nil, err
	}
	if !wholeCall && !cl.stopTimer() { // the timeout fired as the headers came in
		closeBody(resp.Body)
		cl.finish()
		return nil, nil, cl.failure(context.Canceled)
	}
	return &ResultsResponse{
		Body:          &callBody{rc: resp.Body, cl: cl},
		StatusCode:    resp.StatusCode,
		JobStatus:     JobStatus(resp.Header.Get(HeaderJobStatus)),
		JobID:         resp.Header.Get(HeaderJobID),
		ContentLength: resp.ContentLength,
		Header:        resp.Header,
	}, cl, nil
}

// callBody ends its call when it is closed.
type callBody struct {
	rc io.ReadCloser
	cl *call
}

func (b *callBody) Read(p []byte) (int, error) { return b.rc.Read(p) }

func (b *callBody) Close() error {
	err := b.rc.Close()
	b.cl.finish()
	return err
}

// typeQuery builds "type=a,b" with the commas unescaped, as the API's
// documentation writes it.
func typeQuery(types []string) string {
	var kept []string
	for _, t := range types {
		if t = strings.TrimSpace(t); t != "" {
			kept = append(kept, url.QueryEscape(t))
		}
	}
	if len(kept) == 0 {
		return ""
	}
	return "type=" + strings.Join(kept, ",")
}

// Results is a decoded /results body.
type Results struct {
	// Results has one entry per page and per requested type, in no fixed
	// order.
	Results []Result `json:"results"`
	// Job is the job object.
	Job Job `json:"job"`
}

// ResultsDecoded reads and decodes a job's results (see Results for the
// request and the 204 outcomes). Config.Timeout covers the whole call. A
// body that cannot be decoded is an *APIError wrapping ErrBadResponse.
func (c *Client) ResultsDecoded(ctx context.Context, id string, types ...string) (Results, error) {
	rr, cl, err := c.results(ctx, id, types, true)
	if err != nil {
		return Results{}, err
	}
	defer closeBody(rr.Body)
	var out Results
	if err := json.NewDecoder(rr.Body).Decode(&out); err != nil {
		if cl.parent.Err() != nil || errors.Is(context.Cause(cl.ctx), errNoAnswer) {
			f := cl.failure(err)
			return Results{}, &APIError{StatusCode: rr.StatusCode, Message: clean(ErrBadResponse.Error() + ": " + f.Message), Err: fmt.Errorf("%w: %w", ErrBadResponse, f.Err)}
		}
		return Results{}, newBadResponse(rr.StatusCode, "decoding the results", err)
	}
	return out, nil
}
