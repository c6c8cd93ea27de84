//go:build unix

package statusworker_test

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time (user and system) this process has used, to
// report the cost of the work on a machine shared with other work.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
