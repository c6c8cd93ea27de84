package testutil

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric returns the sum of the counters and gauges of the family name in g
// whose labels include every pair of labels (nil: all of them); 0 when
// there are none. With labels that pick one series it is that series'
// value.
func Metric(t testing.TB, g prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatalf("gathering metrics: %v", err)
	}
	total := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			for k, v := range labels {
				found := false
				for _, l := range m.GetLabel() {
					found = found || l.GetName() == k && l.GetValue() == v
				}
				if !found {
					continue series
				}
			}
			total += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return total
}
