package progress

import (
	"sync"

	"github.com/oxypipe/oxypipe/pkg/messages"
)

// DefaultHubLimit is how many of a run's events a Hub holds for a watcher
// that has not taken them yet before it gives up on that watcher, which
// then reads the status stream instead.
const DefaultHubLimit = 1 << 14

// Hub hands status events that the statusworker running in this process
// has just decoded to the watchers of their runs in this process, so that
// a watcher needs no consumer of its own on the status stream: one
// delivery, one decode and one reader of the broker's blocks less for
// every event of the run.
//
// A watcher may take its events from a hub only when it sees every event of
// its run that the ledger will hold when the run completes. The rules that
// make it so:
//   - the statusworker hands each event to Observe before it writes it to
//     the ledger, and a run completes only once its events are applied, so
//     every event the completion counted was observed before the watcher
//     learns of the completion;
//   - a watcher subscribes before the run's first event (Watch reads the
//     status stream instead when the run already has events: the hub never
//     replays what came before);
//   - a redelivered event is observed again, which the tracker takes as a
//     duplicate (a status event can be published twice anyway);
//   - Observe never blocks the statusworker: when a watcher falls more than
//     its limit behind (its caller does not read jobs), the hub drops its
//     queue and the watcher reads the whole stream from the start instead.
//
// The zero Hub is not usable; create one with NewHub. All methods are safe
// for concurrent use.
type Hub struct {
	mu   sync.RWMutex
	subs map[string]*feed
}

// NewHub returns a hub with no watchers.
func NewHub() *Hub { return &Hub{subs: map[string]*feed{}} }

// Observe hands ev to the watcher of its run, if one subscribed. It never
// blocks. ev must not change afterwards.
func (h *Hub) Observe(ev *messages.StatusEvent) {
	h.mu.RLock()
	f := h.subs[ev.Run]
	h.mu.RUnlock()
	if f != nil {
		f.push(ev)
	}
}

// subscribe starts holding run's events for one watcher. A run has at most
// one subscriber; a second subscription of the same run gets nil (its
// watcher reads the stream).
func (h *Hub) subscribe(run string, limit int) *feed {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, taken := h.subs[run]; taken {
		return nil
	}
	f := &feed{limit: limit, ready: make(chan struct{}, 1)}
	h.subs[run] = f
	return f
}

// unsubscribe stops holding run's events for f.
func (h *Hub) unsubscribe(run string, f *feed) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs[run] == f {
		delete(h.subs, run)
	}
}

// feed is one watcher's queue of events.
type feed struct {
	mu       sync.Mutex
	queue    []*messages.StatusEvent
	limit    int
	overflow bool
	// ready holds a token when the queue has news (events, an overflow).
	ready chan struct{}
}

func (f *feed) push(ev *messages.StatusEvent) {
	f.mu.Lock()
	switch {
	case f.overflow:
		f.mu.Unlock()
		return
	case len(f.queue) >= f.limit:
		f.overflow, f.queue = true, nil
	default:
		f.queue = append(f.queue, ev)
	}
	f.mu.Unlock()
	select {
	case f.ready <- struct{}{}:
	default:
	}
}

// take returns the events queued so far, in the order they were observed,
// and whether the feed overflowed (then there are none: the watcher must
// read the stream). spare is an emptied slice the feed may reuse.
func (f *feed) take(spare []*messages.StatusEvent) ([]*messages.StatusEvent, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.overflow {
		return nil, true
	}
	q := f.queue
	clear(spare[:cap(spare)]) // the events it held are the watcher's garbage now
	f.queue = spare[:0]
	return q, false
}
