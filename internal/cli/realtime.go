package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/oxypipe/oxypipe/pkg/oxy"
)

// realtime runs the payloads with the Realtime integration in this process
// and reports as a Push-Pull run does: bodies (or job lines) on stdout,
// progress and the report on stderr, the run log at the end.
func (r *runner) realtime(ctx context.Context, client *oxy.Client, src *runSource) error {
	f := r.flags
	opts := oxy.Options{Destination: f.destination, RunLog: f.runLog}
	run, err := client.ExecuteRealtime(context.WithoutCancel(ctx), src, opts)
	if err != nil {
		return startError(err)
	}
	if r.lines == nil {
		r.lines = newLineWriter(r.env.Stdout)
	}
	if !f.quiet {
		hintf(r.console, "running %s with Realtime: one call per payload, each answered when its job finished", count(src.Len(), "payload", "payloads"))
	}
	quit, progressDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(progressDone)
		if f.quiet {
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
	go func() {
		interrupted, hurry := ctx.Done(), r.env.Hurry
		for interrupted != nil || hurry != nil {
			select {
			case <-run.Done():
				return
			case <-interrupted:
				interrupted = nil
				hintf(r.console, "stopping: nothing more is sent; calls in flight are answered and recorded (Ctrl+C again cuts them: each may still bill)")
				run.Stop("the run was interrupted")
			case <-hurry:
				hurry = nil
				hintf(r.console, "stopping now: calls in flight are cut and end unsubmitted, marked may_have_billed")
				run.StopNow()
			}
		}
	}()
	for {
		job, err := run.Next(context.WithoutCancel(ctx))
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			close(quit)
			<-progressDone
			return err
		}
		r.reportUpload(job)
		if r.bodies != "" {
			r.printBody(job)
			continue
		}
		if line, err := job.MarshalJSON(); err == nil {
			r.console.aroundStdout(func() { r.lines.writeRaw(line) })
		}
	}
	close(quit)
	<-progressDone
	runErr := run.Err()
	if err := run.WriteReport(r.console); err != nil {
		return err
	}
	r.console.final(run.Progress().String())
	if err := r.lines.Err(); err != nil {
		return fmt.Errorf("stdout: %w", err)
	}
	if n := mayHaveBilledCount(run.Problems()); n > 0 {
		hintf(r.console, "%s may have billed already (\"may_have_billed\": true in the run log): oxy recover holds %s back unless given --resubmit-unknown",
			count(n, "unsubmitted payload", "unsubmitted payloads"), pick(n, "it", "them"))
	}
	var intr *Interrupted
	if errors.As(context.Cause(ctx), &intr) {
		return intr
	}
	var incomplete *oxy.IncompleteRunError
	if errors.As(runErr, &incomplete) {
		return errIncomplete
	}
	return runErr
}
