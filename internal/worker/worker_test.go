package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/oxypipe/oxypipe/internal/health"
	"github.com/oxypipe/oxypipe/internal/natsserver"
	"github.com/oxypipe/oxypipe/internal/procenv"
	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/internal/worker"
)

// syncBuffer is a bytes.Buffer safe to read while the worker writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type okCheck struct{}

func (okCheck) Ready() health.Status { return health.Status{OK: true, State: "ready"} }
func (okCheck) Live() health.Status  { return health.Status{OK: true, State: "live"} }

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

func startServer(t *testing.T) string {
	t.Helper()
	srv, err := natsserver.Start(context.Background(), natsserver.Config{StoreDir: t.TempDir(), Listen: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	return srv.ClientURL()
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, what, cond)
}

func TestWorkerServesHealthAndRoutesThenExitsZeroWhenStopped(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	addr := freeAddr(t)
	var gotFlag string
	spec := worker.Spec{
		Name:    "testworker",
		Summary: "a worker for tests",
		Flags:   func(fs *pflag.FlagSet, _ *procenv.Env) { fs.StringVar(&gotFlag, "thing", "", "a worker flag") },
		Setup: func(_ context.Context, env *worker.Env) (worker.Service, error) {
			if env.Topology == nil || env.JetStream == nil || env.Registry == nil {
				return nil, errors.New("env is incomplete")
			}
			env.AddCheck("svc", okCheck{})
			env.Handle("GET /hello", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				fmt.Fprint(w, "hi")
			}))
			return func(ctx context.Context) error { <-ctx.Done(); return nil }, nil
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	var stderr syncBuffer
	code := make(chan int, 1)
	go func() {
		code <- worker.Run(ctx, []string{"--nats-url", url, "--http-addr", addr, "--thing", "x"}, spec, &stderr)
	}()

	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	waitFor(t, "/ready to answer 200", func() bool { c, _ := get("/ready"); return c == http.StatusOK })
	_, body := get("/ready")
	var rb health.Body
	if err := json.Unmarshal([]byte(body), &rb); err != nil || rb.Checks["svc"].State != "ready" {
		t.Fatalf("/ready body = %s (%v), want the svc check ready", body, err)
	}
	if c, b := get("/hello"); c != http.StatusOK || b != "hi" {
		t.Fatalf("/hello = %d %q, want 200 \"hi\"", c, b)
	}
	if c, b := get("/metrics"); c != http.StatusOK || !strings.Contains(b, "go_goroutines") {
		t.Fatalf("/metrics = %d, want 200 with Go runtime metrics", c)
	}
	if gotFlag != "x" {
		t.Fatalf("worker flag = %q, want x", gotFlag)
	}
	cancel()
	select {
	case c := <-code:
		if c != 0 {
			t.Fatalf("exit code = %d, want 0; stderr:\n%s", c, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("worker did not stop after its context was cancelled")
	}
}

func TestWorkerExitCodes(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	failing := errors.New("consumer lost")
	cases := []struct {
		name   string
		args   []string
		env    map[string]string
		setup  func(context.Context, *worker.Env) (worker.Service, error)
		code   int
		stderr string
	}{
		{"unknown flag", []string{"--nope"}, nil, nil, 2, "unknown flag: --nope"},
		{"stray argument", []string{"extra"}, nil, nil, 2, "unexpected arguments"},
		{"bad replicas", []string{"--nats-replicas", "9"}, nil, nil, 2, "between 1 and 5"},
		// A malformed environment value is refused, never replaced by the
		// default, before anything connects.
		{"malformed environment value", []string{"--nats-url", "nats://127.0.0.1:1"}, map[string]string{"OXY_NATS_REPLICAS": "x"}, nil, 2,
			"testworker: OXY_NATS_REPLICAS=\"x\" is not an integer\n"},
		{"usage error from setup", nil, nil, func(context.Context, *worker.Env) (worker.Service, error) {
			return nil, worker.Usagef("OXY_WSA_USERNAME is not set")
		}, 2, "OXY_WSA_USERNAME is not set"},
		{"service fails", nil, nil, func(context.Context, *worker.Env) (worker.Service, error) {
			return func(context.Context) error { return failing }, nil
		}, 1, "consumer lost"},
		{"help", []string{"--help"}, nil, nil, 0, "a worker for tests"},
		{"check fails before connecting", []string{"--nats-url", "nats://127.0.0.1:1"}, nil, nil, 2, "testworker: the API credentials are missing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec := worker.Spec{Name: "testworker", Summary: "a worker for tests", Setup: tc.setup,
				Getenv: func(k string) string { return tc.env[k] }}
			if strings.HasPrefix(tc.name, "check") {
				spec.Check = func(*procenv.Env) error { return worker.Usagef("the API credentials are missing") }
			}
			var stderr syncBuffer
			// A later --nats-url overrides this one.
			args := append([]string{"--nats-url", url, "--http-addr", "127.0.0.1:0"}, tc.args...)
			if code := worker.Run(context.Background(), args, spec, &stderr); code != tc.code {
				t.Fatalf("exit code = %d, want %d; stderr:\n%s", code, tc.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.stderr) {
				t.Fatalf("stderr does not mention %q:\n%s", tc.stderr, stderr.String())
			}
		})
	}
}
