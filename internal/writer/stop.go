package writer

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/internal/redact"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/messages"
)

// runsTimeout bounds one operation on the runs bucket.
const runsTimeout = 5 * time.Second

// stopper stops runs whose results cannot be written: a run whose
// destination is full, denied or gone would otherwise go on paying for
// jobs whose results have nowhere to go. The stop is the run's, in the runs
// bucket, so every submitter replica honours it; jobs already submitted are
// still checked and written (the writes are retried with back-off) until
// the stop's deadline, when the statusworker records the rest unfetched with
// their ids.
type stopper struct {
	runs *topology.Runs
	max  int
	log  *zap.Logger
	// stopped counts stops by their outcome (applied, already).
	stopped func(applied bool)

	mu   sync.Mutex
	done map[string]bool // runs this process has stopped (or found stopping)
}

// stop stops run because of err, once per run and process. A stop that
// could not be stored is tried again at the next failure.
func (s *stopper) stop(ctx context.Context, run string, err error) {
	s.mu.Lock()
	if s.done[run] {
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()

	reason := fmt.Sprintf("%sa write to the destination failed: %s", messages.StoppedSubmitting, redact.String(err.Error()))
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), runsTimeout)
	defer cancel()
	applied, serr := s.runs.Stop(kctx, run, topology.StopRequest{Cause: messages.StopByOutput, Reason: reason})
	if serr != nil {
		s.log.Warn("could not stop the run after a failed write; trying again at the next one",
			zap.String("run", run), zap.Error(serr))
		return
	}
	s.mu.Lock()
	if len(s.done) >= s.max {
		clear(s.done) // forgetting costs one more read of the runs bucket per run
	}
	first := !s.done[run]
	s.done[run] = true
	s.mu.Unlock()
	if first {
		s.stopped(applied)
	}
	if applied {
		s.log.Error(reason, zap.String("run", run))
	}
}
