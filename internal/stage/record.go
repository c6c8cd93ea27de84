package stage

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/oxypipe/oxypipe/pkg/messages"
)

// recorder gathers the status events a worker's handlers record and
// publishes them as batch messages (messages.NewStatusBatchMsg): one per
// run for the events recorded within Config.RecordLinger, or sooner when a
// batch reaches messages.MaxStatusBatch events or
// messages.MaxStatusBatchBytes. The broker then stores, delivers and acks
// one status message where it would have handled one per event (three of a
// doc's nine messages in a run).
//
// The rule that keeps this safe is the same as for any output: a message is
// settled only after the batch holding its events is stored (Msg.flush
// waits for it), and a batch that is not stored fails every message whose
// events it held, which are then redelivered.
type recorder struct {
	w      *Worker
	linger time.Duration

	mu   sync.Mutex
	open map[string]*recordBatch // by run
}

// recordBatch is one batch message, open while it gathers events.
type recordBatch struct {
	run    string
	events [][]byte
	size   int
	timer  *time.Timer
	sent   bool          // events, size and sent are guarded by recorder.mu
	stored chan struct{} // closed once the broker answered (or never will)
	err    error         // set before stored is closed
}

func newRecorder(w *Worker) *recorder {
	return &recorder{w: w, linger: w.cfg.RecordLinger, open: map[string]*recordBatch{}}
}

// add queues one encoded event of run and returns the batch it went into.
// Batches are sent under r.mu, in the order their events were added, so
// the stream holds a run's events in the order they were recorded.
func (r *recorder) add(run string, data []byte) *recordBatch {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.open[run]
	if b != nil && b.size+len(data) > messages.MaxStatusBatchBytes {
		r.sendLocked(b)
		b = nil
	}
	if b == nil {
		b = &recordBatch{run: run, stored: make(chan struct{})}
		r.open[run] = b
		b.timer = time.AfterFunc(r.linger, func() { r.expire(b) })
	}
	b.events = append(b.events, data)
	b.size += len(data) + 1
	if len(b.events) == messages.MaxStatusBatch {
		r.sendLocked(b)
	}
	return b
}

// expire sends b when its linger ends, unless it went out before.
func (r *recorder) expire(b *recordBatch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !b.sent {
		r.sendLocked(b)
	}
}

// sendLocked takes b out of the open batches (it gathers no more events),
// publishes it, and records the broker's answer in it. The caller holds
// r.mu.
func (r *recorder) sendLocked(b *recordBatch) {
	b.sent = true
	b.timer.Stop()
	if r.open[b.run] == b {
		delete(r.open, b.run)
	}
	nm := messages.NewStatusBatchMsg(b.run, b.events, r.w.actor)
	n := len(b.events)
	f, err := r.w.js.PublishMsgAsync(nm)
	if err != nil {
		b.err = fmt.Errorf("stage: publish %d status events to %s: %w", n, nm.Subject, err)
		close(b.stored)
		return
	}
	go func() {
		timeout := time.NewTimer(r.w.cfg.PublishTimeout)
		defer timeout.Stop()
		select {
		case <-f.Ok():
		case err := <-f.Err():
			b.err = fmt.Errorf("stage: publish %d status events to %s: %w", n, nm.Subject, err)
		case <-timeout.C:
			b.err = fmt.Errorf("stage: publish %d status events to %s: not stored within %v", n, nm.Subject, r.w.cfg.PublishTimeout)
		}
		close(b.stored)
	}()
}

// wait waits until b is stored or failed, or until timeout fires.
func (b *recordBatch) wait(timeout <-chan time.Time, limit time.Duration) error {
	select {
	case <-b.stored:
		return b.err
	case <-timeout:
		return fmt.Errorf("stage: publish status events to %s: not stored within %v", messages.StatusSubject(b.run), limit)
	}
}

var errNoRun = errors.New("stage: Record: the event has no run or doc and the message names none")
