package writer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/oxypipe/oxypipe/internal/redact"
	"github.com/oxypipe/oxypipe/pkg/destination"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// Kinds of failure, as counted by oxy_writer_failures_total.
const (
	kindRun     = "run"
	kindProbe   = "probe"
	kindFetch   = "fetch"
	kindExpired = "expired"
	kindWrite   = "write"
)

// errNoDestination: the run's final data type needs a file but the run names
// no destination. Permanent: a run's announcement never changes.
var errNoDestination = errors.New("the run names no destination, yet completes only once written")

// runTarget is where one run's files go, once resolved: the run's record
// read, its destination opened and probed.
type runTarget struct {
	// ready is closed when the resolution that created the entry finished;
	// dest and err are set before.
	ready chan struct{}
	dest  destination.Destination // nil: the run writes nothing
	err   error
	kind  string // failure kind of err
	used  time.Time
}

// targets resolves runs to probed destinations, once per run, and keeps
// each location open once for all the runs that share it.
type targets struct {
	open func(ctx context.Context, location string) (destination.Destination, error)
	get  func(ctx context.Context, run string) (*messages.RunRecord, error)
	max  int
	// probed counts probes by result.
	probed func(ok bool)

	mu        sync.Mutex
	runs      map[string]*runTarget
	locations map[string]destination.Destination
}

// resolveError is a failure to resolve a run's destination.
type resolveError struct {
	kind string
	err  error
}

func (e *resolveError) Error() string { return e.err.Error() }
func (e *resolveError) Unwrap() error { return e.err }

// forRun returns the run's probed destination, or nil when the run writes
// nothing. Concurrent callers for the same run share one resolution; a
// failed one is not remembered, so the next call tries again.
func (t *targets) forRun(ctx context.Context, run string) (destination.Destination, error) {
	t.mu.Lock()
	e := t.runs[run]
	if e == nil {
		e = &runTarget{ready: make(chan struct{})}
		t.runs[run] = e
		t.evictLocked()
		t.mu.Unlock()
		t.resolve(ctx, run, e)
	} else {
		t.mu.Unlock()
		select {
		case <-e.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if e.err != nil {
		return nil, &resolveError{kind: e.kind, err: e.err}
	}
	t.mu.Lock()
	e.used = time.Now()
	t.mu.Unlock()
	return e.dest, nil
}

// resolved returns the run's probed destination when a resolution of it has
// finished and succeeded, or nil (not resolved yet, failed, being resolved,
// or a run that writes nothing). It never waits.
func (t *targets) resolved(run string) destination.Destination {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.runs[run]
	if e == nil {
		return nil
	}
	select {
	case <-e.ready:
	default:
		return nil
	}
	if e.err != nil || e.dest == nil {
		return nil
	}
	e.used = time.Now()
	return e.dest
}

// resolve reads the run's record, opens and probes its destination, and
// publishes the outcome in e.
func (t *targets) resolve(ctx context.Context, run string, e *runTarget) {
	defer close(e.ready)
	e.kind, e.dest, e.err = t.lookup(ctx, run)
	if e.err != nil {
		t.mu.Lock()
		if t.runs[run] == e {
			delete(t.runs, run)
		}
		t.mu.Unlock()
	}
}

func (t *targets) lookup(ctx context.Context, run string) (string, destination.Destination, error) {
	rec, err := t.get(ctx, run)
	if err != nil {
		return kindRun, nil, fmt.Errorf("reading run %s from the runs bucket: %w", run, err)
	}
	location := rec.Announced.Destination
	if location == "" {
		if rec.Announced.FinalDataType == oxytype.DataDone {
			return "", nil, nil
		}
		return kindRun, nil, fmt.Errorf("run %s: %w", run, errNoDestination)
	}
	dest, err := t.location(ctx, location)
	if err != nil {
		return kindProbe, nil, err
	}
	err = dest.Probe(ctx)
	t.probed(err == nil)
	if err != nil {
		return kindProbe, nil, err
	}
	return "", dest, nil
}

// location returns the open destination for a location, opening it once.
func (t *targets) location(ctx context.Context, location string) (destination.Destination, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if d := t.locations[location]; d != nil {
		return d, nil
	}
	d, err := t.open(ctx, location)
	if err != nil {
		return nil, err
	}
	t.locations[location] = d
	return d, nil
}

// evictLocked forgets the least recently used resolved run while there are
// too many. The destinations stay open for the runs that remain.
func (t *targets) evictLocked() {
	for len(t.runs) > t.max {
		var oldest string
		var at time.Time
		for run, e := range t.runs {
			select {
			case <-e.ready:
			default:
				continue // being resolved
			}
			if oldest == "" || e.used.Before(at) {
				oldest, at = run, e.used
			}
		}
		if oldest == "" {
			return
		}
		delete(t.runs, oldest)
	}
}

// close closes every open destination.
func (t *targets) close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var errs []error
	for location, d := range t.locations {
		if err := d.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing %s: %w", redact.String(location), err))
		}
		delete(t.locations, location)
	}
	clear(t.runs)
	return errors.Join(errs...)
}
