package health_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/oxypipe/oxypipe/internal/health"
)

// switchable is a Checker whose answers the test sets.
type switchable struct {
	mu          sync.Mutex
	ready, live health.Status
}

func (c *switchable) Ready() health.Status { c.mu.Lock(); defer c.mu.Unlock(); return c.ready }
func (c *switchable) Live() health.Status  { c.mu.Lock(); defer c.mu.Unlock(); return c.live }
func (c *switchable) set(ready, live health.Status) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ready, c.live = ready, live
}

func setup(t *testing.T, checks map[string]health.Checker) *health.Server {
	t.Helper()
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "oxy_test_total", Help: "A test counter."})
	reg.MustRegister(c)
	c.Add(3)
	srv, err := health.New(health.Config{Addr: "127.0.0.1:0", Gatherer: reg, Checks: checks})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return srv
}

func get(t *testing.T, srv *health.Server, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + srv.Addr() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestEndpoints(t *testing.T) {
	t.Parallel()
	ok := health.Status{OK: true, State: "ready"}
	alive := health.Status{OK: true, State: "live"}
	sub := &switchable{}
	sub.set(health.Status{State: "starting", Detail: "no health sample yet"}, alive)
	pol := &switchable{}
	pol.set(ok, alive)
	srv := setup(t, map[string]health.Checker{"submitter": sub, "poller": pol})

	t.Run("ready is 503 with every component's state until all are ready", func(t *testing.T) {
		code, body := get(t, srv, "/ready")
		want := `{"state":"starting","checks":{"poller":{"state":"ready"},"submitter":{"state":"starting","detail":"no health sample yet"}}}` + "\n"
		if code != http.StatusServiceUnavailable || body != want {
			t.Fatalf("got %d %s", code, body)
		}
	})
	sub.set(ok, alive)
	t.Run("ready is 200 once all are ready", func(t *testing.T) {
		code, body := get(t, srv, "/ready")
		if code != http.StatusOK || !strings.HasPrefix(body, `{"state":"ready",`) {
			t.Fatalf("got %d %s", code, body)
		}
	})
	t.Run("live is 200 while nothing is stuck", func(t *testing.T) {
		code, body := get(t, srv, "/live")
		if code != http.StatusOK || !strings.HasPrefix(body, `{"state":"live",`) {
			t.Fatalf("got %d %s", code, body)
		}
	})
	pol.set(ok, health.Status{State: "stuck", Detail: "a handler has run for 2m0s (timeout 30s)"})
	t.Run("live is 503 when a handler is stuck", func(t *testing.T) {
		code, body := get(t, srv, "/live")
		want := `{"state":"stuck","checks":{"poller":{"state":"stuck","detail":"a handler has run for 2m0s (timeout 30s)"},"submitter":{"state":"live"}}}` + "\n"
		if code != http.StatusServiceUnavailable || body != want {
			t.Fatalf("got %d %s", code, body)
		}
	})
	t.Run("metrics serves the given registry", func(t *testing.T) {
		code, body := get(t, srv, "/metrics")
		if code != http.StatusOK || !strings.Contains(body, "oxy_test_total 3\n") {
			t.Fatalf("got %d %s", code, body)
		}
	})
	t.Run("other paths are 404 with an empty object", func(t *testing.T) {
		code, body := get(t, srv, "/nope")
		if code != http.StatusNotFound || body != "{}\n" {
			t.Fatalf("got %d %q", code, body)
		}
	})
}

func TestNoChecksIsReadyAndShutdownIsClean(t *testing.T) {
	t.Parallel()
	srv := setup(t, nil)
	if code, body := get(t, srv, "/ready"); code != http.StatusOK || body != `{"state":"ready","checks":{}}`+"\n" {
		t.Fatalf("got %d %s", code, body)
	}
	addr := srv.Addr()
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr + "/live")
	if err == nil {
		resp.Body.Close()
		t.Fatal("still serving after Shutdown")
	}
}

func TestStartReportsABindFailure(t *testing.T) {
	t.Parallel()
	first := setup(t, nil)
	second, err := health.New(health.Config{Addr: first.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	if err := second.Start(); err == nil || !strings.Contains(err.Error(), "health: listen on "+first.Addr()) {
		t.Fatalf("Start = %v", err)
	}
}
