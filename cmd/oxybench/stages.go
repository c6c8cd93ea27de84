package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// stageNames are the stages in pipeline order.
var stageNames = []string{"submitter", "poller", "writer"}

// stageStats is where one stage spent the run, from its metrics.
type stageStats struct {
	name string
	// deliveries is every message the stage settled, by outcome.
	deliveries map[string]float64
	// calls and handleSeconds are the handler calls and their total time.
	calls, handleSeconds float64
	// inFlightMean and inFlightMax are sampled from oxy_stage_in_flight.
	inFlightMean, inFlightMax float64
	maxInFlight               int
}

// sampler samples the stages' in-flight gauges while the run goes on.
type sampler struct {
	reg     *prometheus.Registry
	mu      sync.Mutex
	sum     map[string]float64
	max     map[string]float64
	samples int
	stop    context.CancelFunc
	done    chan struct{}
}

func startSampler(reg *prometheus.Registry, every time.Duration) *sampler {
	ctx, cancel := context.WithCancel(context.Background())
	s := &sampler{reg: reg, sum: map[string]float64{}, max: map[string]float64{}, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.sample()
			}
		}
	}()
	return s
}

func (s *sampler) sample() {
	fams, err := s.reg.Gather()
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples++
	for _, f := range fams {
		if f.GetName() != "oxy_stage_in_flight" {
			continue
		}
		for _, m := range f.GetMetric() {
			st, v := label(m, "stage"), m.GetGauge().GetValue()
			s.sum[st] += v
			s.max[st] = max(s.max[st], v)
		}
	}
}

// stopSampling ends the sampling of the in-flight gauges.
func (s *sampler) stopSampling() {
	s.stop()
	<-s.done
}

// finish returns each stage's figures: the counters as they stand, the
// in-flight gauges as sampled. Call it after stopSampling.
func (s *sampler) finish(maxInFlight map[string]int) ([]stageStats, error) {
	fams, err := s.reg.Gather()
	if err != nil {
		return nil, err
	}
	out := make([]stageStats, len(stageNames))
	byName := map[string]*stageStats{}
	for i, n := range stageNames {
		out[i] = stageStats{name: n, deliveries: map[string]float64{}, maxInFlight: maxInFlight[n]}
		byName[n] = &out[i]
	}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			st := byName[label(m, "stage")]
			if st == nil {
				continue
			}
			switch f.GetName() {
			case "oxy_stage_messages_total":
				st.deliveries[label(m, "outcome")] += m.GetCounter().GetValue()
			case "oxy_stage_handle_seconds":
				st.calls += float64(m.GetHistogram().GetSampleCount())
				st.handleSeconds += m.GetHistogram().GetSampleSum()
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range out {
		if s.samples > 0 {
			byName[st.name].inFlightMean = s.sum[st.name] / float64(s.samples)
			byName[st.name].inFlightMax = s.max[st.name]
		}
	}
	return out, nil
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// printStages writes the where-the-time-goes table.
func printStages(w io.Writer, stages []stageStats, wall time.Duration) error {
	if _, err := fmt.Fprintln(w, "\n| stage | deliveries (ack / wait / retry) | handler calls | mean handler time | handler-seconds per second | in flight: mean / max / limit |"); err != nil {
		return err
	}
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, st := range stages {
		var all float64
		for _, v := range st.deliveries {
			all += v
		}
		mean := time.Duration(0)
		if st.calls > 0 {
			mean = time.Duration(st.handleSeconds / st.calls * float64(time.Second))
		}
		fmt.Fprintf(w, "| %s | %.0f (%.0f / %.0f / %.0f) | %.0f | %v | %.1f | %.1f / %.0f / %d |\n",
			st.name, all, st.deliveries["ack"], st.deliveries["wait"], st.deliveries["retry"], st.calls,
			mean.Round(10*time.Microsecond), st.handleSeconds/wall.Seconds(), st.inFlightMean, st.inFlightMax, st.maxInFlight)
	}
	return nil
}
