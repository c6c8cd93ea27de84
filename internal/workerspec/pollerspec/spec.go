package pollerspec

import (
	"context"
	"time"

	"github.com/spf13/pflag"

	"github.com/oxypipe/oxypipe/internal/poller"
	"github.com/oxypipe/oxypipe/internal/procenv"
	"github.com/oxypipe/oxypipe/internal/worker"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

const pollerSummary = `Checks each submitted job at the Web Scraper API (GET /v1/queries/{id}) at
1, 2, ... 9 s after its submission and then every 5 s, without holding it: a
pending job is a delayed redelivery. A done job goes to the writer; a faulted
one, a job the API no longer knows (404), one still pending after
--pending-limit and one whose checks keep failing are recorded in the run log.

The API credentials are read from OXY_WSA_USERNAME and OXY_WSA_PASSWORD only.`

// Spec describes the poller binary. tune, when set, adjusts the stage's
// configuration after the flags filled it in and before the stage is
// created (tests give their timings so).
func Spec(tune func(*poller.Config)) worker.Spec {
	var (
		api          worker.APIFlags
		client       *wsa.Client
		pendingLimit time.Duration
	)
	return worker.Spec{
		Name:    "poller",
		Summary: pollerSummary,
		Flags: func(fs *pflag.FlagSet, env *procenv.Env) {
			api.RegisterFlags(fs, env)
			fs.DurationVar(&pendingLimit, "pending-limit", env.Duration("OXY_PENDING_LIMIT", poller.DefaultPendingLimit),
				"how long after its submission a job may stay pending before it is recorded unfetched; 0 for no limit (env OXY_PENDING_LIMIT)")
		},
		Check: func(env *procenv.Env) error {
			if pendingLimit < 0 {
				return worker.Usagef("--pending-limit must not be negative, got %v", pendingLimit)
			}
			var err error
			client, err = api.Client(env)
			return err
		},
		Setup: func(_ context.Context, env *worker.Env) (worker.Service, error) {
			limit := pendingLimit
			if limit == 0 {
				limit = poller.NoPendingLimit
			}
			cfg := poller.Config{Stage: env.Stage(), Topology: env.Topology, API: client, PendingLimit: limit}
			if tune != nil {
				tune(&cfg)
			}
			p, err := poller.New(cfg)
			if err != nil {
				return nil, worker.Usagef("%v", err)
			}
			return env.Serve("poller", p), nil
		},
	}
}
