package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/oxypipe/oxypipe/internal/progress"
	"github.com/oxypipe/oxypipe/internal/redact"
	"github.com/oxypipe/oxypipe/pkg/destination"
	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxy"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/payload"
	"github.com/oxypipe/oxypipe/pkg/runlog"
)

// recoverOptions are the flags of `oxy recover`.
type recoverOptions struct {
	runFlags
	resubmitUnknown, dryRun bool
}

func recoverFlags() (*flagSet, *recoverOptions) {
	o := &recoverOptions{}
	f := &o.runFlags
	fs := newFlagSet("recover", "[flags] RUNLOG", `
Finish a run from its run log (a local file or an s3://, gs://, az:// URL)
without paying twice:

  - unfetched jobs are fetched by id (free) and written to -d as <id>.json;
  - faulted payloads (the API did not bill them) and unsubmitted ones are
    submitted again, as a new run;
  - done lines stay as they are, and so do rejected payloads (fix them and
    run them again);
  - a payload that has a job id is never resubmitted unless it faulted, and
    an unsubmitted payload whose submission may have billed (its line's
    error has "may_have_billed": true: the outcome is unknown) is held back
    unless --resubmit-unknown is given.

It says what it will do before it sends anything, then writes a new run log
(one line per line of RUNLOG, in the same order) to --run-log, by default next
to RUNLOG. Exit codes as for oxy run.`)
	fs.StringVarP(&f.destination, "destination", "d", "", "write fetched and resubmitted jobs' bodies as <job id>.json to `DEST`")
	fs.StringVar(&f.runLog, "run-log", "", "write the new run log to `DIR|URL` (default: RUNLOG's folder)")
	f.registerPipeline(fs)
	fs.BoolVarP(&f.quiet, "quiet", "q", false, "print no progress while the resubmission goes on")
	fs.BoolVar(&o.resubmitUnknown, "resubmit-unknown", false, "also resubmit unsubmitted payloads whose first submission may have billed (each may bill twice)")
	fs.BoolVar(&o.dryRun, "dry-run", false, "say what would be done, and send nothing")
	fs.bindEnv("destination", envDestination)
	fs.bindEnv("api-url", envAPIURL)
	fs.bindEnv("nats", envNATSURL)
	fs.note(credentialsHelp)
	fs.note(emulator.RulesHelp)
	return fs, o
}

func recoverCommand(ctx context.Context, env Env, args []string) error {
	fs, o := recoverFlags()
	if err := fs.parse(env, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErrorf("recover takes one run log, got %d arguments\nhint: oxy recover logs/20260929T170412.345Z.jsonl -d results", fs.NArg())
	}
	rc := &recoverer{env: env, flags: o.runFlags, console: newConsole(env), resubmitUnknown: o.resubmitUnknown}
	return rc.recover(ctx, fs.Arg(0), o.dryRun)
}

// recoverer is one `oxy recover`.
type recoverer struct {
	env             Env
	flags           runFlags
	console         *console
	resubmitUnknown bool

	lines []runlog.Line
	plan  recoverPlan
}

// recoverPlan sorts the run log's lines (by index) by what recover does
// with them.
type recoverPlan struct {
	done     int
	fetch    []int // a job id and no result: fetch by id
	resubmit []int // faulted, or never accepted: submit again
	unknown  []int // unsubmitted, but the submission may have billed: held back
	risky    int   // of resubmit, those that may have billed (--resubmit-unknown)
	redacted []int // the payload's credentials were redacted in the log
	rejected []int // refused by the API: left as they are
	broken   []int // a payload the log holds that cannot be parsed
}

func (rc *recoverer) recover(ctx context.Context, location string, dryRun bool) error {
	lines, folder, err := readRunLog(ctx, location)
	if err != nil {
		return err
	}
	rc.lines = lines
	rc.classify()
	rc.describe(location)
	if dryRun {
		return nil
	}
	p := rc.plan
	if len(p.fetch)+len(p.resubmit) == 0 {
		fmt.Fprintln(rc.console, "Nothing to fetch or resubmit.")
		if len(p.rejected)+len(p.unknown)+len(p.redacted)+len(p.broken) > 0 {
			return errIncomplete
		}
		return nil
	}
	if rc.flags.destination == "" {
		return usageErrorf("-d/--destination is required: where the fetched and resubmitted jobs' bodies are written")
	}
	if err := rc.flags.check(); err != nil {
		return err
	}
	logLocation := rc.flags.runLog
	if logLocation == "" {
		logLocation = folder
	}

	// Everything that can fail before billing: credentials, the
	// destination, the new run log (written empty first).
	cfg, cleanup, err := (&runner{env: rc.env, flags: rc.flags, console: rc.console}).clientConfig(ctx)
	if err != nil {
		return err
	}
	defer cleanup()
	dest, err := openDestination(ctx, rc.flags.destination, "destination")
	if err != nil {
		return err
	}
	defer func() { _ = dest.Close() }() // every Put has returned
	logDest, err := openDestination(ctx, logLocation, "run log")
	if err != nil {
		return err
	}
	defer func() { _ = logDest.Close() }() // every Put has returned
	id := messages.NewRunID(time.Now())
	if err := runlog.Put(ctx, logDest, id, nil); err != nil {
		return usageErrorf("the run log cannot be written, so nothing was sent: %w", err)
	}
	logFile := destination.JoinFile(logDest.String(), runlog.FileName(id))

	client, err := oxy.NewClient(cfg)
	if err != nil {
		return usageError(err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
		defer cancel()
		if err := client.Close(cctx); err != nil {
			warnf(rc.console, "stopping the pipeline: %v", err)
		}
	}()

	r := &runner{env: rc.env, flags: rc.flags, console: rc.console, lines: newLineWriter(rc.env.Stdout)}
	runErr := rc.fetchUnfetched(ctx, client, cfg, dest, r.lines)
	if runErr == nil && ctx.Err() == nil {
		runErr = rc.resubmit(ctx, client, r)
	}

	// The new run log is written whatever happened, even after Ctrl+C.
	wctx := context.WithoutCancel(ctx)
	if err := runlog.Put(wctx, logDest, id, rc.writeLines); err != nil {
		return errors.Join(runErr, fmt.Errorf("writing the new run log %s: %w", logFile, err))
	}
	problems := rc.problems()
	var incomplete error
	if ie := progress.NewIncompleteRunError(problems, nil, nil, true); ie != nil {
		incomplete = ie
	}
	if err := progress.WriteReport(rc.console, problems, incomplete); err != nil {
		return err
	}
	hintf(rc.console, "the new run log is %s", redact.String(logFile))
	if err := r.lines.Err(); err != nil {
		return fmt.Errorf("stdout: %w", err)
	}
	var intr *Interrupted
	switch {
	case runErr != nil:
		return runErr
	case errors.As(context.Cause(ctx), &intr):
		return intr
	case incomplete != nil:
		return errIncomplete
	}
	return nil
}

// readRunLog reads every line of the run log at location and returns them
// with the location of its folder.
func readRunLog(ctx context.Context, location string) ([]runlog.Line, string, error) {
	folder, name, err := destination.Split(location)
	if err != nil {
		return nil, "", usageErrorf("run log %s: %w", redact.String(location), err)
	}
	d, err := destination.Open(ctx, folder)
	if err != nil {
		return nil, "", usageErrorf("run log: %w", err)
	}
	defer func() { _ = d.Close() }() // read-only
	body, err := d.Get(ctx, name)
	if err != nil {
		return nil, "", usageErrorf("run log: %w", err)
	}
	defer func() { _ = body.Close() }() // read-only
	var lines []runlog.Line
	rd := runlog.NewReader(body)
	for {
		l, _, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, "", usageErrorf("run log %s: %w", redact.String(location), err)
		}
		lines = append(lines, l)
	}
	return lines, folder, nil
}

// classify sorts the lines into the plan.
func (rc *recoverer) classify() {
	p := &rc.plan
	for i, l := range rc.lines {
		hasID := l.ID != nil && *l.ID != ""
		switch {
		case l.State == oxytype.Done:
			p.done++
		case l.State == oxytype.Rejected:
			p.rejected = append(p.rejected, i)
		case l.State == oxytype.Unfetched, l.State == oxytype.Unsubmitted && hasID:
			// A job exists: its result is fetched, never paid for again.
			p.fetch = append(p.fetch, i)
		case l.State == oxytype.Unsubmitted && mayHaveBilled(l.Error) && !rc.resubmitUnknown:
			p.unknown = append(p.unknown, i)
		case bytes.Contains(l.Payload, []byte(redact.Placeholder+"@")):
			p.redacted = append(p.redacted, i)
		default: // faulted, or unsubmitted
			if _, err := payload.Parse(l.Payload, i+1); err != nil {
				p.broken = append(p.broken, i)
				continue
			}
			p.resubmit = append(p.resubmit, i)
			if l.State == oxytype.Unsubmitted && mayHaveBilled(l.Error) {
				p.risky++
			}
		}
	}
}

// mayHaveBilled reports whether a line's error carries the may-have-billed
// mark: its submission may have created a job, and resubmitting it could
// bill twice. The structured field decides, never the message's words.
func mayHaveBilled(e *oxytype.ErrorInfo) bool {
	return e != nil && e.MayHaveBilled
}

// describe says on stderr what recover is about to do.
func (rc *recoverer) describe(location string) {
	p := rc.plan
	faulted, unsubmitted := 0, 0
	for _, i := range p.resubmit {
		if rc.lines[i].State == oxytype.Faulted {
			faulted++
		} else {
			unsubmitted++
		}
	}
	var parts []string
	if p.done > 0 {
		parts = append(parts, fmt.Sprintf("%s done", progress.Thousands(p.done)))
	}
	if n := len(p.fetch); n > 0 {
		parts = append(parts, fmt.Sprintf("fetching %s by id (free)", count(n, "unfetched job", "unfetched jobs")))
	}
	if faulted > 0 {
		parts = append(parts, fmt.Sprintf("resubmitting %s", count(faulted, "faulted payload", "faulted payloads")))
	}
	if unsubmitted > 0 {
		parts = append(parts, fmt.Sprintf("submitting %s", count(unsubmitted, "unsubmitted payload", "unsubmitted payloads")))
	}
	if n := len(p.unknown); n > 0 {
		parts = append(parts, fmt.Sprintf("holding back %s that may have billed (%s outcome is unknown; --resubmit-unknown resubmits %s)",
			count(n, "unsubmitted payload", "unsubmitted payloads"), pick(n, "its", "their"), pick(n, "it", "them")))
	}
	if n := len(p.rejected); n > 0 {
		parts = append(parts, fmt.Sprintf("leaving %s as %s", count(n, "rejected payload", "rejected payloads"), pick(n, "it is", "they are")))
	}
	fmt.Fprintf(rc.console, "Recovering %s (%s): %s.\n", redact.String(location), count(len(rc.lines), "payload", "payloads"), strings.Join(parts, "; "))
	for _, i := range p.unknown {
		warnf(rc.console, "line %d: the submission's outcome is unknown and may have billed; it is not resubmitted (--resubmit-unknown resubmits it)", i+1)
	}
	if p.risky > 0 {
		warnf(rc.console, "--resubmit-unknown: %s may have billed already and may bill twice", count(p.risky, "resubmitted payload", "resubmitted payloads"))
	}
	for _, i := range p.redacted {
		warnf(rc.console, "line %d: the run log redacted the payload's credentials; put them back and run it again", i+1)
	}
	for _, i := range p.broken {
		warnf(rc.console, "line %d: the payload cannot be read, so it is not resubmitted", i+1)
	}
	if len(p.rejected) > 0 {
		hintf(rc.console, "rejected payloads would be refused again: fix them and run them with oxy run")
	}
}

func count(n int, one, many string) string {
	return progress.Thousands(n) + " " + pick(n, one, many)
}

func pick(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// fetchUnfetched fetches the jobs of the plan by id, writes the done ones,
// and updates their lines. A job found faulted joins the resubmission (it was
// not billed).
func (rc *recoverer) fetchUnfetched(ctx context.Context, client *oxy.Client, cfg oxy.Config, dest destination.Destination, out *lineWriter) error {
	if len(rc.plan.fetch) == 0 {
		return nil
	}
	if !rc.flags.sandbox {
		if _, err := newAPIClient(rc.env, cfg.BaseURL, true); err != nil {
			return err // the credentials, checked before anything is sent
		}
	}
	f := &fetcher{client: client, dest: dest, location: rc.flags.destination}
	ids := make([]string, len(rc.plan.fetch))
	for k, i := range rc.plan.fetch {
		ids[k] = *rc.lines[i].ID
	}
	var failed error
	f.fetchAll(ctx, ids, func(k int, o fetchOutcome) {
		i := rc.plan.fetch[k]
		l := &rc.lines[i]
		if jl, ok := o.line(); ok {
			doc := i
			jl.Doc = &doc
			rc.console.aroundStdout(func() { out.write(jl) })
		}
		switch {
		case o.done():
			l.State, l.Error = oxytype.Done, nil
		case o.faulted():
			l.State, l.Error = oxytype.Faulted, nil
			if _, err := payload.Parse(l.Payload, i+1); err == nil {
				rc.plan.resubmit = append(rc.plan.resubmit, i)
			}
		default:
			warnf(rc.console, "%s", o.warning())
			l.State, l.Error = oxytype.Unfetched, o.errorInfo()
			var de *destination.Error
			if errors.As(o.err, &de) && failed == nil {
				failed = o.err
			}
		}
	})
	if failed != nil {
		return fmt.Errorf("the destination failed; nothing is resubmitted: %w", failed)
	}
	return nil
}

// resubmit runs the plan's payloads as a new run and updates their lines
// from its jobs.
func (rc *recoverer) resubmit(ctx context.Context, client *oxy.Client, r *runner) error {
	idx := rc.plan.resubmit
	if len(idx) == 0 {
		return nil
	}
	ps := make([]payload.Payload, 0, len(idx))
	for _, i := range idx {
		p, err := payload.Parse(rc.lines[i].Payload, i+1)
		if err != nil {
			return err // classify parsed every one
		}
		ps = append(ps, p)
	}
	runCtx := context.WithoutCancel(ctx)
	run, err := client.Execute(runCtx, ps, oxy.Options{Destination: rc.flags.destination})
	if err != nil {
		return startError(err)
	}
	for _, w := range run.Warnings() {
		hintf(rc.console, "%s", w)
	}
	err = r.follow(ctx, run, func(job *oxy.Job) {
		if job.Doc < 0 || job.Doc >= len(idx) {
			return
		}
		i := idx[job.Doc]
		job.Doc = i // the line's position in the recovered run log
		l := &rc.lines[i]
		l.State = job.Status
		l.ID = nil
		if job.ID != "" {
			id := job.ID
			l.ID = &id
		}
		l.Error, l.Upload = job.Error, job.Upload
		if len(job.Payload) > 0 {
			l.Payload = job.Payload
		}
	})
	r.console.final(run.Progress().String())
	return err
}

// writeLines writes the recovered run log.
func (rc *recoverer) writeLines(w io.Writer) error {
	var buf []byte
	for _, l := range rc.lines {
		var err error
		if buf, err = runlog.AppendLine(buf[:0], l); err != nil {
			return err
		}
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return nil
}

// problems returns the recovered run log's lines that are not done, as the
// report shows them.
func (rc *recoverer) problems() []progress.Job {
	var out []progress.Job
	for i, l := range rc.lines {
		if l.State == oxytype.Done {
			continue
		}
		j := progress.Job{Doc: i, Status: l.State, Payload: l.Payload, Error: l.Error, Upload: l.Upload}
		if l.ID != nil {
			j.ID = *l.ID
		}
		if p, err := payload.Parse(l.Payload, i+1); err == nil {
			j.Source = p.Source()
			_, j.Input = p.Input()
		}
		out = append(out, j)
	}
	return out
}
