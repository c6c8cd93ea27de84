//go:build !unix

package emulator

import "time"

func processCPU() time.Duration { return 0 }
