package testutil_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/oxypipe/oxypipe/internal/natsserver/natstest"
	"github.com/oxypipe/oxypipe/internal/testutil"
)

func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	testutil.Eventually(t, time.Second, "the third call", func() bool { return calls.Add(1) == 3 })
	if got := calls.Load(); got != 3 {
		t.Fatalf("cond was called %d times, want 3", got)
	}
}

// fakeT records a Fatalf instead of ending the test.
type fakeT struct {
	testing.TB
	msg  string
	args []any
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.msg, f.args = format, args
	panic(f)
}

func TestEventuallyFailsAfterTheDeadline(t *testing.T) {
	t.Parallel()
	ft := &fakeT{TB: t}
	func() {
		defer func() {
			if r := recover(); r != ft {
				t.Fatalf("recovered %v, want the fake test's Fatalf", r)
			}
		}()
		testutil.Eventually(ft, 30*time.Millisecond, "never", func() bool { return false })
	}()
	if ft.msg != "timed out after %v waiting %s" || ft.args[1] != "for never" {
		t.Fatalf("Fatalf(%q, %v)", ft.msg, ft.args)
	}
}

func TestEventuallyfAndExplainSayWhatWasAwaited(t *testing.T) {
	t.Parallel()
	fail := func(wait func(ft *fakeT)) *fakeT {
		ft := &fakeT{TB: t}
		func() {
			defer func() { _ = recover() }()
			wait(ft)
		}()
		return ft
	}
	ft := fail(func(ft *fakeT) {
		testutil.Eventuallyf(ft, 20*time.Millisecond, func() bool { return false }, "doc %d is %s", 7, "done")
	})
	if ft.args[1] != "until doc 7 is done" {
		t.Errorf("Eventuallyf says %v", ft.args)
	}
	calls := 0
	ft = fail(func(ft *fakeT) {
		testutil.EventuallyExplain(ft, 20*time.Millisecond, func() bool { calls++; return false },
			func() string { return fmt.Sprintf("%d calls were not enough", calls) })
	})
	if want := fmt.Sprintf("until %d calls were not enough", calls); ft.args[1] != want || calls < 2 {
		t.Errorf("EventuallyExplain says %v, want %q", ft.args, want)
	}
}

func TestMetricSumsTheMatchingSeries(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	msgs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "msgs_total", Help: "h"}, []string{"stage", "outcome"})
	inFlight := prometheus.NewGauge(prometheus.GaugeOpts{Name: "in_flight", Help: "h"})
	reg.MustRegister(msgs, inFlight)
	msgs.WithLabelValues("poller", "ack").Add(3)
	msgs.WithLabelValues("poller", "wait").Add(4)
	msgs.WithLabelValues("writer", "ack").Add(5)
	inFlight.Set(2.5)
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"msgs_total", map[string]string{"stage": "poller", "outcome": "ack"}, 3},
		{"msgs_total", map[string]string{"stage": "poller"}, 7},
		{"msgs_total", map[string]string{"outcome": "ack"}, 8},
		{"msgs_total", nil, 12},
		{"msgs_total", map[string]string{"stage": "submitter"}, 0},
		{"in_flight", nil, 2.5},
		{"no_such_metric", nil, 0},
	} {
		if got := testutil.Metric(t, reg, c.name, c.labels); got != c.want {
			t.Errorf("Metric(%s, %v) = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}

func TestStreamMsgsSkipsWhatIsGone(t *testing.T) {
	t.Parallel()
	_, nc := natstest.Start(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := testutil.StreamMsgs(t, js, "S"); len(got) != 0 {
		t.Fatalf("empty stream: %d messages", len(got))
	}
	for _, body := range []string{"a", "b", "c"} {
		if _, err := js.Publish(t.Context(), "s."+body, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteMsg(t.Context(), 2); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range testutil.StreamMsgs(t, js, "S") {
		got = append(got, m.Subject+"="+string(m.Data))
	}
	if strings.Join(got, " ") != "s.a=a s.c=c" {
		t.Fatalf("messages %v, want s.a=a s.c=c", got)
	}
}

func TestRunUntilCleanupStopsTheRunsWhenTheTestEnds(t *testing.T) {
	var started, stopped atomic.Int32
	t.Run("inner", func(t *testing.T) {
		run := func(ctx context.Context) error {
			started.Add(1)
			<-ctx.Done()
			stopped.Add(1)
			return nil
		}
		testutil.RunUntilCleanup(t, "the runs", run, run)
		testutil.Eventually(t, 5*time.Second, "both runs start", func() bool { return started.Load() == 2 })
		if got := stopped.Load(); got != 0 {
			t.Fatalf("%d runs stopped before the test ended", got)
		}
	})
	if got := stopped.Load(); got != 2 {
		t.Fatalf("%d runs stopped by the time the test's cleanup returned, want 2", got)
	}
}
