// Command submitter is the submitter worker: it consumes the payloads of
// every run from NATS JetStream, submits them to the Web Scraper API (singly
// or in batches, paced to the account's rate limits) and publishes each
// job it created for the poller. Run as many replicas as the rate limit
// allows; they share one durable consumer.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/oxypipe/oxypipe/internal/submitter"
	"github.com/oxypipe/oxypipe/internal/worker"
	"github.com/oxypipe/oxypipe/pkg/payload"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

const summary = `Consumes payload messages (oxy.payload.<run>), claims each payload before
submitting it to the Web Scraper API, and publishes the created job
(oxy.submitted.<run>) with a status event per payload. No payload is billed
twice: a redelivered payload whose claim holds a job id is not resubmitted,
and a payload whose answer left the outcome unknown (a 5xx, an answer lost
after the request was sent) is not sent again: it ends unsubmitted, marked
"may_have_billed" in the run log. --retry-unknown-once sends it exactly once
more instead, which bills such a payload twice when its first request did
create a job.

Credentials: OXY_WSA_USERNAME and OXY_WSA_PASSWORD, read from the environment
only, never from a flag, so that they do not show in process listings.`

// settings are the submitter's own flags.
type settings struct {
	api             worker.APIFlags
	client          *wsa.Client
	rateLimit       int
	renderRateLimit int
	noBatch         bool
	maxBatch        int
	retryUnknown    bool
	// envErrs are malformed environment values, reported by setup.
	envErrs []error
}

func (s *settings) register(fs *pflag.FlagSet) {
	s.api.RegisterFlags(fs, os.Getenv)
	fs.IntVar(&s.rateLimit, "rate-limit", s.envInt("OXY_RATE_LIMIT", wsa.DefaultPacerLimit), "jobs submitted per second until the API's rate-limit headers say otherwise; -1 unlimited (env OXY_RATE_LIMIT)")
	fs.IntVar(&s.renderRateLimit, "render-rate-limit", s.envInt("OXY_RENDER_RATE_LIMIT", wsa.DefaultPacerRenderLimit), "rendered jobs submitted per second, likewise; -1 unlimited (env OXY_RENDER_RATE_LIMIT)")
	fs.BoolVar(&s.noBatch, "no-batch", s.envBool("OXY_NO_BATCH"), "submit every payload singly, never in batch requests (env OXY_NO_BATCH)")
	fs.IntVar(&s.maxBatch, "max-batch", s.envInt("OXY_MAX_BATCH", payload.MaxBatch), "most payloads in one batch request, 2-5000; the rate limit usually caps it lower (env OXY_MAX_BATCH)")
	fs.BoolVar(&s.retryUnknown, "retry-unknown-once", s.envBool("OXY_RETRY_UNKNOWN_ONCE"), "send a payload exactly once more after an answer that left its outcome unknown (5xx, lost answer); "+
		"costs a second bill for each such payload whose first request created a job; off: it ends unsubmitted, marked may_have_billed (env OXY_RETRY_UNKNOWN_ONCE)")
}

func main() { os.Exit(worker.Main(os.Args[1:], newSpec())) }

// newSpec describes the submitter binary.
func newSpec() worker.Spec {
	s := &settings{}
	return worker.Spec{
		Name:    "submitter",
		Summary: summary,
		Flags:   s.register,
		Check:   s.check,
		Setup:   s.setup,
	}
}

// check validates the settings that need no broker; it runs before
// anything connects, so a bad setting exits 2 at once.
func (s *settings) check() error {
	if len(s.envErrs) > 0 {
		return worker.Usagef("%v", errors.Join(s.envErrs...))
	}
	client, err := s.api.Client(os.Getenv)
	if err != nil {
		return err
	}
	s.client = client
	if s.rateLimit == 0 || s.renderRateLimit == 0 {
		return worker.Usagef("--rate-limit and --render-rate-limit must be positive, or -1 for unlimited")
	}
	if !s.noBatch && (s.maxBatch < 2 || s.maxBatch > payload.MaxBatch) {
		return worker.Usagef("--max-batch %d is outside 2..%d (use --no-batch to send payloads singly)", s.maxBatch, payload.MaxBatch)
	}
	return nil
}

func (s *settings) setup(_ context.Context, env *worker.Env) (worker.Service, error) {
	maxBatch := s.maxBatch
	if s.noBatch {
		maxBatch = 0 // unused; the default passes validation
	}
	sub, err := submitter.New(submitter.Config{
		Conn:             env.Conn,
		Topology:         env.Topology,
		Client:           s.client,
		Pacer:            wsa.PacerConfig{Limit: s.rateLimit, RenderLimit: s.renderRateLimit},
		DisableBatch:     s.noBatch,
		MaxBatch:         maxBatch,
		RetryUnknownOnce: s.retryUnknown,
		Instance:         env.Instance,
		Logger:           env.Log,
		Registerer:       env.Registry,
	})
	if err != nil {
		return nil, worker.Usagef("%v", err)
	}
	env.AddCheck("submitter", sub)
	return sub.Run, nil
}

// envInt reads an integer setting's default from the environment.
func (s *settings) envInt(key string, def int) int {
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		s.envErrs = append(s.envErrs, fmt.Errorf("%s=%q is not an integer", key, v))
		return def
	}
	return n
}

// envBool reads a boolean setting's default from the environment.
func (s *settings) envBool(key string) bool {
	v := os.Getenv(key)
	if v == "" {
		return false
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		s.envErrs = append(s.envErrs, fmt.Errorf("%s=%q is not a boolean", key, v))
	}
	return b
}
