// Package workerspec holds one package per worker binary (submitterspec,
// pollerspec, writerspec, statusworkerspec), each describing that binary:
// its flags, environment, checks and how it builds its stage from a
// worker.Env. A binary's main is one call,
//
//	func main() { os.Exit(worker.Main(os.Args[1:], pollerspec.Spec(nil))) }
//
// and the tests that run a stage as its own process run the same spec, with
// their timings given through the tune hook, so that the wiring of a worker
// is written once. The specs are separate packages so that a binary links
// only its own stage: the submitter and the poller never link the object
// stores' SDKs or the MongoDB driver.
package workerspec
