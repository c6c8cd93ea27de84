package procenv

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// Env reads settings from an environment and collects the malformed ones.
// Each read returns the default for an unset (empty) variable; a set one
// must parse, else the read returns the default and Err reports it. An Env
// is not safe for concurrent use.
type Env struct {
	getenv func(string) string
	errs   []error
}

// New returns an Env over getenv; nil reads the process environment.
func New(getenv func(string) string) *Env {
	if getenv == nil {
		getenv = os.Getenv
	}
	return &Env{getenv: getenv}
}

// Get returns the variable's value ("" when unset).
func (e *Env) Get(key string) string { return e.getenv(key) }

// String returns the variable's value, or def when it is unset.
func (e *Env) String(key, def string) string {
	if v := e.getenv(key); v != "" {
		return v
	}
	return def
}

// Int returns the variable as a decimal integer, or def when it is unset.
func (e *Env) Int(key string, def int) int {
	return parse(e, key, def, "an integer", strconv.Atoi)
}

// Bool returns the variable as a boolean (1, t, true, 0, f, false, …), or
// def when it is unset.
func (e *Env) Bool(key string, def bool) bool {
	return parse(e, key, def, "a boolean", strconv.ParseBool)
}

// Duration returns the variable as a Go duration (90s, 1h30m), or def when
// it is unset.
func (e *Env) Duration(key string, def time.Duration) time.Duration {
	return parse(e, key, def, "a duration", time.ParseDuration)
}

// Err reports every malformed variable read so far, each by name, or nil.
func (e *Env) Err() error { return errors.Join(e.errs...) }

func parse[T any](e *Env, key string, def T, kind string, conv func(string) (T, error)) T {
	v := e.getenv(key)
	if v == "" {
		return def
	}
	x, err := conv(v)
	if err != nil {
		e.errs = append(e.errs, fmt.Errorf("%s=%q is not %s", key, v, kind))
		return def
	}
	return x
}

// Hostname is the default name of a replica: the host name, which is the
// pod name in Kubernetes, or "unknown" when the system does not tell it.
func Hostname() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		return "unknown"
	}
	return host
}
