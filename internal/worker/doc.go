// Package worker is the process shell every worker binary (submitter, poller,
// writer, statusworker) runs in: flags and environment (12-factor), a JSON
// logger with credentials redacted, the NATS connection, the JetStream
// topology, the /live /ready /metrics server and SIGTERM handling.
//
// A binary's main is one call:
//
//	func main() { os.Exit(worker.Main(os.Args[1:], spec)) }
//
// where spec (one of the packages under internal/workerspec) names the stage, adds its own flags and
// builds its service from an Env: Env.Stage is the stage's runtime
// configuration, Env.Serve its health checks and Run. The stage packages
// themselves know nothing of processes, so the same stage code also runs
// inside `oxy run`, several stages in one process.
//
// Settings come from flags whose defaults are read from the environment by
// package procenv: a malformed environment value exits 2, naming the
// variable, instead of being ignored.
//
// Exit codes: 0 after a clean drain (SIGTERM, SIGINT), 1 when the service
// fails (for example the consumer watchdog gives up, so the orchestrator
// restarts the pod), 2 for bad flags or configuration.
package worker
