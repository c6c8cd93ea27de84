//go:build !unix

package main

import (
	"os"
	"time"
)

// processCPU is unknown here.
func processCPU() time.Duration { return -1 }

// childUsage is unknown here.
func childUsage(*os.ProcessState) (time.Duration, int64) { return -1, -1 }
