package stage

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// Handler handles one message. The error it returns decides how the
// message is settled (see the package documentation); ctx carries the
// handler's deadline and is cancelled when a drain runs out of time.
type Handler interface {
	Handle(ctx context.Context, m *Msg) error
}

// HandlerFunc adapts a function to a Handler.
type HandlerFunc func(ctx context.Context, m *Msg) error

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, m *Msg) error { return f(ctx, m) }

// BatchHandler handles up to Config.BatchSize messages at once (the
// submitter's batch submissions, the statusworker's batched ledger writes).
// It returns one error per message, in order; a nil slice means all
// succeeded.
type BatchHandler interface {
	HandleBatch(ctx context.Context, batch []*Msg) []error
}

// BatchHandlerFunc adapts a function to a BatchHandler.
type BatchHandlerFunc func(ctx context.Context, batch []*Msg) []error

// HandleBatch calls f.
func (f BatchHandlerFunc) HandleBatch(ctx context.Context, batch []*Msg) []error {
	return f(ctx, batch)
}

// DeadLetterer may be implemented by a Handler or BatchHandler to adjust the
// hard failure recorded for a poison message before it is published (the
// submitter, say, to check its claim and say the outcome is unknown). ev is
// already filled in; change what you need and return nil (another error is
// logged, and the dead letter recorded as it stands).
//
// Returning a *WaitError (Wait(d)) keeps the message instead: nothing is
// recorded, it is redelivered after d and comes back to DeadLetter. It is
// for a message whose fate another worker is still deciding (a claim a
// live submitter holds), which a delivery count must not decide for it.
// The implementation must bound how long it keeps a message that way.
type DeadLetterer interface {
	DeadLetter(ctx context.Context, m *Msg, ev *messages.StatusEvent) error
}

// Worker runs one stage's handler on its consumer. Create it with New or
// NewBatch, serve its health with internal/health (it is a health.Checker), and
// call Run once.
type Worker struct {
	cfg    Config
	actor  oxytype.Party
	js     jetstream.JetStream
	rec    *recorder
	handle func(ctx context.Context, batch []*Msg) []error
	dead   DeadLetterer
	batch  bool
	met    *metrics
	log    *zap.Logger

	slots chan struct{}
	wg    sync.WaitGroup
	ran   atomic.Bool
	// pinned counts the messages whose handler holds what exists nowhere
	// else yet (Msg.Pin).
	pinned atomic.Int64

	mu        sync.Mutex
	consumer  jetstream.Consumer
	held      map[*Msg]struct{}
	state     string
	detail    string
	lostSince time.Time
}

// New returns a worker that calls h for each message.
func New(cfg Config, h Handler) (*Worker, error) {
	if h == nil {
		return nil, errors.New("stage: nil handler")
	}
	w, err := newWorker(cfg, false, func(ctx context.Context, batch []*Msg) []error {
		return []error{h.Handle(ctx, batch[0])}
	})
	if err != nil {
		return nil, err
	}
	w.dead, _ = h.(DeadLetterer)
	return w, nil
}

// NewBatch returns a worker that calls h with batches of messages.
func NewBatch(cfg Config, h BatchHandler) (*Worker, error) {
	if h == nil {
		return nil, errors.New("stage: nil handler")
	}
	w, err := newWorker(cfg, true, h.HandleBatch)
	if err != nil {
		return nil, err
	}
	w.dead, _ = h.(DeadLetterer)
	return w, nil
}

// Run is New followed by Worker.Run, for workers that need no health
// endpoint of their own.
func Run(ctx context.Context, cfg Config, h Handler) error {
	w, err := New(cfg, h)
	if err != nil {
		return err
	}
	return w.Run(ctx)
}

func newWorker(cfg Config, batch bool, handle func(context.Context, []*Msg) []error) (*Worker, error) {
	cfg, err := cfg.withDefaults(batch)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(cfg.Conn, jetstream.WithPublishAsyncMaxPending(max(4096, 4*cfg.MaxInFlight)))
	if err != nil {
		return nil, fmt.Errorf("stage: %w", err)
	}
	stageName := string(cfg.Consumer.Stage)
	met, err := newMetrics(cfg.Registerer, stageName)
	if err != nil {
		return nil, fmt.Errorf("stage: metrics: %w", err)
	}
	w := &Worker{
		cfg:    cfg,
		actor:  oxytype.Party{Type: stageName, Name: cfg.Instance},
		js:     js,
		handle: handle,
		batch:  batch,
		met:    met,
		log:    cfg.Logger.With(zap.String("stage", stageName), zap.String("instance", cfg.Instance)),
		slots:  make(chan struct{}, cfg.MaxInFlight),
		held:   make(map[*Msg]struct{}),
		state:  StateStarting,
		detail: "no health sample yet",
	}
	w.rec = newRecorder(w)
	return w, nil
}

// Actor is the identity this worker publishes as.
func (w *Worker) Actor() oxytype.Party { return w.actor }

// Settings returns the consumer settings in force.
func (w *Worker) Settings() topology.ConsumerSettings { return w.cfg.Consumer }

// Run consumes until ctx is cancelled, then drains and returns nil. It
// returns a *ConsumerLostError when the watchdog gives up, and an error when
// the connection is closed for good. Run may be called once.
func (w *Worker) Run(ctx context.Context) error {
	if !w.ran.CompareAndSwap(false, true) {
		return errors.New("stage: Run called twice")
	}
	// Handlers get their own context: cancelling Run's context stops
	// fetching, and only a drain that runs out of time cancels handlers.
	workCtx, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	fetchCtx, stopFetching := context.WithCancel(ctx)
	defer stopFetching()

	var fatal error
	var fatalOnce sync.Once
	fail := func(err error) {
		fatalOnce.Do(func() { fatal = err; stopFetching() })
	}
	wdCtx, stopWatchdog := context.WithCancel(context.WithoutCancel(ctx))
	wdDone := make(chan struct{})
	go func() {
		defer close(wdDone)
		w.watchdog(wdCtx, fail)
	}()
	beatCtx, stopBeats := context.WithCancel(context.WithoutCancel(ctx))
	beatsDone := make(chan struct{})
	go func() {
		defer close(beatsDone)
		w.heartbeats(beatCtx)
	}()

	w.log.Info("stage started",
		zap.String("consumer", string(w.cfg.Consumer.Stage)), zap.String("stream", w.cfg.Consumer.Stream),
		zap.Int("max_in_flight", w.cfg.MaxInFlight))
	w.fetchLoop(fetchCtx, workCtx)

	w.setState(StateDraining, "stopping: finishing the messages in flight")
	w.drain(cancelWork)
	stopBeats()
	<-beatsDone
	stopWatchdog()
	<-wdDone
	if err := w.cfg.Conn.FlushTimeout(w.cfg.ProbeTimeout + time.Second); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		w.log.Warn("could not flush the last acks; their messages will be redelivered", zap.Error(err))
	}
	w.setState(StateStopped, "stopped")
	fatalOnce.Do(func() {}) // no failure can be recorded after this
	if fatal != nil {
		w.log.Error("stage stopped", zap.Error(fatal))
		return fatal
	}
	w.log.Info("stage stopped")
	return nil
}

// fetchLoop pulls messages while fetchCtx lives. A plain handler's
// messages are dispatched one by one as they come. A batch handler's are
// gathered into a group that outlives single fetches (see group.go), so
// under load the handler gets full batches even when slots free up a few at
// a time.
func (w *Worker) fetchLoop(fetchCtx, workCtx context.Context) {
	g := &group{w: w, workCtx: workCtx}
	defer g.flush() // what came while stopping is handled like the rest
	for fetchCtx.Err() == nil {
		cons := w.currentConsumer()
		if cons == nil {
			g.flush()
			sleep(fetchCtx, w.cfg.FetchWait)
			continue
		}
		// Wait for a free slot; a group that is filling goes out when its
		// linger ends, whether or not slots free up.
		select {
		case w.slots <- struct{}{}:
		case <-g.lingerC():
			g.flush()
			continue
		case <-fetchCtx.Done():
			return
		}
		limit := w.cfg.MaxInFlight
		if w.batch {
			limit = g.room() // never more than the filling group can take
		}
		n := 1 + w.takeSlots(limit-1)
		batch, err := cons.Fetch(n, jetstream.FetchMaxWait(w.cfg.FetchWait))
		if err != nil {
			w.releaseSlots(n)
			w.log.Debug("fetch failed", zap.Error(err))
			g.flush()
			sleep(fetchCtx, w.cfg.FetchWait)
			continue
		}
		got := w.collect(batch, g)
		w.releaseSlots(n - got)
		if err := batch.Error(); err != nil {
			w.log.Debug("fetch ended with an error", zap.Error(err))
			g.flush()
			sleep(fetchCtx, w.cfg.FetchWait/4)
		}
	}
}

// takeSlots takes up to n more free slots without waiting and returns how
// many it took.
func (w *Worker) takeSlots(n int) int {
	took := 0
	for took < n {
		select {
		case w.slots <- struct{}{}:
			took++
		default:
			return took
		}
	}
	return took
}

// collect dispatches the messages of one fetch (a batch handler's into g)
// and returns how many came. g's linger may end, and g go out, meanwhile;
// what g holds when the fetch ends stays in it for the next fetch.
func (w *Worker) collect(batch jetstream.MessageBatch, g *group) int {
	got := 0
	msgs := batch.Messages()
	for {
		select {
		case jm, ok := <-msgs:
			if !ok {
				return got
			}
			got++
			// A message that arrives while stopping is still handled: it is
			// ours now, and the drain gives it the same grace as the rest.
			m := w.receive(jm)
			switch {
			case w.cfg.Consumer.MaxDeliver > 0 && m.NumDelivered() > w.cfg.Consumer.MaxDeliver:
				w.dispatch(g.workCtx, []*Msg{m}, true)
			case !w.batch:
				w.dispatch(g.workCtx, []*Msg{m}, false)
			default:
				g.add(m)
			}
		case <-g.lingerC():
			g.flush()
		}
	}
}

// receive wraps a delivered message and counts it as held.
func (w *Worker) receive(jm jetstream.Msg) *Msg {
	m := &Msg{w: w, raw: jm, lastBeat: time.Now()}
	if meta, err := jm.Metadata(); err == nil {
		m.meta = meta
	}
	if m.NumDelivered() > 1 {
		w.met.redeliveries.Inc()
	}
	w.mu.Lock()
	w.held[m] = struct{}{}
	w.mu.Unlock()
	w.met.inFlight.Inc()
	return m
}

func (w *Worker) dispatch(workCtx context.Context, group []*Msg, deadLetter bool) {
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		if deadLetter {
			w.deadLetterUnhandled(workCtx, group[0])
			return
		}
		w.runUnit(workCtx, group)
	}()
}

// drain waits for the handlers in flight, cancels them after DrainTimeout,
// and releases whatever is still unsettled after that.
func (w *Worker) drain(cancelWork context.CancelFunc) {
	done := make(chan struct{})
	go func() {
		w.wg.Wait()
		close(done)
	}()
	timer := time.NewTimer(w.cfg.DrainTimeout)
	defer timer.Stop()
	select {
	case <-done:
		return
	case <-timer.C:
	}
	w.log.Warn("drain timeout: cancelling the handlers still running", zap.Duration("drain_timeout", w.cfg.DrainTimeout))
	cancelWork()
	timer.Reset(min(5*time.Second, w.cfg.DrainTimeout))
	select {
	case <-done:
		return
	case <-timer.C:
	}
	w.mu.Lock()
	stuck := make([]*Msg, 0, len(w.held))
	for m := range w.held {
		if m.pins.Load() == 0 {
			stuck = append(stuck, m)
		}
	}
	w.mu.Unlock()
	w.log.Error("handlers ignored cancellation; releasing their messages", zap.Int("messages", len(stuck)))
	for _, m := range stuck {
		w.release(m, "drain timeout")
	}
	w.awaitPinned()
}

// awaitPinned waits, however long it takes, until no handler holds what
// exists nowhere else yet (see Msg.Pin): stopping now would lose it.
func (w *Worker) awaitPinned() {
	if w.pinned.Load() == 0 {
		return
	}
	start := time.Now()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	next := start
	for range tick.C {
		n := w.pinned.Load()
		if n == 0 {
			w.log.Info("every pinned message was stored; stopping", zap.Duration("waited", time.Since(start).Round(time.Millisecond)))
			return
		}
		if now := time.Now(); !now.Before(next) {
			w.log.Error("not stopping yet: handlers hold what exists only in this process (job ids not yet stored); waiting for them",
				zap.Int64("messages", n), zap.Duration("waited", now.Sub(start).Round(time.Second)))
			next = now.Add(10 * time.Second)
		}
	}
}

func (w *Worker) releaseSlots(n int) {
	for range n {
		<-w.slots
	}
}

// release gives a message back for immediate redelivery, unless it is
// already settled.
func (w *Worker) release(m *Msg, why string) {
	if !m.settled.CompareAndSwap(false, true) {
		return
	}
	if err := m.raw.Nak(); err != nil {
		w.log.Warn("release failed; the message comes back after AckWait", zap.String("why", why), zap.Error(err))
	}
	w.finish(m, outcomeReleased)
}

// finish forgets a settled message and frees its slot.
func (w *Worker) finish(m *Msg, outcome string) {
	w.mu.Lock()
	delete(w.held, m)
	w.mu.Unlock()
	w.met.inFlight.Dec()
	w.met.messages.WithLabelValues(outcome).Inc()
	<-w.slots
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
