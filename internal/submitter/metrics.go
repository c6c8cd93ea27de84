package submitter

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/oxypipe/oxypipe/internal/promreg"
)

// Outcomes counted by oxy_submitter_payloads_total.
const (
	outSubmitted   = "submitted"       // the API returned a job id
	outRepublished = "republished"     // the claim already held a job id: not resubmitted
	outRejected    = "rejected"        // refused locally or by the API
	outUnsubmitted = "unsubmitted"     // stop, throttle, run stopped, retries exhausted
	outUnknown     = "unknown_outcome" // may have billed: an answer that proves nothing, or a claim a dead submitter left
	outRetry       = "retry"           // soft failure, redelivered later
	outWait        = "wait"            // another submitter holds the claim
)

// Where oxy_submitter_job_ids_total counts a job id as stored.
const (
	storedRecord = "record" // the run's settled record
	storedClaim  = "claim"  // the doc's own claim
)

// Endpoints labelled in the request metrics.
const (
	endpointSubmit = "submit"
	endpointBatch  = "batch"
)

type metrics struct {
	payloads  *prometheus.CounterVec   // outcome
	requests  *prometheus.CounterVec   // endpoint, class
	latency   *prometheus.HistogramVec // endpoint
	batchSize prometheus.Observer
	pacerWait prometheus.Observer
	settled   prometheus.Counter
	// inRecord and inClaim count the job ids stored in the run's settled
	// record and under the doc's own claim (oxy_submitter_job_ids_total),
	// resolved once: they count every doc.
	inRecord, inClaim prometheus.Counter
	// recordFailed counts the docs whose settled-record write failed, so
	// that their ids went under their own claims instead.
	recordFailed prometheus.Counter
	// billedTwice counts the docs for which a second job was created.
	billedTwice prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	payloads := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "oxy_submitter_payloads_total", Help: "Payloads the submitter settled, by outcome.",
	}, []string{"outcome"})
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "oxy_submitter_requests_total", Help: "Submission requests sent to the API, by endpoint and outcome class.",
	}, []string{"endpoint", "class"})
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "oxy_submitter_request_seconds", Help: "Time the API took to answer a submission request.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 20, 60},
	}, []string{"endpoint"})
	batchSize := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "oxy_submitter_request_values", Help: "Payloads per submission request (1 for a single submission).",
		Buckets: []float64{1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000},
	})
	pacerWait := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "oxy_submitter_pacer_wait_seconds", Help: "Time a submission waited for the rate budget.",
		Buckets: []float64{.001, .01, .05, .1, .25, .5, 1, 2, 5, 10, 30, 60},
	})
	settled := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "oxy_submitter_claims_settled_total", Help: "Claims moved into their run's settled record after their payload messages were gone.",
	})
	jobIDs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "oxy_submitter_job_ids_total", Help: "Job ids the API gave and the submitter stored, by where: the run's settled record, or the doc's own claim.",
	}, []string{"stored_in"})
	recordFailed := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "oxy_submitter_record_failures_total", Help: "Job ids whose settled-record write failed (the broker away, or other replicas winning the segment's compare-and-set every time) and that were stored under their claims instead.",
	})
	billedTwice := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "oxy_submitter_billed_twice_total", Help: "Docs for which the API created a job while another job was already stored for them: each one was billed twice.",
	})
	if reg != nil {
		var err error
		if payloads, err = promreg.Register(reg, payloads); err != nil {
			return nil, err
		}
		if requests, err = promreg.Register(reg, requests); err != nil {
			return nil, err
		}
		if latency, err = promreg.Register(reg, latency); err != nil {
			return nil, err
		}
		if batchSize, err = promreg.Register(reg, batchSize); err != nil {
			return nil, err
		}
		if pacerWait, err = promreg.Register(reg, pacerWait); err != nil {
			return nil, err
		}
		if settled, err = promreg.Register(reg, settled); err != nil {
			return nil, err
		}
		if jobIDs, err = promreg.Register(reg, jobIDs); err != nil {
			return nil, err
		}
		if recordFailed, err = promreg.Register(reg, recordFailed); err != nil {
			return nil, err
		}
		if billedTwice, err = promreg.Register(reg, billedTwice); err != nil {
			return nil, err
		}
	}
	for _, o := range []string{outSubmitted, outRepublished, outRejected, outUnsubmitted, outUnknown, outRetry, outWait} {
		payloads.WithLabelValues(o) // export zeros so rates work from the start
	}
	return &metrics{payloads: payloads, requests: requests, latency: latency, batchSize: batchSize, pacerWait: pacerWait, settled: settled,
		inRecord: jobIDs.WithLabelValues(storedRecord), inClaim: jobIDs.WithLabelValues(storedClaim),
		recordFailed: recordFailed, billedTwice: billedTwice}, nil
}

func (m *metrics) count(outcome string) { m.payloads.WithLabelValues(outcome).Inc() }
