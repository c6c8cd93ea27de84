// Command poller is the poller worker of oxypipe: it checks every submitted
// job at the Web Scraper API on a schedule, publishes the done ones for the
// writer and records faulted, lost and stuck ones. Run as many replicas as
// the submitted stream's lag calls for; they share one durable consumer.
//
// Configuration is by flags and environment; `poller --help` lists every
// setting.
package main

import (
	"os"

	"github.com/oxypipe/oxypipe/internal/worker"
	"github.com/oxypipe/oxypipe/internal/workerspec/pollerspec"
)

func main() { os.Exit(worker.Main(os.Args[1:], pollerspec.Spec(nil))) }
