package progress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// DefaultBuffer is how many finished jobs a Watcher holds for its caller
// before it pauses reading events.
const DefaultBuffer = 256

// Config configures Watch.
type Config struct {
	// Topology reaches the status stream and the runs bucket. Required.
	Topology *topology.Topology
	// Run is the id of the run to watch. Required; the run must have been
	// announced.
	Run string
	// Buffer is how many finished jobs wait for the caller (Next, Jobs)
	// before the watcher pauses reading events; progress then stands still
	// until the caller reads on, and nothing is lost (the stream keeps the
	// events). Default DefaultBuffer.
	Buffer int
	// Now tells the time for Progress.Elapsed. Default time.Now.
	Now func() time.Time
	// OnFinish, when set, sees each finished job as soon as it finishes,
	// before Next returns it and whether or not the caller reads jobs (a
	// storage check waits on its first jobs this way). It is called from
	// the watcher's goroutine and must not block.
	OnFinish func(Job)
	// Hub, when set, is where the watcher takes the run's events from when
	// the statusworker runs in this process, instead of a consumer of its
	// own on the status stream (see Hub for when it can). The watch reads
	// the stream when the run already has events as it starts, and
	// switches to it when it falls HubLimit events behind.
	Hub *Hub
	// HubLimit is how many events the hub holds for this watcher before
	// it switches to the stream. Default DefaultHubLimit.
	HubLimit int
}

// WithDefaults returns c with every unset field filled in.
func (c Config) WithDefaults() Config {
	if c.Buffer <= 0 {
		c.Buffer = DefaultBuffer
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.HubLimit <= 0 {
		c.HubLimit = DefaultHubLimit
	}
	return c
}

func (c Config) validate() error {
	if c.Topology == nil {
		return errors.New("progress: Config.Topology is required")
	}
	if err := messages.ValidateRunID(c.Run); err != nil {
		return fmt.Errorf("progress: %w", err)
	}
	return nil
}

// Watcher follows one run: its progress, its finished jobs as they finish,
// and its end. Create it with Watch; read jobs with Next or Jobs until they
// end, then read Err. Progress, Problems and Report may be called at any
// time from any goroutine.
type Watcher struct {
	cfg    Config
	ann    messages.RunAnnounced
	cancel context.CancelFunc
	jobs   chan Job
	done   chan struct{}

	mu        sync.Mutex
	tracker   *Tracker
	completed *messages.RunCompleted
	stopped   *oxytype.StoppedError
	fatal     error
	final     *Progress
}

type event struct {
	seq uint64
	ev  *messages.StatusEvent
	err error
	// overflow says the hub gave up on this watcher: it must read the
	// stream from the first event.
	overflow bool
	// flushed says every event the hub had observed when the watcher asked
	// (on the run's completion) was handed over before this one.
	flushed bool
}

// Watch starts watching a run: it reads the run's record, then its status
// events from the first one (an ordered consumer on the status stream, or
// Config.Hub), and ends when the statusworker has marked the run completed
// and every event up to then was read. ctx bounds the whole watch; Close
// ends it too.
func Watch(ctx context.Context, cfg Config) (*Watcher, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	ref, err := cfg.Topology.Runs().Get(ctx, cfg.Run)
	if err != nil {
		return nil, fmt.Errorf("progress: run %s: %w", cfg.Run, err)
	}
	js := cfg.Topology.JetStream()
	subject := messages.StatusSubject(cfg.Run)
	sub, err := subscribe(ctx, cfg, js, subject)
	if err != nil {
		return nil, fmt.Errorf("progress: watch run %s: %w", cfg.Run, err)
	}
	var it jetstream.MessagesContext
	if sub == nil {
		if it, err = openStream(ctx, js, subject); err != nil {
			return nil, fmt.Errorf("progress: watch run %s: %w", cfg.Run, err)
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	w := &Watcher{
		cfg:     cfg,
		ann:     ref.Record.Announced,
		cancel:  cancel,
		jobs:    make(chan Job, cfg.Buffer),
		done:    make(chan struct{}),
		tracker: NewTracker(ref.Record.Announced),
	}
	events := make(chan event, 64)
	flush := make(chan struct{}, 1)
	if sub != nil {
		go w.relay(wctx, sub, events, flush)
	} else {
		go w.read(wctx, it, events)
	}
	completions := make(chan completion, 1)
	go w.waitCompleted(wctx, completions)
	go w.loop(wctx, js, subject, sub != nil, events, completions, flush)
	return w, nil
}

// subscribe subscribes to the run's events on cfg.Hub, if there is one and
// the run has no events yet (the hub only hands on what it observes from
// the subscription on). It returns nil when the watcher must read the
// stream.
func subscribe(ctx context.Context, cfg Config, js jetstream.JetStream, subject string) (*feed, error) {
	if cfg.Hub == nil {
		return nil, nil
	}
	f := cfg.Hub.subscribe(cfg.Run, cfg.HubLimit)
	if f == nil {
		return nil, nil
	}
	// Checked after subscribing: an event stored before this check is
	// seen here, one stored after it is observed by the hub.
	seq, err := lastSequence(ctx, js, subject)
	if err != nil || seq != 0 {
		cfg.Hub.unsubscribe(cfg.Run, f)
		return nil, err
	}
	return f, nil
}

// openStream starts an ordered consumer of the run's events from the first.
func openStream(ctx context.Context, js jetstream.JetStream, subject string) (jetstream.MessagesContext, error) {
	cons, err := js.OrderedConsumer(ctx, topology.StreamStatus, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{subject},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return nil, err
	}
	return cons.Messages()
}

// relay forwards the events the hub holds for this watcher, and on a
// request from flush everything it holds by then followed by a flushed
// mark. It ends after forwarding an overflow, and unsubscribes.
func (w *Watcher) relay(ctx context.Context, f *feed, out chan<- event, flush <-chan struct{}) {
	defer w.cfg.Hub.unsubscribe(w.cfg.Run, f)
	send := func(e event) bool {
		select {
		case out <- e:
			return true
		case <-ctx.Done():
			return false
		}
	}
	var spare []*messages.StatusEvent
	for {
		flushing := false
		select {
		case <-ctx.Done():
			return
		case <-f.ready:
		case <-flush:
			flushing = true
		}
		evs, overflow := f.take(spare)
		for _, ev := range evs {
			if !send(event{ev: ev}) {
				return
			}
		}
		spare = evs
		switch {
		case overflow:
			send(event{overflow: true})
			return
		case flushing:
			if !send(event{flushed: true}) {
				return
			}
		}
	}
}

// read forwards the run's status events until the iterator is stopped.
func (w *Watcher) read(ctx context.Context, it jetstream.MessagesContext, out chan<- event) {
	go func() {
		<-ctx.Done()
		it.Stop()
	}()
	for {
		msg, err := it.Next()
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				select {
				case out <- event{err: err}:
				case <-ctx.Done():
				}
			}
			return
		}
		var seq uint64
		if meta, err := msg.Metadata(); err == nil {
			seq = meta.Sequence.Stream
		}
		// One event per event of a batch message. Only the message's last
		// event carries its sequence: the watch may end once it has applied
		// the run's last sequence, which must not happen midway through a
		// batch. A malformed event still counts as read.
		var evs []*messages.StatusEvent
		for ev, err := range messages.StatusEvents(msg.Subject(), msg.Data()) {
			if err != nil {
				ev = nil // read, not applied: the statusworker records why
			}
			evs = append(evs, ev)
		}
		for i, ev := range evs {
			e := event{ev: ev}
			if i == len(evs)-1 {
				e.seq = seq
			}
			select {
			case out <- e:
			case <-ctx.Done():
				return
			}
		}
	}
}

type completion struct {
	rec *messages.RunRecord
	err error
}

// waitCompleted waits for the run's record to say completed, noting a stop
// on the way.
func (w *Watcher) waitCompleted(ctx context.Context, out chan<- completion) {
	ref, err := w.cfg.Topology.Runs().Wait(ctx, w.cfg.Run, func(rec *messages.RunRecord) bool {
		if rec.State == oxytype.RunStateStopping {
			w.mu.Lock()
			w.stopped = &oxytype.StoppedError{Reason: rec.Reason}
			w.mu.Unlock()
		}
		return rec.State.Terminal()
	})
	c := completion{err: err}
	if ref != nil {
		c.rec = &ref.Record
	}
	select {
	case out <- c:
	case <-ctx.Done():
	}
}

// loop applies the events and ends the watch. From the stream, the watch
// ends once the run completed and its last event by then was read. From the
// hub, it ends once the run completed and everything the hub observed by
// then was applied: every event the completion counted was observed before
// it (see Hub).
func (w *Watcher) loop(ctx context.Context, js jetstream.JetStream, subject string, fromHub bool, events chan event, completions <-chan completion, flush chan<- struct{}) {
	defer w.cancel()
	// done closes before jobs: a reader that sees the end of jobs (Next's
	// io.EOF) must find the watch ended, or Err would still answer nil and
	// an incomplete run would look complete.
	defer close(w.jobs)
	defer close(w.done)
	var (
		seen    uint64 // stream sequence of the last event applied
		last    uint64 // the stream's last event of the run when it completed
		settled bool   // the run completed and last is known
	)
	for {
		if settled && !fromHub && seen >= last {
			w.finish(nil)
			return
		}
		select {
		case <-ctx.Done():
			w.finish(ctx.Err())
			return
		case c := <-completions:
			if c.err != nil {
				w.finish(fmt.Errorf("progress: watch run %s: %w", w.cfg.Run, c.err))
				return
			}
			if c.rec.State == oxytype.RunStateFailed {
				w.finish(fmt.Errorf("progress: run %s failed: %s", w.cfg.Run, c.rec.Reason))
				return
			}
			seq, err := lastSequence(ctx, js, subject)
			if err != nil {
				w.finish(fmt.Errorf("progress: watch run %s: %w", w.cfg.Run, err))
				return
			}
			w.mu.Lock()
			w.completed = c.rec.Completed
			if w.stopped == nil && c.rec.Reason != "" {
				w.stopped = &oxytype.StoppedError{Reason: c.rec.Reason}
			}
			w.mu.Unlock()
			last, settled = seq, true
			if fromHub {
				flush <- struct{}{} // the only request: completions sends once
			}
		case e := <-events:
			if e.err != nil {
				w.finish(fmt.Errorf("progress: read status of run %s: %w", w.cfg.Run, e.err))
				return
			}
			switch {
			case e.flushed && fromHub:
				w.finish(nil)
				return
			case e.overflow:
				it, err := openStream(ctx, js, subject)
				if err != nil {
					w.finish(fmt.Errorf("progress: watch run %s: %w", w.cfg.Run, err))
					return
				}
				w.mu.Lock()
				w.tracker.rewind()
				w.mu.Unlock()
				fromHub = false
				go w.read(ctx, it, events)
				continue
			}
			seen = max(seen, e.seq)
			if e.ev == nil {
				continue
			}
			w.mu.Lock()
			job, finished := w.tracker.Apply(e.ev)
			w.mu.Unlock()
			if finished && w.cfg.OnFinish != nil {
				w.cfg.OnFinish(job)
			}
			if finished {
				select {
				case w.jobs <- job:
				case <-ctx.Done():
					w.finish(ctx.Err())
					return
				}
			}
		}
	}
}

func lastSequence(ctx context.Context, js jetstream.JetStream, subject string) (uint64, error) {
	s, err := js.Stream(ctx, topology.StreamStatus)
	if err != nil {
		return 0, err
	}
	m, err := s.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return m.Sequence, nil
}

// finish records the end of the watch: fatal is nil when the run completed.
func (w *Watcher) finish(fatal error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.fatal = fatal
	p := w.progressLocked()
	w.final = &p
}

// Run is the id of the watched run.
func (w *Watcher) Run() string { return w.cfg.Run }

// Announced is the run's announcement (total, destination, run log, start).
func (w *Watcher) Announced() messages.RunAnnounced { return w.ann }

// Next returns the next finished job, waiting for one. After the last job
// it returns io.EOF when the run completed, or the error that ended the
// watch (ctx's error, a broken connection).
func (w *Watcher) Next(ctx context.Context) (Job, error) {
	select {
	case j, ok := <-w.jobs:
		if ok {
			return j, nil
		}
	case <-ctx.Done():
		return Job{}, ctx.Err()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fatal != nil {
		return Job{}, w.fatal
	}
	return Job{}, io.EOF
}

// Jobs ranges over the finished jobs as they finish. The error is nil for
// every job; if the watch ends for another reason than the run's
// completion, a last pair carries that error. Read Err after the loop for
// the run's own outcome (an *IncompleteRunError).
func (w *Watcher) Jobs(ctx context.Context) iter.Seq2[Job, error] {
	return func(yield func(Job, error) bool) {
		for {
			j, err := w.Next(ctx)
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

// Done is closed when the watch has ended (the run completed, or the watch
// failed) and every finished job was handed to the channel behind Next.
func (w *Watcher) Done() <-chan struct{} { return w.done }

// Err returns, once the watch has ended, the error that ended it, or for a
// completed run its *IncompleteRunError (nil when every payload ended done or
// faulted). Before the end it returns nil.
func (w *Watcher) Err() error {
	select {
	case <-w.done:
	default:
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fatal != nil {
		return w.fatal
	}
	if e := w.incompleteLocked(); e != nil {
		return e
	}
	return nil
}

func (w *Watcher) incompleteLocked() *IncompleteRunError {
	var cause error
	if w.stopped != nil {
		cause = w.stopped
	}
	p := w.progressLocked()
	return NewIncompleteRunError(w.tracker.Problems(), w.tracker.FailedUploads(), cause, p.Done+p.Faulted == p.Payloads)
}

// Progress returns the run's progress now; after the end, its final
// progress, whose outcome counts are those of the run log.
func (w *Watcher) Progress() Progress {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.final != nil {
		return *w.final
	}
	return w.progressLocked()
}

func (w *Watcher) progressLocked() Progress {
	p := w.tracker.Progress()
	end := w.cfg.Now()
	if c := w.completed; c != nil {
		// The completion counts are the run log's: make the last line agree
		// with it even if this watcher saw the events differently.
		p.Done, p.Faulted, p.Rejected, p.Unsubmitted, p.Unfetched = c.Done, c.Faulted, c.Rejected, c.Unsubmitted, c.Unfetched
		p.Pending = 0
		p.Payloads = c.Total
		if !c.CompletedAt.IsZero() {
			end = c.CompletedAt
		}
	}
	if !w.ann.StartedAt.IsZero() {
		p.Elapsed = end.Sub(w.ann.StartedAt)
	}
	return p
}

// Completed returns the run's completion once the statusworker announced
// it (nil before).
func (w *Watcher) Completed() *messages.RunCompleted {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.completed
}

// Stopped returns the run's stop, if it was stopped.
func (w *Watcher) Stopped() *oxytype.StoppedError {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stopped
}

// Problems returns the jobs finished so far that did not end done, in the
// order they finished.
func (w *Watcher) Problems() []Job {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.tracker.Problems()
}

// Report returns the incomplete-run report lines for the problems so far
// (see ReportLines).
func (w *Watcher) Report() []string {
	return ReportLines(w.Problems())
}

// Close ends the watch. Next then returns the jobs already handed over and
// then ctx's cancellation error.
func (w *Watcher) Close() {
	w.cancel()
	<-w.done
}
