package topology_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/oxypipe/oxypipe/internal/natsserver"
	"github.com/oxypipe/oxypipe/internal/topology"
)

// BenchmarkClaims measures the claim protocol on a file-backed embedded
// broker: one op is a doc claimed (Create) and its job id stored under the
// claim (Update), the two writes every submission makes before its payload
// is acked, from 32 goroutines (the submitter's default concurrency). The
// "fsync-each-write" case is the broker of `oxy run --state-dir`, which
// syncs every write before acknowledging it; "fsync-every-2m" is the
// server's default.
//
//	go test -run '^$' -bench Claims -count 3 ./internal/topology/
func BenchmarkClaims(b *testing.B) {
	for _, bc := range []struct {
		name string
		sync bool
	}{{"fsync-every-2m", false}, {"fsync-each-write", true}} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			srv, err := natsserver.Start(ctx, natsserver.Config{StoreDir: b.TempDir(), SyncAlways: bc.sync})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = srv.Shutdown(ctx) })
			nc, err := srv.Connect()
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(nc.Close)
			js, err := jetstream.New(nc)
			if err != nil {
				b.Fatal(err)
			}
			topo, err := topology.Ensure(ctx, js, topology.Config{})
			if err != nil {
				b.Fatal(err)
			}
			claims := topo.Claims()
			var next atomic.Int64
			b.SetParallelism(16) // 16 goroutines per GOMAXPROCS: 32 on 2 cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					doc := strconv.FormatInt(next.Add(1), 10)
					ref, err := claims.Acquire(ctx, run, doc, 0, "bench", time.Now())
					if err != nil {
						b.Error(err)
						return
					}
					if err := claims.MarkSubmitted(ctx, ref, "7500000000000000001", time.Now()); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "claims/s")
		})
	}
}
