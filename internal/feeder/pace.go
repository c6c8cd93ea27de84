package feeder

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// Pacing of a feed (Config.Resolved): how often the count is read.
const (
	// paceEvery is how many docs are fed between two counts when the
	// bound is far: a count costs a few locks, not a scan.
	paceEvery = 256
	// pacePoll is the wait between counts while the bound is reached.
	pacePoll = 20 * time.Millisecond
	// paceStateEvery is how often, while waiting, the run's state is read
	// to see whether it is stopping.
	paceStateEvery = time.Second
)

// pacer keeps a feed within Config.MaxUnresolved docs fed and unresolved.
type pacer struct {
	f        *Feeder
	run      string
	resolved int // the last count
	off      bool
	// idle, when set, is called before the feed starts waiting for the
	// count: what was published so far is settled then (the publisher's
	// flush), so no doc's fed event waits in a batch while the feed waits.
	idle func(ctx context.Context) error
}

func (f *Feeder) newPacer(run string) *pacer {
	return &pacer{f: f, run: run, off: f.cfg.Resolved == nil}
}

// wait returns once doc (the number of docs fed before it) may be fed.
func (p *pacer) wait(ctx context.Context, doc int) error {
	limit := p.f.cfg.MaxUnresolved
	if p.off || (doc%paceEvery != 0 && doc-p.resolved < limit) {
		return nil
	}
	var lastState time.Time
	for waited := false; ; waited = true {
		n, err := p.f.cfg.Resolved(ctx, p.run)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// Feeding unpaced is what happens without a count: it only
			// costs memory.
			p.f.cfg.Logger.Warn("cannot count the resolved docs; feeding the rest unpaced", zap.String("run", p.run), zap.Error(err))
			p.off = true
			return nil
		}
		p.resolved = n
		if doc-n < limit {
			return nil
		}
		if now := time.Now(); now.Sub(lastState) >= paceStateEvery {
			lastState = now
			if p.stopping(ctx) {
				p.off = true
				return nil
			}
		}
		if !waited && p.idle != nil {
			if err := p.idle(ctx); err != nil {
				return err
			}
		}
		t := time.NewTimer(pacePoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// stopping reports whether the run is stopping or finished (or cannot be
// read): its remaining docs are then fed at once.
func (p *pacer) stopping(ctx context.Context) bool {
	ref, err := p.f.cfg.Topology.Runs().Get(ctx, p.run)
	if err != nil {
		return true
	}
	return ref.Record.Stop != nil || ref.Record.State.Terminal()
}
