package submitter

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/redact"
	"github.com/oxypipe/oxypipe/pkg/topology"
)

// runView is what the submitter needs to know about a run.
type runView struct {
	state  messages.RunState
	reason string
	found  bool
}

// stopped reports whether the run's payloads must no longer be submitted.
func (v runView) stopped() bool {
	return v.state == messages.RunStateStopping || v.state == messages.RunStateFailed
}

// why is the error of a payload that was not submitted because the run
// stopped or failed.
func (v runView) why() string {
	msg := "the run was stopped before this payload was submitted"
	if v.state == messages.RunStateFailed {
		msg = "the run failed before this payload was submitted"
	}
	if v.reason != "" {
		msg += " (" + v.reason + ")"
	}
	return msg
}

type cachedRun struct {
	view runView
	at   time.Time
}

// runStates reads run records from the runs bucket, trusting each for a
// short time so that a batch of payloads costs one read per run, and keeps
// the runs this process stopped for good.
type runStates struct {
	runs      *topology.Runs
	ttl       time.Duration
	kvTimeout time.Duration
	log       *zap.Logger

	mu      sync.Mutex
	cache   map[string]cachedRun
	stops   map[string]string // runs this process stopped, with the reason
	missing map[string]bool   // runs without a record, warned about once
}

func newRunStates(runs *topology.Runs, ttl, kvTimeout time.Duration, log *zap.Logger) *runStates {
	return &runStates{
		runs: runs, ttl: ttl, kvTimeout: kvTimeout, log: log,
		cache: map[string]cachedRun{}, stops: map[string]string{}, missing: map[string]bool{},
	}
}

// view returns the run's state. A run without a record is submitted as
// usual (a publisher that did not announce it still wants its payloads
// done), with one warning.
func (r *runStates) view(ctx context.Context, run string) (runView, error) {
	now := time.Now()
	r.mu.Lock()
	if reason, ok := r.stops[run]; ok {
		r.mu.Unlock()
		return runView{state: messages.RunStateStopping, reason: reason, found: true}, nil
	}
	if c, ok := r.cache[run]; ok && now.Sub(c.at) < r.ttl {
		r.mu.Unlock()
		return c.view, nil
	}
	r.mu.Unlock()

	kctx, cancel := context.WithTimeout(ctx, r.kvTimeout)
	defer cancel()
	ref, err := r.runs.Get(kctx, run)
	var v runView
	switch {
	case errors.Is(err, topology.ErrRunNotFound):
		r.mu.Lock()
		warn := !r.missing[run]
		r.missing[run] = true
		r.mu.Unlock()
		if warn {
			r.log.Warn("run has no record in the runs bucket; submitting its payloads anyway", zap.String("run", run))
		}
	case err != nil:
		return runView{}, fmt.Errorf("reading the run's record: %w", err)
	default:
		v = runView{state: ref.Record.State, reason: ref.Record.Reason, found: true}
	}
	r.mu.Lock()
	if len(r.cache) > 1024 {
		for k, c := range r.cache {
			if now.Sub(c.at) >= r.ttl {
				delete(r.cache, k)
			}
		}
	}
	r.cache[run] = cachedRun{view: v, at: now}
	r.mu.Unlock()
	return v, nil
}

// stopped returns the run's view when this process stopped it.
func (r *runStates) stopped(run string) (runView, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	reason, ok := r.stops[run]
	return runView{state: messages.RunStateStopping, reason: reason, found: true}, ok
}

// stop marks the run stopping, in this process at once and in the runs
// bucket, so that every submitter records the run's remaining payloads as
// unsubmitted without calling the API. The line is logged once per run.
func (r *runStates) stop(ctx context.Context, run, reason string) {
	r.mu.Lock()
	if _, ok := r.stops[run]; ok {
		r.mu.Unlock()
		return
	}
	r.stops[run] = reason
	delete(r.cache, run)
	r.mu.Unlock()

	r.log.Error(redact.String(reason), zap.String("run", run))
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.kvTimeout)
	defer cancel()
	_, _, err := r.runs.Transition(kctx, run, func(rec *messages.RunRecord) bool {
		if rec.State != messages.RunStateAnnounced && rec.State != messages.RunStateReady {
			return false // already stopping, failed or completed
		}
		rec.State, rec.Reason = messages.RunStateStopping, reason
		return true
	})
	if err != nil && !errors.Is(err, topology.ErrRunNotFound) {
		r.log.Warn("could not mark the run stopping in the runs bucket; only this submitter stops",
			zap.String("run", run), zap.Error(err))
	}
}
