package promreg_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/oxypipe/oxypipe/internal/promreg"
)

func TestRegisterSharesACollectorAndRefusesAConflict(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	opts := prometheus.CounterOpts{Name: "oxy_test_total", Help: "a counter"}
	first, err := promreg.Register(reg, prometheus.NewCounter(opts))
	if err != nil {
		t.Fatal(err)
	}
	second, err := promreg.Register(reg, prometheus.NewCounter(opts))
	if err != nil {
		t.Fatalf("registering the same counter again = %v, want the existing one", err)
	}
	if second != first {
		t.Fatal("the second registration did not return the collector already registered")
	}
	second.Inc()
	if got := testCounterValue(t, reg); got != 1 {
		t.Fatalf("counter = %v, want 1 (shared)", got)
	}
	_, err = promreg.Register(reg, prometheus.NewCounterVec(opts, []string{"label"}))
	if err == nil {
		t.Fatal("a conflicting registration (same name, other labels) succeeded")
	}
}

func testCounterValue(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil || len(fams) != 1 {
		t.Fatalf("Gather = %v, %v", fams, err)
	}
	return fams[0].GetMetric()[0].GetCounter().GetValue()
}
