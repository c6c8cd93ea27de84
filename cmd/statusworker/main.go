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
	"os"

	"github.com/oxypipe/oxypipe/internal/worker"
	"github.com/oxypipe/oxypipe/internal/workerspec/statusworkerspec"
)

func main() { os.Exit(worker.Main(os.Args[1:], statusworkerspec.Spec(nil))) }
