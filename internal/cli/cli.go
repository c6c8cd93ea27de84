package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/oxypipe/oxypipe/internal/memlimit"
	"github.com/oxypipe/oxypipe/pkg/messages"
)

// hurryTimeout bounds how long the process lives after a second signal: a
// stopped run ends with what is recorded no earlier than messages.StopSettle
// after its stop (so that a submission started just before the stop is
// found), then its run log is written.
const hurryTimeout = messages.StopSettle + 15*time.Second

// Env is what a command reads and writes outside its arguments.
type Env struct {
	// Stdin is read by `oxy run -` and `oxy run` without a file.
	Stdin io.Reader
	// Stdout receives JSON lines only.
	Stdout io.Writer
	// Stderr receives progress, warnings, hints and errors.
	Stderr io.Writer
	// Getenv reads an environment variable. Default os.Getenv.
	Getenv func(key string) string
	// Terminal reports that Stderr is a terminal, so that progress is one
	// line redrawn in place rather than a line every 10 seconds.
	Terminal bool
	// StdoutTerminal reports that Stdout is a terminal too, so that the live
	// progress line is cleared before a job line is printed under it.
	StdoutTerminal bool
	// StdinTerminal reports that Stdin is a terminal: `oxy run` without a
	// file then says that it waits for payloads typed in.
	StdinTerminal bool
	// Hurry is closed on the second SIGINT or SIGTERM (nil: never): a run
	// stopped by the first one then ends at once with what is recorded and
	// writes its run log.
	Hurry <-chan struct{}
}

// withDefaults fills the unset fields of e: empty input, discarded output and
// an empty environment, so that a test sets only what it looks at.
func (e Env) withDefaults() Env {
	if e.Stdin == nil {
		e.Stdin = strings.NewReader("")
	}
	if e.Stdout == nil {
		e.Stdout = io.Discard
	}
	if e.Stderr == nil {
		e.Stderr = io.Discard
	}
	if e.Getenv == nil {
		e.Getenv = func(string) string { return "" }
	}
	return e
}

// Main runs oxy with the process's arguments (without the program name),
// streams, environment and signals, and returns the exit code.
func Main(args []string) int {
	if len(args) > 0 && args[0] == "run" {
		widenProcs(os.Getenv)
		defer boundMemory(os.Getenv)()
	}
	env := Env{
		Stdin:          os.Stdin,
		Stdout:         os.Stdout,
		Stderr:         os.Stderr,
		Getenv:         os.Getenv,
		Terminal:       isTerminal(os.Stderr),
		StdoutTerminal: isTerminal(os.Stdout),
		StdinTerminal:  isTerminal(os.Stdin),
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)

	signals := make(chan os.Signal, 3)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(signals)
	hurry := make(chan struct{})
	env.Hurry = hurry
	go func() {
		first := <-signals
		cancel(&Interrupted{Signal: first})
		second := <-signals
		code := (&Interrupted{Signal: second}).ExitCode()
		close(hurry)
		fmt.Fprintf(env.Stderr, "\nerror: %s again: a stopped run now ends with what is recorded and writes its run log (at most %v; %s once more exits at once, without the run log)\n",
			signalName(second), hurryTimeout, signalName(second))
		select {
		case third := <-signals:
			code = (&Interrupted{Signal: third}).ExitCode()
			fmt.Fprintf(env.Stderr, "\nerror: %s a third time: exiting at once; the run log may be missing\n", signalName(third))
		case <-time.After(hurryTimeout):
			fmt.Fprintf(env.Stderr, "\nerror: the run log was not written within %v of the second signal; exiting without it\n", hurryTimeout)
		}
		os.Exit(code)
	}()
	return Run(ctx, args, env)
}

// procsPerCore is how many goroutines `oxy run` lets run at once per core
// the Go runtime would use by default.
const procsPerCore = 2

// widenProcs lets `oxy run` run procsPerCore goroutines per core, unless the
// user set GOMAXPROCS. The one-process run spends much of its time in
// blocking file system calls (the writer's create, fsync and rename of every
// result, the embedded broker's writes); a goroutine in such a call keeps
// its processor until the scheduler takes it back, and with one processor
// per core the cores then sit idle while other goroutines wait to run. With
// two per core, 100,000 payloads against a separate emulator on 2 cores ran
// at 1,614 docs/s instead of 1,212, at 7 % less CPU per doc and 11 % more
// peak memory (the extra work in flight). The runtime's default already
// follows the container's CPU limit; this doubles it.
func widenProcs(getenv func(string) string) {
	if getenv(envMaxProcs) != "" {
		return
	}
	runtime.GOMAXPROCS(procsPerCore * runtime.GOMAXPROCS(0))
}

// boundMemory keeps `oxy run`'s memory near memlimit's floor while its live
// heap is small, unless the user set GOMEMLIMIT (the runtime then follows
// it). Without it, the garbage collector's default headroom (twice the live
// heap, and freed memory kept a while) put a 100,000-payload run at
// 327 MiB of RSS for about 115 MB of live heap. It returns the function that
// stops it.
func boundMemory(getenv func(string) string) (stop func()) {
	if getenv(envMemLimit) != "" {
		return func() {}
	}
	return memlimit.Keep(memlimit.Config{})
}

// Run runs the command named by args[0] with the rest of args and returns the
// exit code. Cancelling ctx with an *Interrupted cause stops the command the
// way the first Ctrl+C does.
func Run(ctx context.Context, args []string, env Env) int {
	env = env.withDefaults()
	if len(args) == 0 {
		printOverview(env.Stderr)
		return ExitUsage
	}
	name := args[0]
	switch name {
	case "-h", "--help":
		printOverview(env.Stdout)
		return ExitOK
	case "--version":
		name = "version"
	}
	cmd, ok := lookup(name)
	if !ok {
		fmt.Fprintf(env.Stderr, "error: unknown command %q\nhint: run `oxy help` for the list of commands\n", name)
		return ExitUsage
	}
	return exitCode(env.Stderr, cmd.run(ctx, env, args[1:]))
}

// command is one subcommand of oxy.
type command struct {
	name string
	// args is the synopsis after the name, e.g. "[flags] [FILE|-]".
	args string
	// summary is one line for the overview.
	summary string
	// run parses args and does the work.
	run func(ctx context.Context, env Env, args []string) error
	// flags builds the command's flag set (nil for help), for the tests of
	// --help.
	flags func() *flagSet
}

// commands returns every command, in the order of the overview.
func commands() []command {
	return []command{
		{"run", "[flags] [FILE|-]", "run a file of payloads: submit, poll, write results and a run log", runCommand,
			func() *flagSet { fs, _ := runFlagSet(); return fs }},
		{"get", "[flags] ID...", "fetch jobs by id, writing <id>.json with -d", getCommand,
			func() *flagSet { fs, _ := getFlags(); return fs }},
		{"recover", "[flags] RUNLOG", "finish a run from its run log without paying twice", recoverCommand,
			func() *flagSet { fs, _ := recoverFlags(); return fs }},
		{"status", "[flags] RUN", "show a run's stage counts, failures and errors from the statusworker", statusCommand,
			func() *flagSet { fs, _ := statusFlags(); return fs }},
		{"sandbox", "[flags]", "serve the API emulator, for trying oxy without credentials", sandboxCommand,
			func() *flagSet { fs, _ := sandboxFlags(); return fs }},
		{"version", "", "print the version", versionCommand, versionFlags},
		{"help", "[COMMAND]", "show help for oxy or for a command", helpCommand, nil},
	}
}

func lookup(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

func printOverview(w io.Writer) {
	var b strings.Builder
	b.WriteString("oxy runs batches of Oxylabs Web Scraper API jobs: it submits payloads, polls\n")
	b.WriteString("the jobs, writes each done job's body as <job id>.json and a run log that says\n")
	b.WriteString("what became of every payload. Without --nats everything runs in this process.\n\n")
	b.WriteString("Usage: oxy COMMAND [flags] [arguments]\n\nCommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "  %-8s %s\n", c.name, c.summary)
	}
	b.WriteString("\nEnvironment (flags win over the environment):\n")
	vars := environment()
	names := make([]string, 0, len(vars))
	for k := range vars {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Fprintf(&b, "  %-18s %s\n", k, vars[k])
	}
	b.WriteString("\nExit codes: 0 every payload done (faulted jobs are reported, not an error),\n")
	b.WriteString("1 anything rejected, unsubmitted or unfetched, 2 invalid input before any\n")
	b.WriteString("request, 130 after Ctrl+C, 143 after SIGTERM.\n\n")
	b.WriteString("Run `oxy help COMMAND` or `oxy COMMAND --help` for a command's flags.\n")
	_, _ = io.WriteString(w, b.String()) // nothing to do when help cannot be printed
}

func helpCommand(_ context.Context, env Env, args []string) error {
	switch {
	case len(args) == 0 || args[0] == "-h" || args[0] == "--help":
		printOverview(env.Stdout)
		return nil
	case len(args) > 1:
		return usageErrorf("help takes one command name, got %d arguments", len(args))
	}
	cmd, ok := lookup(args[0])
	if !ok {
		return usageErrorf("unknown command %q", args[0])
	}
	return cmd.run(context.Background(), env, []string{"--help"})
}

// exitCode prints err (unless it was reported already) and maps it to the
// process's exit code.
func exitCode(stderr io.Writer, err error) int {
	if err == nil {
		return ExitOK
	}
	var intr *Interrupted
	if errors.As(err, &intr) {
		return intr.ExitCode()
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		if ee.Err != nil {
			printError(stderr, ee.Err)
		}
		return ee.Code
	}
	printError(stderr, err)
	return ExitIncomplete
}

// isTerminal reports whether f is a character device (a terminal), without a
// dependency on a terminal library: a pipe or a file is not.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
