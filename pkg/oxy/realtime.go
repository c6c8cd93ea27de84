package oxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/oxypipe/oxypipe/internal/progress"
	"github.com/oxypipe/oxypipe/internal/redact"
	"github.com/oxypipe/oxypipe/pkg/destination"
	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/payload"
	"github.com/oxypipe/oxypipe/pkg/retry"
	"github.com/oxypipe/oxypipe/pkg/runlog"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

var (
	// ErrRealtimeDeployed: Realtime runs in this process only; a deployed
	// pipeline has no Realtime stage, so a run with an external NATS is
	// refused before anything bills.
	ErrRealtimeDeployed = errors.New("oxy: Realtime runs in this process; the deployed pipeline has no Realtime stage, so use Push-Pull with NATS, or drop NATS")
	// ErrRealtimeStorage: Realtime refuses storage_url (the API answers 400),
	// so such payloads are refused before anything is sent.
	ErrRealtimeStorage = errors.New("oxy: Realtime does not upload to cloud storage (the API refuses storage_url): run these payloads with Push-Pull")
)

// DefaultRealtimeConcurrency is how many Realtime calls a run keeps in flight
// by default. Each call holds its connection until the job finished.
const DefaultRealtimeConcurrency = 8

// realtimeTimedOut is the rejection message of a Realtime 408: the API's
// "Timed out." with the way out.
const realtimeTimedOut = "Timed out. Realtime returns 408 for a job that runs 150 seconds or longer, so run this payload with Push-Pull"

// realtimeRetry paces the retries of a Realtime call that proved no job was
// created (a 429, a failure before the request was sent).
var realtimeRetry = retry.Policy{Initial: time.Second, Max: 30 * time.Second, MaxElapsed: 10 * time.Minute}

// RealtimeRun is one run of payloads through the Realtime integration, in
// this process: one POST per payload, answered with the finished job's
// body, written to the destination like any done job. Take its jobs with
// Next until io.EOF, then read Err; the run log is written at the end.
//
// Money rules are those of Push-Pull: a payload is sent again only after
// an answer that proves no job was created (a 429, a failure before the
// request was sent). After a 5xx, an unreadable 200, or an answer lost
// once the request was sent, it ends unsubmitted and marked may_have_billed;
// a Realtime payload never falls back to Push-Pull.
type RealtimeRun struct {
	id      string
	ann     messages.RunAnnounced
	dest    destination.Destination
	api     *wsa.Client
	opts    Options
	started time.Time
	jobs    chan Job
	done    chan struct{}

	stopping chan struct{}
	stopOnce sync.Once
	hurry    context.CancelCauseFunc
	callCtx  context.Context

	mu      sync.Mutex
	tracker *progress.Tracker
	lines   []runlog.Line
	stopped *oxytype.StoppedError
	err     error
	logAt   string
	final   *Progress
}

// ExecuteRealtime runs src's payloads with the Realtime integration. As
// with Execute, everything that can fail before billing fails here: the
// destination is probed and the empty run log written before the first
// call. Options.RealtimeConcurrency bounds the calls in flight.
func (c *Client) ExecuteRealtime(ctx context.Context, src Source, opts Options) (*RealtimeRun, error) {
	if c.cfg.external() {
		return nil, ErrRealtimeDeployed
	}
	if uploads, err := Uploads(src); uploads || errors.Is(err, ErrMixedStorage) {
		return nil, ErrRealtimeStorage
	} else if err != nil {
		return nil, err
	}
	if err := opts.validate(false); err != nil {
		return nil, err
	}
	api, err := c.realtimeClient(ctx)
	if err != nil {
		return nil, err
	}
	dests := c.cfg.Destinations
	dest, err := destination.Open(ctx, opts.Destination, func(cfg *destination.Config) { *cfg = dests })
	if err != nil {
		return nil, fmt.Errorf("oxy: destination: %w", err)
	}
	if err := dest.Probe(ctx); err != nil {
		_ = dest.Close() // probed only
		return nil, fmt.Errorf("oxy: destination: %w", err)
	}
	started := time.Now()
	id := opts.Run
	if id == "" {
		id = messages.NewRunID(started)
	}
	r := &RealtimeRun{
		id: id, dest: dest, api: api, opts: opts, started: started,
		ann: messages.RunAnnounced{
			Run: id, Total: src.Len(), FinalDataType: oxytype.FinalDataType,
			Destination: opts.Destination, RunLog: opts.RunLog, StartedAt: started.UTC(),
		},
		jobs:     make(chan Job, max(opts.Buffer, progress.DefaultBuffer)),
		done:     make(chan struct{}),
		stopping: make(chan struct{}),
		lines:    make([]runlog.Line, src.Len()),
	}
	r.tracker = progress.NewTracker(r.ann)
	if opts.RunLog != "" {
		if r.logAt, err = saveRunLog(ctx, opts.RunLog, id, nil, dests); err != nil {
			_ = dest.Close()
			return nil, &oxytype.RunFailedError{Run: id, Reason: "the run log cannot be written: " + err.Error()}
		}
	}
	// Calls are not bound to ctx: Stop lets them finish, StopNow cuts them.
	r.callCtx, r.hurry = context.WithCancelCause(context.WithoutCancel(ctx))
	go r.run(src, dests)
	return r, nil
}

// realtimeClient is the API client of Realtime calls: the sandbox's, or one
// for the configured hosts and credentials.
func (c *Client) realtimeClient(ctx context.Context) (*wsa.Client, error) {
	if c.cfg.Sandbox {
		cl, err := c.inProcess(ctx)
		if err != nil {
			return nil, err
		}
		emu := cl.Emulator()
		return wsa.New(wsa.Config{BaseURL: emu.URL, RealtimeURL: emu.URL + emulator.RealtimePath, Username: emu.Username, Password: emu.Password})
	}
	return wsa.New(wsa.Config{BaseURL: c.cfg.BaseURL, RealtimeURL: c.cfg.RealtimeURL, Username: c.cfg.Username, Password: c.cfg.Password})
}

// ID returns the run's id.
func (r *RealtimeRun) ID() string { return r.id }

// Announced returns what the run was started with.
func (r *RealtimeRun) Announced() messages.RunAnnounced { return r.ann }

// Next returns the next finished job, in the order jobs finish, and io.EOF
// after the last one.
func (r *RealtimeRun) Next(ctx context.Context) (Job, error) {
	select {
	case j, ok := <-r.jobs:
		if !ok {
			return Job{}, io.EOF
		}
		return j, nil
	case <-ctx.Done():
		return Job{}, context.Cause(ctx)
	}
}

// Done is closed once the run ended and its run log was written.
func (r *RealtimeRun) Done() <-chan struct{} { return r.done }

// Progress returns the run's progress now (its final progress after the
// end).
func (r *RealtimeRun) Progress() Progress {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.final != nil {
		return *r.final
	}
	p := r.tracker.Progress()
	p.Elapsed = time.Since(r.started)
	return p
}

// Problems returns the finished jobs that did not end done.
func (r *RealtimeRun) Problems() []Job {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tracker.Problems()
}

// WriteReport writes the incomplete-run report (as Run.WriteReport).
func (r *RealtimeRun) WriteReport(w io.Writer) error {
	return progress.WriteReport(w, r.Problems(), r.Err())
}

// RunLog returns where the run log is ("" without one).
func (r *RealtimeRun) RunLog() string { return r.logAt }

// Err returns, after the end, nil when every payload ended done or faulted,
// an *IncompleteRunError otherwise, or what kept the run log from being
// written.
func (r *RealtimeRun) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	var cause error
	if r.stopped != nil {
		cause = r.stopped
	}
	p := r.tracker.Progress()
	if e := progress.NewIncompleteRunError(r.tracker.Problems(), r.tracker.FailedUploads(), cause, p.Done+p.Faulted == p.Payloads); e != nil {
		return e
	}
	return nil
}

// Stop sends nothing more: payloads not sent yet end unsubmitted; calls in
// flight are answered and recorded.
func (r *RealtimeRun) Stop(reason string) {
	r.stopOnce.Do(func() {
		r.mu.Lock()
		if reason == "" {
			reason = "the run was stopped"
		}
		r.stopped = &oxytype.StoppedError{Reason: reason}
		r.mu.Unlock()
		close(r.stopping)
	})
}

// StopNow stops the run and cuts the calls in flight: each ends unsubmitted
// and marked may_have_billed (its request was sent; the job may exist).
func (r *RealtimeRun) StopNow() {
	r.Stop("")
	r.hurry(errors.New("the run was stopped at once"))
}

func (r *RealtimeRun) isStopping() bool {
	select {
	case <-r.stopping:
		return true
	default:
		return false
	}
}

// record applies one event and hands the finished job over.
func (r *RealtimeRun) record(ev *messages.StatusEvent) {
	ev.Run, ev.Time = r.id, time.Now().UTC()
	r.mu.Lock()
	job, finished := r.tracker.Apply(ev)
	if finished {
		l := runlog.Line{State: job.Status, Payload: job.Payload, Error: job.Error, Upload: job.Upload}
		if job.ID != "" {
			id := job.ID
			l.ID = &id
		}
		if job.Status == oxytype.Faulted {
			l.Error = nil
		}
		r.lines[job.Doc] = l
	}
	r.mu.Unlock()
	if finished {
		r.jobs <- job
	}
}

type realtimeItem struct {
	doc int
	p   payload.Payload
}

func (r *RealtimeRun) run(src Source, dests destination.Config) {
	defer close(r.done)
	defer func() { _ = r.dest.Close() }()
	n := r.opts.RealtimeConcurrency
	if n <= 0 {
		n = DefaultRealtimeConcurrency
	}
	items := make(chan realtimeItem)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for it := range items {
				r.call(it)
			}
		})
	}
	doc := 0
	for p, err := range src.All() {
		if err != nil {
			r.mu.Lock()
			r.err = fmt.Errorf("oxy: reading the payloads: %w", err)
			r.mu.Unlock()
			r.Stop("the payloads could not be read")
			break
		}
		r.record(&messages.StatusEvent{Doc: messages.DocID(doc), DataType: oxytype.DataPayload, Outcome: oxytype.Success, Facts: oxytype.Facts{Payload: p.Redacted()}})
		if r.isStopping() {
			r.unsubmitted(doc, "Not submitted, because the run was stopped", false)
		} else {
			items <- realtimeItem{doc: doc, p: p}
		}
		doc++
	}
	close(items)
	wg.Wait()
	for ; doc < r.ann.Total; doc++ { // only after a read error
		r.unsubmitted(doc, "Not submitted, because the payloads could not be read", false)
	}
	r.mu.Lock()
	p := r.tracker.Progress()
	p.Elapsed = time.Since(r.started)
	lines := r.lines
	r.mu.Unlock()
	if r.opts.RunLog != "" {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, err := saveRunLog(ctx, r.opts.RunLog, r.id, func(w io.Writer) error {
			rw := runlog.NewWriter(w)
			for _, l := range lines {
				if err := rw.WriteLine(l); err != nil {
					return err
				}
			}
			return nil
		}, dests)
		cancel()
		if err != nil {
			r.mu.Lock()
			r.err = fmt.Errorf("oxy: the run log of run %s cannot be written: %w", r.id, err)
			r.mu.Unlock()
		}
	}
	r.mu.Lock()
	r.final = &p
	r.mu.Unlock()
	close(r.jobs)
}

// call runs one payload: it sends it again only while the answers prove
// that no job was created.
func (r *RealtimeRun) call(it realtimeItem) {
	doc := messages.DocID(it.doc)
	first := time.Now()
	for attempt := 1; ; attempt++ {
		if r.isStopping() {
			r.unsubmitted(it.doc, "Not submitted, because the run was stopped", false)
			return
		}
		res, err := r.api.Realtime(r.callCtx, it.p)
		if err == nil {
			r.finished(it.doc, res)
			return
		}
		class := wsa.Classify(err)
		info := wsa.ErrorInfo(err)
		switch {
		case wsa.MayHaveCreatedJob(err):
			info = oxytype.Marked(info)
			r.record(&messages.StatusEvent{Doc: doc, DataType: oxytype.DataPayload, Outcome: oxytype.HardFailure, Reason: "The Realtime call's outcome is unknown (" + info.Message + "): its job may exist and bill, so it is not sent again", Facts: oxytype.Facts{State: oxytype.Unsubmitted, Error: info}})
			return
		case class == wsa.Reject:
			if info.StatusCode != nil && *info.StatusCode == 408 {
				info.Message = realtimeTimedOut
			}
			r.record(&messages.StatusEvent{Doc: doc, DataType: oxytype.DataPayload, Outcome: oxytype.HardFailure, Reason: "Rejected: " + info.Message, Facts: oxytype.Facts{State: oxytype.Rejected, Error: info}})
			return
		case class == wsa.Retry && time.Since(first) < realtimeRetry.MaxElapsed:
			r.record(&messages.StatusEvent{Doc: doc, DataType: oxytype.DataPayload, Outcome: oxytype.SoftFailure, Reason: info.Message})
			t := time.NewTimer(realtimeRetry.Delay(attempt))
			select {
			case <-t.C:
			case <-r.stopping:
				t.Stop()
			}
			continue
		case class == wsa.Stop || class == wsa.Throttle:
			r.Stop("Stopped submitting, because " + info.Message)
		}
		r.record(&messages.StatusEvent{Doc: doc, DataType: oxytype.DataPayload, Outcome: oxytype.HardFailure, Reason: "Not submitted: " + info.Message, Facts: oxytype.Facts{State: oxytype.Unsubmitted, Error: info}})
		return
	}
}

// finished writes a done job's body and records the job.
func (r *RealtimeRun) finished(doc int, res wsa.RealtimeResult) {
	d := messages.DocID(doc)
	id := res.Job.ID
	if res.Job.Status == wsa.JobFaulted {
		r.record(&messages.StatusEvent{Doc: d, DataType: oxytype.DataSubmitted, Outcome: oxytype.HardFailure, Reason: "faulted", Facts: oxytype.Facts{State: oxytype.Faulted, APIJobID: id}})
		return
	}
	r.record(&messages.StatusEvent{Doc: d, DataType: oxytype.DataDone, Outcome: oxytype.Success, Facts: oxytype.Facts{APIJobID: id}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := r.dest.Put(ctx, id+".json", bytes.NewReader(res.Body)); err != nil {
		// An output failure stops billing: nothing more is sent.
		msg := redact.String(err.Error())
		r.Stop("a write to the destination failed: " + msg)
		r.record(&messages.StatusEvent{Doc: d, DataType: oxytype.DataDone, Outcome: oxytype.HardFailure, Reason: "Not written: " + msg, Facts: oxytype.Facts{State: oxytype.Unfetched, APIJobID: id, Error: &oxytype.ErrorInfo{Message: msg}}})
		return
	}
	r.record(&messages.StatusEvent{Doc: d, DataType: oxytype.DataWritten, Outcome: oxytype.Success, Facts: oxytype.Facts{APIJobID: id}})
}

func (r *RealtimeRun) unsubmitted(doc int, reason string, mayHaveBilled bool) {
	r.record(&messages.StatusEvent{Doc: messages.DocID(doc), DataType: oxytype.DataPayload, Outcome: oxytype.HardFailure, Reason: reason, Facts: oxytype.Facts{State: oxytype.Unsubmitted, Error: &oxytype.ErrorInfo{Message: reason, MayHaveBilled: mayHaveBilled}}})
}

// saveRunLog writes a run log of this process's own (the Realtime runner
// keeps one; the pipeline's statusworker writes the others) and returns
// where it is, credentials redacted.
func saveRunLog(ctx context.Context, location, run string, fill func(io.Writer) error, dests destination.Config) (string, error) {
	dst, err := destination.Open(ctx, location, func(cfg *destination.Config) { *cfg = dests })
	if err != nil {
		return "", fmt.Errorf("run log: %w", err)
	}
	defer func() { _ = dst.Close() }()
	if err := runlog.Put(ctx, dst, run, fill); err != nil {
		return "", err
	}
	return runlog.Location(dst.String(), run), nil
}
