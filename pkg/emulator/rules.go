package emulator

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Submission is one submitted value as a Rule sees it.
type Submission struct {
	// Source is the payload's source, e.g. "universal".
	Source string
	// InputKey names the input: "url", "query", "prompt", "product_id", …
	InputKey string
	// Input is the value of the input key (one batch value for a batch).
	Input string
	// Fields is the request body as received. In a batch the input key still
	// holds the whole list. Its values alias the request buffer: do not
	// modify them or keep them after Match returns.
	Fields map[string]json.RawMessage
}

// Rule scripts what the emulator does with the submissions it matches. A
// rule matches when every condition that is set holds. The first matching
// rule of Config.Rules applies.
type Rule struct {
	// Source, when set, limits the rule to one source.
	Source string
	// Pattern, when set, must match the input value (url, query, …).
	Pattern *regexp.Regexp
	// Match, when set, must return true. It is called concurrently.
	Match func(Submission) bool
	// Outcome is what happens to a matching submission.
	Outcome Outcome
}

// Outcome is what the emulator does with one submitted value. The zero
// Outcome changes nothing.
type Outcome struct {
	// Reject answers the submission with an error instead of a job. In a
	// batch the value is listed under `errors` with the message.
	Reject *Rejection
	// Throttle answers with the domain throttle's 429 ("Access to <host> has
	// been limited to 1 req/s due to a low success rate. …"), which a client
	// must never retry. A batch with a throttled value is refused whole.
	Throttle bool
	// SubmitFailure makes the submission request fail (5xx page, any status,
	// or a dropped connection). With AfterCreate the jobs are created (and
	// billed) before the failure, as when the API fails after accepting.
	SubmitFailure *Failure
	// Fault makes the job end faulted (613).
	Fault bool
	// FaultStatusCode is the status_code of a faulted job's one results
	// entry: 613 (default), or 612 ("undefined internal error"), or what a
	// capture showed for some faults (400, 404).
	FaultStatusCode int
	// Done makes the job end done even when FaultRate would fault it.
	Done bool
	// StayPending keeps the job pending for ever.
	StayPending bool
	// JobTime, when positive, is the job's pending time (before TimeScale).
	JobTime time.Duration
	// StatusFailure answers GET /v1/queries/{id} for this job with a failure.
	StatusFailure *Failure
	// ResultsFailure answers the results and content endpoints for this job
	// with a failure.
	ResultsFailure *Failure
	// TargetStatusCode is the target's HTTP status in each result entry of a
	// done job. Default 200.
	TargetStatusCode int
	// ParseStatusCode is parsed content's parse_status_code. Default 12000.
	ParseStatusCode int
	// Content replaces the canned raw HTML of every page.
	Content string
	// ContentSize, when positive, pads the raw content to about this many
	// bytes (for 1 MB or 20 MB bodies); the padding is built once.
	ContentSize int
	// UploadCode is the code of the cloud-upload `statuses` entry of a job
	// with storage_url: 13000 (default), 13001, 13102, 13103 or 10001.
	// A negative value writes no entry.
	UploadCode int
	// UploadDelay is how long after the final status the entry appears
	// (before TimeScale). Default: 1–3 s at random (about 20 s for 10001).
	UploadDelay time.Duration
	// ResultsTTL overrides Config.ResultsTTL for this job.
	ResultsTTL time.Duration
}

// Rejection is an error answered instead of a job.
type Rejection struct {
	// Status is the HTTP status. Default 400.
	Status int
	// Message is the body's message.
	Message string
	// Errors, when set, is sent as the body's `errors` list instead of
	// `message` (as strict sources do).
	Errors []string
}

// Failure is an injected failure of one request.
type Failure struct {
	// Status is the HTTP status: a 5xx sends the API's HTML error page with a
	// trace id, 401 without Message sends an empty body, others send a JSON
	// error body. Default 500.
	Status int
	// Message is the JSON body's message. Empty leaves `message` out (a
	// client then falls back to the reason phrase), except for 429 which
	// defaults to the rate limit's message.
	Message string
	// Drop closes the connection without any answer.
	Drop bool
	// Times limits how many requests fail for each input (a submission's URL
	// or query; a job, for status and results failures); 0 fails every
	// matching request. Counting per input keeps a scripted failure on the
	// payloads it names however the client groups them into batches.
	Times int
	// AfterCreate (submissions only) creates the jobs before failing, so
	// the outcome is unknown to the client and the jobs bill.
	AfterCreate bool
	// CutBody (with AfterCreate) answers 202 with the answer's headers —
	// x-oxylabs-job-id on a single submission, as the API sends it — and
	// drops the connection half-way through the body: the jobs exist and
	// the client cannot read the answer. Status and Drop are ignored.
	CutBody bool
	// Body, when set, is sent as it is, with Status (which may then be a
	// 2xx; default 200): an answer a client cannot read, such as a proxy's
	// HTML page in place of a results body, or a JSON body cut short.
	Body string
}

func (r Rule) validate() error {
	if r.Outcome.Reject != nil && r.Outcome.Reject.Status != 0 && (r.Outcome.Reject.Status < 400 || r.Outcome.Reject.Status > 599) {
		return fmt.Errorf("rejection status %d is not an error status", r.Outcome.Reject.Status)
	}
	for _, f := range []*Failure{r.Outcome.SubmitFailure, r.Outcome.StatusFailure, r.Outcome.ResultsFailure} {
		if f == nil {
			continue
		}
		if err := f.validate(); err != nil {
			return err
		}
	}
	if r.Outcome.Fault && r.Outcome.Done {
		return errors.New("an outcome cannot set both Fault and Done")
	}
	if r.Outcome.JobTime < 0 || r.Outcome.ContentSize < 0 || r.Outcome.UploadDelay < 0 || r.Outcome.ResultsTTL < 0 {
		return errors.New("outcome durations and sizes must not be negative")
	}
	return nil
}

func (f Failure) validate() error {
	if f.CutBody && !f.AfterCreate {
		return errors.New("a failure that cuts the answer's body (CutBody) must create the jobs first (AfterCreate)")
	}
	if f.Times < 0 {
		return fmt.Errorf("failure times %d is negative", f.Times)
	}
	if f.Body != "" && (f.Drop || f.AfterCreate) {
		return errors.New("a failure with a body neither drops the connection nor creates jobs")
	}
	if !f.Drop && f.Body == "" && f.Status != 0 && (f.Status < 400 || f.Status > 599) {
		return fmt.Errorf("failure status %d is not an error status", f.Status)
	}
	if f.Body != "" && f.Status != 0 && (f.Status < 200 || f.Status > 599) {
		return fmt.Errorf("failure status %d is not an HTTP status with a body", f.Status)
	}
	return nil
}

// failure is a Failure with the count of requests it failed per input.
type failure struct {
	Failure
	mu   sync.Mutex
	used map[string]int
}

// take reports whether this failure applies to one more request for key
// (the input, or the job id; "" for failures that count every request).
func (f *failure) take(key string) bool {
	if f == nil {
		return false
	}
	if f.Times == 0 {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.used[key] >= f.Times {
		return false
	}
	if f.used == nil {
		f.used = map[string]int{}
	}
	f.used[key]++
	return true
}

func newFailure(f *Failure) *failure {
	if f == nil {
		return nil
	}
	c := &failure{Failure: *f}
	if c.Status == 0 && c.Body == "" {
		c.Status = 500
	}
	return c
}

// outcome is an Outcome compiled for serving.
type outcome struct {
	Outcome
	submitFailure  *failure
	statusFailure  *failure
	resultsFailure *failure

	// escapedContent is Content as a JSON string body (without quotes).
	escapedContent []byte
	padOnce        sync.Once
	pad            []byte
}

type rule struct {
	Rule
	outcome *outcome
}

func compileRules(rules []Rule) []*rule {
	out := make([]*rule, 0, len(rules))
	for _, r := range rules {
		o := &outcome{
			Outcome:        r.Outcome,
			submitFailure:  newFailure(r.Outcome.SubmitFailure),
			statusFailure:  newFailure(r.Outcome.StatusFailure),
			resultsFailure: newFailure(r.Outcome.ResultsFailure),
		}
		if o.Content != "" {
			o.escapedContent = appendEscaped(nil, o.Content)
		}
		out = append(out, &rule{Rule: r, outcome: o})
	}
	return out
}

// match returns the outcome of the first rule that matches s, or nil.
func matchRules(rules []*rule, s *Submission) *outcome {
	for _, r := range rules {
		if r.Source != "" && r.Source != s.Source {
			continue
		}
		if r.Pattern != nil && !r.Pattern.MatchString(s.Input) {
			continue
		}
		if r.Match != nil && !r.Match(*s) {
			continue
		}
		return r.outcome
	}
	return nil
}

// padding returns filler of n bytes that needs no JSON escaping, built once
// per outcome so that a 20 MB body is never rebuilt per request.
func (o *outcome) padding(n int) []byte {
	o.padOnce.Do(func() {
		const unit = "<p>oxypipe sandbox filler paragraph</p>"
		var b strings.Builder
		b.Grow(n)
		for b.Len()+len(unit) <= n {
			b.WriteString(unit)
		}
		for b.Len() < n {
			b.WriteByte(' ')
		}
		o.pad = []byte(b.String())
	})
	return o.pad
}
