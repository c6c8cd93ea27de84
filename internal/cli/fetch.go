package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/oxypipe/oxypipe/internal/redact"
	"github.com/oxypipe/oxypipe/pkg/destination"
	"github.com/oxypipe/oxypipe/pkg/oxy"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// fetchConcurrency is how many jobs get and recover fetch at once. The API
// does not rate-limit GETs; this only bounds connections and memory.
const fetchConcurrency = 8

// fetcher prints what pkg/oxy finds for jobs by id: `oxy get` and `oxy
// recover` are printers over oxy.Client's Lookup (no destination: the
// status only) and Save (with one: a done job's body written unchanged as
// <id>.json). Reading a job by id bills nothing.
type fetcher struct {
	client *oxy.Client
	dest   destination.Destination // nil: only read the status
	// location is the destination as the user wrote it, for the file names
	// printed ("results/<id>.json", as a run prints them).
	location string
}

// fetchOutcome is what became of one id: the job as pkg/oxy found it, or
// the failure to ask the API or to write the destination.
type fetchOutcome struct {
	id   string
	f    *oxy.Fetched // nil when the request failed
	file string       // where the body was written
	// err is the failure to ask the API (an *wsa.APIError) or to write (a
	// destination error); nil when f says what became of the job.
	err error
}

// done reports whether the job is done (and written, with a destination).
func (o fetchOutcome) done() bool { return o.err == nil && o.f.Status == oxy.FetchDone }

// faulted reports whether the API faulted the job.
func (o fetchOutcome) faulted() bool {
	return o.err == nil && o.f != nil && o.f.Status == oxy.FetchFaulted
}

// line is the stdout line of the outcome; ok is false when there is no job
// to describe (unknown ids, failed requests).
func (o fetchOutcome) line() (jobLine, bool) {
	if o.f == nil || o.f.Status == oxy.FetchUnknown {
		return jobLine{}, false
	}
	status := string(o.f.Job.Status)
	if status == "" {
		status = string(o.f.Status)
	}
	return jobLine{ID: o.id, Status: status, Source: o.f.Job.Source, Input: jobInput(o.f.Job), File: o.file}, true
}

// warning says why the job has no result here, or "" when it has one.
func (o fetchOutcome) warning() string {
	if o.err != nil {
		return fmt.Sprintf("job %s could not be fetched: %v", o.id, o.err)
	}
	switch o.f.Status {
	case oxy.FetchPending:
		return fmt.Sprintf("job %s is pending", o.id)
	case oxy.FetchFaulted:
		return fmt.Sprintf("job %s faulted: %s", o.id, describeJob(o.f.Job))
	case oxy.FetchExpired:
		return fmt.Sprintf("job %s expired: the API no longer has its results", o.id)
	case oxy.FetchUnknown:
		answer := strconv.Itoa(http.StatusNotFound)
		if o.f.Message != "" {
			answer += " " + o.f.Message
		}
		return fmt.Sprintf("job %s was not found (%s)", o.id, answer)
	}
	return ""
}

// errorInfo is the run-log error of a job left unfetched.
func (o fetchOutcome) errorInfo() *oxytype.ErrorInfo {
	if o.err != nil {
		return wsa.ErrorInfo(o.err)
	}
	switch o.f.Status {
	case oxy.FetchPending:
		return &oxytype.ErrorInfo{Message: "the job was still pending when it was fetched by id"}
	case oxy.FetchExpired:
		return &oxytype.ErrorInfo{Message: "the API no longer has the job's results (they expired)"}
	case oxy.FetchUnknown:
		return wsa.ErrorInfo(o.f.Err())
	}
	return nil
}

// fetch reads one job: its status only without a destination, else its
// results too, written as <id>.json when it is done.
func (f *fetcher) fetch(ctx context.Context, id string) fetchOutcome {
	out := fetchOutcome{id: id}
	if f.dest == nil {
		out.f, out.err = f.client.Lookup(ctx, id)
	} else {
		out.f, out.err = f.client.Save(ctx, id, f.dest)
	}
	if out.err != nil {
		// The API's or the destination's own words, without the library's
		// prefix: the warning names the job already.
		if de, ok := errors.AsType[*destination.Error](out.err); ok {
			out.err = de
		} else if ae, ok := errors.AsType[*wsa.APIError](out.err); ok {
			out.err = ae
		}
		out.f = nil
		return out
	}
	if f.dest != nil && out.f.File != "" {
		out.file = destination.ResultFile(redact.String(f.location), id)
	}
	return out
}

// describeJob names a job by its source and input, as every log line and
// report names a payload: "universal https://sandbox.oxylabs.io/products/2".
func describeJob(job wsa.Job) string {
	return strings.TrimSpace(job.Source + " " + jobInput(job))
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
