// Command submitter is the submitter worker: it consumes the payloads of
// every run from NATS JetStream, submits them to the Web Scraper API (singly
// or in batches, paced to the account's rate limits) and publishes each
// job it created for the poller. Run as many replicas as the rate limit
// allows; they share one durable consumer.
//
// Configuration is by flags and environment; `submitter --help` lists every
// setting.
package main

import (
	"os"

	"github.com/oxypipe/oxypipe/internal/worker"
	"github.com/oxypipe/oxypipe/internal/workerspec/submitterspec"
)

func main() { os.Exit(worker.Main(os.Args[1:], submitterspec.Spec(nil))) }
