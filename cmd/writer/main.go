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
	"os"

	"github.com/oxypipe/oxypipe/internal/worker"
	"github.com/oxypipe/oxypipe/internal/workerspec/writerspec"
)

func main() { os.Exit(worker.Main(os.Args[1:], writerspec.Spec(nil))) }
