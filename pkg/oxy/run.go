package oxy

import (
	"context"
	"errors"
	"io"
	"iter"
	"sync"

	"github.com/oxypipe/oxypipe/internal/feeder"
	"github.com/oxypipe/oxypipe/internal/progress"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/runlog"
)

// Job is one finished payload of a run: its doc, job id, run-log state,
// source and input, the file written and, for a problem, its error, reason
// and stage.
type Job = progress.Job

// Progress is a run's progress; its String is the progress line.
type Progress = progress.Progress

// IncompleteRunError is the error of a run that ended with rejected,
// unsubmitted, unfetched or unuploaded payloads.
type IncompleteRunError = progress.IncompleteRunError

// Run is one run of payloads through the pipeline. Take its finished jobs
// with Jobs or Next until they end, then read Err. Progress, Report and
// Problems may be read at any time from any goroutine.
type Run struct {
	id       string
	ann      messages.RunAnnounced
	watcher  *progress.Watcher
	feeder   *feeder.Feeder
	ctx      context.Context
	cancel   context.CancelCauseFunc
	fed      chan struct{}
	warnings []string

	stopOnce sync.Once
	stopErr  error
}

func newRun(ctx context.Context, f *feeder.Feeder, w *progress.Watcher, cancel context.CancelCauseFunc, warnings []string) *Run {
	return &Run{
		id:       w.Run(),
		ann:      w.Announced(),
		watcher:  w,
		feeder:   f,
		ctx:      ctx,
		cancel:   cancel,
		fed:      make(chan struct{}),
		warnings: warnings,
	}
}

// startFeeding runs feed in the background. A feed that fails ends the run
// with its error: a run whose payloads cannot all be fed cannot complete.
func (r *Run) startFeeding(feed func(ctx context.Context) error) {
	go func() {
		defer close(r.fed)
		err := feed(r.ctx)
		if err != nil && r.ctx.Err() == nil {
			r.cancel(err)
		}
	}()
}

// noFeeding marks a run that is only watched.
func (r *Run) noFeeding() { close(r.fed) }

// ID is the run's id, its UTC start ("20260929T170412.345Z"); the run log is
// "<id>.jsonl".
func (r *Run) ID() string { return r.id }

// Announced is the run as announced: total, destination, run-log location,
// start time.
func (r *Run) Announced() messages.RunAnnounced { return r.ann }

// Warnings are notes for the user about the run's set-up, such as a local
// destination that is on the workers' filesystem, not this machine's.
func (r *Run) Warnings() []string { return append([]string(nil), r.warnings...) }

// Fed is closed when every payload was published (or feeding failed).
func (r *Run) Fed() <-chan struct{} { return r.fed }

// Next returns the next finished job, waiting for it. After the last job it
// returns io.EOF (then read Err), or the error that ended the run early:
// ctx's error, the error of the context given to Execute, a feed that failed,
// a stage of the in-process pipeline that stopped.
func (r *Run) Next(ctx context.Context) (Job, error) {
	j, err := r.watcher.Next(ctx)
	if err == nil || errors.Is(err, io.EOF) || ctx.Err() != nil {
		return j, err
	}
	return j, r.cause(err)
}

// cause returns why the run's context ended in place of the bare
// cancellation the watcher saw.
func (r *Run) cause(err error) error {
	if r.ctx.Err() != nil {
		if c := context.Cause(r.ctx); c != nil {
			return c
		}
	}
	return err
}

// Jobs ranges over the finished jobs as they finish, each once; a done job's
// file is in the destination when it is yielded. Every pair has a nil error
// except, when the run ends early (see Next), a last pair with that error.
// After the loop, Err says how the run ended.
//
//	for job, err := range run.Jobs() { … }
func (r *Run) Jobs() iter.Seq2[Job, error] {
	return func(yield func(Job, error) bool) {
		for {
			j, err := r.Next(context.Background())
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				yield(Job{}, err)
				return
			}
			if !yield(j, nil) {
				return
			}
		}
	}
}

// Done is closed once the run has ended (completed, or ended early) and the
// last job was handed over to Next.
func (r *Run) Done() <-chan struct{} { return r.watcher.Done() }

// Err returns nil until the run has ended. Then it returns an
// *IncompleteRunError when anything ended rejected, unsubmitted or
// unfetched, or a job's upload to cloud storage failed (faulted jobs alone
// are not an error), nil when every payload ended done or faulted and
// every upload succeeded, or the error that ended the run early (see Next).
func (r *Run) Err() error {
	err := r.watcher.Err()
	if err == nil {
		return nil
	}
	var incomplete *IncompleteRunError
	if errors.As(err, &incomplete) {
		return err
	}
	return r.cause(err)
}

// Wait takes the remaining jobs without looking at them and returns Err.
// ctx bounds the wait only.
func (r *Run) Wait(ctx context.Context) error {
	for {
		_, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			return r.Err()
		}
		if err != nil {
			return err
		}
	}
}

// Progress returns the run's progress now; after the end, its final progress,
// whose counts are the run log's.
func (r *Run) Progress() Progress { return r.watcher.Progress() }

// Problems returns the jobs finished so far that did not end done (faulted,
// rejected, unsubmitted, unfetched).
func (r *Run) Problems() []Job { return r.watcher.Problems() }

// Report returns the incomplete-run report lines, in input order: one per
// faulted, rejected or unfetched job, then one per distinct reason of the
// unsubmitted payloads; print them, an empty line and Err's text at the end
// of an incomplete run, or use WriteReport.
func (r *Run) Report() []string { return r.watcher.Report() }

// WriteReport writes the incomplete-run report to w: the problem lines,
// then, when the run ended incomplete, an empty line and the counts.
func (r *Run) WriteReport(w io.Writer) error {
	var incomplete *IncompleteRunError
	var err error
	if errors.As(r.Err(), &incomplete) {
		err = incomplete
	}
	return progress.WriteReport(w, r.Problems(), err)
}

// Stopped returns what stopped the run, once it is stopping (by Stop, by
// another process, or by a stage: the writer when results cannot be
// written), else nil.
func (r *Run) Stopped() *oxytype.StoppedError { return r.watcher.Stopped() }

// Completed returns the statusworker's completion of the run (counts, run-log
// location) once the run completed, else nil.
func (r *Run) Completed() *messages.RunCompleted { return r.watcher.Completed() }

// RunLog returns where the run log is: the written file once the run
// completed, before that where it will be; "" when the run has none.
func (r *Run) RunLog() string {
	if c := r.watcher.Completed(); c != nil && c.RunLog != "" {
		return c.RunLog
	}
	if r.ann.RunLog == "" {
		return ""
	}
	return runlog.Location(r.ann.RunLog, r.id)
}

// Stop stops the run (the first Ctrl+C): payloads not yet submitted are
// recorded unsubmitted without calling the API, and jobs already submitted
// are still checked and written for the run's stop timeout
// (Options.StopTimeout, default 1 minute). Then, or as soon as every job has
// finished, the run completes with its run log: a job still pending (or
// whose result cannot be written) is unfetched with its id, free to fetch
// later; a payload whose submission may be in flight is unsubmitted and
// marked "may have billed". Keep taking jobs (or Wait) to see the end.
// Stopping twice does nothing more.
func (r *Run) Stop(ctx context.Context) error {
	r.stopOnce.Do(func() {
		_, r.stopErr = r.feeder.Stop(ctx, r.id, "")
	})
	return r.stopErr
}

// StopNow stops the run like Stop, but ends it with what is recorded as
// soon as it may (the second Ctrl+C): messages.StopSettle after the first
// stop at the earliest, so that a submission started just before the stop
// is found and marked "may have billed" rather than called unsubmitted.
// The run log is then written as for any stop.
func (r *Run) StopNow(ctx context.Context) error {
	_, err := r.feeder.StopNow(ctx, r.id, "")
	return err
}

// Abandon ends this process's part in the run at once (the second Ctrl+C):
// feeding and watching stop; the run itself is left as it is (in the
// in-process pipeline, until Close; resumable with a state directory).
// Next then returns ErrAbandoned.
func (r *Run) Abandon() {
	r.cancel(ErrAbandoned)
	<-r.watcher.Done()
}

// ErrAbandoned is the error of a run after Abandon.
var ErrAbandoned = errors.New("oxy: run abandoned")
