// Package memlimit keeps a process's memory near a floor while its live heap
// is small, without making the garbage collector thrash when the live heap
// grows.
//
// The rule: the runtime's soft memory limit is max(Floor, Headroom × the
// heap found live by the last collection), re-read every Interval. By default
// the collector lets the heap grow to twice its live size before the next
// collection, and the runtime keeps what it freed for a while, so a process
// whose live heap is 120 MB peaks near 350 MB of RSS. A fixed limit
// (GOMEMLIMIT) caps that, but when the live heap approaches it the collector
// runs almost back to back. Tying the limit to the live heap keeps the
// collector's headroom at least Headroom − 1 of the live heap (0.6 at the
// default, so at most about 1.7 times as many collections as without a
// limit), while a small live heap stays under the floor.
package memlimit

import (
	"math"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// Defaults of Config.
const (
	DefaultFloor    = 208 << 20
	DefaultHeadroom = 1.6
	DefaultInterval = 500 * time.Millisecond
)

// Config sets how Keep chooses the limit.
type Config struct {
	// Floor is the lowest limit, in bytes. Default DefaultFloor.
	Floor uint64
	// Headroom is the factor over the live heap below which the limit never
	// goes. Default DefaultHeadroom; values ≤ 1 are raised to it.
	Headroom float64
	// Interval is how often the live heap is read. Default DefaultInterval.
	Interval time.Duration
}

func (c Config) withDefaults() Config {
	if c.Floor == 0 {
		c.Floor = DefaultFloor
	}
	if c.Headroom <= 1 {
		c.Headroom = DefaultHeadroom
	}
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	return c
}

// Limit is the limit for a live heap of live bytes.
func (c Config) Limit(live uint64) int64 {
	c = c.withDefaults()
	l := max(float64(c.Floor), c.Headroom*float64(live))
	if l >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(l)
}

const liveMetric = "/gc/heap/live:bytes"

// Keep sets the soft memory limit at once and then every Interval, until
// stop is called; stop restores the limit that was set before.
func Keep(cfg Config) (stop func()) {
	cfg = cfg.withDefaults()
	prev := debug.SetMemoryLimit(-1)
	sample := []metrics.Sample{{Name: liveMetric}}
	set := func() {
		metrics.Read(sample)
		var live uint64
		if sample[0].Value.Kind() == metrics.KindUint64 {
			live = sample[0].Value.Uint64()
		}
		debug.SetMemoryLimit(cfg.Limit(live))
	}
	set()
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(cfg.Interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				set()
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			<-finished
			debug.SetMemoryLimit(prev)
		})
	}
}
