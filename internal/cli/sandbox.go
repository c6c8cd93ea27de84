package cli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// defaultSandboxAddr is where `oxy sandbox` listens unless told otherwise.
const defaultSandboxAddr = "127.0.0.1:8000"

// sandboxInfo is the JSON line `oxy sandbox` prints on stdout once it listens,
// so that scripts and tests can read the address of a port-0 listener.
type sandboxInfo struct {
	URL      string `json:"url"`
	Username string `json:"username"`
	Password string `json:"password,omitempty"`
	StatsURL string `json:"stats_url"`
}

// sandboxOptions are the flags of `oxy sandbox`.
type sandboxOptions struct {
	addr, rules string
	cfg         emulator.Config
}

func sandboxFlags() (*flagSet, *sandboxOptions) {
	o := &sandboxOptions{}
	fs := newFlagSet("sandbox", "[flags]", `
Serve the Web Scraper API emulator: the Push-Pull endpoints (/v1/queries,
/v1/queries/batch, status, results), their rate limits, pending and faulted
jobs, and GET /_sandbox/stats with what would have been billed. Point oxy at
it with --api-url (or OXY_API_URL) and any non-empty credentials; Ctrl+C
stops it.

Once it listens, it prints one JSON line on stdout: {"url", "username",
"password", "stats_url"}.`)
	fs.StringVar(&o.addr, "addr", defaultSandboxAddr, "`HOST:PORT` to listen on (port 0 picks a free port)")
	fs.StringVar(&o.rules, "rules", "", "JSON `FILE` scripting outcomes per payload and failures per endpoint (see below)")
	o.cfg.RegisterFlags(fs.FlagSet)
	fs.note(emulator.RulesHelp)
	return fs, o
}

func sandboxCommand(ctx context.Context, env Env, args []string) error {
	fs, o := sandboxFlags()
	if err := fs.parse(env, args); err != nil {
		return err
	}
	cfg := &o.cfg
	if fs.NArg() > 0 {
		return usageErrorf("sandbox takes no arguments, got %q", fs.Args())
	}
	if o.rules != "" {
		if err := cfg.LoadRules(o.rules); err != nil {
			return usageError(err)
		}
	}
	srv, err := emulator.Start(o.addr, *cfg)
	if err != nil {
		return usageError(err)
	}
	info := sandboxInfo{URL: srv.URL, Username: srv.Username, Password: srv.Password, StatsURL: srv.URL + "/_sandbox/stats"}
	passwordHint := srv.Password
	if cfg.Password != "" {
		// A password given on the command line is the user's own; not echoed.
		info.Password, passwordHint = "", "<the --password you gave>"
	}
	line, err := json.Marshal(info)
	if err != nil {
		_ = srv.Close() // the marshal error is the one to report
		return err
	}
	fmt.Fprintf(env.Stderr, "Serving the Web Scraper API emulator at %s (Ctrl+C stops it).\n", srv.URL)
	fmt.Fprintf(env.Stderr, "Use it with:\n  export %s=%s %s=%s\n", wsa.EnvUsername, srv.Username, wsa.EnvPassword, passwordHint)
	fmt.Fprintf(env.Stderr, "  oxy run --api-url %s examples/payloads.jsonl -d results --run-log logs\n", srv.URL)
	fmt.Fprintf(env.Stderr, "What it would have billed: %s\n", info.StatsURL)
	if _, err := fmt.Fprintf(env.Stdout, "%s\n", line); err != nil {
		_ = srv.Close() // nobody reads our output; stop serving
		return err
	}
	if err := srv.ServeUntil(ctx); err != nil {
		return err
	}
	st := srv.Emulator.Stats()
	fmt.Fprintf(env.Stderr, "Sandbox stopped: %d jobs created, %d pages billed, %d rejected, %d rate-limited.\n",
		st.JobsCreated, st.ResultsBilled, st.Rejected+st.RejectedValues, st.RateLimited)
	return nil
}
