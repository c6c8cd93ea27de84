package stage_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/oxypipe/oxypipe/internal/natsserver/natstest"
	"github.com/oxypipe/oxypipe/internal/stage"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/messages"
)

// BenchmarkThroughput feeds b.N payloads (about 200 bytes each) and consumes
// them, timing publish and consume together, on an embedded server with
// file storage. Run with a fixed count to compare, e.g.
//
//	go test -run '^$' -bench Throughput -benchtime 20000x ./internal/stage/
//
// raw/*: nats.go's jetstream package directly (the ceiling).
// runtime/*: the same work through stage.Worker.
func BenchmarkThroughput(b *testing.B) {
	b.Run("raw/consume+ack", func(b *testing.B) { benchRaw(b, 0) })
	b.Run("raw/consume+2-publishes+ack", func(b *testing.B) { benchRaw(b, 2) })
	b.Run("runtime/ack-only", func(b *testing.B) {
		benchRuntime(b, 64, func(context.Context, *stage.Msg) error { return nil })
	})
	b.Run("runtime/decode+2-publishes+ack", func(b *testing.B) { benchRuntime(b, 64, submit) })
	b.Run("runtime/decode+2-publishes+ack/in-flight-256", func(b *testing.B) { benchRuntime(b, 256, submit) })
}

type benchEnv struct {
	nc *nats.Conn
	js jetstream.JetStream
	s  topology.ConsumerSettings
}

func benchSetup(b *testing.B) *benchEnv {
	b.Helper()
	_, nc := natstest.Start(b)
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(8192))
	if err != nil {
		b.Fatal(err)
	}
	s, _ := topology.DefaultConsumer(topology.Submitter)
	if _, err := topology.EnsureAll(context.Background(), js, topology.Config{}); err != nil {
		b.Fatal(err)
	}
	return &benchEnv{nc: nc, js: js, s: s}
}

// feed publishes n payloads asynchronously and waits for every ack.
func (e *benchEnv) feed(b *testing.B, n int) {
	b.Helper()
	for i := range n {
		m, err := messages.NewMsg(&messages.Payload{Run: run, Doc: messages.DocID(i),
			Payload: json.RawMessage(`{"source":"universal","url":"https://example.com/products/` + messages.DocID(i) + `","geo_location":"United States","parse":true}`)},
			feeder)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := e.js.PublishMsgAsync(m); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-e.js.PublishAsyncComplete():
	case <-time.After(time.Minute):
		b.Fatal("feed not acked within a minute")
	}
}

func benchRaw(b *testing.B, outputs int) {
	e := benchSetup(b)
	b.ResetTimer()
	start := time.Now()
	e.feed(b, b.N)
	cons, err := e.js.Consumer(context.Background(), e.s.Stream, string(e.s.Stage))
	if err != nil {
		b.Fatal(err)
	}
	done := 0
	for done < b.N {
		batch, err := cons.Fetch(256, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			b.Fatal(err)
		}
		var msgs []jetstream.Msg
		for m := range batch.Messages() {
			msgs = append(msgs, m)
			for range outputs {
				out := nats.NewMsg(messages.StatusSubject(run))
				out.Data = m.Data()
				if _, err := e.js.PublishMsgAsync(out); err != nil {
					b.Fatal(err)
				}
			}
		}
		if outputs > 0 {
			<-e.js.PublishAsyncComplete()
		}
		for _, m := range msgs {
			if err := m.Ack(); err != nil {
				b.Fatal(err)
			}
		}
		done += len(msgs)
	}
	if err := e.nc.Flush(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
}

func benchRuntime(b *testing.B, inFlight int, h stage.HandlerFunc) {
	e := benchSetup(b)
	var handled atomic.Int64
	w, err := stage.New(stage.Config{Conn: e.nc, Consumer: e.s, Instance: "bench", MaxInFlight: inFlight},
		stage.HandlerFunc(func(ctx context.Context, m *stage.Msg) error {
			err := h(ctx, m)
			handled.Add(1)
			return err
		}))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	e.feed(b, b.N)
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- w.Run(ctx) }()
	for handled.Load() < int64(b.N) {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-runErr; err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	info, err := jetstreamConsumerInfo(e)
	if err != nil {
		b.Fatal(err)
	}
	if info.NumAckPending != 0 || info.NumPending != 0 {
		b.Fatalf("after the run: ack pending %d, pending %d", info.NumAckPending, info.NumPending)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
}

func jetstreamConsumerInfo(e *benchEnv) (*jetstream.ConsumerInfo, error) {
	c, err := e.js.Consumer(context.Background(), e.s.Stream, string(e.s.Stage))
	if err != nil {
		return nil, err
	}
	return c.Info(context.Background())
}
