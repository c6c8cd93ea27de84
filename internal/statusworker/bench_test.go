package statusworker_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/oxypipe/oxypipe/internal/statusworker"
	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/pkg/jobresults"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// Run the benchmarks with a fixed event count, e.g.
//
//	go test -run '^$' -bench . -benchtime=100000x ./internal/statusworker/
//
// b.N is the number of status events (4 per doc: payload, submitted, done,
// written), all of one run whose completion and run log are part of the
// work.

// BenchmarkDrain measures how fast one statusworker with a memory ledger
// empties a status stream that already holds b.N events, and the CPU time
// it takes per event (the whole process: worker, embedded server, ledger).
func BenchmarkDrain(b *testing.B) {
	e := setup(b)
	run, msgs := benchRun(b, e, b.N)
	publishAll(b, e, msgs)
	cfg := benchConfig(e)

	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime()
	sw := e.start(cfg)
	e.waitCompleted(run)
	elapsed, cpu := time.Since(start), cpuTime()-cpu0
	b.StopTimer()

	if n := counter(b, cfg, "oxy_statusworker_events_total", "result", "applied"); int(n) != len(msgs) {
		b.Fatalf("applied %v of %d events", n, len(msgs))
	}
	_ = sw.stop()
	b.ReportMetric(float64(len(msgs))/elapsed.Seconds(), "events/s")
	// CPU of the whole process (worker, embedded server, ledger) per event:
	// a figure that does not depend on what else the machine runs.
	b.ReportMetric(float64(cpu.Microseconds())/float64(len(msgs)), "cpu-us/event")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkPaced publishes b.N events at the stages' benchmark rate
// (12,000 events/s, about 3,000 docs/s) while one statusworker applies them,
// and reports the write lag (event stored in the stream → applied to the
// ledger).
func BenchmarkPaced(b *testing.B) {
	const rate = 12000 // events per second
	e := setup(b)
	run, msgs := benchRun(b, e, b.N)
	cfg := benchConfig(e)
	w, err := statusworker.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	lags := make([]time.Duration, 0, len(msgs))
	statusworker.SetObserveLag(w, func(d time.Duration) {
		mu.Lock()
		lags = append(lags, d)
		mu.Unlock()
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	b.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			b.Errorf("statusworker: %v", err)
		}
	})
	testutil.Eventually(b, 10*time.Second, "worker ready", func() bool { return w.Ready().OK })

	b.ResetTimer()
	start := time.Now()
	// Publish on an absolute schedule (rate events/s in 10ms steps),
	// asynchronously: a slow publish does not lower the rate afterwards.
	const tick = 10 * time.Millisecond
	perTick := rate * int(tick) / int(time.Second)
	for i, k := 0, 0; i < len(msgs); i, k = i+perTick, k+1 {
		time.Sleep(time.Until(start.Add(time.Duration(k) * tick)))
		for _, m := range msgs[i:min(i+perTick, len(msgs))] {
			if _, err := e.js.PublishMsgAsync(m); err != nil {
				b.Fatal(err)
			}
		}
	}
	select {
	case <-e.js.PublishAsyncComplete():
	case <-time.After(30 * time.Second):
		b.Fatal("publishes not acknowledged")
	}
	published := time.Since(start)
	e.waitCompleted(run)
	elapsed := time.Since(start)
	b.StopTimer()

	mu.Lock()
	defer mu.Unlock()
	if len(lags) < len(msgs) {
		b.Fatalf("lag of %d of %d events observed", len(lags), len(msgs))
	}
	slices.Sort(lags)
	pct := func(p float64) time.Duration { return lags[int(p*float64(len(lags)-1))] }
	b.ReportMetric(float64(len(msgs))/published.Seconds(), "published/s")
	b.ReportMetric(float64(len(msgs))/elapsed.Seconds(), "applied/s")
	// From the last publish to the run completed (run log written): small
	// when the worker kept up.
	b.ReportMetric(float64((elapsed - published).Milliseconds()), "catchup-ms")
	b.ReportMetric(float64(pct(0.50).Microseconds())/1000, "p50-lag-ms")
	b.ReportMetric(float64(pct(0.99).Microseconds())/1000, "p99-lag-ms")
	b.ReportMetric(float64(lags[len(lags)-1].Microseconds())/1000, "max-lag-ms")
	b.ReportMetric(0, "ns/op")
}

// benchConfig is the production configuration (batching, fetching and
// re-check defaults) on the test's broker, with a memory ledger.
func benchConfig(e *env) statusworker.Config {
	cfg := e.config(jobresults.NewMemoryStore(), nil)
	cfg.Stage.BatchLinger, cfg.Stage.FetchWait, cfg.RecheckInterval, cfg.ConfirmInterval = 0, 0, 0, 0
	return cfg
}

// benchRun creates a ready run of n/4 docs (its final run log is written at
// the end, inside the measured time) and returns the status events of its docs, in the
// order the stages would send them (four stages, docs interleaved).
func benchRun(b *testing.B, e *env, n int) (string, []*nats.Msg) {
	b.Helper()
	docs := max(n/4, 1)
	run := messages.NewRunID(time.Now())
	ann := messages.RunAnnounced{Run: run, Total: docs, FinalDataType: oxytype.FinalDataType, RunLog: e.logDir, StartedAt: time.Now()}
	if _, err := e.topo.Runs().Create(b.Context(), messages.RunRecord{Announced: ann, State: oxytype.RunStateReady, UpdatedAt: time.Now()}); err != nil {
		b.Fatal(err)
	}
	msgs := make([]*nats.Msg, 0, 4*docs)
	const window = 256 // docs in flight at once across the stages
	for lo := 0; lo < docs; lo += window {
		hi := min(lo+window, docs)
		for _, mk := range []func(string, int) *messages.StatusEvent{fed, submitted, polled, written} {
			for d := lo; d < hi; d++ {
				ev := mk(run, d)
				ev.Time = time.Now().UTC()
				m, err := messages.NewMsg(ev, ev.Origin)
				if err != nil {
					b.Fatal(err)
				}
				msgs = append(msgs, m)
			}
		}
	}
	return run, msgs
}

// publishAll publishes msgs asynchronously and waits until all are stored.
func publishAll(b *testing.B, e *env, msgs []*nats.Msg) {
	b.Helper()
	for lo := 0; lo < len(msgs); lo += 2000 {
		for _, m := range msgs[lo:min(lo+2000, len(msgs))] {
			if _, err := e.js.PublishMsgAsync(m); err != nil {
				b.Fatal(err)
			}
		}
		select {
		case <-e.js.PublishAsyncComplete():
		case <-time.After(30 * time.Second):
			b.Fatal("publishes not acknowledged")
		}
	}
}
