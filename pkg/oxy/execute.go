package oxy

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/oxypipe/oxypipe/internal/feeder"
	"github.com/oxypipe/oxypipe/internal/progress"
	"github.com/oxypipe/oxypipe/internal/redact"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/destination"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/payload"
)

// Options configures one run.
type Options struct {
	// Destination is where each done job is written as "<job id>.json": a
	// local folder (created), or an s3://, gs:// or az:// URL. Required,
	// unless the payloads have a storage_url (see Uploads): then it must be
	// empty.
	Destination string
	// RunLog is where the run log "<run id>.jsonl" is written (same forms as
	// Destination). Empty: no run log.
	RunLog string
	// Run is the run's id. Empty: the UTC start time (see
	// messages.NewRunID).
	Run string
	// Buffer is how many finished jobs wait for the caller before the run
	// stops reading its events (progress then stands still until the caller
	// reads on; the pipeline itself goes on). Default 256.
	Buffer int
	// StopTimeout bounds a stop of the run, whoever stops it (Run.Stop, or
	// the writer when results cannot be written): jobs already submitted
	// are still checked and written for this long, then the run is
	// completed with what is recorded (see Run.Stop). Default
	// messages.DefaultStopTimeout (1 minute).
	StopTimeout time.Duration
	// NoStorageCheck feeds a run of uploads (payloads with a storage_url)
	// all at once. Off (the default), of the payloads that share a
	// storage_url the first is submitted alone and its upload awaited: if
	// it fails, the rest are held back and end unsubmitted, never sent, so
	// that a wrong bucket or credential costs one job.
	NoStorageCheck bool
	// RealtimeConcurrency is how many Realtime calls ExecuteRealtime keeps
	// in flight. Default DefaultRealtimeConcurrency.
	RealtimeConcurrency int
}

func (o Options) validate(uploads bool) error {
	switch {
	case uploads && o.Destination != "":
		return ErrStorageWithDestination
	case !uploads && strings.TrimSpace(o.Destination) == "":
		return ErrNoDestination
	}
	if o.StopTimeout < 0 {
		return fmt.Errorf("oxy: StopTimeout %v is negative", o.StopTimeout)
	}
	return nil
}

// Execute runs payloads through the pipeline and returns the run at once;
// its jobs arrive as they finish. Everything that can fail before billing
// fails here, with nothing sent to the API (see the package documentation).
//
// ctx bounds the whole run as this process sees it: cancelling it abandons
// feeding and watching (the second Ctrl+C). Use Run.Stop for a graceful stop.
func (c *Client) Execute(ctx context.Context, payloads []payload.Payload, opts Options) (*Run, error) {
	src := feeder.Slice(payloads)
	if err := src.Check(0); err != nil {
		return nil, err
	}
	return c.ExecuteSource(ctx, src, opts)
}

// Source is a run's payloads in input order, for payloads that are not in
// memory (the CLI's is a spool file checked line by line as it was read).
type Source interface {
	// Len is the number of payloads.
	Len() int
	// All ranges over the payloads in order. A non-nil error ends the range
	// (and the feeding, with that error).
	All() iter.Seq2[payload.Payload, error]
}

// ExecuteSource is Execute for payloads that are not in memory. Execute
// first checks every payload for a source and an input (an
// *oxytype.InputError); ExecuteSource leaves that check to whoever built
// src, and checks only that no payload is larger than the broker accepts.
//
// Payloads with a storage_url (all of them, see Uploads) are uploaded by the
// API: the run takes no destination, fetches no results, and is complete
// when each job finished and its upload entry came (Job.Upload).
func (c *Client) ExecuteSource(ctx context.Context, src Source, opts Options) (*Run, error) {
	uploads, err := Uploads(src)
	if err != nil {
		return nil, err
	}
	if err := opts.validate(uploads); err != nil {
		return nil, err
	}
	topo, f, err := c.backend(ctx)
	if err != nil {
		return nil, err
	}
	warnings := c.locationWarnings(opts.Destination, opts.RunLog)
	if !uploads {
		if warnings, err = c.probe(ctx, opts); err != nil {
			return nil, err
		}
	}
	id, err := f.Announce(ctx, src, feeder.Announcement{
		Run:           opts.Run,
		Destination:   opts.Destination,
		RunLog:        opts.RunLog,
		StartedAt:     time.Now(),
		StopTimeout:   opts.StopTimeout,
		FinalDataType: finalDataType(uploads),
	})
	if err != nil {
		return nil, err
	}
	var check *storageCheck
	var onFinish func(progress.Job)
	if uploads && !opts.NoStorageCheck {
		check = newStorageCheck()
		onFinish = check.observe
	}
	r, err := c.watch(ctx, topo, f, id, opts.Buffer, warnings, onFinish)
	if err != nil {
		return nil, err
	}
	r.startFeeding(func(ctx context.Context) error {
		if check != nil {
			return check.feed(ctx, f, id, src, r)
		}
		_, err := f.Feed(ctx, id, src)
		return err
	})
	return r, nil
}

// Resume resumes a run whose feeding process was killed: with the same state
// directory (in-process) or the same NATS, it feeds what the pipeline does
// not have yet from src (the run's payloads, in order) and watches the run to
// its end. Work already done is not redone and nothing bills twice (see
// package feeder). A run that already completed is only watched (src may be
// nil then): its jobs and report come back as for a live run.
//
// To resume without the input file, keep the input yourself under the run's
// id (Options.Run fixes the id before anything is fed) and give it back as
// the Source of the resume. (The CLI does this.)
func (c *Client) Resume(ctx context.Context, run string, src Source, opts Options) (*Run, error) {
	topo, f, err := c.backend(ctx)
	if err != nil {
		return nil, err
	}
	ref, err := topo.Runs().Get(ctx, run)
	if err != nil {
		return nil, fmt.Errorf("oxy: resume run %s: %w", run, err)
	}
	rec := ref.Record
	switch rec.State {
	case oxytype.RunStateFailed:
		return nil, &oxytype.RunFailedError{Run: run, Reason: rec.Reason}
	case oxytype.RunStateCompleted:
		return c.Watch(ctx, run, opts)
	}
	if src == nil {
		return nil, fmt.Errorf("oxy: resume run %s: the run's payloads are required: %w", run, oxytype.ErrInputMismatch)
	}
	if src.Len() != rec.Announced.Total {
		return nil, fmt.Errorf("oxy: resume run %s: %w: %d payloads given, the run has %d", run, oxytype.ErrInputMismatch, src.Len(), rec.Announced.Total)
	}
	r, err := c.watch(ctx, topo, f, run, opts.Buffer, c.locationWarnings(rec.Announced.Destination, rec.Announced.RunLog), nil)
	if err != nil {
		return nil, err
	}
	r.startFeeding(func(ctx context.Context) error {
		_, err := f.Resume(ctx, run, src)
		if errors.Is(err, oxytype.ErrRunCompleted) {
			return nil // it completed meanwhile: the watcher sees it
		}
		return err
	})
	return r, nil
}

// Watch follows a run without feeding it: one fed by another process, or
// one that completed (its jobs and report come back as for a live run).
func (c *Client) Watch(ctx context.Context, run string, opts Options) (*Run, error) {
	topo, f, err := c.backend(ctx)
	if err != nil {
		return nil, err
	}
	r, err := c.watch(ctx, topo, f, run, opts.Buffer, nil, nil)
	if err != nil {
		return nil, err
	}
	r.noFeeding()
	return r, nil
}

func (c *Client) watch(ctx context.Context, topo *topology.Topology, f *feeder.Feeder, run string, buffer int, warnings []string, onFinish func(progress.Job)) (*Run, error) {
	rctx, cancel := context.WithCancelCause(ctx)
	c.mu.Lock()
	cl := c.cluster
	c.mu.Unlock()
	var hub *progress.Hub
	if cl != nil {
		hub = cl.Events() // the stages run here: no consumer of our own
	}
	w, err := progress.Watch(rctx, progress.Config{Topology: topo, Run: run, Buffer: buffer, OnFinish: onFinish, Hub: hub})
	if err != nil {
		cancel(err)
		return nil, err
	}
	r := newRun(rctx, f, w, cancel, warnings)
	if cl != nil {
		go func() {
			select {
			case err := <-cl.Failed():
				cancel(err)
			case <-w.Done():
			}
		}()
	}
	return r, nil
}

// probe checks the destination before anything bills. A local folder is
// probed only when the stages run in this process: with an external NATS it
// is the writers' folder, which this machine cannot see.
func (c *Client) probe(ctx context.Context, opts Options) ([]string, error) {
	warnings := c.locationWarnings(opts.Destination, opts.RunLog)
	if c.cfg.external() && isLocal(opts.Destination) {
		return warnings, nil
	}
	dests := c.cfg.Destinations
	d, err := destination.Open(ctx, opts.Destination, func(cfg *destination.Config) { *cfg = dests })
	if err != nil {
		return nil, fmt.Errorf("oxy: destination: %w", err)
	}
	defer func() { _ = d.Close() }() // probed only: nothing to flush
	if err := d.Probe(ctx); err != nil {
		return nil, fmt.Errorf("oxy: destination: %w", err)
	}
	return warnings, nil
}

func (c *Client) locationWarnings(dest, runLog string) []string {
	if !c.cfg.external() {
		return nil
	}
	var w []string
	if dest != "" && isLocal(dest) {
		w = append(w, fmt.Sprintf("the destination %s is a local folder: the writers write it on their own filesystem, not this machine's", redact.String(dest)))
	}
	if runLog != "" && isLocal(runLog) {
		w = append(w, fmt.Sprintf("the run log folder %s is local: the statusworker writes it on its own filesystem, not this machine's", redact.String(runLog)))
	}
	return w
}

// isLocal reports whether a location names a local folder.
func isLocal(loc string) bool {
	return !strings.Contains(loc, "://") || strings.HasPrefix(loc, "file://")
}
