package poller

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/oxypipe/oxypipe/internal/promreg"
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
	direct  *prometheus.CounterVec
	doneLag prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		checks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oxy_poller_checks_total", Help: "Job status checks by result (pending, done, faulted, not_found, error).",
		}, []string{"result"}),
		direct: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oxy_poller_direct_total",
			Help: "Done jobs the poller fetched itself, by result: written (through the sink), handed_off (the write failed; the writer retries it), checked (an answer the status check decides).",
		}, []string{"result"}),
		doneLag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "oxy_poller_done_lag_seconds",
			Help:    "Time from a job finishing at the API (its updated_at) to the poller publishing it done.",
			Buckets: []float64{.1, .25, .5, 1, 2, 3, 5, 7.5, 10, 20, 30, 60, 120, 300},
		}),
	}
	if reg != nil {
		var err error
		if m.checks, err = promreg.Register(reg, m.checks); err != nil {
			return nil, err
		}
		if m.direct, err = promreg.Register(reg, m.direct); err != nil {
			return nil, err
		}
		if m.doneLag, err = promreg.Register(reg, m.doneLag); err != nil {
			return nil, err
		}
	}
	for _, r := range []string{checkPending, checkDone, checkFaulted, checkNotFound, checkError} {
		m.checks.WithLabelValues(r) // export zeros so rates work from the start
	}
	for _, r := range []string{directWritten, directHandedOff, directChecked} {
		m.direct.WithLabelValues(r)
	}
	return m, nil
}
