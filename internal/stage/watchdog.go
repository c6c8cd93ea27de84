package stage

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/internal/health"
)

// Worker states, as reported by Ready.
const (
	// StateStarting: no consumer check has completed yet.
	StateStarting = "starting"
	// StateReady: connected and the consumer exists.
	StateReady = "ready"
	// StateConsumerLost: connected, but the consumer or its stream is gone.
	StateConsumerLost = "consumer_lost"
	// StateReconnecting: the connection is down; the client reconnects.
	StateReconnecting = "reconnecting"
	// StateDraining: Run's context was cancelled; finishing in-flight work.
	StateDraining = "draining"
	// StateStopped: Run returned.
	StateStopped = "stopped"
)

// Ready implements health.Checker: OK while the last consumer check found
// the consumer with a live connection.
func (w *Worker) Ready() health.Status {
	w.mu.Lock()
	defer w.mu.Unlock()
	return health.Status{OK: w.state == StateReady, State: w.state, Detail: w.detail}
}

// Live implements health.Checker: not OK while a handler has run longer
// than twice its timeout (it ignores its context; restarting is the cure).
func (w *Worker) Live() health.Status {
	if n := w.pinned.Load(); n > 0 {
		// A slow handler that holds what exists only in this process is
		// working to store it; a restart would lose it.
		return health.Status{OK: true, State: "live", Detail: fmt.Sprintf("%d messages hold what is not stored yet", n)}
	}
	limit := 2 * w.cfg.Consumer.HandlerTimeout
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	for m := range w.held {
		if !m.handling.IsZero() && now.Sub(m.handling) > limit {
			return health.Status{State: "stuck", Detail: fmt.Sprintf("a handler has run for %v (timeout %v)",
				now.Sub(m.handling).Round(time.Second), w.cfg.Consumer.HandlerTimeout)}
		}
	}
	return health.Status{OK: true, State: "live"}
}

// State returns the worker's current state and its detail.
func (w *Worker) State() (state, detail string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.state, w.detail
}

func (w *Worker) setState(state, detail string) {
	w.mu.Lock()
	changed := state != w.state
	w.state, w.detail = state, detail
	if state == StateConsumerLost {
		if w.lostSince.IsZero() {
			w.lostSince = time.Now()
		}
	} else {
		w.lostSince = time.Time{}
	}
	w.mu.Unlock()
	if state == StateConsumerLost {
		w.met.lost.Set(1)
	} else {
		w.met.lost.Set(0)
	}
	if changed {
		w.log.Info(fmt.Sprintf("consumer state: %s (%s)", state, detail))
	}
}

// watchdog samples the consumer's state and calls fail when it has been lost
// for longer than the grace period, or the connection is closed for good.
func (w *Worker) watchdog(ctx context.Context, fail func(error)) {
	t := time.NewTicker(w.cfg.WatchdogInterval)
	defer t.Stop()
	for {
		w.sample(ctx)
		w.mu.Lock()
		state, detail, since := w.state, w.detail, w.lostSince
		w.mu.Unlock()
		switch {
		case state == StateConsumerLost && time.Since(since) > w.cfg.ConsumerLostGrace:
			fail(&ConsumerLostError{Stage: string(w.cfg.Consumer.Stage), Grace: w.cfg.ConsumerLostGrace, Detail: detail})
			return
		case w.cfg.Conn.IsClosed():
			fail(fmt.Errorf("stage %s: the NATS connection is closed", w.cfg.Consumer.Stage))
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sample checks the connection and the consumer once.
func (w *Worker) sample(ctx context.Context) {
	if st := w.cfg.Conn.Status(); st != nats.CONNECTED {
		w.setState(StateReconnecting, "connection "+st.String())
		return
	}
	pctx, cancel := context.WithTimeout(ctx, w.cfg.ProbeTimeout)
	defer cancel()
	cons, err := w.lookupConsumer(pctx)
	if err == nil {
		_, err = cons.Info(pctx)
	}
	switch {
	case err == nil:
		w.setState(StateReady, "consumer "+string(w.cfg.Consumer.Stage)+" registered")
	case errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrStreamNotFound):
		w.setState(StateConsumerLost, err.Error())
	case ctx.Err() != nil:
	default:
		// A failed check says nothing about the consumer: log it, keep the
		// last state, so that a broker hiccup never restarts a healthy worker.
		w.log.Warn("consumer check failed", zap.Error(err))
	}
}

// lookupConsumer returns the consumer handle, fetching it if needed.
func (w *Worker) lookupConsumer(ctx context.Context) (jetstream.Consumer, error) {
	w.mu.Lock()
	cons := w.consumer
	w.mu.Unlock()
	if cons != nil {
		return cons, nil
	}
	cons, err := w.js.Consumer(ctx, w.cfg.Consumer.Stream, string(w.cfg.Consumer.Stage))
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	w.consumer = cons
	w.mu.Unlock()
	return cons, nil
}

// currentConsumer is the handle the fetch loop uses, or nil until the
// consumer has been found.
func (w *Worker) currentConsumer() jetstream.Consumer {
	w.mu.Lock()
	cons := w.consumer
	w.mu.Unlock()
	if cons != nil {
		return cons
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.cfg.ProbeTimeout)
	defer cancel()
	cons, err := w.lookupConsumer(ctx)
	if err != nil {
		return nil
	}
	return cons
}
