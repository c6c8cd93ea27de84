// Command oxy runs batches of Oxylabs Web Scraper API jobs: on one machine
// with nothing but Go (an embedded NATS server and every pipeline stage in this
// process), or as the feeder and watcher of a distributed deployment.
//
// See `oxy help` for the commands; the commands themselves live in
// internal/cli so that tests can run them in-process.
package main

import (
	"os"

	"github.com/oxypipe/oxypipe/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
