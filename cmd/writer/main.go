// Command writer is the writer worker of oxypipe: it streams every done
// job's results body, unchanged, into its run's destination as
// "<api job id>.json", and records the job written (or unfetched when it
// cannot). Run as many replicas as the done stream's lag calls for; they
// share one durable consumer.
//
// Configuration is by flags and environment; `writer --help` lists every
// setting.
package main

import (
	"context"
	"os"

	"github.com/spf13/pflag"

	"github.com/oxypipe/oxypipe/internal/stage"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/internal/worker"
	"github.com/oxypipe/oxypipe/internal/writer"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

func main() { os.Exit(worker.Main(os.Args[1:], spec(os.Getenv))) }

const summary = `Fetches the results of each done job (GET /v1/queries/{id}/results) and
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

// spec describes the writer binary; getenv reads the environment.
func spec(getenv func(string) string) worker.Spec {
	var (
		api    worker.APIFlags
		client *wsa.Client
	)
	return worker.Spec{
		Name:    "writer",
		Summary: summary,
		Flags:   func(fs *pflag.FlagSet) { api.RegisterFlags(fs, getenv) },
		Check: func() error {
			var err error
			client, err = api.Client(getenv)
			return err
		},
		Setup: func(ctx context.Context, env *worker.Env) (worker.Service, error) {
			settings, err := topology.DefaultConsumer(topology.Writer)
			if err != nil {
				return nil, err
			}
			w, err := writer.New(writer.Config{
				Stage: stage.Config{Conn: env.Conn, Consumer: settings, Instance: env.Instance,
					Logger: env.Log, Registerer: env.Registry},
				API:  client,
				Runs: env.Topology.Runs(),
			})
			if err != nil {
				return nil, worker.Usagef("%v", err)
			}
			if _, err := env.Topology.EnsureConsumer(ctx, settings); err != nil {
				return nil, err
			}
			env.AddCheck("writer", w)
			return w.Run, nil
		},
	}
}
