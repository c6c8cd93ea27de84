// Package core holds what every destination implementation shares: the name
// rules, the error type and its sentinels, and small stream helpers. It is
// internal so that the root package (which imports the implementations to
// open them by URL) and the implementations (which cannot import the root
// package without a cycle) agree on one set of errors.
package core
