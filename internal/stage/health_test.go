package stage_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/internal/health"
	"github.com/oxypipe/oxypipe/internal/stage"
	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/internal/topology"
)

func TestWorkersServeHealthAndShareARegistry(t *testing.T) {
	t.Parallel()
	s := fastSubmitter()
	e := setup(t, s)
	sub, err := stage.New(e.config(s), stage.HandlerFunc(submit))
	if err != nil {
		t.Fatal(err)
	}
	p, err := topology.DefaultConsumer(topology.Poller)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := stage.New(e.config(p), stage.HandlerFunc(func(context.Context, *stage.Msg) error { return nil }))
	if err != nil {
		t.Fatalf("a second worker on the same registry: %v", err)
	}
	srv, err := health.New(health.Config{Addr: "127.0.0.1:0", Gatherer: e.reg, Checks: map[string]health.Checker{"submitter": sub, "poller": pol}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	get := func(path string) (int, string) {
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

	code, body := get("/ready")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, `"detail":"no health sample yet"`) {
		t.Fatalf("before Run: %d %s", code, body)
	}
	e.start(sub)
	e.start(pol)
	testutil.Eventually(t, 5*time.Second, "/ready is 200", func() bool { code, _ := get("/ready"); return code == http.StatusOK })
	if code, body := get("/live"); code != http.StatusOK {
		t.Fatalf("/live: %d %s", code, body)
	}
	e.feed(0, 1)
	// The submitter's Submitted goes on to the poller, which acks it too.
	testutil.Eventually(t, 5*time.Second, "/metrics counts both acks", func() bool {
		_, body := get("/metrics")
		return strings.Contains(body, `oxy_stage_messages_total{outcome="ack",stage="submitter"} 1`) &&
			strings.Contains(body, `oxy_stage_messages_total{outcome="ack",stage="poller"} 1`) &&
			strings.Contains(body, `oxy_stage_handle_seconds_count{stage="submitter"} 1`)
	})
}
