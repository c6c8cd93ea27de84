// Package e2e holds the end-to-end tests of the oxy command: they build the
// binary once, then run it the way a user does, in temporary folders, against
// the built-in sandbox (`oxy run --sandbox`) or an `oxy sandbox` process, and
// check exit codes, stdout and stderr, run logs, result files and what the
// emulator says was billed.
//
// The package has no code of its own; see the _test.go files.
package e2e
