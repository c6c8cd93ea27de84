package destination_test

import (
	"bytes"
	"fmt"
	"io"
	"sync/atomic"
	"testing"

	"github.com/oxypipe/oxypipe/pkg/destination"
)

// BenchmarkLocalPut measures small result files, the writer's common case.
func BenchmarkLocalPut(b *testing.B) {
	for _, sync := range []bool{true, false} {
		b.Run(fmt.Sprintf("10KB/fsync=%t", sync), func(b *testing.B) {
			d, err := destination.NewLocal(b.TempDir(), destination.LocalConfig{NoSync: !sync})
			if err != nil {
				b.Fatal(err)
			}
			body := bytes.Repeat([]byte("x"), 10_000)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := d.Put(b.Context(), fmt.Sprintf("%d.json", i%1000), bytes.NewReader(body)); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "puts/s")
		})
	}
}

// BenchmarkLocalPutStream measures a 20 MB body that Put cannot seek or
// size: an io.Pipe fed by another goroutine.
func BenchmarkLocalPutStream(b *testing.B) {
	d, err := destination.NewLocal(b.TempDir(), destination.LocalConfig{})
	if err != nil {
		b.Fatal(err)
	}
	const size = 20 << 20
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 4<<10)
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		pr, pw := io.Pipe()
		go func() {
			for left := size; left > 0; left -= len(chunk) {
				if _, err := pw.Write(chunk[:min(len(chunk), left)]); err != nil {
					return
				}
			}
			_ = pw.Close() // the reader side reports any failure
		}()
		if err := d.Put(b.Context(), "big.json", pr); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLocalPutParallel measures 10 KB puts from 16 goroutines, as a
// writer with many messages in flight does: concurrent fsyncs share journal
// commits.
func BenchmarkLocalPutParallel(b *testing.B) {
	d, err := destination.NewLocal(b.TempDir(), destination.LocalConfig{})
	if err != nil {
		b.Fatal(err)
	}
	body := bytes.Repeat([]byte("x"), 10_000)
	var next atomic.Int64
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.SetParallelism(8) // × GOMAXPROCS goroutines
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			name := fmt.Sprintf("%d.json", next.Add(1)%1000)
			if err := d.Put(b.Context(), name, bytes.NewReader(body)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "puts/s")
}
