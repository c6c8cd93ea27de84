// Package promreg holds what every component needs to register its
// Prometheus collectors on a registry it is given.
//
// Several components of one kind may share a registry (the stages of `oxy
// run` run in one process, and tests start several workers), so registering
// the same collector twice must hand back the one already registered rather
// than fail.
package promreg

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers c on reg and returns it, or returns the collector of
// the same type already registered under the same description. A conflicting
// registration (same name, different labels or help) is an error.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, err
	}
	return c, nil
}
