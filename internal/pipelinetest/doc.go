// Package pipelinetest holds the end-to-end tests of the three work stages
// of a run, the submitter, the poller and the writer, wired together over a
// real nats-server and the API emulator. It has no code of its own: its
// tests prove what the "What must hold" promises, which no stage's
// own tests can, because each of those promises is about the stages
// together:
//
//   - 2,000 payloads with faults, rejections, lost jobs and transient
//     5xx and 429 answers sprinkled in: every payload ends with exactly one
//     final outcome, the destination holds exactly the done jobs, byte for
//     byte what the API serves, and no input is billed twice.
//   - Duplicate payloads and redelivered submitted and done messages change
//     nothing: still one job per input, one file per job.
//   - A worker process killed with SIGKILL mid-run and restarted loses no
//     doc and bills nothing twice.
//   - Malformed messages on every subject become one clear hard failure
//     each, and the workers go on.
//   - A worker process sent SIGTERM with work in flight exits 0 within its
//     drain period and leaves nothing held.
//
// The feeder and the statusworker are not used: the tests feed payloads as
// the feeder does (AnnounceRun, then one payload message and one success
// event at "payload" per doc) and read each doc's outcome from the status
// events with an ordered consumer, as the statusworker would. A doc's final
// outcome is its success at "written" or a hard failure.
//
// # Processes
//
// The process tests build cmd/submitter, cmd/poller and cmd/writer once
// (the first test that needs them pays for the build). Those binaries run
// with the production consumer settings, so a message held by a killed
// worker comes back only after its AckWait (60 s for the submitter and the
// writer) and a claim left inside a request is declared "outcome unknown"
// only after ClaimStaleAfter (150 s). The SIGKILL tests therefore run, by
// default, as children of the test binary itself: the same worker shell
// (internal/worker) and stage packages in a separate process, with test-sized
// timings (AckWait 2 s, ClaimStaleAfter 8 s). Set
// OXY_PIPELINETEST_REAL_BINARIES=1 to run them against the built binaries
// instead; they then take about five minutes. The SIGTERM tests always use
// the built binaries. OXY_PIPELINETEST_LOGS=<folder> keeps the logs of
// every worker process there, one file each.
package pipelinetest
