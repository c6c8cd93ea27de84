// Package workerspec describes the four worker binaries: each one's flags,
// environment, checks and how it builds its stage from a worker.Env. A
// binary's main is one call,
//
//	func main() { os.Exit(worker.Main(os.Args[1:], workerspec.Poller(nil))) }
//
// and the tests that run a stage as its own process run the same spec, with
// their timings given through the tune hook, so that the wiring of a worker
// is written once.
package workerspec
