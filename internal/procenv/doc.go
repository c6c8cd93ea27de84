// Package procenv reads a process's settings from its environment: one
// parser for every worker binary, so that a malformed value is reported the
// same way everywhere, and one default for a replica's name.
//
// The rule: a variable that is set must parse. A malformed value (say
// OXY_NATS_REPLICAS=x) is an error naming the variable, never silently
// replaced by the default, because a worker that ignored it would run with
// a setting its operator did not ask for.
package procenv
