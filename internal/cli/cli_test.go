package cli

import (
	"errors"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/pflag"

	"github.com/oxypipe/oxypipe/internal/memlimit"
)

func TestOverview(t *testing.T) {
	t.Parallel()
	t.Run("oxy --help lists every command and environment variable on stdout", func(t *testing.T) {
		t.Parallel()
		res := run(t, nil, "--help")
		if res.code != 0 || res.stderr != "" {
			t.Fatalf("exit %d, stderr %q", res.code, res.stderr)
		}
		for _, c := range commands() {
			if !strings.Contains(res.stdout, "\n  "+c.name+" ") {
				t.Errorf("overview lacks the command %s", c.name)
			}
		}
		for k := range environment() {
			if !strings.Contains(res.stdout, k) {
				t.Errorf("overview lacks %s", k)
			}
		}
	})
	t.Run("no command is a usage error on stderr", func(t *testing.T) {
		t.Parallel()
		res := run(t, nil)
		if res.code != ExitUsage || !strings.Contains(res.stderr, "Usage: oxy COMMAND") || res.stdout != "" {
			t.Errorf("exit %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
		}
	})
	t.Run("an unknown command exits 2 with a hint", func(t *testing.T) {
		t.Parallel()
		res := run(t, nil, "frobnicate")
		want := "error: unknown command \"frobnicate\"\nhint: run `oxy help` for the list of commands\n"
		if res.code != ExitUsage || res.stderr != want {
			t.Errorf("exit %d, stderr %q", res.code, res.stderr)
		}
	})
	t.Run("help COMMAND is COMMAND --help", func(t *testing.T) {
		t.Parallel()
		a, b := run(t, nil, "help", "get"), run(t, nil, "get", "--help")
		if a.code != 0 || a.stdout != b.stdout || !strings.HasPrefix(a.stdout, "Usage: oxy get [flags] ID...") {
			t.Errorf("help get: exit %d, %q; get --help: %q", a.code, a.stdout, b.stdout)
		}
	})
	t.Run("version names the binary and the Go version", func(t *testing.T) {
		t.Parallel()
		res := run(t, nil, "version")
		if res.code != 0 || !strings.HasPrefix(res.stdout, "oxy ") || !strings.Contains(res.stdout, " go1.") {
			t.Errorf("exit %d, stdout %q", res.code, res.stdout)
		}
	})
}

func TestEveryFlagIsInItsHelp(t *testing.T) {
	t.Parallel()
	wantEnv := map[string]map[string]string{
		"run": {
			"destination": envDestination, "run-log": envRunLog, "api-url": envAPIURL,
			"nats": envNATSURL, "mongo": envMongoURI, "state-dir": envStateDir,
		},
		"get":     {"destination": envDestination, "api-url": envAPIURL},
		"recover": {"destination": envDestination, "api-url": envAPIURL, "nats": envNATSURL},
		"status":  {"url": envStatusURL},
		"sandbox": {},
	}
	for name, envs := range wantEnv {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res := run(t, nil, name, "--help")
			if res.code != 0 {
				t.Fatalf("exit %d: %s", res.code, res.stderr)
			}
			cmd, _ := lookup(name)
			fs := cmd.flags()
			fs.BoolP("help", "h", false, "")
			fs.VisitAll(func(f *pflag.Flag) {
				if !strings.Contains(res.stdout, "--"+f.Name+" ") && !strings.Contains(res.stdout, "--"+f.Name+"\n") {
					t.Errorf("oxy %s --help lacks --%s", name, f.Name)
				}
			})
			flat := strings.Join(strings.Fields(res.stdout), " ")
			for flag, env := range envs {
				if !strings.Contains(flat, "(env "+env+")") {
					t.Errorf("oxy %s --help does not name %s for --%s", name, env, flag)
				}
			}
			if strings.Contains(res.stdout, "[=true|false]") {
				t.Errorf("oxy %s --help shows pflag's [=true|false]", name)
			}
			for _, l := range strings.Split(res.stdout, "\n") {
				if len(l) > 110 {
					t.Errorf("oxy %s --help has a %d-character line: %q", name, len(l), l)
				}
			}
		})
	}
}

func TestEnvironmentStandsInForUnsetFlags(t *testing.T) {
	t.Parallel()
	t.Run("a bad value in the environment is a usage error that does not echo it", func(t *testing.T) {
		t.Parallel()
		res := run(t, []string{"OXY_STATUS_URL=http://user:s3cret@[::1"}, "status", "X")
		if res.code != ExitUsage || strings.Contains(res.stderr, "s3cret") {
			t.Errorf("exit %d, stderr %q", res.code, res.stderr)
		}
	})
	t.Run("a flag wins over the environment", func(t *testing.T) {
		t.Parallel()
		res := run(t, []string{"OXY_STATUS_URL=ftp://nowhere"}, "status", "X", "--url", "also-not-a-url")
		if res.code != ExitUsage || !strings.Contains(res.stderr, `--url "also-not-a-url" is not an http:// or https:// URL`) {
			t.Errorf("exit %d, stderr %q", res.code, res.stderr)
		}
	})
	t.Run("help never shows the environment's values", func(t *testing.T) {
		t.Parallel()
		res := run(t, []string{"MONGODB_URI=mongodb://admin:hunter2@db/ledger"}, "run", "--help")
		if res.code != 0 || strings.Contains(res.stdout, "hunter2") {
			t.Errorf("exit %d; help shows the URI", res.code)
		}
	})
}

func TestRunRefusesImpossibleFlagsBeforeReadingInput(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"run", "--nats", "nats://h:4222", "x.jsonl"}, "error: with --nats the deployed writers write each done job's body, so -d/--destination is required"},
		{[]string{"run", "--sandbox", "--nats", "nats://h:4222", "-d", "r", "x.jsonl"}, "cannot be combined with --nats"},
		{[]string{"run", "--sandbox-rules", "r.json", "-d", "r", "x.jsonl"}, "add --sandbox"},
		{[]string{"run", "--nats", "nats://h:4222", "-d", "results", "x.jsonl"}, "give -d as it sees it, an absolute path or an s3://, gs:// or az:// URL (not \"results\")"},
		{[]string{"run", "--nats", "nats://h:4222", "-d", "/srv/results", "--run-log", "logs", "x.jsonl"}, "give --run-log as it sees it"},
		{[]string{"run", "--resume", "20260929T170412.345Z"}, "--resume needs the --state-dir"},
		{[]string{"run", "-d", "r", "a.jsonl", "b.jsonl"}, "a FILE of JSON payloads takes no INPUT after it (got 1 more arguments)"},
		{[]string{"run", "-d", "r", "--stop-timeout", "-1s", "x.jsonl"}, "--stop-timeout must not be negative"},
		{[]string{"run", "-d", "r", "--stop-timeout", "soon", "x.jsonl"}, "invalid value for --stop-timeout"},
		{[]string{"run", "--no-such-flag"}, "unknown flag: --no-such-flag\nhint: run `oxy run --help` for the flags"},
		{[]string{"run", "-d", "r", "does-not-exist.jsonl"}, "does-not-exist.jsonl: no such file or directory"},
	}
	for _, c := range cases {
		res := run(t, nil, c.args...)
		if res.code != ExitUsage || !strings.Contains(res.stderr, c.want) {
			t.Errorf("oxy %v: exit %d, stderr %q; want 2 and %q", c.args, res.code, res.stderr, c.want)
		}
	}
}

func TestRunRejectsBadLinesWithTheirNumber(t *testing.T) {
	t.Parallel()
	in := `{"source": "universal", "url": "https://sandbox.oxylabs.io/products/1"}` + "\n\n" + `{"source": "universal"}` + "\n"
	res := runCtx(t, t.Context(), in, nil, "run", "--sandbox", "-d", t.TempDir())
	want := "error: line 3: the payload has no input key"
	if res.code != ExitUsage || !strings.HasPrefix(res.stderr, want) || res.stdout != "" {
		t.Errorf("exit %d, stdout %q, stderr %q; want 2 and %q", res.code, res.stdout, res.stderr, want)
	}
}

func TestExitCodes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err  error
		code int
		out  string
	}{
		{nil, 0, ""},
		{&Interrupted{Signal: syscall.SIGINT}, 130, ""},
		{&Interrupted{Signal: syscall.SIGTERM}, 143, ""},
		{usageErrorf("bad %s", "input"), 2, "error: bad input\n"},
		{errIncomplete, 1, ""},
		{errors.New("fetch https://user:pw@host/x failed"), 1, "error: fetch https://redacted:redacted@host/x failed\n"},
	}
	for _, c := range cases {
		var b strings.Builder
		if got := exitCode(&b, c.err); got != c.code || b.String() != c.out {
			t.Errorf("exitCode(%v) = %d, printed %q; want %d, %q", c.err, got, b.String(), c.code, c.out)
		}
	}
}

// oxy run doubles the runtime's processors, since its goroutines spend much
// of their time in blocking file system calls; a GOMAXPROCS the user set
// stays as it is.
func TestRunWidensProcsUnlessGOMAXPROCSIsSet(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(before) })

	widenProcs(func(k string) string {
		if k == envMaxProcs {
			return "3"
		}
		return ""
	})
	if got := runtime.GOMAXPROCS(0); got != before {
		t.Fatalf("with GOMAXPROCS set: %d processors, want %d as they were", got, before)
	}
	widenProcs(func(string) string { return "" })
	if got := runtime.GOMAXPROCS(0); got != procsPerCore*before {
		t.Fatalf("without GOMAXPROCS: %d processors, want %d", got, procsPerCore*before)
	}
}

// oxy run bounds its memory with a soft limit that follows the live heap; a
// GOMEMLIMIT the user set is left to the runtime.
func TestRunBoundsMemoryUnlessGOMEMLIMITIsSet(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	stop := boundMemory(func(k string) string {
		if k == envMemLimit {
			return "1GiB"
		}
		return ""
	})
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Fatalf("with GOMEMLIMIT set: limit %d, want %d as it was", got, before)
	}
	stop()
	stop = boundMemory(func(string) string { return "" })
	got := debug.SetMemoryLimit(-1)
	stop()
	if got < memlimit.DefaultFloor || got == before {
		t.Fatalf("without GOMEMLIMIT: limit %d, want at least memlimit's floor %d", got, memlimit.DefaultFloor)
	}
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Fatalf("after stop: limit %d, want %d as it was", got, before)
	}
}
