package stage

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/oxypipe/oxypipe/internal/promreg"
)

// Outcomes counted by oxy_stage_messages_total.
const (
	outcomeAck          = "ack"
	outcomeWait         = "wait"
	outcomeRetry        = "retry"
	outcomeHardFailure  = "hard_failure"
	outcomeMalformed    = "malformed"
	outcomeDeadLetter   = "dead_letter"
	outcomeReleased     = "released"
	outcomePublishError = "publish_error"
)

type metrics struct {
	messages     *prometheus.CounterVec
	handle       prometheus.Observer
	inFlight     prometheus.Gauge
	redeliveries prometheus.Counter
	lost         prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer, stage string) (*metrics, error) {
	labels := prometheus.Labels{"stage": stage}
	messages := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "oxy_stage_messages_total", Help: "Messages settled by a stage, by outcome.",
	}, []string{"stage", "outcome"})
	handle := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "oxy_stage_handle_seconds", Help: "Time a stage's handler took per call.",
		Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
	}, []string{"stage"})
	inFlight := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "oxy_stage_in_flight", Help: "Messages a stage holds now.",
	}, []string{"stage"})
	redeliveries := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "oxy_stage_redeliveries_total", Help: "Messages received that had been delivered before.",
	}, []string{"stage"})
	lost := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "oxy_stage_consumer_lost", Help: "1 while the stage's consumer is lost with a live connection.",
	}, []string{"stage"})
	if reg != nil {
		var err error
		if messages, err = promreg.Register(reg, messages); err != nil {
			return nil, err
		}
		if handle, err = promreg.Register(reg, handle); err != nil {
			return nil, err
		}
		if inFlight, err = promreg.Register(reg, inFlight); err != nil {
			return nil, err
		}
		if redeliveries, err = promreg.Register(reg, redeliveries); err != nil {
			return nil, err
		}
		if lost, err = promreg.Register(reg, lost); err != nil {
			return nil, err
		}
	}
	for _, o := range []string{outcomeAck, outcomeWait, outcomeRetry, outcomeHardFailure, outcomeMalformed, outcomeDeadLetter, outcomeReleased, outcomePublishError} {
		messages.WithLabelValues(stage, o) // export zeros so rates work from the start
	}
	return &metrics{
		messages:     messages.MustCurryWith(labels),
		handle:       handle.With(labels),
		inFlight:     inFlight.With(labels),
		redeliveries: redeliveries.With(labels),
		lost:         lost.With(labels),
	}, nil
}
