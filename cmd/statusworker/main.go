// Command statusworker is the statusworker of oxypipe: it writes the stages'
// status events to the job-results ledger, marks each run ready once its
// empty run log is written, completes runs exactly once (run log, then
// RunCompleted), and serves the runs' progress as JSON next to /live,
// /ready and /metrics.
//
// With MONGODB_URI it uses the MongoDB ledger and may run as several
// replicas. Without it, it keeps the ledger in memory, rebuilt from the
// status stream at every start: run exactly ONE replica then.
//
// Configuration is by flags and environment; `statusworker --help` lists
// every setting.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/internal/statusworker"
	"github.com/oxypipe/oxypipe/internal/worker"
	"github.com/oxypipe/oxypipe/pkg/jobresults"
)

func main() { os.Exit(worker.Main(os.Args[1:], spec(os.Getenv))) }

const summary = `Applies the stages' status events to the job-results ledger (acked only
once written; a ledger outage delays events and loses none), writes each
announced run's empty run log and marks it ready (or failed when the run-log
location cannot be written), completes every run exactly once when all its
payloads reached an outcome (writes the run log <run id>.jsonl, marks the run
completed, publishes oxy.run.<run>.completed), and re-checks open runs so none
strands. JSON API on the HTTP port: GET /runs, /runs/{run}, /runs/{run}/stages,
/runs/{run}/failures[?stage=], /runs/{run}/errors[?stage=],
/runs/{run}/docs/{doc}.

Ledger: MongoDB when MONGODB_URI is set (environment only: it may hold a
password; several replicas may run). Without it, an in-memory ledger rebuilt
from the status stream at every start: run exactly one replica.

Run-log locations come from each run (a local folder on this worker's
filesystem, s3://, gs:// or az://); object-store credentials, region and
endpoint come from the standard environment of each SDK (AWS_*, GOOGLE_*,
AZURE_*).`

// settings are the statusworker's own flags.
type settings struct {
	database   string
	collection string
	ttl        time.Duration
	retention  time.Duration
	recheck    time.Duration
	batchSize  int
	envErr     error // an unparsable environment default
}

// spec describes the statusworker binary; getenv reads the environment.
func spec(getenv func(string) string) worker.Spec {
	var s settings
	return worker.Spec{
		Name:    "statusworker",
		Summary: summary,
		Flags:   func(fs *pflag.FlagSet) { s.register(fs, getenv) },
		Check:   s.check,
		Setup: func(ctx context.Context, env *worker.Env) (worker.Service, error) {
			return setup(ctx, env, s, getenv("MONGODB_URI"))
		},
	}
}

func (s *settings) register(fs *pflag.FlagSet, getenv func(string) string) {
	or := func(key, def string) string {
		if v := getenv(key); v != "" {
			return v
		}
		return def
	}
	dur := func(key string, def time.Duration) time.Duration {
		v := getenv(key)
		if v == "" {
			return def
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			s.envErr = errors.Join(s.envErr, fmt.Errorf("%s=%q is not a duration", key, v))
			return def
		}
		return d
	}
	batch := statusworker.DefaultBatchSize
	if v := getenv("OXY_STATUS_BATCH_SIZE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			s.envErr = errors.Join(s.envErr, fmt.Errorf("OXY_STATUS_BATCH_SIZE=%q is not a number", v))
		} else {
			batch = n
		}
	}
	fs.StringVar(&s.database, "mongodb-database", or("OXY_MONGODB_DATABASE", jobresults.DefaultDatabase),
		"MongoDB database of the ledger (env OXY_MONGODB_DATABASE); the server comes from MONGODB_URI (environment only)")
	fs.StringVar(&s.collection, "mongodb-collection", or("OXY_MONGODB_COLLECTION", jobresults.DefaultCollection),
		"MongoDB collection of the ledger (env OXY_MONGODB_COLLECTION)")
	fs.DurationVar(&s.ttl, "ledger-ttl", dur("OXY_LEDGER_TTL", 0),
		"keep a run's MongoDB ledger records this long after the run finished, in whole seconds, e.g. 720h; an open run's are never removed (env OXY_LEDGER_TTL; 0 leaves existing TTL indexes as they are)")
	fs.DurationVar(&s.retention, "run-retention", dur("OXY_RUN_RETENTION", statusworker.DefaultRunRetention),
		"keep a finished run's record, claims and status events on the broker this long after it finished; an open run's are never removed (env OXY_RUN_RETENTION)")
	fs.DurationVar(&s.recheck, "recheck-interval", dur("OXY_RECHECK_INTERVAL", statusworker.DefaultRecheckInterval),
		"how often every open run is re-checked for completion (env OXY_RECHECK_INTERVAL)")
	fs.IntVar(&s.batchSize, "batch-size", batch, "status events written to the ledger per batch (env OXY_STATUS_BATCH_SIZE)")
}

// check validates the settings before anything connects.
func (s *settings) check() error {
	if s.envErr != nil {
		return worker.Usagef("%v", s.envErr)
	}
	switch {
	case s.database == "":
		return worker.Usagef("--mongodb-database must not be empty")
	case s.ttl < 0 || s.ttl%time.Second != 0:
		return worker.Usagef("--ledger-ttl must be a positive whole number of seconds (or 0), got %v", s.ttl)
	case s.retention <= 0:
		return worker.Usagef("--run-retention must be positive, got %v", s.retention)
	case s.recheck <= 0:
		return worker.Usagef("--recheck-interval must be positive, got %v", s.recheck)
	case s.batchSize < 1:
		return worker.Usagef("--batch-size must be at least 1, got %d", s.batchSize)
	}
	return nil
}

func setup(ctx context.Context, env *worker.Env, s settings, mongoURI string) (worker.Service, error) {
	var (
		ledger     jobresults.Ledger
		disconnect = func() {}
	)
	if mongoURI != "" {
		store, disconnectMongo, err := jobresults.OpenMongo(ctx, mongoURI, "oxypipe-statusworker",
			jobresults.MongoConfig{Database: s.database, Collection: s.collection, TTL: s.ttl})
		if errors.Is(err, jobresults.ErrInvalidConfig) {
			return nil, worker.Usagef("%v", err)
		}
		if err != nil {
			return nil, err
		}
		ledger = store
		disconnect = func() {
			dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			disconnectMongo(dctx)
		}
		env.Log.Info("ledger: MongoDB", zap.String("database", s.database), zap.String("collection", s.collection))
	} else {
		ledger = jobresults.NewMemoryStore()
		env.Log.Warn("ledger: in memory (MONGODB_URI is not set); rebuilt from the status stream at start. Run exactly ONE replica.")
	}
	sw, err := statusworker.New(statusworker.Config{
		Conn: env.Conn, Topology: env.Topology, Ledger: ledger, Rebuild: mongoURI == "",
		Instance: env.Instance, Logger: env.Log, Registerer: env.Registry,
		RecheckInterval: s.recheck, BatchSize: s.batchSize, RunRetention: s.retention,
	})
	if err != nil {
		disconnect()
		return nil, worker.Usagef("%v", err)
	}
	env.AddCheck("statusworker", sw)
	api := sw.Handler()
	env.Handle("/runs", api)
	env.Handle("/runs/", api)
	return func(ctx context.Context) error {
		defer disconnect()
		return sw.Run(ctx)
	}, nil
}
