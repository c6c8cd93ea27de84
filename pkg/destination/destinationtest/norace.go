//go:build !race

package destinationtest

const raceEnabled = false
