package submitterspec

import (
	"context"

	"github.com/spf13/pflag"

	"github.com/oxypipe/oxypipe/internal/procenv"
	"github.com/oxypipe/oxypipe/internal/submitter"
	"github.com/oxypipe/oxypipe/internal/worker"
	"github.com/oxypipe/oxypipe/pkg/payload"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

const submitterSummary = `Consumes payload messages (oxy.payload.<run>), claims each payload before
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

// submitterSettings are the submitter's own flags.
type submitterSettings struct {
	api             worker.APIFlags
	client          *wsa.Client
	rateLimit       int
	renderRateLimit int
	noBatch         bool
	maxBatch        int
	retryUnknown    bool
}

func (s *submitterSettings) register(fs *pflag.FlagSet, env *procenv.Env) {
	s.api.RegisterFlags(fs, env)
	fs.IntVar(&s.rateLimit, "rate-limit", env.Int("OXY_RATE_LIMIT", wsa.DefaultPacerLimit), "jobs submitted per second until the API's rate-limit headers say otherwise; -1 unlimited (env OXY_RATE_LIMIT)")
	fs.IntVar(&s.renderRateLimit, "render-rate-limit", env.Int("OXY_RENDER_RATE_LIMIT", wsa.DefaultPacerRenderLimit), "rendered jobs submitted per second, likewise; -1 unlimited (env OXY_RENDER_RATE_LIMIT)")
	fs.BoolVar(&s.noBatch, "no-batch", env.Bool("OXY_NO_BATCH", false), "submit every payload singly, never in batch requests (env OXY_NO_BATCH)")
	fs.IntVar(&s.maxBatch, "max-batch", env.Int("OXY_MAX_BATCH", payload.MaxBatch), "most payloads in one batch request, 2-5000; the rate limit usually caps it lower (env OXY_MAX_BATCH)")
	fs.BoolVar(&s.retryUnknown, "retry-unknown-once", env.Bool("OXY_RETRY_UNKNOWN_ONCE", false), "send a payload exactly once more after an answer that left its outcome unknown (5xx, lost answer); "+
		"costs a second bill for each such payload whose first request created a job; off: it ends unsubmitted, marked may_have_billed (env OXY_RETRY_UNKNOWN_ONCE)")
}

// Spec describes the submitter binary. tune, when set, adjusts the
// stage's configuration after the flags filled it in and before the stage
// is created (tests give their timings so).
func Spec(tune func(*submitter.Config)) worker.Spec {
	s := &submitterSettings{}
	return worker.Spec{
		Name:    "submitter",
		Summary: submitterSummary,
		Flags:   s.register,
		Check:   s.check,
		Setup: func(_ context.Context, env *worker.Env) (worker.Service, error) {
			return s.setup(env, tune)
		},
	}
}

// check validates the settings that need no broker; it runs before
// anything connects, so a bad setting exits 2 at once.
func (s *submitterSettings) check(env *procenv.Env) error {
	client, err := s.api.Client(env)
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

func (s *submitterSettings) setup(env *worker.Env, tune func(*submitter.Config)) (worker.Service, error) {
	maxBatch := s.maxBatch
	if s.noBatch {
		maxBatch = 0 // unused; the default passes validation
	}
	cfg := submitter.Config{
		Stage:            env.Stage(),
		Topology:         env.Topology,
		API:              s.client,
		Pacer:            wsa.PacerConfig{Limit: s.rateLimit, RenderLimit: s.renderRateLimit},
		DisableBatch:     s.noBatch,
		MaxBatch:         maxBatch,
		RetryUnknownOnce: s.retryUnknown,
	}
	if tune != nil {
		tune(&cfg)
	}
	sub, err := submitter.New(cfg)
	if err != nil {
		return nil, worker.Usagef("%v", err)
	}
	return env.Serve("submitter", sub), nil
}
