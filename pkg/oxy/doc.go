// Package oxy is the Go API of oxypipe: run a batch of Web Scraper API
// payloads through the pipeline from a program, the way `oxy run` does from
// a shell.
//
//	client, err := oxy.NewClient(oxy.Config{Username: user, Password: pass})
//	defer client.Close(ctx)
//	run, err := client.Execute(ctx, payloads, oxy.Options{Destination: "results", RunLog: "logs"})
//	for job, err := range run.Jobs() {
//		// each finished job once, as it finishes; a done job's file exists
//	}
//	fmt.Println(run.Progress()) // 3/3 done, 3 written, 1.00s
//	var incomplete *oxy.IncompleteRunError
//	if errors.As(run.Err(), &incomplete) { … }
//
// # Shapes
//
// Without Config.NATSURL the client runs the whole pipeline in this process
// (package local: an embedded nats-server, the submitter, poller, writer and
// statusworker stages, a memory ledger), started on the first call that needs
// it and stopped by Close. With Config.Sandbox that pipeline calls the built-in
// API emulator instead of the API: no credentials, no cost. With
// Config.NATSURL the client only feeds and watches; the deployed workers do
// the stages, so a local destination or run-log folder means the workers'
// filesystem (Run.Warnings says so).
//
// # Before anything bills
//
// Execute fails, with nothing sent to the API, when the credentials are
// missing, a payload cannot be fed (*oxytype.InputError: no source, no input,
// too large), the destination cannot be listed or written, or the run log
// cannot be written (the statusworker refuses the run: *oxytype.RunFailedError).
// Payloads the API would refuse (an IP address as host, 21 pages, …) are fed
// and end "rejected" in the run log at no cost.
//
// # Results without holding them
//
// A Run hands over each finished job once, as it finishes, as a small value
// (id, status, input, file, error); the result bodies stay in the
// destination. The run's own memory holds only jobs not yet taken (at most
// Options.Buffer) and the problems (rejected, unsubmitted, unfetched and
// faulted jobs) for the final report. After the last job, Err returns an
// *IncompleteRunError when anything ended rejected, unsubmitted or unfetched,
// or an upload to cloud storage failed; faulted jobs alone are reported, not
// an error.
//
// # Stopping
//
// Run.Stop (the first Ctrl+C) stops submitting; jobs already submitted are
// still checked and written for Options.StopTimeout (default one minute),
// then the run ends with what is recorded and its run log is written.
// Run.StopNow (the second Ctrl+C) ends it as soon as the stop's settle time
// allows. A result that cannot be written stops the run the same way
// (Run.Stopped says why), so a full disk or a missing bucket never keeps
// billing. However a run stops, every payload ends in the run log:
// unsubmitted (never billed, or marked "may have billed"), unfetched with
// its job id, or what it reached.
//
// # Recovering
//
// A run-log line's payload is the body that was sent (credentials redacted):
// parse it with payload.Parse and pass it to Execute again. Unfetched jobs
// are fetched by id with Get or Save, at no cost; Lookup reads a job's
// status alone. These are the one fetcher of the module: `oxy get` and `oxy
// recover` print what they find.
package oxy
