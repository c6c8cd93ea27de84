// Package local runs the whole pipeline in one process: an embedded
// nats-server with JetStream, the topology, and the submitter, poller, writer
// and statusworker stages as goroutines, optionally with the API emulator.
//
// It is the one-process shape of oxypipe (`oxy run` without --nats, and the
// Go API's in-process client). The stages are the same packages the
// deployed binaries run (internal/submitter, internal/poller, internal/writer,
// internal/statusworker), configured the same way, on the same broker semantics:
// nothing here is a second implementation. What differs is only the wiring:
// one embedded server instead of a cluster, a memory ledger that the
// statusworker rebuilds from the status stream when it starts, and the
// poller writing done jobs through the writer (poller.Config.Sink): a job's
// check is its results request, and its body goes into the destination
// with no Done message in between. A Config.Poller hook that unsets the
// sink runs the four stages exactly as deployed.
//
// # State and resuming
//
// The embedded JetStream keeps its files in Config.StateDir. Starting a
// Cluster again on the same directory after a crash (even SIGKILL) finds
// every unacknowledged message and every consumer's ack floor, the claims and
// the runs; the stages pick up where they stopped, the statusworker rebuilds
// its memory ledger from the status stream, and the feeder (internal/feeder,
// Resume) feeds what was not fed. Without a StateDir the state lives in a
// temporary directory that Close removes.
//
// With a StateDir the embedded server fsyncs every write before it
// acknowledges it (natsserver.Config.SyncAlways), so that what a resume
// relies on survives a power loss as well as a killed process: a claim
// (and the job id stored under it) that was acknowledged is on the disk,
// and a resumed run never submits its payload again. The cost is measured
// in the README. A temporary state directory is not synced.
//
// # Sandbox
//
// With Config.Sandbox the cluster also serves the API emulator
// (pkg/emulator) on a loopback port and points the stages at it, with demo
// defaults (1 s jobs, the Starter plan's 50 jobs per second), so a new user
// sees a real run without credentials or cost.
package local
