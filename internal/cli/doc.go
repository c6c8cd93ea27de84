// Package cli implements the oxy command line: run, get, recover, status,
// sandbox, version and help.
//
// The commands are thin. Each parses its own pflag.FlagSet, checks everything
// that can be checked before a request is sent, and hands the work to the
// library packages (internal/local, internal/feeder, internal/progress, pkg/wsa,
// pkg/destination, pkg/emulator), so that a program using the Go API and a
// user at a shell get the same behaviour.
//
// The contract with the user, which scripts rely on:
//
//   - stdout carries JSON lines only, one per job, so the output pipes into jq;
//   - stderr carries progress and lines prefixed "warning:", "hint:" or
//     "error:", and never a credential;
//   - exit codes: 0 every payload done (faulted jobs alone are reported, not an
//     error), 1 anything rejected, unsubmitted or unfetched, 2 invalid input
//     before any request, 130 after Ctrl+C (SIGINT), 143 after SIGTERM.
//
// Commands run against an Env rather than the process's globals, so the tests
// can run them in-process; Main binds the Env to the process and handles the
// signals: the first SIGINT or SIGTERM cancels the command's context with an
// *Interrupted cause (a run stops submitting, checks and writes what is in
// flight for at most --stop-timeout, then writes its run log); the second
// closes Env.Hurry (a stopped run ends at once with what is recorded and
// still writes its run log, within hurryTimeout); a third exits at once.
package cli
