package s3dest_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http/httptest"
	"testing"

	"github.com/oxypipe/oxypipe/pkg/destination/s3dest"
)

// BenchmarkPut measures puts to gofakes3 (which keeps objects in memory, in
// this process, so its allocations count too) and to a sink server that
// discards bodies, whose allocations are the client's alone.
func BenchmarkPut(b *testing.B) {
	f := startFakeS3(b)
	sink := httptest.NewServer(sinkS3{})
	b.Cleanup(sink.Close)
	servers := []struct {
		name string
		url  string
	}{{"gofakes3", f.url}, {"sink", sink.URL}}

	for _, srv := range servers {
		cfg := f.config()
		cfg.Endpoint = srv.url
		s, err := s3dest.New(b.Context(), bucket, "bench", cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("10KB/"+srv.name, func(b *testing.B) {
			body := bytes.Repeat([]byte("x"), 10_000)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := s.Put(b.Context(), fmt.Sprintf("%d.json", i%1000), bytes.NewReader(body)); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "puts/s")
		})
		b.Run("20MB-stream/"+srv.name, func(b *testing.B) {
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
				if err := s.Put(b.Context(), "big.json", pr); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
