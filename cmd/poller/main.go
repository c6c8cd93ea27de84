// Command poller is the poller worker of oxypipe: it checks every submitted
// job at the Web Scraper API on a schedule, publishes the done ones for the
// writer and records faulted, lost and stuck ones. Run as many replicas as
// the submitted stream's lag calls for; they share one durable consumer.
//
// Configuration is by flags and environment; `poller --help` lists every
// setting.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/oxypipe/oxypipe/internal/poller"
	"github.com/oxypipe/oxypipe/internal/stage"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/internal/worker"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

func main() { os.Exit(worker.Main(os.Args[1:], spec(os.Getenv))) }

const summary = `Checks each submitted job at the Web Scraper API (GET /v1/queries/{id}) at
1, 2, ... 9 s after its submission and then every 5 s, without holding it: a
pending job is a delayed redelivery. A done job goes to the writer; a faulted
one, a job the API no longer knows (404), one still pending after
--pending-limit and one whose checks keep failing are recorded in the run log.

The API credentials are read from OXY_WSA_USERNAME and OXY_WSA_PASSWORD only.`

// spec describes the poller binary; getenv reads the environment.
func spec(getenv func(string) string) worker.Spec {
	var (
		api          worker.APIFlags
		client       *wsa.Client
		pendingLimit time.Duration
		envErr       error
	)
	return worker.Spec{
		Name:    "poller",
		Summary: summary,
		Flags: func(fs *pflag.FlagSet) {
			api.RegisterFlags(fs, getenv)
			def := poller.DefaultPendingLimit
			if v := getenv("OXY_PENDING_LIMIT"); v != "" {
				d, err := time.ParseDuration(v)
				if err != nil {
					envErr = fmt.Errorf("OXY_PENDING_LIMIT: %w", err)
				}
				def = d
			}
			fs.DurationVar(&pendingLimit, "pending-limit", def,
				"how long after its submission a job may stay pending before it is recorded unfetched; 0 for no limit (env OXY_PENDING_LIMIT)")
		},
		Check: func() error {
			if envErr != nil {
				return worker.Usagef("%v", envErr)
			}
			if pendingLimit < 0 {
				return worker.Usagef("--pending-limit must not be negative, got %v", pendingLimit)
			}
			var err error
			client, err = api.Client(getenv)
			return err
		},
		Setup: func(ctx context.Context, env *worker.Env) (worker.Service, error) {
			limit := pendingLimit
			if limit == 0 {
				limit = poller.NoPendingLimit
			}
			settings, err := topology.DefaultConsumer(topology.Poller)
			if err != nil {
				return nil, err
			}
			cfg := poller.Config{
				Stage: stage.Config{Conn: env.Conn, Consumer: settings, Instance: env.Instance,
					Logger: env.Log, Registerer: env.Registry},
				API:          client,
				PendingLimit: limit,
			}
			p, err := poller.New(cfg)
			if err != nil {
				return nil, worker.Usagef("%v", err)
			}
			if _, err := env.Topology.EnsureConsumer(ctx, settings); err != nil {
				return nil, err
			}
			env.AddCheck("poller", p)
			return p.Run, nil
		},
	}
}
