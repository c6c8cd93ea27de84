package submitter

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/internal/redact"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// runView is what the submitter needs to know about a run: its record as
// last read (the zero record when the run has none).
type runView struct {
	rec messages.RunRecord
}

// stopped reports whether the run's payloads must no longer be submitted:
// it was stopped (by the user or a stage), it failed, or it already ended
// (a payload delivered after its run completed would bill with no run log
// to record it).
func (v runView) stopped() bool {
	return v.rec.State == oxytype.RunStateStopping || !v.rec.State.Open()
}

// why is the error of a payload that was not submitted because its run
// stopped, failed or ended.
func (v runView) why() string { return v.rec.NotSubmitted() }

type cachedRun struct {
	view runView
	at   time.Time
}

// runStates reads run records from the runs bucket, trusting each for a
// short time (ttl) so that a batch of payloads costs one read per run, and
// keeps the runs this process stopped for good.
//
// The ttl is part of the stop protocol: after a stop, this process may
// still start a request under a state read up to ttl earlier, and the
// statusworker waits messages.StopSettle (more than ttl plus one claim)
// before it completes a stopped run from the claims it finds.
type runStates struct {
	runs      *topology.Runs
	ttl       time.Duration
	kvTimeout time.Duration
	log       *zap.Logger

	mu      sync.Mutex
	cache   map[string]cachedRun
	stops   map[string]runView // runs this process stopped
	missing map[string]bool    // runs without a record, warned about once
}

func newRunStates(runs *topology.Runs, ttl, kvTimeout time.Duration, log *zap.Logger) *runStates {
	return &runStates{
		runs: runs, ttl: ttl, kvTimeout: kvTimeout, log: log,
		cache: map[string]cachedRun{}, stops: map[string]runView{}, missing: map[string]bool{},
	}
}

// view returns the run's state, read at most ttl ago. A run without a
// record is submitted as usual (a publisher that did not announce it still
// wants its payloads done), with one warning.
func (r *runStates) view(ctx context.Context, run string) (runView, error) {
	now := time.Now()
	r.mu.Lock()
	if v, ok := r.stops[run]; ok {
		r.mu.Unlock()
		return v, nil
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
	case errors.Is(err, oxytype.ErrRunNotFound):
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
		v = runView{rec: ref.Record}
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

// stop marks the run stopping, in this process at once and in the runs
// bucket, so that every submitter records the run's remaining payloads as
// unsubmitted without calling the API; reason is a
// messages.StoppedSubmitting sentence. The line is logged once per run.
func (r *runStates) stop(ctx context.Context, run, reason string) {
	now := time.Now().UTC()
	local := runView{rec: messages.RunRecord{
		State: oxytype.RunStateStopping, Reason: reason, UpdatedAt: now,
		Stop: &messages.RunStop{Cause: messages.StopBySubmission, At: now},
	}}
	r.mu.Lock()
	if _, ok := r.stops[run]; ok {
		r.mu.Unlock()
		return
	}
	r.stops[run] = local
	delete(r.cache, run)
	r.mu.Unlock()

	r.log.Error(redact.String(reason), zap.String("run", run))
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.kvTimeout)
	defer cancel()
	_, err := r.runs.Stop(kctx, run, topology.StopRequest{Cause: messages.StopBySubmission, Reason: reason})
	if err != nil && !errors.Is(err, oxytype.ErrRunNotFound) {
		r.log.Warn("could not mark the run stopping in the runs bucket; only this submitter stops",
			zap.String("run", run), zap.Error(err))
	}
}
