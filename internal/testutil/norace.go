//go:build !race

package testutil

// Race reports that the tests run under the race detector (see race.go).
const Race = false
