package emulator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sync/atomic"
	"time"
)

// A rules file scripts the emulator from a file (the CLI's `oxy sandbox
// --rules FILE` and `oxy run --sandbox-rules FILE`): which payloads fault, stay
// pending, get a 404 on their status check, are rejected, and which endpoints
// fail. It is the JSON form of Rule and Fault (RulesHelp documents it for
// users):
//
//	{
//	  "rules": [
//	    {"pattern": "products/1$", "outcome": {"status_failure": {"status": 404, "message": "Not Found"}}},
//	    {"pattern": "products/2$", "outcome": {"fault": true}},
//	    {"source": "universal", "outcome": {"job_time": "500ms"}}
//	  ],
//	  "faults": [{"on": ["submit"], "status": 503, "times": 2}],
//	  "job_time": "1s"
//	}
//
// The optional top-level settings job_time, time_scale, seed, fault_rate,
// error_rate, drop_rate, rate_limit and render_rate_limit set the sandbox's
// configuration of the same names, so that `oxy run --sandbox` can be
// scripted with one file. Unknown
// keys are errors, so that a typo does not silently script nothing.
type rulesFile struct {
	Rules     []ruleJSON  `json:"rules"`
	Faults    []faultJSON `json:"faults"`
	JobTime   *duration   `json:"job_time"`
	TimeScale *float64    `json:"time_scale"`
	Seed      *int64      `json:"seed"`
	FaultRate *float64    `json:"fault_rate"`
	ErrorRate *float64    `json:"error_rate"`
	DropRate  *float64    `json:"drop_rate"`
	// RateLimit and RenderRateLimit replace the sandbox's plan limits (50
	// and 13 jobs per second, a Starter plan's): a large run can then be
	// tried at the pipeline's own speed. The sandbox advertises them in its
	// rate-limit headers, which the submitter follows.
	RateLimit       *int `json:"rate_limit"`
	RenderRateLimit *int `json:"render_rate_limit"`
}

// ruleJSON is an Rule: every condition that is set must hold.
type ruleJSON struct {
	// Source limits the rule to one source.
	Source string `json:"source"`
	// Pattern is a regular expression the input value (url, query, …) must
	// match.
	Pattern string `json:"pattern"`
	// Times, when positive, applies the rule to the first Times submissions
	// it matches only (a payload that faults once, then is done when
	// resubmitted); 0 applies it to every one.
	Times   int64       `json:"times"`
	Outcome outcomeJSON `json:"outcome"`
}

// outcomeJSON is an Outcome.
type outcomeJSON struct {
	Reject           *rejectionJSON `json:"reject"`
	Throttle         bool           `json:"throttle"`
	SubmitFailure    *failureJSON   `json:"submit_failure"`
	Fault            bool           `json:"fault"`
	FaultStatusCode  int            `json:"fault_status_code"`
	Done             bool           `json:"done"`
	StayPending      bool           `json:"stay_pending"`
	JobTime          duration       `json:"job_time"`
	StatusFailure    *failureJSON   `json:"status_failure"`
	ResultsFailure   *failureJSON   `json:"results_failure"`
	TargetStatusCode int            `json:"target_status_code"`
	ParseStatusCode  int            `json:"parse_status_code"`
	Content          string         `json:"content"`
	ContentSize      int            `json:"content_size"`
	UploadCode       int            `json:"upload_code"`
	UploadDelay      duration       `json:"upload_delay"`
	ResultsTTL       duration       `json:"results_ttl"`
}

// rejectionJSON is an Rejection.
type rejectionJSON struct {
	Status  int      `json:"status"`
	Message string   `json:"message"`
	Errors  []string `json:"errors"`
}

// failureJSON is an Failure.
type failureJSON struct {
	Status      int    `json:"status"`
	Message     string `json:"message"`
	Drop        bool   `json:"drop"`
	Times       int    `json:"times"`
	AfterCreate bool   `json:"after_create"`
	CutBody     bool   `json:"cut_body"`
	Body        string `json:"body"`
}

// faultJSON is an Fault: the failure's keys sit next to "on" and
// "probability".
type faultJSON struct {
	On []string `json:"on"`
	failureJSON
	Probability float64 `json:"probability"`
}

// duration is a time.Duration written as a Go duration string ("1.5s").
type duration time.Duration

func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"1.5s\", not %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = duration(v)
	return nil
}

// LoadRules reads the rules file at path into c (see RulesHelp for the
// format): its rules and faults go after those c has, its settings replace
// c's. An unknown key is an error, so that a typo does not silently script
// nothing; the error names the file and the key or rule at fault.
func (c *Config) LoadRules(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("rules file: %w", err)
	}
	if err := c.ParseRules(data); err != nil {
		return fmt.Errorf("rules file %s: %w", path, err)
	}
	return nil
}

// ParseRules is LoadRules of a rules file's contents.
func (c *Config) ParseRules(data []byte) error {
	var f rulesFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("more than one JSON value")
	}
	for i, r := range f.Rules {
		rule := Rule{Source: r.Source, Outcome: r.Outcome.outcome()}
		if r.Pattern != "" {
			re, err := regexp.Compile(r.Pattern)
			if err != nil {
				return fmt.Errorf("rules[%d].pattern: %w", i, err)
			}
			rule.Pattern = re
		}
		if r.Times < 0 {
			return fmt.Errorf("rules[%d].times must not be negative", i)
		}
		if r.Times > 0 {
			rule.Match = firstN(r.Times)
		}
		c.Rules = append(c.Rules, rule)
	}
	for _, ft := range f.Faults {
		fault := Fault{Failure: ft.failure(), Probability: ft.Probability}
		for _, on := range ft.On {
			fault.On = append(fault.On, Endpoint(on))
		}
		c.Faults = append(c.Faults, fault)
	}
	if f.JobTime != nil {
		c.JobTime = time.Duration(*f.JobTime)
	}
	setIf(&c.TimeScale, f.TimeScale)
	setIf(&c.Seed, f.Seed)
	setIf(&c.FaultRate, f.FaultRate)
	setIf(&c.ErrorRate, f.ErrorRate)
	setIf(&c.DropRate, f.DropRate)
	for _, l := range []struct {
		name string
		v    *int
		dst  *int
	}{{"rate_limit", f.RateLimit, &c.RateLimit}, {"render_rate_limit", f.RenderRateLimit, &c.RenderRateLimit}} {
		if l.v == nil {
			continue
		}
		if *l.v < 1 {
			return fmt.Errorf("%s must be at least 1 job per second, got %d", l.name, *l.v)
		}
		*l.dst = *l.v
	}
	return nil
}

// firstN returns a Rule.Match that holds for the first n submissions it is
// asked about. The emulator asks only once the rule's source and pattern
// matched, so the count is of the submissions the rule otherwise matches.
func firstN(n int64) func(Submission) bool {
	var seen atomic.Int64
	return func(Submission) bool { return seen.Add(1) <= n }
}

func setIf[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

func (o outcomeJSON) outcome() Outcome {
	out := Outcome{
		Throttle:         o.Throttle,
		Fault:            o.Fault,
		FaultStatusCode:  o.FaultStatusCode,
		Done:             o.Done,
		StayPending:      o.StayPending,
		JobTime:          time.Duration(o.JobTime),
		TargetStatusCode: o.TargetStatusCode,
		ParseStatusCode:  o.ParseStatusCode,
		Content:          o.Content,
		ContentSize:      o.ContentSize,
		UploadCode:       o.UploadCode,
		UploadDelay:      time.Duration(o.UploadDelay),
		ResultsTTL:       time.Duration(o.ResultsTTL),
	}
	if o.Reject != nil {
		out.Reject = &Rejection{Status: o.Reject.Status, Message: o.Reject.Message, Errors: o.Reject.Errors}
	}
	out.SubmitFailure = o.SubmitFailure.ptr()
	out.StatusFailure = o.StatusFailure.ptr()
	out.ResultsFailure = o.ResultsFailure.ptr()
	return out
}

func (f *failureJSON) ptr() *Failure {
	if f == nil {
		return nil
	}
	v := f.failure()
	return &v
}

func (f failureJSON) failure() Failure {
	return Failure(f) // the same fields: a field added to one and not the other fails to compile
}

// RulesHelp documents the rules file format for users, in the words of a
// command's --help.
const RulesHelp = `Rules file (JSON): scripted outcomes per payload, failures per endpoint, settings:
  {"rules": [{"source": "universal", "pattern": "products/1$",
              "outcome": {"status_failure": {"status": 404, "message": "Not Found"}}},
             {"pattern": "products/2$", "times": 1, "outcome": {"fault": true}}],
   "faults": [{"on": ["submit"], "status": 503, "times": 2}],
   "job_time": "1s"}
  A rule matches a submission by source and a regexp on its input; "times": N applies it
  to the first N matching submissions only.
  outcome keys: reject {status, message, errors}, throttle, submit_failure, fault,
  fault_status_code, done, stay_pending, job_time, status_failure, results_failure,
  target_status_code, parse_status_code, content, content_size, upload_code,
  upload_delay, results_ttl; a failure is {status, message, drop, times, after_create,
  cut_body, body} (times: how many requests fail for each input or job; body: sent as it
  is, with status, default 200, e.g. an HTML page in place of results).
  settings: job_time, time_scale, seed, fault_rate, error_rate, drop_rate, and
  rate_limit, render_rate_limit (jobs per second; default 50 and 13, a Starter plan's).`
