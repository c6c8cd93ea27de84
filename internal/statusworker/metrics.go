package statusworker

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/oxypipe/oxypipe/internal/promreg"
)

// metrics are the statusworker's own series (its stage runtime exports the
// oxy_stage_* ones):
//
//	oxy_statusworker_events_total{result}          applied, stale, malformed
//	oxy_statusworker_store_write_seconds           one ledger batch write (each attempt)
//	oxy_statusworker_store_retries_total           ledger writes retried after a transient error
//	oxy_statusworker_write_lag_seconds             event stored in the stream → applied to the ledger
//	oxy_statusworker_run_docs{run,data_type,count} per open run and stage: total, succeeded, soft_failed, hard_failed
//	oxy_statusworker_open_runs                     runs announced, ready or stopping
//	oxy_statusworker_runs_total{result}            completed, failed (run log location unwritable), forgotten (retention passed)
//	oxy_statusworker_run_log_errors_total          run-log writes that failed (retried later)
//	oxy_statusworker_expired_docs_total            docs still in flight when their run's stop deadline passed
//	oxy_statusworker_lease_renewals_total{result}  completion leases renewed while a run log is written: ok, lost, error
type metrics struct {
	events      *prometheus.CounterVec
	writeTime   prometheus.Histogram
	retries     prometheus.Counter
	lag         prometheus.Histogram
	runDocs     *prometheus.GaugeVec
	openRuns    prometheus.Gauge
	runs        *prometheus.CounterVec
	runLogError prometheus.Counter
	expiredDocs prometheus.Counter
	renewals    *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oxy_statusworker_events_total",
			Help: "Status events handled, by result: applied to the ledger, stale (an older or duplicate event), malformed.",
		}, []string{"result"}),
		writeTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "oxy_statusworker_store_write_seconds",
			Help:    "Latency of one ledger batch write attempt.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "oxy_statusworker_store_retries_total",
			Help: "Ledger batch writes retried after a transient store error.",
		}),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "oxy_statusworker_write_lag_seconds",
			Help:    "Time from a status event's storage in the stream to its write to the ledger.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 18),
		}),
		runDocs: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "oxy_statusworker_run_docs",
			Help: "Ledger records of an open run by stage: total, succeeded, soft_failed, hard_failed.",
		}, []string{"run", "data_type", "count"}),
		openRuns: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "oxy_statusworker_open_runs",
			Help: "Runs announced, ready or stopping, as this replica sees them.",
		}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oxy_statusworker_runs_total",
			Help: "Runs this replica finished: completed (run log written, completion announced) or failed (run log location unwritable); and forgotten: finished runs whose state this replica removed from the broker after their retention.",
		}, []string{"result"}),
		runLogError: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "oxy_statusworker_run_log_errors_total",
			Help: "Run-log writes that failed; the completion is retried by the next re-check.",
		}),
		expiredDocs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "oxy_statusworker_expired_docs_total",
			Help: "Docs recorded unfetched or unsubmitted because their run's stop deadline passed while they were in flight.",
		}),
		renewals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oxy_statusworker_lease_renewals_total",
			Help: "Completion leases renewed while a run log is written, by result: ok, lost (another replica took the run over), error.",
		}, []string{"result"}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	if m.events, err = promreg.Register(reg, m.events); err != nil {
		return nil, err
	}
	if m.writeTime, err = promreg.Register(reg, m.writeTime); err != nil {
		return nil, err
	}
	if m.retries, err = promreg.Register(reg, m.retries); err != nil {
		return nil, err
	}
	if m.lag, err = promreg.Register(reg, m.lag); err != nil {
		return nil, err
	}
	if m.runDocs, err = promreg.Register(reg, m.runDocs); err != nil {
		return nil, err
	}
	if m.openRuns, err = promreg.Register(reg, m.openRuns); err != nil {
		return nil, err
	}
	if m.runs, err = promreg.Register(reg, m.runs); err != nil {
		return nil, err
	}
	if m.runLogError, err = promreg.Register(reg, m.runLogError); err != nil {
		return nil, err
	}
	if m.expiredDocs, err = promreg.Register(reg, m.expiredDocs); err != nil {
		return nil, err
	}
	if m.renewals, err = promreg.Register(reg, m.renewals); err != nil {
		return nil, err
	}
	return m, nil
}
