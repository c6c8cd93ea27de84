package cli

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/oxypipe/oxypipe/internal/memlimit"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// Environment variables oxy reads. Flags win over them; secrets are read only
// from the environment, never from a flag, so they stay out of `ps` and shell
// history.
const (
	envUsername    = wsa.EnvUsername
	envPassword    = wsa.EnvPassword
	envAPIURL      = wsa.EnvBaseURL
	envRealtimeURL = "OXY_REALTIME_URL"
	envDestination = "OXY_DESTINATION"
	envRunLog      = "OXY_RUN_LOG"
	envStateDir    = "OXY_STATE_DIR"
	envNATSURL     = "NATS_URL"
	envMongoURI    = "MONGODB_URI"
	envStatusURL   = "OXY_STATUS_URL"
	// envRetryUnknown is the submitter's variable too (cmd/submitter).
	envRetryUnknown = "OXY_RETRY_UNKNOWN_ONCE"
	envStopTimeout  = "OXY_STOP_TIMEOUT"
	// envNATSReplicas is the workers' variable (internal/worker): the replicas of
	// streams created when none exist yet.
	envNATSReplicas = "OXY_NATS_REPLICAS"
	// envMaxProcs is the Go runtime's own variable; oxy run sets it when it
	// is unset (see widenProcs).
	envMaxProcs = "GOMAXPROCS"
	// envMemLimit is the Go runtime's soft memory limit; when it is set,
	// oxy run leaves the limit to it.
	envMemLimit = "GOMEMLIMIT"
)

// environment describes every variable oxy reads, for `oxy --help`.
func environment() map[string]string {
	return map[string]string{
		envUsername:     "API username (required unless --sandbox)",
		envPassword:     "API password (required unless --sandbox; never echoed)",
		envAPIURL:       "--api-url",
		envRealtimeURL:  "--realtime-url",
		envDestination:  "--destination",
		envRunLog:       "--run-log",
		envStateDir:     "--state-dir",
		envNATSURL:      "--nats (NATS_USER, NATS_PASSWORD, NATS_TOKEN, NATS_CREDS, NATS_TLS_* too)",
		envMongoURI:     "--mongo (preferred: a URI may hold a password)",
		envStatusURL:    "oxy status --url",
		envRetryUnknown: "--retry-unknown-once",
		envStopTimeout:  "--stop-timeout",
		envNATSReplicas: "with --nats: replicas of the streams oxy creates when no worker has (default 1)",
		envMaxProcs:     "goroutines running at once (oxy run: twice the Go runtime's default, unless set)",
		envMemLimit:     fmt.Sprintf("the Go runtime's soft memory limit (oxy run: %d MiB or %g × the live heap, whichever is more, unless set)", memlimit.DefaultFloor>>20, memlimit.DefaultHeadroom),
	}
}

// flagSet is one command's flags plus the environment variables that stand in
// for flags left unset.
type flagSet struct {
	*pflag.FlagSet
	name     string // "run"
	synopsis string // "[flags] [FILE|-]"
	summary  string // paragraph under the synopsis
	envVars  []envBinding
	notes    []string // extra paragraphs after the flags (Environment, examples)
}

type envBinding struct {
	flag, env string
}

func newFlagSet(name, synopsis, summary string) *flagSet {
	fs := pflag.NewFlagSet("oxy "+name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are printed once, by the caller
	fs.Usage = func() {}
	fs.SortFlags = false
	return &flagSet{FlagSet: fs, name: name, synopsis: synopsis, summary: summary}
}

// bindEnv makes env the value of flag when the flag is not given, and names it
// in the flag's help. The environment's value is read after parsing, so it is
// never shown as a default in --help (it may be a secret).
func (f *flagSet) bindEnv(flag, env string) {
	fl := f.Lookup(flag)
	if fl == nil {
		panic("cli: bindEnv of unknown flag " + flag) // a programming error, caught by every test
	}
	fl.Usage += " (env " + env + ")"
	f.envVars = append(f.envVars, envBinding{flag: flag, env: env})
}

// note adds a paragraph after the flags in --help.
func (f *flagSet) note(text string) { f.notes = append(f.notes, text) }

// help returns the command's --help text.
func (f *flagSet) help() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: oxy %s %s\n\n%s\n", f.name, f.synopsis, strings.TrimSpace(f.summary))
	if usages := f.FlagUsagesWrapped(100); usages != "" {
		// pflag spells a switch "--sandbox[=true|false]"; the spaces keep
		// the columns aligned.
		usages = strings.ReplaceAll(usages, "[=true|false]", "             ")
		b.WriteString("\nFlags:\n")
		b.WriteString(usages)
	}
	for _, n := range f.notes {
		b.WriteString("\n")
		b.WriteString(strings.TrimSpace(n))
		b.WriteString("\n")
	}
	return b.String()
}

// parse parses args, prints --help to stdout (returning errHelp), and fills
// unset flags from the environment. A bad flag is a usage error (exit 2).
func (f *flagSet) parse(env Env, args []string) error {
	help := f.BoolP("help", "h", false, "show this help")
	err := f.Parse(args)
	if *help || errors.Is(err, pflag.ErrHelp) {
		_, _ = io.WriteString(env.Stdout, f.help()) // help that cannot be printed has no one to tell
		return errHelp
	}
	if err != nil {
		return &ExitError{Code: ExitUsage, Err: fmt.Errorf("%w\nhint: run `oxy %s --help` for the flags", withoutValue(err), f.name)}
	}
	for _, b := range f.envVars {
		if f.Changed(b.flag) {
			continue
		}
		v := env.Getenv(b.env)
		if v == "" {
			continue
		}
		if err := f.Set(b.flag, v); err != nil {
			// The value is not echoed: it may be a secret.
			return usageErrorf("the value of %s is not valid for --%s", b.env, b.flag)
		}
	}
	return nil
}

// errHelp ends a command after --help with exit 0.
var errHelp = &ExitError{Code: ExitOK}

// withoutValue rewrites pflag's errors that quote what was given (an
// invalid value, a malformed argument): a value may be a credential, so an
// error names the flag and the reason only.
func withoutValue(err error) error {
	var iv *pflag.InvalidValueError
	if errors.As(err, &iv) {
		reason := iv.Unwrap()
		var ne *strconv.NumError
		if errors.As(reason, &ne) {
			reason = ne.Err // strconv's text quotes the value
		}
		return fmt.Errorf("invalid value for --%s: %w", iv.GetFlag().Name, reason)
	}
	var is *pflag.InvalidSyntaxError
	if errors.As(err, &is) {
		return errors.New("bad flag syntax: a flag is given as -x or --name")
	}
	return err
}
