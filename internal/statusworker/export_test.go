package statusworker

import "time"

// SetObserveLag makes w report the write lag of every applied event to f.
// Call it before Run.
func SetObserveLag(w *StatusWorker, f func(time.Duration)) { w.observeLag = f }

// Checks returns how many completion checks w finished without error.
func Checks(w *StatusWorker) int64 { return w.checks.Load() }
