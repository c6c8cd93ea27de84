package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/spf13/pflag"
)

// Defaults of Config.
const (
	DefaultPayloads  = 20000
	DefaultTimeout   = 10 * time.Minute
	DefaultPollFirst = time.Second
)

// Config is what one benchmark run does.
type Config struct {
	// Payloads is how many docs the run feeds. Default DefaultPayloads.
	Payloads int
	// NoSync skips the fsync of each result file (and its folder).
	NoSync bool
	// BrokerSync makes the embedded broker fsync every write before it
	// acknowledges it, as `oxy run --state-dir` does (its cost is the
	// point of the flag); without it the broker syncs every 2 minutes.
	BrokerSync bool
	// PollFirst is the poller's first check after a submission, and the
	// step of its early checks: the production default is 1 s.
	PollFirst time.Duration
	// Dir is where each run makes its fresh scratch folder (the broker's
	// state and the results), removed afterwards; the system's temporary
	// folder when empty. A run never reuses what an earlier run left: a
	// broker store with another run's streams would be counted as this
	// run's work.
	Dir string
	// CPUProfile, when set, is where a CPU profile of the pipeline run (not
	// of the raw JetStream run) is written.
	CPUProfile string
	// SkipRaw skips the raw JetStream run.
	SkipRaw bool
	// Timeout bounds the pipeline run. Default DefaultTimeout.
	Timeout time.Duration
	// SubmitBatch, PollerInFlight and WriterInFlight override the stage
	// runtime's BatchSize of the submitter and MaxInFlight of the poller
	// and the writer (0: the stages' defaults, 100, 64 and 64), to see
	// what more concurrency buys.
	SubmitBatch, PollerInFlight, WriterInFlight int
	// CLIOxy, when set, is an oxy binary: after the stage run, `oxy run`
	// runs as a child process against a separate `oxy sandbox` and with
	// --sandbox, on the same number of payloads (see cli.go).
	CLIOxy string
	// SkipStages skips the stage run (and the raw JetStream run).
	SkipStages bool
	// JSON, when set, is a file the figures are written to as JSON.
	JSON string
}

// WithDefaults returns c with every unset field filled in.
func (c Config) WithDefaults() Config {
	if c.Payloads == 0 {
		c.Payloads = DefaultPayloads
	}
	if c.PollFirst == 0 {
		c.PollFirst = DefaultPollFirst
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Payloads < 1:
		return fmt.Errorf("-n %d: want at least one payload", c.Payloads)
	case c.PollFirst < time.Millisecond:
		return fmt.Errorf("--poll-first %v: want at least 1ms", c.PollFirst)
	case c.Timeout <= 0:
		return fmt.Errorf("--timeout %v: want a positive duration", c.Timeout)
	case c.SubmitBatch < 0 || c.PollerInFlight < 0 || c.WriterInFlight < 0:
		return errors.New("--submit-batch, --poller-in-flight and --writer-in-flight must not be negative")
	}
	return nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run parses args, runs the benchmark and prints the table; it returns the
// exit code: 0, 1 when the run failed, 2 for bad flags.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var cfg Config
	fs := pflag.NewFlagSet("oxybench", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVarP(&cfg.Payloads, "payloads", "n", DefaultPayloads, "payloads to feed")
	fs.BoolVar(&cfg.NoSync, "nosync", false, "do not fsync result files")
	fs.BoolVar(&cfg.BrokerSync, "broker-sync", false, "fsync every broker write before acknowledging it, as oxy run --state-dir does")
	fs.DurationVar(&cfg.PollFirst, "poll-first", DefaultPollFirst, "the poller's first check after a submission (and its step up to 10 checks)")
	fs.StringVar(&cfg.Dir, "dir", "", "folder in which each run makes a fresh scratch folder for the broker's state and the results, removed afterwards (default: the system's temporary folder)")
	fs.StringVar(&cfg.CPUProfile, "cpuprofile", "", "write a CPU profile of the pipeline run to this file")
	fs.BoolVar(&cfg.SkipRaw, "skip-raw", false, "skip the raw JetStream publish+consume run")
	fs.DurationVar(&cfg.Timeout, "timeout", DefaultTimeout, "give up on the pipeline run after this long")
	fs.IntVar(&cfg.SubmitBatch, "submit-batch", 0, "payloads per submitter handler call (the runtime's BatchSize; 0: default 100)")
	fs.IntVar(&cfg.PollerInFlight, "poller-in-flight", 0, "messages the poller holds at once (0: default 64)")
	fs.IntVar(&cfg.WriterInFlight, "writer-in-flight", 0, "messages the writer holds at once (0: default 64, at most its MaxAckPending 256)")
	fs.StringVar(&cfg.CLIOxy, "cli-oxy", "", "also run `oxy run` (this oxy `BINARY`) as a child process, against a separate oxy sandbox and with --sandbox")
	fs.BoolVar(&cfg.SkipStages, "skip-stages", false, "skip the stage run and the raw JetStream run (with --cli-oxy)")
	fs.StringVar(&cfg.JSON, "json", "", "write the figures as JSON to `FILE`")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: oxybench [flags]\n\nRuns the submitter, poller and writer in one process against the API emulator\nand prints docs/s, API requests per doc, finish-to-file latency and peak RSS.\n\nFlags:\n%s", fs.FlagUsages())
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		return 2
	}
	// The flags carry the defaults: a zero here was typed, and is refused.
	if err := cfg.validate(); err != nil {
		fmt.Fprintf(stderr, "oxybench: %v\n", err)
		return 2
	}
	if err := benchAll(ctx, cfg, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "oxybench: %v\n", err)
		return 1
	}
	return 0
}

// report is what --json writes.
type report struct {
	Machine  string        `json:"machine"`
	Payloads int           `json:"payloads"`
	Stages   *stageSummary `json:"stages,omitempty"`
	CLI      []cliResult   `json:"cli,omitempty"`
}

// benchAll runs what cfg asks for and prints each table as it ends.
func benchAll(ctx context.Context, cfg Config, stdout, stderr io.Writer) error {
	cfg = cfg.WithDefaults()
	rep := report{Machine: machine(), Payloads: cfg.Payloads}
	if !cfg.SkipStages {
		res, err := bench(ctx, cfg, stderr)
		if err != nil {
			return err
		}
		if err := res.print(stdout); err != nil {
			return err
		}
		s := res.summary()
		rep.Stages = &s
	}
	if cfg.CLIOxy != "" {
		dir, err := os.MkdirTemp(cfg.Dir, "oxybench-cli-")
		if err != nil {
			return err
		}
		defer func() { _ = os.RemoveAll(dir) }() // scratch space
		rs, err := cliBench(ctx, cfg.CLIOxy, cfg.Payloads, dir, stderr)
		if err != nil {
			return err
		}
		if err := printCLI(stdout, rs); err != nil {
			return err
		}
		rep.CLI = rs
	}
	if cfg.JSON != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(cfg.JSON, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// bench runs the pipeline and then the raw JetStream comparison.
func bench(ctx context.Context, cfg Config, log io.Writer) (*result, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(cfg.Dir, "oxybench-stages-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }() // scratch space
	env, err := start(ctx, cfg, dir)
	if err != nil {
		return nil, err
	}
	defer env.close()

	stopProfile := func() {}
	if cfg.CPUProfile != "" {
		f, err := os.Create(cfg.CPUProfile)
		if err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			_ = f.Close()
			return nil, err
		}
		stopProfile = func() {
			pprof.StopCPUProfile()
			if err := f.Close(); err != nil {
				fmt.Fprintf(log, "oxybench: closing the profile: %v\n", err)
			}
		}
	}
	fmt.Fprintf(log, "oxybench: feeding %d payloads…\n", cfg.Payloads)
	res, err := env.run(ctx, cfg)
	stopProfile()
	if err != nil {
		return nil, err
	}
	if res.stages, err = env.stageStats(cfg); err != nil {
		return nil, err
	}
	res.peakRSS = peakRSS()
	if !cfg.SkipRaw {
		fmt.Fprintf(log, "oxybench: raw JetStream run of %d messages…\n", int(res.msgsPerDoc*float64(cfg.Payloads)))
		raw, err := env.rawJetStream(ctx, int(res.msgsPerDoc*float64(cfg.Payloads)+0.5), res.avgMsgBytes)
		if err != nil {
			return nil, fmt.Errorf("raw JetStream run: %w", err)
		}
		res.raw = raw
	}
	return res, nil
}
