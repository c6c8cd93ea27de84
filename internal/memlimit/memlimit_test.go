package memlimit

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestLimitIsTheFloorOrHeadroomOverTheLiveHeap(t *testing.T) {
	c := Config{Floor: 200 << 20, Headroom: 1.5}
	for _, tc := range []struct {
		live uint64
		want int64
	}{
		{0, 200 << 20},
		{100 << 20, 200 << 20},
		{200 << 20, 300 << 20},
		{1 << 30, 3 << 29},
	} {
		if got := c.Limit(tc.live); got != tc.want {
			t.Errorf("Limit(%d) = %d, want %d", tc.live, got, tc.want)
		}
	}
	if got := (Config{}).Limit(0); got != DefaultFloor {
		t.Errorf("default floor: Limit(0) = %d, want %d", got, DefaultFloor)
	}
	if got := (Config{Floor: 1, Headroom: 0.5}).Limit(1000); got != int64(DefaultHeadroom*1000) {
		t.Errorf("a headroom ≤ 1 is raised to the default: Limit(1000) = %d", got)
	}
}

// Keep follows the live heap: a large live heap raises the limit above the
// floor within an interval, and stop restores the limit set before.
func TestKeepFollowsTheLiveHeapAndStopRestoresTheLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	const floor = 16 << 20
	stop := Keep(Config{Floor: floor, Headroom: 2, Interval: 10 * time.Millisecond})
	defer stop()
	if got := debug.SetMemoryLimit(-1); got < floor {
		t.Fatalf("limit %d right after Keep, want at least the floor %d", got, floor)
	}
	hold := make([]byte, 64<<20) // live after the next collection
	for i := range hold {
		hold[i] = byte(i)
	}
	runtime.GC()
	deadline := time.Now().Add(5 * time.Second)
	for debug.SetMemoryLimit(-1) < 2*(64<<20) {
		if time.Now().After(deadline) {
			t.Fatalf("limit %d 5s after a 64 MiB live heap, want at least %d", debug.SetMemoryLimit(-1), 2*(64<<20))
		}
		time.Sleep(10 * time.Millisecond)
	}
	runtime.KeepAlive(hold)
	stop()
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Fatalf("limit %d after stop, want the one before, %d", got, before)
	}
}
