package statusworkerspec

import (
	"context"
	"errors"
	"time"

	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/internal/procenv"
	"github.com/oxypipe/oxypipe/internal/statusworker"
	"github.com/oxypipe/oxypipe/internal/worker"
	"github.com/oxypipe/oxypipe/pkg/jobresults"
)

const statusWorkerSummary = `Applies the stages' status events to the job-results ledger (acked only
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

// statusWorkerSettings are the statusworker's own flags.
type statusWorkerSettings struct {
	database   string
	collection string
	ttl        time.Duration
	retention  time.Duration
	recheck    time.Duration
	batchSize  int
	mongoURI   string // environment only: it may hold a password
}

// Spec describes the statusworker binary. tune, when set, adjusts
// the stage's configuration after the flags filled it in and before the
// stage is created (tests give their timings so).
func Spec(tune func(*statusworker.Config)) worker.Spec {
	var s statusWorkerSettings
	return worker.Spec{
		Name:    "statusworker",
		Summary: statusWorkerSummary,
		Flags:   s.register,
		Check:   s.check,
		Setup: func(ctx context.Context, env *worker.Env) (worker.Service, error) {
			return setupStatusWorker(ctx, env, s, tune)
		},
	}
}

func (s *statusWorkerSettings) register(fs *pflag.FlagSet, env *procenv.Env) {
	s.mongoURI = env.Get("MONGODB_URI")
	fs.StringVar(&s.database, "mongodb-database", env.String("OXY_MONGODB_DATABASE", jobresults.DefaultDatabase),
		"MongoDB database of the ledger (env OXY_MONGODB_DATABASE); the server comes from MONGODB_URI (environment only)")
	fs.StringVar(&s.collection, "mongodb-collection", env.String("OXY_MONGODB_COLLECTION", jobresults.DefaultCollection),
		"MongoDB collection of the ledger (env OXY_MONGODB_COLLECTION)")
	fs.DurationVar(&s.ttl, "ledger-ttl", env.Duration("OXY_LEDGER_TTL", 0),
		"keep a run's MongoDB ledger records this long after the run finished, in whole seconds, e.g. 720h; an open run's are never removed (env OXY_LEDGER_TTL; 0 leaves existing TTL indexes as they are)")
	fs.DurationVar(&s.retention, "run-retention", env.Duration("OXY_RUN_RETENTION", statusworker.DefaultRunRetention),
		"keep a finished run's record, claims and status events on the broker this long after it finished; an open run's are never removed (env OXY_RUN_RETENTION)")
	fs.DurationVar(&s.recheck, "recheck-interval", env.Duration("OXY_RECHECK_INTERVAL", statusworker.DefaultRecheckInterval),
		"how often every open run is re-checked for completion (env OXY_RECHECK_INTERVAL)")
	fs.IntVar(&s.batchSize, "batch-size", env.Int("OXY_STATUS_BATCH_SIZE", statusworker.DefaultBatchSize), "status events written to the ledger per batch (env OXY_STATUS_BATCH_SIZE)")
}

// check validates the settings before anything connects.
func (s *statusWorkerSettings) check(*procenv.Env) error {
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

func setupStatusWorker(ctx context.Context, env *worker.Env, s statusWorkerSettings, tune func(*statusworker.Config)) (worker.Service, error) {
	mongoURI := s.mongoURI
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
	cfg := statusworker.Config{
		Stage: env.Stage(), Topology: env.Topology, Ledger: ledger, Rebuild: mongoURI == "",
		RecheckInterval: s.recheck, RunRetention: s.retention,
	}
	cfg.Stage.BatchSize = s.batchSize
	if tune != nil {
		tune(&cfg)
	}
	sw, err := statusworker.New(cfg)
	if err != nil {
		disconnect()
		return nil, worker.Usagef("%v", err)
	}
	api := sw.Handler()
	env.Handle("/runs", api)
	env.Handle("/runs/", api)
	run := env.Serve("statusworker", sw)
	return func(ctx context.Context) error {
		defer disconnect()
		return run(ctx)
	}, nil
}
