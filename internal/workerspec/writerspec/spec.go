package writerspec

import (
	"context"

	"github.com/spf13/pflag"

	"github.com/oxypipe/oxypipe/internal/procenv"
	"github.com/oxypipe/oxypipe/internal/worker"
	"github.com/oxypipe/oxypipe/internal/writer"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

const writerSummary = `Fetches the results of each done job (GET /v1/queries/{id}/results) and
streams the body, byte for byte, into the run's destination as
<api job id>.json, probing each run's destination once before its first write.
A failed fetch or write is retried with back-off, then recorded unfetched so
the job can be fetched again by id at no cost. A write the destination refuses
(at once for a full disk, a denied write or a missing bucket, else after two
quick retries) stops the run in the runs bucket, so that no submitter bills
more of its payloads; a body that is not JSON is never written.

Destinations come from each run (a local folder on this worker's filesystem,
s3://, gs:// or az://). Object-store credentials, region and endpoint come from
the standard environment of each SDK: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
AWS_REGION, AWS_ENDPOINT_URL_S3, AWS_S3_FORCE_PATH_STYLE, ...;
GOOGLE_APPLICATION_CREDENTIALS, STORAGE_EMULATOR_HOST; AZURE_STORAGE_ACCOUNT,
AZURE_STORAGE_KEY, AZURE_STORAGE_CONNECTION_STRING, ....

The API credentials are read from OXY_WSA_USERNAME and OXY_WSA_PASSWORD only.`

// Spec describes the writer binary. tune, when set, adjusts the stage's
// configuration after the flags filled it in and before the stage is
// created (tests give their timings so).
func Spec(tune func(*writer.Config)) worker.Spec {
	var (
		api    worker.APIFlags
		client *wsa.Client
	)
	return worker.Spec{
		Name:    "writer",
		Summary: writerSummary,
		Flags:   func(fs *pflag.FlagSet, env *procenv.Env) { api.RegisterFlags(fs, env) },
		Check: func(env *procenv.Env) error {
			var err error
			client, err = api.Client(env)
			return err
		},
		Setup: func(_ context.Context, env *worker.Env) (worker.Service, error) {
			cfg := writer.Config{Stage: env.Stage(), Topology: env.Topology, API: client}
			if tune != nil {
				tune(&cfg)
			}
			w, err := writer.New(cfg)
			if err != nil {
				return nil, worker.Usagef("%v", err)
			}
			return env.Serve("writer", w), nil
		},
	}
}
