package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/oxypipe/oxypipe/internal/feeder"
	"github.com/oxypipe/oxypipe/internal/natsconn"
	"github.com/oxypipe/oxypipe/internal/redact"
	"github.com/oxypipe/oxypipe/pkg/destination"
	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/jobresults"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxy"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/payload"
	"github.com/oxypipe/oxypipe/pkg/runlog"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// closeTimeout bounds the shutdown of the in-process pipeline at the end;
// hurriedCloseTimeout after a second signal, when the run log is written
// and the user waits.
const (
	closeTimeout        = 30 * time.Second
	hurriedCloseTimeout = 3 * time.Second
)

// spoolFolder is the folder of the state directory that keeps each run's
// payloads, so that `oxy run --resume RUN --state-dir DIR` needs no input.
const spoolFolder = "payloads"

// runFlags are the settings of `oxy run` (and of the resubmission `oxy
// recover` starts).
type runFlags struct {
	destination  string
	runLog       string
	sandbox      bool
	sandboxRules string
	apiURL       string
	natsURL      string
	mongoURI     string
	stateDir     string
	resume       string
	statusAddr   string
	quiet        bool
	retryUnknown bool
	stopTimeout  time.Duration
	dryRun       bool
	realtime     bool
	realtimeURL  string
	checkStorage bool
	noCheck      bool
	payload      payloadFlags
}

// register adds the flags of `oxy run`.
func (f *runFlags) register(fs *flagSet) {
	f.payload.register(fs)
	fs.BoolVar(&f.realtime, "realtime", false, "run each payload with the Realtime integration, in this process: one call each, answered when its job finished (no storage_url, jobs under 150 s)")
	fs.BoolVar(&f.checkStorage, "check-storage", true, "with storage_url payloads: submit the first payload per storage location alone and await its upload before the rest; "+
		"if it fails, hold the rest back (they end unsubmitted, never sent)")
	fs.BoolVar(&f.noCheck, "no-check-storage", false, "submit storage_url payloads without awaiting a first upload per location")
	fs.BoolVar(&f.dryRun, "dry-run", false, "print the payloads as they would be sent (credentials in URLs redacted) and what they bill at most; send nothing")
	fs.StringVarP(&f.destination, "destination", "d", "", "write each done job's body as <job id>.json to `DEST`: a folder (created), s3://, gs:// or az:// URL; "+
		"without it, each body is printed on stdout")
	fs.StringVar(&f.runLog, "run-log", "", "write the run log <run id>.jsonl to `DIR|URL`: a folder, s3://, gs:// or az:// URL")
	f.registerPipeline(fs)
	fs.StringVar(&f.mongoURI, "mongo", "", "keep the in-process ledger in MongoDB at `URI` (prefer the environment: a URI may hold a password)")
	fs.StringVar(&f.stateDir, "state-dir", "", "keep the embedded broker's files and the run's payloads in `DIR`, so a killed run can be resumed")
	fs.StringVar(&f.resume, "resume", "", "resume the killed run `RUN` (its id) from --state-dir, or from --nats with its input")
	fs.StringVar(&f.statusAddr, "status-addr", "", "serve the in-process statusworker's API on `HOST:PORT` for oxy status")
	fs.BoolVarP(&f.quiet, "quiet", "q", false, "print no progress while the run goes on (the final line, warnings and the report stay)")
	fs.BoolVar(&f.retryUnknown, "retry-unknown-once", false, "send a payload exactly once more after an answer that left its outcome unknown (a 5xx, a lost answer): "+
		"each such payload may then bill twice; without it, it ends unsubmitted, marked may_have_billed")
	fs.DurationVar(&f.stopTimeout, "stop-timeout", messages.DefaultStopTimeout,
		"once the run is stopped (Ctrl+C, SIGTERM, or a result that cannot be written), check and write jobs already submitted for at most `DURATION` (at least "+messages.StopSettle.String()+"), then end the run with what is recorded")
	fs.bindEnv("destination", envDestination)
	fs.bindEnv("run-log", envRunLog)
	fs.bindEnv("api-url", envAPIURL)
	fs.bindEnv("realtime-url", envRealtimeURL)
	fs.bindEnv("nats", envNATSURL)
	fs.bindEnv("mongo", envMongoURI)
	fs.bindEnv("state-dir", envStateDir)
	fs.bindEnv("retry-unknown-once", envRetryUnknown)
	fs.bindEnv("stop-timeout", envStopTimeout)
}

// registerPipeline adds the flags that say which pipeline and API a run
// uses, shared by run and recover.
func (f *runFlags) registerPipeline(fs *flagSet) {
	fs.BoolVar(&f.sandbox, "sandbox", false, "run against the built-in API emulator: no credentials, no cost")
	fs.StringVar(&f.sandboxRules, "sandbox-rules", "", "script the sandbox's outcomes with a rules `FILE` (see below)")
	fs.StringVar(&f.apiURL, "api-url", wsa.DefaultBaseURL, "Web Scraper API base `URL`")
	fs.StringVar(&f.realtimeURL, "realtime-url", wsa.DefaultRealtimeURL, "Realtime host `URL` (an oxy sandbox serves it at its URL + "+emulator.RealtimePath+")")
	fs.StringVar(&f.natsURL, "nats", "", "feed and watch through an external NATS `URL`; the deployed workers do the stages")
}

// check refuses combinations that cannot work, before anything is read.
func (f *runFlags) check() error {
	switch {
	case f.dryRun:
		return nil // nothing runs: only the payloads are read
	case f.realtime && f.natsURL != "":
		return usageErrorf("--realtime runs in this process: the deployed pipeline has no Realtime stage, so nothing was sent; drop --nats, or --realtime for Push-Pull")
	case f.realtime && (f.resume != "" || f.stateDir != ""):
		return usageErrorf("--realtime keeps no state to resume: a Realtime call cut short is not sent again; drop --resume and --state-dir")
	case f.destination == "" && f.resume == "" && f.natsURL != "":
		return usageErrorf("with --nats the deployed writers write each done job's body, so -d/--destination is required: an absolute path of their filesystem or an s3://, gs:// or az:// URL")
	case f.sandbox && f.natsURL != "":
		return usageErrorf("--sandbox runs the pipeline in this process; it cannot be combined with --nats")
	case f.sandboxRules != "" && !f.sandbox:
		return usageErrorf("--sandbox-rules scripts the sandbox; add --sandbox")
	case f.resume != "" && f.stateDir == "" && f.natsURL == "":
		return usageErrorf("--resume needs the --state-dir of the killed run (or --nats for a run of a deployed pipeline)")
	case f.retryUnknown && f.natsURL != "":
		return usageErrorf("--retry-unknown-once sets the in-process submitter; with --nats, set %s on the deployed submitters", envRetryUnknown)
	case f.statusAddr != "" && f.natsURL != "":
		return usageErrorf("--status-addr serves the in-process statusworker; with --nats, ask the deployed statusworker")
	case f.natsURL != "" && relativeFolder(f.destination):
		return usageErrorf("with --nats the deployed writer writes the files, from its own working folder: give -d as it sees it, an absolute path or an s3://, gs:// or az:// URL (not %q)", f.destination)
	case f.stopTimeout < 0:
		return usageErrorf("--stop-timeout must not be negative (it bounds how long a stopped run still checks and writes its jobs)")
	case f.natsURL != "" && relativeFolder(f.runLog):
		return usageErrorf("with --nats the deployed statusworker writes the run log, from its own working folder: give --run-log as it sees it, an absolute path or a URL (not %q)", f.runLog)
	}
	return nil
}

// relativeFolder reports whether location is a relative local folder path,
// which a worker process would resolve against its own working folder.
func relativeFolder(location string) bool {
	return location != "" && !strings.Contains(location, "://") && !filepath.IsAbs(location)
}

func runFlagSet() (*flagSet, *runFlags) {
	f := &runFlags{}
	fs := newFlagSet("run", "[flags] [SOURCE [INPUT…] | FILE | -]", `
Run payloads: submit each one, poll its job, write each done job's body
unchanged as <job id>.json to the destination (or print it on stdout), and
write a run log that says what became of every payload (done, faulted,
rejected, unsubmitted, unfetched).

The payloads are Web Scraper API request bodies. With SOURCE, each INPUT (or,
with none, each line of stdin) is one payload {"source": SOURCE, KEY: INPUT}:
KEY is url for an input containing ://, else query (-k sets it). Without
SOURCE, each line of FILE or stdin is one payload, a JSON object. The payload
options (--render … --storage-url, -p) add their field to every payload; a
line that sets the same field is an error, before anything is sent. Errors
never quote option values or input lines.

Without --nats everything runs in this process (an embedded NATS server and
the same submitter, poller, writer and statusworker code as the deployed
workers). With --nats URL this process only feeds the payloads and watches the
run while the deployed workers do the stages.

Nothing is sent before every line was read and checked, the destination was
probed and the empty run log was written: a bad line, missing credentials or a
location that cannot be written exit 2 with no request sent.

No payload is billed twice unless you say so: one whose submission got an
answer that proves nothing (a 5xx, an answer lost after the request was sent)
is not sent again; it ends unsubmitted with "may_have_billed": true in its
run-log error, and oxy recover holds it back unless told otherwise.
--retry-unknown-once sends it exactly once more instead, at the cost of a
second bill for each such payload whose first request did create a job.

Progress goes to stderr: a live line on a terminal, a line every 10s
otherwise, and the run's progress as the last line. Without -d, stdout has
each done job's results body, {"results": …, "job": …}, as one compact JSON
line (one body at a time, so a run of any size pipes into jq). With -d, stdout
has one JSON line per finished job instead: {"doc", "id", "status", "source",
"input", "file", "error"}. Empty input ends at once with exit 0.
The first Ctrl+C (or SIGTERM) stops submitting: payloads not yet sent end
unsubmitted, and jobs already submitted are still checked and written for at
most --stop-timeout (default 1m); then the run ends with what is recorded (a
job not written is unfetched with its id, free to fetch later) and the run log
is written, at most `+stopGrace.String()+` later: exit 130 (143). A result that cannot be
written (a full disk, a denied write, a missing bucket) stops the run the same
way: exit 1. A second signal ends the stopped run at once with what is recorded
and still writes the run log (within `+hurryTimeout.String()+`); a third one exits at once,
without it.`)
	f.register(fs)
	fs.note(credentialsHelp + `
  NATS_USER, NATS_PASSWORD, NATS_TOKEN, NATS_CREDS, NATS_TLS_CA/CERT/KEY   with --nats`)
	fs.note(`Examples:
  oxy run --sandbox universal https://sandbox.oxylabs.io/products/1 | jq .results[0].content
  oxy run --sandbox examples/payloads.jsonl -d results --run-log logs
  printf 'laptop\nphone\n' | oxy run google_search --geo-location Germany --parse -d results
  oxy run universal https://example.com -p render=html -p 'context:=[{"key":"a","value":1}]'
  oxy run --dry-run examples/payloads.jsonl --pages 3
  oxy run payloads.jsonl -d s3://bucket/results --run-log s3://bucket/logs --state-dir .oxy
  oxy run --resume 20260929T170412.345Z --state-dir .oxy      (after the process was killed)
  oxy run payloads.jsonl -d results | jq -r 'select(.status == "done") | .file'`)
	fs.note(emulator.RulesHelp)
	return fs, f
}

func runCommand(ctx context.Context, env Env, args []string) error {
	fs, f := runFlagSet()
	if err := fs.parse(env, args); err != nil {
		return err
	}
	if err := f.check(); err != nil {
		return err
	}
	in, err := readArgs(fs.Args())
	if err != nil {
		return err
	}
	if in.source != "" && f.resume != "" {
		return usageErrorf("--resume takes the killed run's payloads from --state-dir (or a FILE), not a SOURCE and inputs")
	}
	if k := f.payload.inputKey; k != "" && !payload.IsInputKey(k) {
		return usageErrorf("-k/--input-key must be one of %s", strings.Join(payload.InputKeys(), ", "))
	}
	if f.payload.inputKey != "" && in.source == "" {
		return usageErrorf("-k/--input-key says where each INPUT goes; it needs a SOURCE first (oxy run SOURCE INPUT…)")
	}
	opts, err := f.payload.options(fs)
	if err != nil {
		return err
	}
	if err := opts.checkFor(in.source); err != nil {
		return err
	}
	r := &runner{env: env, flags: *f, console: newConsole(env), args: in, options: opts}
	return r.run(ctx)
}

// runner is one `oxy run`.
type runner struct {
	env     Env
	flags   runFlags
	args    inputArgs
	options payloadOptions
	console *console
	lines   *lineWriter
	// bodies is the folder the bodies of a run without -d are written to
	// before each is printed on stdout and removed; "" with -d.
	bodies string
	// hurried: a second signal asked for the run to end at once, so the
	// pipeline is not given long to drain afterwards.
	hurried atomic.Bool
}

func (r *runner) run(ctx context.Context) error {
	if r.flags.mongoURI != "" && r.flags.natsURL != "" {
		warnf(r.console, "--mongo is ignored with --nats: the deployed statusworker keeps the ledger")
		r.flags.mongoURI = ""
	}

	// Read and check every line first: nothing bills before the whole input
	// is known to be payloads.
	src, err := r.source()
	if err != nil {
		return err
	}
	defer func() { _ = src.Close() }() // removes the spool of a run that ended; a kept one stays
	if r.flags.dryRun {
		return r.dryRun(src)
	}
	if src.Spool != nil && src.Len() == 0 && r.flags.resume == "" {
		if !r.flags.quiet {
			hintf(r.console, "no payloads were given: nothing to run")
		}
		return nil
	}
	uploads := false
	if src.Spool != nil {
		if uploads, err = oxy.Uploads(src); err != nil {
			return usageError(err)
		}
	}
	if uploads && r.flags.realtime {
		return usageErrorf("Realtime does not upload to cloud storage (the API refuses storage_url), so nothing was sent: run these payloads without --realtime")
	}
	if uploads && r.flags.destination != "" {
		return usageErrorf("the payloads have a storage_url, so the API uploads their results; -d would fetch every result a second time: drop -d\nhint: nothing was sent")
	}
	if r.flags.destination == "" && r.flags.resume == "" && !uploads {
		dir, err := os.MkdirTemp("", "oxy-bodies-")
		if err != nil {
			return fmt.Errorf("a folder for the bodies printed on stdout: %w", err)
		}
		defer func() { _ = os.RemoveAll(dir) }() // every body was printed, or the run ended early
		r.bodies, r.flags.destination = dir, dir
	}

	cfg, cleanup, err := r.clientConfig(ctx)
	if err != nil {
		return err
	}
	defer cleanup()
	client, err := oxy.NewClient(cfg)
	if err != nil {
		return usageError(err)
	}
	defer func() {
		timeout := closeTimeout
		if r.hurried.Load() {
			timeout = hurriedCloseTimeout
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		if err := client.Close(cctx); err != nil {
			warnf(r.console, "stopping the pipeline: %v", err)
		}
	}()

	// The run is not bound to ctx: the first Ctrl+C stops it gracefully
	// (Stop), and the second one ends the process.
	runCtx := context.WithoutCancel(ctx)
	if r.flags.statusAddr != "" {
		stop, err := r.serveStatus(runCtx, client)
		if err != nil {
			return err
		}
		defer stop()
	}
	if err := context.Cause(ctx); err != nil && ctx.Err() != nil {
		return err // Ctrl+C before anything was announced: nothing to stop
	}
	if r.flags.realtime {
		return r.realtime(ctx, client, src)
	}
	run, err := r.start(runCtx, client, src)
	if err != nil {
		return err
	}
	return r.watch(ctx, run, src)
}

// runSource is the run's payloads, spooled to a file.
type runSource struct {
	*feeder.Spool
	// kept: the spool sits in the state directory under the run's id, for
	// --resume.
	kept bool
	// unfinished: the run did not complete, so a kept spool stays for
	// --resume.
	unfinished bool
}

// Close removes the spool, unless it is kept for a run to resume.
func (s *runSource) Close() error {
	if s.Spool == nil || s.kept && s.unfinished {
		return nil
	}
	return s.Spool.Close()
}

// source returns the payloads as a feeder.Source: nil when none are known
// (resuming a run that completed needs none).
func (s *runSource) source() feeder.Source {
	if s.Spool == nil {
		return nil
	}
	return s
}

// source reads the input (a file, stdin, or the spool a killed run kept in
// the state directory) and checks every line.
func (r *runner) source() (*runSource, error) {
	f := r.flags
	input := r.args.file
	if f.resume != "" && input == "" && f.stateDir != "" {
		path := spoolPath(f.stateDir, f.resume)
		s, err := feeder.OpenSpool(path)
		if errors.Is(err, os.ErrNotExist) {
			// A completed run keeps none, and needs none to be watched.
			return &runSource{}, nil
		}
		if err != nil {
			return nil, usageError(err)
		}
		return &runSource{Spool: s, kept: true}, nil
	}
	if f.resume != "" && input == "" {
		return nil, usageErrorf("--resume with --nats needs the run's input file")
	}
	in := r.env.Stdin
	switch {
	case r.args.source != "" && len(r.args.inputs) == 0 && r.env.StdinTerminal:
		hintf(r.console, "reading inputs from the terminal, one per line; Ctrl+D ends them")
	case r.args.source == "" && (input == "" || input == "-") && r.env.StdinTerminal:
		hintf(r.console, "reading payloads from the terminal, one JSON object per line; Ctrl+D ends them")
	}
	if r.args.source != "" {
		gen := inputPayloads(r.args.source, f.payload.inputKey, r.args.inputs, in)
		defer func() { _ = gen.Close() }() // ends the goroutine reading stdin
		in = gen
	} else if input != "" && input != "-" {
		file, err := os.Open(input)
		if err != nil {
			return nil, usageError(err)
		}
		defer func() { _ = file.Close() }() // read-only
		in = file
	}
	dir := ""
	if f.stateDir != "" {
		dir = filepath.Join(f.stateDir, spoolFolder)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, usageErrorf("state directory: %w", err)
		}
	}
	s, err := feeder.ReadJSONL(in, feeder.ReadConfig{Dir: dir, Apply: r.options.apply})
	if err != nil {
		var (
			ie    *oxytype.InputError
			clash *clashError
		)
		if errors.As(err, &ie) && errors.As(err, &clash) {
			return nil, usageErrorf("line %d sets %s, and so does an option (%s)\nhint: nothing was sent; give the field either on the lines or as an option", ie.Line, clash.key, clash.by)
		}
		if errors.As(err, &ie) {
			return nil, usageErrorf("%v\nhint: nothing was sent; each line must be one JSON object with a source and an input (url, query, …)", ie)
		}
		return nil, usageErrorf("reading payloads: %w", err)
	}
	return &runSource{Spool: s}, nil
}

// spoolPath is where a run's payloads are kept in a state directory.
func spoolPath(stateDir, run string) string {
	return filepath.Join(stateDir, spoolFolder, run+runlog.Ext)
}

// clientConfig builds the Go API's configuration from the flags and the
// environment. cleanup releases what it opened (NATS, MongoDB).
func (r *runner) clientConfig(ctx context.Context) (oxy.Config, func(), error) {
	f := r.flags
	cfg := oxy.Config{
		Username:         r.env.Getenv(envUsername),
		Password:         r.env.Getenv(envPassword),
		BaseURL:          f.apiURL,
		RealtimeURL:      f.realtimeURL,
		Sandbox:          f.sandbox,
		StateDir:         f.stateDir,
		RetryUnknownOnce: f.retryUnknown,
		Instance:         "oxy",
	}
	var closers []func()
	cleanup := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	// With --nats the deployed workers hold the API credentials.
	if !f.sandbox && f.natsURL == "" && (cfg.Username == "" || cfg.Password == "") {
		return cfg, cleanup, usageErrorf("%s and %s must be set\nhint: set them to your Web Scraper API user's credentials, or try oxy with --sandbox (no credentials needed)", envUsername, envPassword)
	}
	if f.sandbox {
		cfg.Emulator = emulator.Config{}
		if f.sandboxRules != "" {
			if err := cfg.Emulator.LoadRules(f.sandboxRules); err != nil {
				return cfg, cleanup, usageError(err)
			}
		}
	}
	if f.natsURL != "" {
		opts := natsconn.FromEnv()
		opts.URL = f.natsURL
		nc, err := opts.Connect("oxy", nil)
		if err != nil {
			return cfg, cleanup, fmt.Errorf("NATS at %s: %w", opts.Redacted(), err)
		}
		closers = append(closers, nc.Close)
		cfg.Conn = nc
		// Streams this process creates (when no worker has yet) get the
		// replicas the workers would give them; existing ones are used as
		// they are.
		if v := r.env.Getenv(envNATSReplicas); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				cleanup()
				return cfg, func() {}, usageErrorf("%s must be a positive number", envNATSReplicas)
			}
			cfg.Replicas = n
		}
	}
	if f.mongoURI != "" {
		store, disconnect, err := jobresults.OpenMongo(ctx, f.mongoURI, "", jobresults.MongoConfig{})
		if err != nil {
			cleanup()
			return cfg, func() {}, err
		}
		closers = append(closers, func() {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			disconnect(dctx)
		})
		cfg.Ledger = store
	}
	return cfg, cleanup, nil
}

// start announces the run (or resumes it). Every failure here is before
// anything billed.
func (r *runner) start(ctx context.Context, client *oxy.Client, src *runSource) (*oxy.Run, error) {
	f := r.flags
	opts := oxy.Options{Destination: f.destination, RunLog: f.runLog, StopTimeout: f.stopTimeout, NoStorageCheck: f.noCheck || !f.checkStorage}
	if f.resume != "" {
		run, err := client.Resume(ctx, f.resume, src.source(), opts)
		if err != nil {
			if src.Spool == nil && errors.Is(err, oxytype.ErrInputMismatch) {
				return nil, usageErrorf("no payloads of run %s are kept in %s\nhint: give the run's input file: oxy run --resume %s --state-dir %s FILE", f.resume, f.stateDir, f.resume, f.stateDir)
			}
			return nil, startError(err)
		}
		if !r.flags.quiet {
			hintf(r.console, "resuming run %s: payloads already fed are not fed again, and no payload is submitted twice", f.resume)
		}
		return run, nil
	}
	if f.stateDir != "" {
		// Keep the payloads under the run's id before anything is fed, so
		// that a run killed at any moment can be resumed without its input.
		opts.Run = messages.NewRunID(time.Now())
		if err := src.MoveTo(spoolPath(f.stateDir, opts.Run)); err != nil {
			return nil, usageErrorf("state directory: %w", err)
		}
		src.kept = true
	}
	run, err := client.ExecuteSource(ctx, src, opts)
	if err != nil {
		return nil, startError(err)
	}
	for _, w := range run.Warnings() {
		hintf(r.console, "%s", w)
	}
	if f.stateDir != "" && !f.quiet {
		hintf(r.console, "run %s; if this process is killed, resume it with: oxy run --resume %s --state-dir %s", run.ID(), run.ID(), f.stateDir)
	}
	return run, nil
}

// startError maps a failure before anything billed to its exit code: input
// and locations the user gave are invalid input (2); a pipeline that cannot
// start or be reached is an error (1).
func startError(err error) error {
	var (
		ie  *oxytype.InputError
		rf  *oxytype.RunFailedError
		de  *destination.Error
		nsw *oxytype.NoStatusWorkerError
	)
	switch {
	case errors.As(err, &ie):
		return usageErrorf("%v\nhint: nothing was sent", ie)
	case errors.As(err, &rf):
		return usageErrorf("the run log cannot be written, so nothing was sent: %s", rf.Reason)
	case errors.As(err, &de), errors.Is(err, oxy.ErrNoDestination):
		return usageErrorf("the destination cannot be written, so nothing was sent: %v", err)
	case errors.Is(err, oxy.ErrNoCredentials), errors.Is(err, oxytype.ErrInputMismatch), errors.Is(err, oxytype.ErrRunNotFound),
		errors.Is(err, oxy.ErrRealtimeDeployed), errors.Is(err, oxy.ErrRealtimeStorage),
		errors.Is(err, oxy.ErrStorageWithDestination), errors.Is(err, oxy.ErrMixedStorage):
		return usageError(err)
	case errors.As(err, &nsw):
		return fmt.Errorf("%w\nhint: nothing was sent; start a statusworker on this NATS (see deploy/)", nsw)
	}
	return err
}

// serveStatus serves the in-process statusworker's JSON API on
// --status-addr, for `oxy status RUN --url`.
func (r *runner) serveStatus(ctx context.Context, client *oxy.Client) (func(), error) {
	h, err := client.StatusHandler(ctx)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", r.flags.statusAddr)
	if err != nil {
		return nil, usageErrorf("--status-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/runs", h)
	mux.Handle("/runs/", h)
	// The Go runtime's profiles, for finding where a large run's memory and
	// CPU go (go tool pprof http://HOST:PORT/debug/pprof/heap).
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }() // ends with Close below
	if !r.flags.quiet {
		hintf(r.console, "the statusworker's API is at http://%s (oxy status RUN --url http://%s)", ln.Addr(), ln.Addr())
	}
	return func() { _ = srv.Close() }, nil // the run is over; requests in flight do not matter
}

// watch prints the run's jobs and progress until it ends, stops it on the
// first signal, and reports.
func (r *runner) watch(ctx context.Context, run *oxy.Run, src *runSource) error {
	if err := r.follow(ctx, run, nil); err != nil {
		r.console.final(run.Progress().String())
		if src.kept {
			src.unfinished = true
			hintf(r.console, "the run is not finished; resume it with: oxy run --resume %s --state-dir %s", run.ID(), r.flags.stateDir)
		}
		return fmt.Errorf("the run ended early: %w", err)
	}
	if err := run.WriteReport(r.console); err != nil {
		return err
	}
	r.console.final(run.Progress().String())
	if err := r.lines.Err(); err != nil {
		return fmt.Errorf("stdout: %w", err)
	}

	runErr := run.Err()
	// recover acts on the run log's lines that are not done: a run whose
	// only trouble is failed uploads (done jobs) has nothing for it.
	var incomplete *oxy.IncompleteRunError
	recoverable := len(run.Problems()) > 0 || (runErr != nil && !errors.As(runErr, &incomplete))
	if loc := run.RunLog(); loc != "" && recoverable {
		dest := redact.String(run.Announced().Destination)
		if r.bodies != "" || dest == "" {
			dest = "DEST" // the bodies' scratch folder is gone, or the API uploaded them
		}
		hintf(r.console, "recover what is left without paying twice: oxy recover %s -d %s", redact.String(loc), dest)
	}
	if n := mayHaveBilledCount(run.Problems()); n > 0 {
		hintf(r.console, "%s may have billed already (\"may_have_billed\": true in the run log): oxy recover holds %s back unless given --resubmit-unknown",
			count(n, "unsubmitted payload", "unsubmitted payloads"), pick(n, "it", "them"))
	}
	var intr *Interrupted
	if errors.As(context.Cause(ctx), &intr) {
		return intr
	}
	if errors.As(runErr, &incomplete) {
		return errIncomplete
	}
	return runErr
}

// follow prints the run's finished jobs on stdout (after onJob, when set,
// has seen each) and its progress on stderr until the run ends. The first
// signal (ctx's cancellation) stops the run gracefully: nothing more is
// submitted, and the run still completes. It returns the error that ended
// the run early, or nil when the run ended (read run.Err for its outcome).
func (r *runner) follow(ctx context.Context, run *oxy.Run, onJob func(*oxy.Job)) error {
	if r.lines == nil {
		r.lines = newLineWriter(r.env.Stdout)
	}
	runCtx := context.WithoutCancel(ctx)
	// waitCtx bounds the wait for the end of a stopped run: one whose end
	// never comes (its run log cannot be written, no statusworker runs)
	// must not hold the process for ever.
	waitCtx, giveUp := context.WithCancelCause(runCtx)
	defer giveUp(nil)
	go r.stopWhenAsked(ctx, runCtx, run, giveUp)
	progressDone, quit := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(progressDone)
		if r.flags.quiet {
			return
		}
		t := time.NewTicker(r.console.interval())
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				r.console.progress(run.Progress().String())
			}
		}
	}()
	defer func() { <-progressDone }()
	defer close(quit)

	for {
		job, err := run.Next(waitCtx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			if cause := context.Cause(waitCtx); cause != nil && waitCtx.Err() != nil {
				return cause
			}
			return err
		}
		if onJob != nil {
			onJob(&job)
		}
		r.reportUpload(job)
		if r.bodies != "" {
			r.printBody(job)
			continue
		}
		line, err := job.MarshalJSON()
		if err != nil {
			continue // a job of strings always encodes
		}
		r.console.aroundStdout(func() { r.lines.writeRaw(line) })
	}
}

// mayHaveBilledCount counts the unsubmitted payloads marked as possibly
// billed.
func mayHaveBilledCount(problems []oxy.Job) int {
	n := 0
	for _, j := range problems {
		if j.Status == oxytype.Unsubmitted && mayHaveBilled(j.Error) {
			n++
		}
	}
	return n
}

// stopGrace is how long a stopped run may take past its stop timeout to
// record what is unfinished and write its run log before `oxy run` gives up
// waiting for it.
const stopGrace = 20 * time.Second

// stopWhenAsked stops the run on the first signal (ctx's cancellation) and
// ends it with what is recorded on the second (Env.Hurry). Once the run is
// stopping, however it was stopped (here, by another process, or by the
// writer when results cannot be written), it bounds the wait for its end
// with giveUp: stop timeout + settle time + stopGrace.
func (r *runner) stopWhenAsked(ctx, runCtx context.Context, run *oxy.Run, giveUp context.CancelCauseFunc) {
	timeout := r.flags.stopTimeout
	if timeout <= 0 {
		timeout = messages.DefaultStopTimeout
	}
	// A stop never ends a run sooner than the settle time after it.
	timeout = max(timeout, messages.StopSettle)
	limit := timeout + stopGrace
	poll := time.NewTicker(200 * time.Millisecond)
	defer poll.Stop()
	var bound <-chan time.Time
	startBound := func() {
		if bound == nil {
			bound = time.NewTimer(limit).C // collected once unreferenced
		}
	}
	interrupted, hurry := ctx.Done(), r.env.Hurry
	for {
		if stop := run.Stopped(); stop != nil && bound == nil {
			// Stopped by a stage (a result that cannot be written) or by
			// another process: say so now, not only in the final report.
			why := stop.Reason
			if why == "" {
				why = stop.Error()
			}
			warnf(r.console, "%s; jobs already submitted are checked and written for at most %v, then the run log is written", why, timeout)
			startBound()
		}
		select {
		case <-run.Done():
			return
		case <-poll.C:
		case <-interrupted:
			interrupted = nil
			hintf(r.console, "stopping: nothing more is submitted; jobs already submitted are checked and written for at most %v, then the run log is written (Ctrl+C again ends the run at once with what is recorded)", timeout)
			if err := run.Stop(runCtx); err != nil {
				warnf(r.console, "stopping the run: %v", err)
			}
			startBound()
		case <-hurry:
			hurry = nil
			r.hurried.Store(true)
			hintf(r.console, "stopping now: the run ends with what is recorded (jobs not written are unfetched with their ids), then the run log is written")
			if err := run.StopNow(runCtx); err != nil {
				warnf(r.console, "stopping the run now: %v", err)
			}
			startBound()
		case <-bound:
			giveUp(fmt.Errorf("the run did not end within %v of its stop, so its run log may be missing or incomplete; "+
				"look at `oxy status %s` and the statusworker's log", limit, run.ID()))
			return
		}
	}
}
