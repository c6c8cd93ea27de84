//go:build unix

package main

import (
	"os"
	"runtime"
	"syscall"
	"time"
)

// processCPU returns the CPU time (user and system) the process has used,
// or -1 where it cannot be read.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// childUsage returns the CPU time (user and system) and the peak RSS in
// bytes of an ended child process; -1 for what cannot be read.
func childUsage(ps *os.ProcessState) (cpu time.Duration, peakRSS int64) {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return -1, -1
	}
	rss := ru.Maxrss
	if runtime.GOOS != "darwin" {
		rss *= 1024 // kilobytes everywhere but on macOS
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), rss
}
