package wsa_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/payload"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// concurrency is the number of concurrent callers of the throughput
// benchmarks (b.RunParallel runs parallelism × GOMAXPROCS goroutines).
const concurrency = 64

func parallelism() int { return max(1, concurrency/runtime.GOMAXPROCS(0)) }

func benchClient(b *testing.B, baseURL, user, pass string) *wsa.Client {
	b.Helper()
	c, err := wsa.New(wsa.Config{BaseURL: baseURL, Username: user, Password: pass, Timeout: 30 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func reportRate(b *testing.B, start time.Time, n int64, unit string) {
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), unit)
}

// BenchmarkSubmitEmulator: single submissions from 64 concurrent callers
// against the emulator on loopback, with the rate limit off.
func BenchmarkSubmitEmulator(b *testing.B) {
	srv := emulator.NewServer(b, emulator.Config{RateLimit: emulator.Unlimited, RenderRateLimit: emulator.Unlimited, JobTime: time.Hour})
	c := benchClient(b, srv.URL, srv.Username, srv.Password)
	var seq atomic.Int64
	b.SetParallelism(parallelism())
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			p := payload.New("universal", "url", "https://sandbox.oxylabs.io/products/"+strconv.FormatInt(seq.Add(1), 10))
			if _, _, err := c.Submit(ctx, p); err != nil {
				b.Error(err)
				return
			}
		}
	})
	reportRate(b, start, int64(b.N), "submits/s")
}

// BenchmarkResultsEmulator: GET /results of a done job, body read to the
// end, from 64 concurrent callers against the emulator.
func BenchmarkResultsEmulator(b *testing.B) {
	srv := emulator.NewServer(b, emulator.Config{RateLimit: emulator.Unlimited, JobTime: time.Nanosecond})
	c := benchClient(b, srv.URL, srv.Username, srv.Password)
	ctx := context.Background()
	job, _, err := c.Submit(ctx, payload.New("universal", "url", "https://sandbox.oxylabs.io/products/1"))
	if err != nil {
		b.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err = c.Status(ctx, job.ID); err == nil {
			if st, _ := c.Status(ctx, job.ID); st.Status == wsa.JobDone {
				break
			}
		}
		if time.Now().After(deadline) {
			b.Fatal("the job did not finish")
		}
		time.Sleep(time.Millisecond)
	}
	benchResults(b, c, job.ID)
}

// BenchmarkResultsMinimal: the same against a handler that only writes a
// fixed body, to show the client's own cost.
func BenchmarkResultsMinimal(b *testing.B) {
	body := []byte(resultsJSON)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	}))
	b.Cleanup(srv.Close)
	benchResults(b, benchClient(b, srv.URL, "u", "p"), "7508980357849459714")
}

func benchResults(b *testing.B, c *wsa.Client, id string) {
	b.SetParallelism(parallelism())
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		buf := make([]byte, 32<<10)
		for pb.Next() {
			rr, err := c.Results(ctx, id)
			if err != nil {
				b.Error(err)
				return
			}
			_, err = io.CopyBuffer(io.Discard, struct{ io.Reader }{rr.Body}, buf)
			_ = rr.Body.Close()
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
	reportRate(b, start, int64(b.N), "gets/s")
}

// BenchmarkResultsStream streams one results body of 1 MB or 20 MB to
// io.Discard through a 32 KiB buffer. Memory per op stays flat: the body is
// never held whole by the client.
func BenchmarkResultsStream(b *testing.B) {
	for _, size := range []int{1 << 20, 20 << 20} {
		b.Run(strconv.Itoa(size>>20)+"MB", func(b *testing.B) {
			chunk := bytes.Repeat([]byte("<p>0123456789</p>"), 64<<10/17)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", strconv.Itoa(size))
				for left := size; left > 0; {
					n := min(left, len(chunk))
					if _, err := w.Write(chunk[:n]); err != nil {
						return
					}
					left -= n
				}
			}))
			b.Cleanup(srv.Close)
			c := benchClient(b, srv.URL, "u", "p")
			ctx := context.Background()
			buf := make([]byte, 32<<10)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				rr, err := c.Results(ctx, "1")
				if err != nil {
					b.Fatal(err)
				}
				n, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{rr.Body}, buf)
				_ = rr.Body.Close()
				if err != nil || n != int64(size) {
					b.Fatalf("copied %d, %v", n, err)
				}
			}
		})
	}
}

// BenchmarkResultsStreamEmulator is BenchmarkResultsStream with the body
// built by the emulator (a done job whose raw content is padded to size).
func BenchmarkResultsStreamEmulator(b *testing.B) {
	for _, size := range []int{1 << 20, 20 << 20} {
		b.Run(strconv.Itoa(size>>20)+"MB", func(b *testing.B) {
			srv := emulator.NewServer(b, emulator.Config{JobTime: time.Nanosecond, Rules: []emulator.Rule{
				{Pattern: regexp.MustCompile(`/big$`), Outcome: emulator.Outcome{ContentSize: size}},
			}})
			c := benchClient(b, srv.URL, srv.Username, srv.Password)
			ctx := context.Background()
			job, _, err := c.Submit(ctx, payload.New("universal", "url", "https://sandbox.oxylabs.io/big"))
			if err != nil {
				b.Fatal(err)
			}
			buf := make([]byte, 32<<10)
			var total int64
			for {
				rr, err := c.Results(ctx, job.ID)
				if err != nil {
					time.Sleep(time.Millisecond)
					continue
				}
				total, err = io.CopyBuffer(io.Discard, struct{ io.Reader }{rr.Body}, buf)
				_ = rr.Body.Close()
				if err != nil {
					b.Fatal(err)
				}
				break
			}
			b.SetBytes(total)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				rr, err := c.Results(ctx, job.ID)
				if err != nil {
					b.Fatal(err)
				}
				_, err = io.CopyBuffer(io.Discard, struct{ io.Reader }{rr.Body}, buf)
				_ = rr.Body.Close()
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
