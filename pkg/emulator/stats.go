package emulator

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/oxypipe/oxypipe/internal/redact"
)

// Stats is what the emulator counted: what would be billed, and what it
// answered. GET /_sandbox/stats returns it as JSON.
type Stats struct {
	// JobsCreated is the number of jobs created (every accepted value).
	JobsCreated int64 `json:"jobs_created"`
	// PagesCreated is the number of pages those jobs fetch.
	PagesCreated int64 `json:"pages_created"`
	// CreatedByInput counts created jobs per input value (url, query, …):
	// a value above 1 means the same payload was submitted twice. It counts
	// the retained jobs (see JobsPending). URL credentials in the keys are
	// redacted.
	CreatedByInput map[string]int64 `json:"created_by_input"`
	// JobsPending, JobsDone and JobsFaulted split the retained jobs by their
	// status at the time of the call. Jobs are retained for at least JobTTL
	// after they finish, and then released 4096 at a time.
	JobsPending int64 `json:"jobs_pending"`
	JobsDone    int64 `json:"jobs_done"`
	JobsFaulted int64 `json:"jobs_faulted"`
	// ResultsBilled is the number of pages of done jobs: what the API bills
	// (faulted jobs, 4xx and 429s are free).
	ResultsBilled int64 `json:"results_billed"`
	// Requests counts requests per endpoint (see Endpoint).
	Requests map[Endpoint]int64 `json:"requests"`
	// Rejected counts submissions answered 400/422 (or a scripted rejection).
	Rejected int64 `json:"rejected"`
	// RejectedValues counts batch values listed under `errors`.
	RejectedValues int64 `json:"rejected_values"`
	// RateLimited counts 429s of the rate limits; Throttled the domain
	// throttle's 429s.
	RateLimited int64 `json:"rate_limited"`
	Throttled   int64 `json:"throttled"`
	// Unauthorized counts 401s.
	Unauthorized int64 `json:"unauthorized"`
	// FaultsInjected counts requests failed by Faults, ErrorRate, DropRate
	// or a rule's scripted failure.
	FaultsInjected int64 `json:"faults_injected"`
	// CallbacksSent counts callbacks answered 2xx; CallbacksFailed those
	// given up after every attempt.
	CallbacksSent   int64 `json:"callbacks_sent"`
	CallbacksFailed int64 `json:"callbacks_failed"`
}

// counters are the live counts behind Stats.
type counters struct {
	jobs, pages                    atomic.Int64
	requests                       [numEndpoints]atomic.Int64
	rejected, rejectedValues       atomic.Int64
	rateLimited, throttled         atomic.Int64
	unauthorized, faultsInjected   atomic.Int64
	callbacksSent, callbacksFailed atomic.Int64
	inputs                         [inputShards]inputShard
}

const inputShards = 32

// inputShard counts the retained jobs per input, keyed by the input's
// 64-bit hash: 16 bytes an input instead of a copy of it. Two inputs of the
// same hash would share a count; among a million inputs the odds are about
// one in 30 million.
type inputShard struct {
	mu sync.Mutex
	m  map[uint64]int64
}

// created counts a new job for input and returns how many retained jobs
// that input has, this one included.
func (c *counters) created(input string, pages int) int64 {
	c.jobs.Add(1)
	c.pages.Add(int64(pages))
	h := hashString(0, input)
	sh := &c.inputs[h%inputShards]
	sh.mu.Lock()
	if sh.m == nil {
		sh.m = make(map[uint64]int64)
	}
	sh.m[h]++
	n := sh.m[h]
	sh.mu.Unlock()
	return n
}

// forget uncounts a released job's input.
func (c *counters) forget(input string) {
	h := hashString(0, input)
	sh := &c.inputs[h%inputShards]
	sh.mu.Lock()
	if sh.m[h]--; sh.m[h] <= 0 {
		delete(sh.m, h)
	}
	sh.mu.Unlock()
}

// Stats returns the counts so far; job statuses are evaluated now.
func (e *Emulator) Stats() Stats {
	c := &e.stats
	s := Stats{
		JobsCreated:     c.jobs.Load(),
		PagesCreated:    c.pages.Load(),
		CreatedByInput:  map[string]int64{},
		Requests:        map[Endpoint]int64{},
		Rejected:        c.rejected.Load(),
		RejectedValues:  c.rejectedValues.Load(),
		RateLimited:     c.rateLimited.Load(),
		Throttled:       c.throttled.Load(),
		Unauthorized:    c.unauthorized.Load(),
		FaultsInjected:  c.faultsInjected.Load(),
		CallbacksSent:   c.callbacksSent.Load(),
		CallbacksFailed: c.callbacksFailed.Load(),
	}
	for i := range c.requests {
		if n := c.requests[i].Load(); n > 0 {
			s.Requests[endpointAt(i)] = n
		}
	}
	now := e.now()
	e.jobs.each(func(j *job) {
		input := j.input
		if strings.Contains(input, "@") {
			input = redact.String(input) // stats get printed; credentials must not
		}
		s.CreatedByInput[input]++
		switch j.status(now) {
		case statusPending:
			s.JobsPending++
		case statusDone:
			s.JobsDone++
			s.ResultsBilled += int64(j.spec.pages)
		case statusFaulted:
			s.JobsFaulted++
		}
	})
	return s
}

func (e *Emulator) serveStats(w http.ResponseWriter) {
	body, err := json.Marshal(e.Stats())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header()["Content-Type"] = e.hv.json
	_, _ = w.Write(body) // best effort
}
