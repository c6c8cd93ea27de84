// Package worker is the process shell every worker binary (submitter, poller,
// writer, statusworker) runs in: flags and environment (12-factor), a JSON
// logger with credentials redacted, the NATS connection, the JetStream
// topology, the /live /ready /metrics server and SIGTERM handling.
//
// A binary's main is one call:
//
//	func main() { os.Exit(worker.Main(os.Args[1:], spec)) }
//
// where spec names the stage, adds its own flags and builds its service from
// an Env. The stage packages themselves know nothing of processes, so the
// same stage code also runs inside `oxy run`, several stages in one process.
//
// Exit codes: 0 after a clean drain (SIGTERM, SIGINT), 1 when the service
// fails (for example the consumer watchdog gives up, so the orchestrator
// restarts the pod), 2 for bad flags or configuration.
package worker
