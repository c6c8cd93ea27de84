//go:build race

package destinationtest

// raceEnabled: the race detector's shadow allocations make the suite's
// allocation bound meaningless, so it is only logged.
const raceEnabled = true
