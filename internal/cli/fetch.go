package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/oxypipe/oxypipe/internal/redact"
	"github.com/oxypipe/oxypipe/pkg/destination"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// fetchConcurrency is how many jobs get and recover fetch at once. The API
// does not rate-limit GETs; this only bounds connections and memory.
const fetchConcurrency = 8

// fetcher reads jobs by id and, with a destination, writes each done job's
// body unchanged as <id>.json: what `oxy get -d` and `oxy recover` do for
// unfetched jobs. Reading a job by id bills nothing.
type fetcher struct {
	client *wsa.Client
	dest   destination.Destination // nil: only read the status
	// location is the destination as the user wrote it, for the file names
	// printed ("results/<id>.json", as a run prints them).
	location string
}

// fetchStatus is what fetching one id found.
type fetchStatus string

const (
	fetchDone    fetchStatus = "done"    // done (and written, with a destination)
	fetchFaulted fetchStatus = "faulted" // the API faulted the job: no result, not billed
	fetchPending fetchStatus = "pending" // not finished yet
	fetchExpired fetchStatus = "expired" // done, but the API no longer has its results
	fetchUnknown fetchStatus = "unknown" // 404: no such job
	fetchFailed  fetchStatus = "failed"  // the request or the write failed
)

// fetchOutcome is what became of one id.
type fetchOutcome struct {
	id     string
	status fetchStatus
	job    wsa.Job // zero for unknown ids and failed requests
	file   string  // where the body was written
	// err is the failure behind unknown and failed: an *wsa.APIError or a
	// destination error.
	err error
}

// line is the stdout line of the outcome; ok is false when there is no job
// to describe (unknown ids, failed requests).
func (o fetchOutcome) line() (jobLine, bool) {
	if o.job.ID == "" && o.job.Raw == nil {
		return jobLine{}, false
	}
	status := string(o.job.Status)
	if status == "" {
		status = string(o.status)
	}
	return jobLine{ID: o.id, Status: status, Source: o.job.Source, Input: jobInput(o.job), File: o.file}, true
}

// warning says why the job has no result here, or "" when it has one.
func (o fetchOutcome) warning() string {
	switch o.status {
	case fetchPending:
		return fmt.Sprintf("job %s is pending", o.id)
	case fetchFaulted:
		return fmt.Sprintf("job %s faulted: %s", o.id, describeJob(o.job))
	case fetchExpired:
		return fmt.Sprintf("job %s expired: the API no longer has its results", o.id)
	case fetchUnknown:
		return fmt.Sprintf("job %s was not found (%v)", o.id, o.err)
	case fetchFailed:
		return fmt.Sprintf("job %s could not be fetched: %v", o.id, o.err)
	}
	return ""
}

// errorInfo is the run-log error of a job left unfetched.
func (o fetchOutcome) errorInfo() *oxytype.ErrorInfo {
	var ae *wsa.APIError
	if errors.As(o.err, &ae) {
		info := &oxytype.ErrorInfo{Message: ae.Message, TraceID: ae.TraceID}
		if ae.StatusCode != 0 {
			code := ae.StatusCode
			info.StatusCode = &code
		}
		return info
	}
	switch o.status {
	case fetchPending:
		return &oxytype.ErrorInfo{Message: "the job was still pending when it was fetched by id"}
	case fetchExpired:
		return &oxytype.ErrorInfo{Message: "the API no longer has the job's results (they expired)"}
	}
	if o.err != nil {
		return &oxytype.ErrorInfo{Message: o.err.Error()}
	}
	return nil
}

// fetch reads one job: its status first (pending, done or faulted, and its
// input), then, for a done job with a destination, its results, streamed
// into <id>.json.
func (f *fetcher) fetch(ctx context.Context, id string) fetchOutcome {
	out := fetchOutcome{id: id}
	job, err := f.client.Status(ctx, id)
	if err != nil {
		out.err = err
		out.status = fetchFailed
		if errors.Is(err, wsa.ErrNotFound) {
			out.status = fetchUnknown
		}
		return out
	}
	out.job = job
	switch job.Status {
	case wsa.JobPending:
		out.status = fetchPending
		return out
	case wsa.JobFaulted:
		out.status = fetchFaulted
		return out
	}
	if f.dest == nil {
		out.status = fetchDone
		return out
	}
	res, err := f.client.Results(ctx, id)
	switch {
	case errors.Is(err, wsa.ErrPending):
		out.status = fetchPending
		return out
	case errors.Is(err, wsa.ErrExpired):
		out.status = fetchExpired
		return out
	case err != nil:
		out.status, out.err = fetchFailed, err
		return out
	}
	defer func() { _ = res.Body.Close() }() // read to its end, or the Put failed
	name := id + ".json"
	if err := f.dest.Put(ctx, name, res.Body); err != nil {
		out.status, out.err = fetchFailed, err
		return out
	}
	out.status, out.file = fetchDone, joinLocation(redact.String(f.location), name)
	return out
}

// describeJob names a job the way the origin client's log lines do:
// "universal https://sandbox.oxylabs.io/products/2".
func describeJob(job wsa.Job) string {
	return strings.TrimSpace(job.Source + " " + jobInput(job))
}

// joinLocation is the location of a file in a destination: "results/x.json",
// "s3://bucket/prefix/x.json".
func joinLocation(location, name string) string {
	if location == "" {
		return name
	}
	return strings.TrimSuffix(location, "/") + "/" + name
}

// fetchAll fetches ids with bounded concurrency and hands each outcome to
// emit in the order of ids.
func (f *fetcher) fetchAll(ctx context.Context, ids []string, emit func(i int, o fetchOutcome)) {
	type slot struct {
		i int
		c chan fetchOutcome
	}
	order := make(chan slot, fetchConcurrency)
	sem := make(chan struct{}, fetchConcurrency)
	go func() {
		defer close(order)
		for i, id := range ids {
			s := slot{i: i, c: make(chan fetchOutcome, 1)}
			order <- s
			sem <- struct{}{}
			go func() {
				defer func() { <-sem }()
				s.c <- f.fetch(ctx, id)
			}()
		}
	}()
	for s := range order {
		emit(s.i, <-s.c)
	}
}
