package poller

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Results counted by oxy_poller_checks_total.
const (
	checkPending  = "pending"
	checkDone     = "done"
	checkFaulted  = "faulted"
	checkNotFound = "not_found"
	checkError    = "error"
)

type metrics struct {
	checks  *prometheus.CounterVec
	doneLag prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		checks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oxy_poller_checks_total", Help: "Job status checks by result (pending, done, faulted, not_found, error).",
		}, []string{"result"}),
		doneLag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "oxy_poller_done_lag_seconds",
			Help:    "Time from a job finishing at the API (its updated_at) to the poller publishing it done.",
			Buckets: []float64{.1, .25, .5, 1, 2, 3, 5, 7.5, 10, 20, 30, 60, 120, 300},
		}),
	}
	if reg != nil {
		var err error
		if m.checks, err = register(reg, m.checks); err != nil {
			return nil, err
		}
		if m.doneLag, err = register(reg, m.doneLag); err != nil {
			return nil, err
		}
	}
	for _, r := range []string{checkPending, checkDone, checkFaulted, checkNotFound, checkError} {
		m.checks.WithLabelValues(r) // export zeros so rates work from the start
	}
	return m, nil
}

// register registers c, or returns the collector already registered under
// the same description (several pollers in one process may share a
// registry).
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
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
