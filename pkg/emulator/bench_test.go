package emulator

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The benchmarks run the emulator on a loopback port with 64 concurrent
// client goroutines (b.SetParallelism(32) on 2 CPUs) over keep-alive
// connections, and report requests per second. Client and server share the
// machine, so the figures are a floor for the emulator alone; the Handler
// benchmarks measure the emulator's own cost without the network stack.
//
//	go test ./pkg/emulator -run '^$' -bench . -benchtime 3s

const benchJobs = 10000

type benchEnv struct {
	srv    *Server
	client *http.Client
	auth   string
}

func newBenchEnv(b *testing.B, cfg Config) *benchEnv {
	b.Helper()
	cfg.RateLimit = Unlimited
	cfg.RenderRateLimit = Unlimited
	if cfg.Clock == nil {
		cfg.Clock = NewFakeClock(time.Time{})
	}
	cfg.JobTime = time.Second
	srv := NewServer(b, cfg)
	tr := &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, DisableCompression: true}
	b.Cleanup(tr.CloseIdleConnections)
	req, _ := http.NewRequest("GET", "/", nil)
	req.SetBasicAuth("bench", "bench")
	return &benchEnv{srv: srv, client: &http.Client{Transport: tr}, auth: req.Header.Get("Authorization")}
}

func (env *benchEnv) call(b *testing.B, method, path, body string, want int) int64 {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, env.srv.URL+path, rd)
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Authorization", env.auth)
	resp, err := env.client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != want {
		b.Fatalf("%s %s: %d", method, path, resp.StatusCode)
	}
	return n
}

// seed creates benchJobs done jobs with batches.
func (env *benchEnv) seed(b *testing.B, payload func(i int) string) {
	for start := 0; start < benchJobs; start += 1000 {
		vals := make([]string, 1000)
		for i := range vals {
			vals[i] = strconv.Quote(payload(start + i))
		}
		env.call(b, "POST", "/v1/queries/batch", `{"source":"universal","url":[`+strings.Join(vals, ",")+`]}`, 202)
	}
	env.srv.Emulator.cfg.Clock.(*FakeClock).Advance(time.Minute)
}

// meter reports requests per second of wall time, and the CPU time the
// whole process (client and server) spent per request. On a shared machine
// the wall rate drops with the load while the CPU per request does not:
// 2 s / cpu-µs/req is the rate two dedicated cores would reach.
type meter struct {
	start time.Time
	cpu   time.Duration
}

func startMeter() meter { return meter{start: time.Now(), cpu: processCPU()} }

func (m meter) report(b *testing.B) {
	b.ReportMetric(float64(b.N)/time.Since(m.start).Seconds(), "req/s")
	if cpu := processCPU() - m.cpu; cpu > 0 {
		b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/req")
	}
}

func BenchmarkSubmit(b *testing.B) {
	env := newBenchEnv(b, Config{})
	var n atomic.Int64
	b.SetParallelism(32)
	b.ResetTimer()
	m := startMeter()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			env.call(b, "POST", "/v1/queries", `{"source":"universal","url":"https://sandbox.oxylabs.io/products/`+strconv.FormatInt(i, 10)+`"}`, 202)
		}
	})
	m.report(b)
}

func BenchmarkStatus(b *testing.B) {
	env := newBenchEnv(b, Config{})
	env.seed(b, func(i int) string { return fmt.Sprintf("https://sandbox.oxylabs.io/products/%d", i) })
	var n atomic.Int64
	b.SetParallelism(32)
	b.ResetTimer()
	m := startMeter()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := firstJobID + 1 + uint64(n.Add(1)%benchJobs)
			env.call(b, "GET", "/v1/queries/"+strconv.FormatUint(id, 10), "", 200)
		}
	})
	m.report(b)
}

func BenchmarkResults(b *testing.B) {
	env := newBenchEnv(b, Config{})
	env.seed(b, func(i int) string { return fmt.Sprintf("https://sandbox.oxylabs.io/products/%d", i) })
	var n atomic.Int64
	b.SetParallelism(32)
	b.ResetTimer()
	m := startMeter()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := firstJobID + 1 + uint64(n.Add(1)%benchJobs)
			env.call(b, "GET", "/v1/queries/"+strconv.FormatUint(id, 10)+"/results", "", 200)
		}
	})
	m.report(b)
}

// BenchmarkResults1MB serves 1 MB result bodies (the padding is built once).
func BenchmarkResults1MB(b *testing.B) {
	env := newBenchEnv(b, Config{Rules: []Rule{{Pattern: regexp.MustCompile(`.`), Outcome: Outcome{ContentSize: 1 << 20}}}})
	env.seed(b, func(i int) string { return fmt.Sprintf("https://sandbox.oxylabs.io/products/%d", i) })
	var n, bytes atomic.Int64
	b.SetParallelism(4)
	b.ResetTimer()
	m := startMeter()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := firstJobID + 1 + uint64(n.Add(1)%benchJobs)
			bytes.Add(env.call(b, "GET", "/v1/queries/"+strconv.FormatUint(id, 10)+"/results", "", 200))
		}
	})
	m.report(b)
	b.ReportMetric(float64(bytes.Load())/time.Since(m.start).Seconds()/(1<<20), "MB/s")
}

// The Handler benchmarks call ServeHTTP directly with recorded requests: the
// emulator's own cost, plus httptest's request and recorder.

func benchHandler(b *testing.B, method string, path func(i int64) string, body func(i int64) string, want int) {
	e, err := New(Config{Clock: NewFakeClock(time.Time{}), JobTime: time.Second, RateLimit: Unlimited})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = e.Close() }()
	srv := httptest.NewServer(e)
	defer srv.Close()
	env := &benchEnv{srv: &Server{URL: srv.URL, Emulator: e}, client: srv.Client(), auth: "Basic YmVuY2g6YmVuY2g="}
	env.seed(b, func(i int) string { return fmt.Sprintf("https://sandbox.oxylabs.io/products/%d", i) })
	var n atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	m := startMeter()
	defer m.report(b)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			var rd io.Reader
			if body != nil {
				rd = strings.NewReader(body(i))
			}
			req := httptest.NewRequest(method, path(i), rd)
			req.Header.Set("Authorization", env.auth)
			w := httptest.NewRecorder()
			e.ServeHTTP(w, req)
			if w.Code != want {
				b.Fatalf("%d", w.Code)
			}
		}
	})
}

func BenchmarkHandlerSubmit(b *testing.B) {
	benchHandler(b, "POST", func(int64) string { return "/v1/queries" }, func(i int64) string {
		return `{"source":"universal","url":"https://sandbox.oxylabs.io/products/` + strconv.FormatInt(i, 10) + `"}`
	}, 202)
}

func BenchmarkHandlerStatus(b *testing.B) {
	benchHandler(b, "GET", func(i int64) string {
		return "/v1/queries/" + strconv.FormatUint(firstJobID+1+uint64(i%benchJobs), 10)
	}, nil, 200)
}

func BenchmarkHandlerResults(b *testing.B) {
	benchHandler(b, "GET", func(i int64) string {
		return "/v1/queries/" + strconv.FormatUint(firstJobID+1+uint64(i%benchJobs), 10) + "/results"
	}, nil, 200)
}
