package writer

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/oxypipe/oxypipe/internal/promreg"
)

type metrics struct {
	bytes         prometheus.Counter
	write         prometheus.Histogram
	finishToWrite prometheus.Histogram
	failures      *prometheus.CounterVec
	probes        *prometheus.CounterVec
	runStops      *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		bytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "oxy_writer_bytes_total", Help: "Bytes of results bodies written to destinations.",
		}),
		write: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "oxy_writer_write_seconds",
			Help:    "Time from requesting a job's results to its file being in place.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}),
		finishToWrite: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "oxy_writer_finish_to_written_seconds",
			Help:    "Time from a job finishing at the API to its file being in place.",
			Buckets: []float64{.1, .25, .5, 1, 2, 3, 5, 7.5, 10, 20, 30, 60, 120, 300, 600},
		}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oxy_writer_failures_total", Help: "Failed write attempts by kind (run, probe, fetch, expired, write).",
		}, []string{"kind"}),
		probes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oxy_writer_probes_total", Help: "Destination probes by result (ok, error).",
		}, []string{"result"}),
		runStops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oxy_writer_run_stops_total",
			Help: "Runs this writer found unwritable, by result: stopped (it stopped the run), already (the run was stopping or over).",
		}, []string{"result"}),
	}
	if reg != nil {
		var err error
		if m.bytes, err = promreg.Register(reg, m.bytes); err != nil {
			return nil, err
		}
		if m.write, err = promreg.Register(reg, m.write); err != nil {
			return nil, err
		}
		if m.finishToWrite, err = promreg.Register(reg, m.finishToWrite); err != nil {
			return nil, err
		}
		if m.failures, err = promreg.Register(reg, m.failures); err != nil {
			return nil, err
		}
		if m.probes, err = promreg.Register(reg, m.probes); err != nil {
			return nil, err
		}
		if m.runStops, err = promreg.Register(reg, m.runStops); err != nil {
			return nil, err
		}
	}
	for _, k := range []string{kindRun, kindProbe, kindFetch, kindExpired, kindWrite} {
		m.failures.WithLabelValues(k) // export zeros so rates work from the start
	}
	m.probes.WithLabelValues("ok")
	m.probes.WithLabelValues("error")
	m.runStops.WithLabelValues("stopped")
	m.runStops.WithLabelValues("already")
	return m, nil
}
