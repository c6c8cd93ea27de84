package emulator

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
)

// Endpoint names an API endpoint, for Fault.On and Stats.Requests.
type Endpoint string

// The emulator's endpoints.
const (
	EndpointSubmit        Endpoint = "submit"         // POST /v1/queries
	EndpointBatch         Endpoint = "batch"          // POST /v1/queries/batch
	EndpointStatus        Endpoint = "status"         // GET /v1/queries/{id}
	EndpointResults       Endpoint = "results"        // GET /v1/queries/{id}/results
	EndpointContent       Endpoint = "content"        // GET /v1/queries/{id}/results/{n}/content
	EndpointCallbackerIPs Endpoint = "callbacker_ips" // GET /v1/info/callbacker_ips
	EndpointStats         Endpoint = "stats"          // GET /_sandbox/stats (never faulted)
	EndpointNotFound      Endpoint = "not_found"      // anything else (nginx 404)
	EndpointRealtime      Endpoint = "realtime"       // POST /realtime/v1/queries (the Realtime host's /v1/queries)
)

// numEndpoints is the number of Endpoint values; endpointIndex numbers them.
const numEndpoints = 9

func endpointIndex(e Endpoint) int {
	switch e {
	case EndpointSubmit:
		return 0
	case EndpointBatch:
		return 1
	case EndpointStatus:
		return 2
	case EndpointResults:
		return 3
	case EndpointContent:
		return 4
	case EndpointCallbackerIPs:
		return 5
	case EndpointStats:
		return 6
	case EndpointNotFound:
		return 7
	case EndpointRealtime:
		return 8
	}
	return -1
}

func endpointAt(i int) Endpoint {
	return [numEndpoints]Endpoint{
		EndpointSubmit, EndpointBatch, EndpointStatus, EndpointResults,
		EndpointContent, EndpointCallbackerIPs, EndpointStats, EndpointNotFound, EndpointRealtime,
	}[i]
}

// Fault is a scripted failure of requests to some endpoints, applied before
// authentication and before any other handling: a failed request creates no
// job and counts against no limit.
type Fault struct {
	// On lists the endpoints that fail; empty means every API endpoint.
	On []Endpoint
	// Failure is what the failed requests get (status, message, drop, times).
	Failure
	// Probability, when positive, fails only this share of the matching
	// requests (drawn from the seed); 0 fails every one.
	Probability float64
}

func (f Fault) validate() error {
	for _, e := range f.On {
		if i := endpointIndex(e); i < 0 || e == EndpointStats || e == EndpointNotFound {
			return fmt.Errorf("unknown endpoint %q", e)
		}
	}
	if f.Probability < 0 || f.Probability > 1 {
		return fmt.Errorf("probability %v is outside [0,1]", f.Probability)
	}
	if f.AfterCreate {
		return errors.New("only Rule outcomes may fail after creating jobs (AfterCreate)")
	}
	return f.Failure.validate()
}

type fault struct {
	on          []Endpoint
	probability float64
	*failure
}

func compileFaults(fs []Fault) []*fault {
	out := make([]*fault, 0, len(fs))
	for _, f := range fs {
		ff := f.Failure
		out = append(out, &fault{on: f.On, probability: f.Probability, failure: newFailure(&ff)})
	}
	return out
}

// injectedFault returns the failure that request number n to ep gets, if any.
func (e *Emulator) injectedFault(ep Endpoint, n uint64) *Failure {
	for _, f := range e.faults {
		if len(f.on) > 0 && !slices.Contains(f.on, ep) {
			continue
		}
		if f.probability > 0 && unitFloat(e.seed, 0x6661756c74, n, uint64(len(f.on))) >= f.probability {
			continue
		}
		if f.take("") {
			return &f.Failure
		}
	}
	if e.cfg.DropRate > 0 && unitFloat(e.seed, 0x64726f70, n) < e.cfg.DropRate {
		return &Failure{Drop: true}
	}
	if e.cfg.ErrorRate > 0 && unitFloat(e.seed, 0x6572726f72, n) < e.cfg.ErrorRate {
		return &Failure{Status: http.StatusInternalServerError}
	}
	return nil
}

// fail answers r with f: a dropped connection, f's own body, an HTML error
// page or a JSON error body.
func (e *Emulator) fail(w http.ResponseWriter, r *http.Request, f *Failure, user string) {
	e.stats.faultsInjected.Add(1)
	if f.Drop {
		dropConnection(w)
		return
	}
	if f.Body != "" {
		status := f.Status
		if status == 0 {
			status = http.StatusOK
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Length", strconv.Itoa(len(f.Body)))
		w.WriteHeader(status)
		_, _ = io.WriteString(w, f.Body) // best effort, like any answer
		return
	}
	status := f.Status
	if status == 0 {
		status = http.StatusInternalServerError
	}
	msg := f.Message
	if status == http.StatusTooManyRequests && msg == "" {
		msg = msgTooManyTotal
	}
	e.writeError(w, r, status, msg, nil, user)
}

// dropConnection closes the client's connection without an answer.
func dropConnection(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close() // the point is to close it; an error changes nothing
			return
		}
	}
	// HTTP/2 or a wrapped writer: abort the response, which resets the stream.
	panic(http.ErrAbortHandler)
}
