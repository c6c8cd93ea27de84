// Command oxybench measures the pipeline's throughput: the submitter, the
// poller and the writer in one process, on an embedded nats-server, against
// the API emulator answering at once. It prints one markdown table.
//
// Why a command and not a Go benchmark: the figure that matters is docs per
// second for a whole run of tens of thousands of payloads, with where the
// time goes beside it, on the machine at hand. A benchmark function that
// loops b.N times over a run would mostly measure start-up.
//
// What it measures, for -n payloads (default 20,000):
//
//   - docs/s end to end: from the first payload published to the last
//     success at "written", and when the last doc passed each stage;
//   - API requests per doc by endpoint (submit, batch, status, results),
//     from the emulator's counts;
//   - p50 and p99 of the time from a job finishing at the API to its file
//     being in place. The emulator's job objects carry second-resolution
//     times, so a job's finish is taken as its success event at
//     "submitted" plus the emulator's job time (1 ms): a few milliseconds
//     late at most, which makes the figure slightly low, never high;
//   - peak RSS of the process (VmHWM), which holds the broker, the
//     emulator and the three stages;
//   - beside it, in the same process: the raw JetStream rate for the same
//     number of messages per doc (the work messages and status events the
//     run published, per doc), published asynchronously to a scratch
//     stream and consumed with explicit acks.
//
// The stages run with their production defaults (consumer settings, batch
// sizes, the poller's schedule: first check 1 s after submission), each on
// its own connection; the writer writes into a local folder with fsync on
// (--nosync turns it off). The broker syncs its store every 2 minutes, the
// server's default; --broker-sync makes it fsync every write before
// acknowledging it, as `oxy run --state-dir` does, to measure what that
// durability costs. The end of the run is read from the stages' own
// counters; the status events, from which each doc's times come, are read
// afterwards by an ordered consumer, so that no consumer outside the
// pipeline takes CPU during the measured time. No statusworker runs: its
// own benchmark is in internal/statusworker.
//
// --dir chooses where each run makes its scratch folder (the broker's store
// and the results), for example on tmpfs to take the disk out. The scratch
// folder is always new and removed afterwards, so the same --dir can serve
// run after run. On ext4, creating files right after many were deleted is
// slow: leave a moment between large runs on one filesystem.
//
// With --cli-oxy BINARY (what `make bench` does), `oxy run` then runs as a
// child process on the same number of payloads, the way a user runs it:
// once against a separate `oxy sandbox` (no rate limit, 50 ms jobs), once
// with --sandbox (the emulator in-process, the same settings), results and
// run log on disk. Wall time is from the child's start to its exit (the
// payloads are read first, the run log is written last); CPU time is the
// kernel's accounting of the child (rusage), peak RSS the child's VmHWM
// sampled every 20 ms (the rusage figure would include this process's own
// peak), and the run log is read back: one line per payload, in input
// order. --json writes every figure to a file.
//
// Usage:
//
//	go run ./cmd/oxybench -n 20000 --cpuprofile cpu.out
//	go tool pprof -top cpu.out
//	make bench BENCH_PAYLOADS=100000 BENCH_JSON="$HOME/oxybench.json"
package main
