package poller

import (
	"sync"
	"time"
)

// failures remembers, per message, when its checks started failing and how
// often they failed since, so that a retry limit can be measured from the
// first failure. A redelivered message carries no state of its own, so this
// lives in the replica's memory; see the package documentation for what
// that means after a restart.
type failures struct {
	mu sync.Mutex
	// byMsg is keyed by the message's stream sequence, unique per Submitted.
	byMsg map[uint64]*failureRun
	// forget is how long after its last failure an entry is dropped (its
	// message went to another replica, or was settled there).
	forget time.Duration
	adds   int
}

type failureRun struct {
	first, last time.Time
	count       int
}

func newFailures(forget time.Duration) *failures {
	return &failures{byMsg: make(map[uint64]*failureRun), forget: forget}
}

// add records a failure of the message seq at now, and returns when its
// failures started and how many there have been, this one included.
func (f *failures) add(seq uint64, now time.Time) (first time.Time, count int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.adds++
	if f.adds%1024 == 0 {
		for k, r := range f.byMsg {
			if now.Sub(r.last) > f.forget {
				delete(f.byMsg, k)
			}
		}
	}
	r := f.byMsg[seq]
	if r == nil || now.Sub(r.last) > f.forget {
		r = &failureRun{first: now}
		f.byMsg[seq] = r
	}
	r.last = now
	r.count++
	return r.first, r.count
}

// clear forgets the failures of the message seq: a check succeeded, or the
// message was given up.
func (f *failures) clear(seq uint64) {
	f.mu.Lock()
	delete(f.byMsg, seq)
	f.mu.Unlock()
}
