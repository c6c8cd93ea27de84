package cli

import (
	"context"
	"fmt"

	"github.com/oxypipe/oxypipe/pkg/destination"
	"github.com/oxypipe/oxypipe/pkg/oxy"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// getOptions are the flags of `oxy get`.
type getOptions struct {
	destination, apiURL string
}

func getFlags() (*flagSet, *getOptions) {
	o := &getOptions{}
	fs := newFlagSet("get", "[flags] ID...", `
Fetch jobs by id. Reading a job bills nothing, so this is how the unfetched
jobs of a run log are recovered. Each job's status is printed on stdout as a
JSON line {"id", "status", "source", "input", "file"}; with -d each done job's body is
written unchanged as <id>.json. Pending, faulted, expired and unknown jobs get
a warning on stderr.

Exit code 0 when every job is done or faulted (and written, with -d), 1 when
any is pending, expired, unknown or could not be fetched, 2 for invalid input.`)
	fs.StringVarP(&o.destination, "destination", "d", "", "write each done job's body as <id>.json to `DEST`: a folder, s3://, gs:// or az:// URL")
	fs.StringVar(&o.apiURL, "api-url", wsa.DefaultBaseURL, "Web Scraper API base `URL`")
	fs.bindEnv("destination", envDestination)
	fs.bindEnv("api-url", envAPIURL)
	fs.note(credentialsHelp)
	return fs, o
}

func getCommand(ctx context.Context, env Env, args []string) error {
	fs, o := getFlags()
	if err := fs.parse(env, args); err != nil {
		return err
	}
	ids := fs.Args()
	if len(ids) == 0 {
		return usageErrorf("no job id given\nhint: oxy get 7500000000000000001 -d results")
	}
	for _, id := range ids {
		if !isJobID(id) {
			return usageErrorf("%q is not a job id (a job id is a number such as 7500000000000000001)", id)
		}
	}
	if _, err := newAPIClient(env, o.apiURL, false); err != nil {
		return err // the credentials and the URL, checked before anything is sent
	}
	client, err := oxy.NewClient(oxy.Config{BaseURL: o.apiURL, Username: env.Getenv(envUsername), Password: env.Getenv(envPassword)})
	if err != nil {
		return usageError(err)
	}
	defer func() { _ = client.Close(context.WithoutCancel(ctx)) }() // nothing was started: it only reads jobs
	f := &fetcher{client: client}
	if o.destination != "" {
		d, err := openDestination(ctx, o.destination, "destination")
		if err != nil {
			return err
		}
		defer func() { _ = d.Close() }() // nothing was buffered; every Put has returned
		f.dest, f.location = d, o.destination
	}

	out := newLineWriter(env.Stdout)
	incomplete := 0
	f.fetchAll(ctx, ids, func(_ int, o fetchOutcome) {
		if l, ok := o.line(); ok {
			out.write(l)
		}
		if w := o.warning(); w != "" {
			warnf(env.Stderr, "%s", w)
		}
		if !o.done() && !o.faulted() {
			incomplete++
		}
	})
	if err := out.Err(); err != nil {
		return fmt.Errorf("stdout: %w", err)
	}
	if err := context.Cause(ctx); err != nil && ctx.Err() != nil {
		return err
	}
	if incomplete > 0 {
		return errIncomplete
	}
	return nil
}

// isJobID reports whether s looks like a WSA job id: decimal digits only.
// The API answers 404 for anything else, so it is refused before a request.
func isJobID(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// credentialsHelp documents the environment-only credentials in --help.
const credentialsHelp = `Credentials are read from the environment only, never from a flag:
  ` + wsa.EnvUsername + `, ` + wsa.EnvPassword + `   the API user (for ` + "`oxy sandbox`" + `, any non-empty values)`

// newAPIClient returns a client for baseURL with the credentials of the
// environment. Missing credentials are invalid input (exit 2).
func newAPIClient(env Env, baseURL string, sandboxHint bool) (*wsa.Client, error) {
	user, pass := env.Getenv(envUsername), env.Getenv(envPassword)
	if user == "" || pass == "" {
		hint := "hint: set them to your Web Scraper API user's credentials"
		if sandboxHint {
			hint += ", or try oxy with --sandbox (no credentials needed)"
		}
		return nil, usageErrorf("%s and %s must be set\n%s", envUsername, envPassword, hint)
	}
	c, err := wsa.New(wsa.Config{BaseURL: baseURL, Username: user, Password: pass})
	if err != nil {
		return nil, usageError(err)
	}
	return c, nil
}

// openDestination opens and probes a destination or run-log location before
// anything bills; a location that cannot be written is invalid input (exit
// 2). what names the flag in the error ("destination", "run log").
func openDestination(ctx context.Context, location, what string) (destination.Destination, error) {
	d, err := destination.Open(ctx, location)
	if err != nil {
		return nil, usageErrorf("%s: %w", what, err)
	}
	if err := d.Probe(ctx); err != nil {
		_ = d.Close() // the probe's error is the one to report
		return nil, usageErrorf("%s cannot be written, so nothing was sent: %w", what, err)
	}
	return d, nil
}
